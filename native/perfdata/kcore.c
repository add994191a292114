/* perf 6.1's kcore path for kernel symbols: when a kcore image sits beside the kallsyms file (/proc/kcore,
 * or a copy in the build-id cache) and the kernel and modules are where the recording saw them, the
 * kernel maps become kcore's segments and kallsyms' symbols (modules' too) are spread over them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kallsyms.h"
#include "kcore.h"

/* "dir/kallsyms" -> "dir/base"; 0, or -1 when the path does not end in /kallsyms. */
int kallsyms_sibling(const char *kallsyms, const char *base, char *out, size_t cap)
{
    const char *slash = strrchr(kallsyms, '/');
    if (!slash || strcmp(slash + 1, "kallsyms"))
        return -1;
    int n = snprintf(out, cap, "%.*s/%s", (int)(slash - kallsyms), kallsyms, base);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* perf's modules__parse + find_module: is module mod ("[name]") loaded at start per this file? */
static int module_at(FILE *fp, const char *mod, uint64_t start)
{
    char line[4096];
    rewind(fp);
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = 0;
        char *x = strrchr(line, 'x'), *sp = strchr(line, ' ');
        if (!x || !sp)
            continue;
        uint64_t at = strtoull(x + 1, NULL, 16);
        size_t n = (size_t)(sp - line);
        if (strlen(mod) == n + 2 && mod[0] == '[' && !strncmp(mod + 1, line, n) && at == start)
            return 1;
    }
    return 0;
}

/* perf's validate_kcore_addresses: the reference symbol where the recording saw it, modules in place. */
int kcore_validate(machine_t *m, const char *kallsyms)
{
    char modules[4200];
    uint64_t at;
    if (m->k.ref_name && (kallsyms_function_start(kallsyms, m->k.ref_name, &at) || at != m->k.ref_addr))
        return -1;
    if (kallsyms_sibling(kallsyms, "modules", modules, sizeof modules) ||
        (!strcmp(modules, "/proc/modules") && kallsyms_restricted()))
        return -1;
    FILE *fp = fopen(modules, "r");
    if (!fp)
        return -1;
    int ok = 1;
    for (size_t i = 0; ok && i < m->k.kmaps.n; i++) {
        const map_t *km = &m->k.kmaps.v[i];
        if (km->kind == KMAP_MODULE)
            ok = module_at(fp, km->dso->name, km->start);
    }
    fclose(fp);
    return ok ? 0 : -1;
}

static int is_bpf_prog(const map_t *km)
{
    return km->kind == KMAP_KSYM && !strncmp(km->dso->name, "bpf_prog_", 9);
}

/* perf's maps__merge_in: a kcore segment cut around the maps already there. */
static int merge_in(machine_t *m, map_t seg)
{
    maps_t *k = &m->k.kmaps;
    map_t *pieces = malloc((k->n + 1) * sizeof *pieces);
    size_t np = 0;
    if (!pieces)
        return -ENOMEM;
    for (size_t i = 0; i < k->n; i++) {
        const map_t *old = &k->v[i];
        if (seg.end < old->start || seg.start >= old->end)
            continue;
        if (seg.start < old->start) {
            if (seg.end < old->end) {
                seg.end = old->start;
                continue;
            }
            pieces[np] = seg;
            pieces[np++].end = old->start;
        } else if (seg.end < old->end) {
            seg.end = seg.start; /* inside an existing map: dropped (pieces cut so far stay) */
            break;
        }
        seg.pgoff += old->end - seg.start;
        seg.start = old->end;
    }
    int rc = 0;
    for (size_t i = 0; !rc && i < np; i++)
        rc = kmaps_insert(m, &pieces[i]);
    free(pieces);
    return rc || seg.end == seg.start ? rc : kmaps_insert(m, &seg);
}

/* kcore's readable PT_LOAD segments, last first (perf lists them with list_add). */
static int kcore_segments(const char *path, map_t **out, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t ph = 0;
    int rc = !elf || elf_getphdrnum(elf, &ph) ? -1 : 0;
    map_t *segs = *out = rc ? NULL : malloc((ph + 1) * sizeof *segs);
    *n = 0;
    rc = rc || !segs ? -1 : 0;
    for (size_t i = 0; !rc && i < ph; i++) {
        GElf_Phdr p;
        if (!gelf_getphdr(elf, (int)i, &p)) {
            rc = -1;
            break;
        }
        uint64_t sz = p.p_memsz < p.p_filesz ? p.p_memsz : p.p_filesz;
        if (p.p_type != PT_LOAD || !(p.p_flags & PF_R) || !sz)
            continue;
        segs[(*n)++] = (map_t){p.p_vaddr, p.p_vaddr + sz, p.p_offset, NULL, 0, KMAP_VMLINUX};
    }
    if (elf)
        elf_end(elf);
    close(fd);
    for (size_t i = 0; i < *n / 2; i++) {
        map_t t = segs[i];
        segs[i] = segs[*n - 1 - i];
        segs[*n - 1 - i] = t;
    }
    return rc || !*n ? -1 : 0;
}

static int place_segments(machine_t *m, const char *kallsyms, map_t *segs, size_t n);

/* perf's dso__load_kcore: 0 when the kernel maps now come from kcore, -1 when kcore is not used. */
int kcore_load(machine_t *m, const char *kallsyms)
{
    char kcore[4200];
    map_t *segs = NULL;
    size_t n;
    if (kallsyms_sibling(kallsyms, "kcore", kcore, sizeof kcore) || kcore_validate(m, kallsyms) ||
        kcore_segments(kcore, &segs, &n))
        return free(segs), -1;
    int rc = place_segments(m, kallsyms, segs, n);
    free(segs);
    return rc;
}

/* The kernel map takes the segment holding _stext; the others are merged in, in perf's order. */
static int place_segments(machine_t *m, const char *kallsyms, map_t *segs, size_t n)
{
    uint64_t stext;
    maps_t *k = &m->k.kmaps;
    size_t w = 0, pick = 0;
    for (size_t i = 0; i < k->n; i++) /* keep the kernel map (its range changes in turn) and BPF programs */
        if (k->v[i].kind == KMAP_VMLINUX || is_bpf_prog(&k->v[i]))
            k->v[w++] = k->v[i];
    k->n = w;
    if (!kallsyms_function_start(kallsyms, "_stext", &stext)) {
        uint64_t best = UINT64_MAX;
        for (size_t i = 0; i < n; i++)
            if (stext >= segs[i].start && stext < segs[i].end && segs[i].end - segs[i].start < best)
                best = segs[i].end - segs[i].start, pick = i;
    }
    for (size_t i = 0; i < n; i++) {
        segs[i].dso = m->k.kernel;
        if (i != pick) {
            segs[i].kind = KMAP_KCORE;
            if (merge_in(m, segs[i]))
                return -ENOMEM;
            continue;
        }
        for (size_t j = 0; j < k->n; j++) /* the kernel map takes this segment's place */
            if (k->v[j].kind == KMAP_VMLINUX) {
                map_t vml = k->v[j];
                memmove(k->v + j, k->v + j + 1, (k->n - j - 1) * sizeof vml);
                k->n--;
                vml.start = segs[i].start, vml.end = segs[i].end, vml.pgoff = segs[i].pgoff, vml.identity = 0;
                if (kmaps_insert(m, &vml))
                    return -ENOMEM;
                break;
            }
    }
    m->k.kcore = 1;
    return 0;
}
