/* Kernel maps and kernel symbols as perf 6.1 reads them for a perf.data: the kernel MMAP record, KSYMBOL
 * records, and kallsyms (the running kernel's when the build-id matches, else the build-id cache). */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "kallsyms.h"
#include "elfsym.h"
#include "kcore.h"

#define KNAME "[kernel.kallsyms]"

static int unsupported(machine_t *m, const char *why)
{
    snprintf(m->unsupported, sizeof m->unsupported, "%s", why);
    return -1;
}

static void kmaps_drop_vmlinux(machine_t *m)
{
    maps_t *k = &m->k.kmaps;
    for (size_t i = 0; i < k->n; i++)
        if (k->v[i].kind == KMAP_VMLINUX) {
            memmove(k->v + i, k->v + i + 1, (k->n - i - 1) * sizeof *k->v);
            k->n--;
            break;
        }
}

/* The kernel dso: the header's [kernel.kallsyms] entry, or a new one. */
static dso_t *kernel_dso(machine_t *m)
{
    dso_t *d = dsos_findnew(&m->dsos, KNAME);
    if (d)
        d->space = DSO_KERNEL;
    return d;
}

int kernel_mmap(machine_t *m, uint64_t start, uint64_t len, uint64_t pgoff, const char *name, const uint8_t *bid,
                int bid_size)
{
    int is_kernel = !strncmp(name, KNAME, strlen(KNAME) - 1);
    if (name[0] == '/' || (!is_kernel && name[0] == '[')) { /* a module: perf names it [base] */
        char mod[256];
        const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
        size_t n = name[0] == '[' ? strlen(name) : strcspn(base, ".");
        if (name[0] == '[')
            snprintf(mod, sizeof mod, "%s", name);
        else
            snprintf(mod, sizeof mod, "[%.*s]", (int)n, base);
        for (char *c = mod; *c; c++)
            *c = *c == '-' ? '_' : *c;
        dso_t *d = dsos_findnew(&m->dsos, mod);
        map_t map = {start, start + len, 0, d, 0, KMAP_MODULE};
        return d ? kmaps_insert(m, &map) : -ENOMEM;
    }
    if (!is_kernel) {
        map_t map = {start, start + len, pgoff, NULL, 0, KMAP_EXTRA};
        return !strcmp(name, "__entry_SYSCALL_64_trampoline") ? kmaps_insert(m, &map) : 0;
    }
    dso_t *k = kernel_dso(m);
    if (!k)
        return -ENOMEM;
    m->k.kernel = k;
    kmaps_drop_vmlinux(m);
    free(m->k.ref_name);
    m->k.ref_name = NULL;
    m->k.loaded_map = 0;
    map_t map = {start, start + len, 0, k, MAP_IDENTITY, KMAP_VMLINUX};
    if (!start && !len)
        map.end = UINT64_MAX;
    if (bid && bid_size > 0)
        dso_set_build_id(k, bid, (size_t)bid_size);
    if (pgoff && !(m->k.ref_name = strdup(name + strlen(KNAME))))
        return -ENOMEM;
    m->k.ref_addr = pgoff;
    return kmaps_insert(m, &map);
}

static void kmaps_remove(machine_t *m, size_t i)
{
    maps_t *k = &m->k.kmaps;
    memmove(k->v + i, k->v + i + 1, (k->n - i - 1) * sizeof *k->v);
    k->n--;
    k->gen = ++m->next_gen;
}

/* perf's machine__process_ksymbol: a BPF program or trampoline gets a map and a DSO of its own, unless
 * a kernel map already holds its address: then that map's DSO gets the symbol, at the map's start. */
int kernel_ksymbol(machine_t *m, uint64_t addr, uint32_t len, uint16_t type, uint16_t flags, const char *name)
{
    (void)type;
    maps_t *k = &m->k.kmaps;
    const map_t *hit = maps_find(k, addr);
    if (flags & 1) { /* unregister: the map goes; inside the kernel map, the symbol at its start */
        if (hit && hit->kind != KMAP_VMLINUX) {
            kmaps_remove(m, (size_t)(hit - k->v));
        } else if (hit) {
            int32_t at = symtab_find(&hit->dso->syms, hit->identity ? hit->start : hit->pgoff);
            if (at != SYM_NONE)
                symtab_erase(&hit->dso->syms, at);
            k->gen = ++m->next_gen;
        }
        return 0;
    }
    if (!hit) {
        if (len == 0 || addr + len < addr) /* covers no address, or wraps: no sample can land in it */
            return 0;
        dso_t *d = dsos_new_unnamed(&m->dsos, name);
        if (!d)
            return -ENOMEM;
        d->space = DSO_KERNEL;
        d->ksym = d->loaded = 1;
        map_t map = {addr, addr + len, 0, d, 0, KMAP_KSYM};
        if (kmaps_insert(m, &map))
            return -ENOMEM;
        hit = maps_find(k, addr);
    }
    if (hit->kind == KMAP_MODULE || hit->kind == KMAP_EXTRA)
        return unsupported(m, "a KSYMBOL record inside a kernel module or trampoline map");
    k->gen = ++m->next_gen;
    uint64_t at = hit->identity ? hit->start : hit->pgoff; /* map_ip(map, map->start) */
    return symtab_insert(&hit->dso->syms, at, len, 0, 0, name, strlen(name), SYMNAME_RAW) ? -ENOMEM : 0;
}

static int read_notes_build_id(const char *path, uint8_t *out)
{
    unsigned char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
    if (fd >= 0)
        close(fd);
    for (ssize_t p = 0; n > 0 && p + 12 <= n;) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, buf + p, 4);
        memcpy(&descsz, buf + p + 4, 4);
        memcpy(&type, buf + p + 8, 4);
        ssize_t name = p + 12, desc = name + ((namesz + 3) & ~3u);
        if (desc + ((descsz + 3) & ~3u) > n)
            break;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + name, "GNU", 4)) {
            size_t sz = descsz < 20 ? descsz : 20;
            memset(out, 0, 20);
            memcpy(out, buf + desc, sz);
            return (int)((descsz + 3) & ~3u);
        }
        p = desc + ((descsz + 3) & ~3u);
    }
    return -1;
}

/* A vmlinux perf would load ELF symbols from (not implemented here): a matching ELF with a .symtab. */
static int vmlinux_usable(machine_t *m, const char *path)
{
    symsrc_t ss;
    if (symsrc_open(&ss, m->k.kernel, path, NULL, 0))
        return 0;
    int yes = ss.symtab != NULL;
    symsrc_close(&ss);
    return yes;
}

static int vmlinux_anywhere(machine_t *m, const char *hex)
{
    char p[4200];
    const char *rel = m->osrelease ? m->osrelease : "";
    const char *fmts[] = {"vmlinux",
                          "/boot/vmlinux",
                          "/boot/vmlinux-%s",
                          "/usr/lib/debug/boot/vmlinux-%s",
                          "/lib/modules/%s/build/vmlinux",
                          "/usr/lib/debug/lib/modules/%s/vmlinux",
                          "/usr/lib/debug/boot/vmlinux-%s.debug"};
    if (m->k.kernel->has_bid) {
        struct stat st;
        snprintf(p, sizeof p, "%s/.build-id/%.2s/%s", m->dsos.buildid_dir, hex, hex + 2);
        if (!(stat(p, &st) == 0 && S_ISREG(st.st_mode)))
            strncat(p, "/elf", sizeof p - strlen(p) - 1);
        if (vmlinux_usable(m, p))
            return 1;
    }
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++) {
        snprintf(p, sizeof p, fmts[i], rel);
        if (vmlinux_usable(m, p))
            return 1;
    }
    return 0;
}

/* The first subdirectory (in name order) of a kcore copy in the build-id cache that validates. */
static int cached_kcore(machine_t *m, const char *dir, char *out, size_t cap)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort), found = -1;
    for (int i = 0; i < n; i++) {
        char sub[4608];
        struct stat st;
        snprintf(sub, sizeof sub, "%s/%s", dir, names[i]->d_name);
        if (found && names[i]->d_name[0] != '.' && stat(sub, &st) == 0 && S_ISDIR(st.st_mode) &&
            snprintf(out, cap, "%s/kallsyms", sub) < (int)cap && !kcore_validate(m, out))
            found = 0;
        free(names[i]);
    }
    if (n >= 0)
        free(names);
    return found;
}

static int readable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* perf's dso__find_kallsyms; "" when there is none. */
static int kallsyms_path(machine_t *m, const char *hex, char *out, size_t cap)
{
    dso_t *k = m->k.kernel;
    uint8_t run[20];
    struct stat st;
    char dir[4200];
    if (!k->has_bid)
        return snprintf(out, cap, "/proc/kallsyms"), 0;
    int is_host = dso_build_id_equal(k, run, read_notes_build_id("/sys/kernel/notes", run));
    if (is_host && readable("/proc/kcore") && !kcore_validate(m, "/proc/kallsyms"))
        return snprintf(out, cap, "/proc/kallsyms"), 0;
    snprintf(dir, sizeof dir, "%s/[kernel.kcore]/%s", m->dsos.buildid_dir, hex);
    if (!cached_kcore(m, dir, out, cap))
        return 0;
    if (is_host)
        return snprintf(out, cap, "/proc/kallsyms"), 0;
    snprintf(out, cap, "%s/[kernel.kallsyms]/%s/kallsyms", m->dsos.buildid_dir, hex);
    if (!(stat(out, &st) == 0 && S_ISREG(st.st_mode)))
        out[0] = 0;
    return 0;
}

/* perf's dso__load_kernel_sym through the vmlinux map; then map__fixup_start/end. */
/* perf's dso__load_kallsyms: the symbols of PATH, kcore's segments as the kernel maps when kcore may be used,
 * the symbols split over those maps. The count (> 0), -1 when perf gets none, -2 unsupported. */
static int load_kallsyms(machine_t *m, const char *path)
{
    uint64_t delta;
    if (kallsyms_read(m, path, &delta))
        return -1;
    return kcore_load(m, path) ? kallsyms_split(m, delta) : kallsyms_split_kcore(m, path);
}

static int kernel_load(machine_t *m)
{
    dso_t *k = m->k.kernel;
    char hex[41], path[4200];
    for (int i = 0; i < k->bid_size; i++)
        sprintf(hex + 2 * i, "%02x", k->bid[i]);
    hex[2 * k->bid_size] = 0;
    k->loaded = 1;
    if (strcmp(k->name, KNAME))
        return unsupported(m, "a kernel DSO not named [kernel.kallsyms]");
    if (m->kallsyms) /* symbol_conf.kallsyms_name: loaded as given, before any vmlinux or cache search */
        snprintf(path, sizeof path, "%s", m->kallsyms);
    else if (vmlinux_anywhere(m, hex))
        return unsupported(m, "kernel symbols from a vmlinux ELF");
    else if (kallsyms_path(m, hex, path, sizeof path))
        return -1;
    k->load_ret = path[0] ? load_kallsyms(m, path) : -1;
    if (k->load_ret == -2)
        return -1;
    if (k->load_ret > 0) {
        free(k->syms_path);
        k->syms_path = strdup(path);
    }
    return 0;
}

int kernel_find(machine_t *m, uint64_t ip, const map_t **out)
{
    maps_t *km = &m->k.kmaps;
    const map_t *hit = NULL;
    for (size_t i = 0; i < km->n && !hit; i++)
        if (ip >= km->v[i].start && ip < km->v[i].end)
            hit = &km->v[i];
    *out = hit;
    if (m->k.trampolines && ip >= 0xfffffe0000000000ULL && ip < 0xfffffe8000000000ULL)
        return unsupported(m, "kernel entry trampolines (PTI)");
    if (!hit)
        return 0;
    if (hit->kind == KMAP_MODULE)
        return unsupported(m, "kernel module symbols");
    if (hit->kind == KMAP_EXTRA)
        return unsupported(m, "kernel entry trampoline maps");
    if (hit->kind == KMAP_VMLINUX && !hit->dso->loaded) { /* the kernel maps may change under it */
        if (kernel_load(m))
            return -1;
        km->gen = ++m->next_gen;
        return kernel_find(m, ip, out); /* as perf answers: the map that holds ip now (kcore: maybe none) */
    }
    return 0;
}
