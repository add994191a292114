/* elfbin.c - open an ELF file with libelf; symbols, build-id and bytes by virtual address. */
#include "elfbin.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_ELFUTILS
#include <gelf.h>
#include <libelf.h>

#include "arch/x86_64.h"
#include "elfbin_priv.h"
#include "lib/regfile.h"
#ifdef HAVE_LIBIBERTY
#include "lib/demangle.h"
#endif

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static int esym_cmp(const void *a, const void *b)
{
    const struct esym *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (x->size < y->size) - (x->size > y->size); /* larger first */
}

static Elf_Scn *section_by_type(Elf *elf, Elf64_Word type)
{
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;

    while ((scn = elf_nextscn(elf, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
            return scn;
    return NULL;
}

static int symbols_load(struct elfbin *b, Elf *elf, Elf_Scn *scn)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    GElf_Shdr sh;
    GElf_Sym sym;
    size_t i, n;

    if (!data || !gelf_getshdr(scn, &sh) || !sh.sh_entsize)
        return -EINVAL;
    n = sh.sh_size / sh.sh_entsize;
    b->syms = calloc(n ? n : 1, sizeof(*b->syms));
    if (!b->syms)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC)
            continue;
        if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
            continue;
        b->syms[b->nsyms].name = elf_strptr(elf, sh.sh_link, sym.st_name);
        b->syms[b->nsyms].addr = sym.st_value;
        b->syms[b->nsyms].size = sym.st_size;
        if (b->syms[b->nsyms].name)
            b->nsyms++;
    }
    qsort(b->syms, b->nsyms, sizeof(*b->syms), esym_cmp);
    return 0;
}

static void build_id_load(Elf *elf, char *build_id)
{
    Elf_Scn *scn = NULL;
    Elf_Data *data;
    GElf_Shdr sh;
    GElf_Nhdr nh;
    size_t off, name_off, desc_off, i;

    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
            continue;
        off = 0;
        while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || nh.n_descsz > 64)
                continue;
            if (memcmp((char *)data->d_buf + name_off, "GNU", 4))
                continue;
            for (i = 0; i < nh.n_descsz; i++)
                snprintf(build_id + 2 * i, 3, "%02x", ((unsigned char *)data->d_buf)[desc_off + i]);
            return;
        }
    }
}

static int elfbin_check(struct elfbin *b)
{
    GElf_Ehdr eh;

    if (elf_kind(b->elf) != ELF_K_ELF || !gelf_getehdr(b->elf, &eh))
        return -ENOEXEC;
    if (eh.e_machine != X86_64_ELF_MACHINE) /* the decoder's architecture */
        return -EPROTONOSUPPORT;
    return 0;
}

int elfbin_open(const char *path, struct elfbin **out)
{
    struct elfbin *b;
    Elf_Scn *scn;
    int rc;

    *out = NULL;
    if (elf_version(EV_CURRENT) == EV_NONE)
        return -EINVAL;
    b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->dbg_fd = -1;
    b->fd = regfile_open(path);
    if (b->fd < 0) {
        rc = b->fd;
        free(b);
        return rc;
    }
    b->elf = elf_begin(b->fd, ELF_C_READ_MMAP, NULL);
    rc = b->elf ? elfbin_check(b) : -ENOEXEC;
    if (!rc) {
        scn = section_by_type(b->elf, SHT_SYMTAB);
        b->symtab_kind = scn ? "symtab" : "dynsym";
        if (!scn)
            scn = section_by_type(b->elf, SHT_DYNSYM);
        if (!scn)
            b->symtab_kind = "none";
        rc = scn ? symbols_load(b, b->elf, scn) : 0;
        build_id_load(b->elf, b->build_id);
    }
    if (rc) {
        elfbin_close(b);
        return rc;
    }
    *out = b;
    return 0;
}

static int debuginfo_use(struct elfbin *b, const char *debug)
{
    char dbg_id[129] = "";
    Elf_Scn *scn;

    b->dbg_fd = regfile_open(debug);
    if (b->dbg_fd < 0)
        return b->dbg_fd;
    b->dbg_elf = elf_begin(b->dbg_fd, ELF_C_READ_MMAP, NULL);
    if (!b->dbg_elf || elf_kind(b->dbg_elf) != ELF_K_ELF)
        return -ENOEXEC;
    build_id_load(b->dbg_elf, dbg_id);
    if (strcmp(dbg_id, b->build_id))
        return -ESTALE;
    scn = section_by_type(b->dbg_elf, SHT_SYMTAB);
    if (!scn)
        return -ENODATA;
    free(b->syms);
    b->syms = NULL;
    b->nsyms = 0;
    b->symtab_kind = "debuginfo";
    return symbols_load(b, b->dbg_elf, scn);
}

int elfbin_open_with(const char *path, const char *debug, struct elfbin **out)
{
    int rc = elfbin_open(path, out);

    if (rc || !debug)
        return rc;
    rc = debuginfo_use(*out, debug);
    if (rc) {
        elfbin_close(*out);
        *out = NULL;
    }
    return rc;
}

void elfbin_close(struct elfbin *b)
{
    size_t i;

    if (!b)
        return;
    if (b->demangled) {
        for (i = 0; i < b->nsyms; i++)
            free(b->demangled[i]);
        free(b->demangled);
    }
    free(b->syms);
    free(b->fdes);
    if (b->elf)
        elf_end(b->elf);
    if (b->fd >= 0)
        close(b->fd);
    if (b->dbg_elf)
        elf_end(b->dbg_elf);
    if (b->dbg_fd >= 0)
        close(b->dbg_fd);
    if (b->libcxx)
        dlclose(b->libcxx);
    free(b);
}

const char *elfbin_build_id(const struct elfbin *b)
{
    return b->build_id;
}
const char *elfbin_symtab_kind(const struct elfbin *b)
{
    return b->symtab_kind;
}
size_t elfbin_nsyms(const struct elfbin *b)
{
    return b->nsyms;
}

/* "ns::f(int) const" -> "ns::f": cut the last balanced parameter list. */
static void strip_params(char *s)
{
    size_t n = strlen(s);
    int depth = 0;

    while (n && s[n - 1] != ')')
        n--;
    while (n--) {
        if (s[n] == ')')
            depth++;
        else if (s[n] == '(' && --depth == 0) {
            if (n)
                s[n] = '\0';
            return;
        }
    }
}

/* Names as perf prints them, so a frame this helper names reads like one perf named: the perf.data reader's
   demangler (libiberty, no parameters) when built with libiberty, else libstdc++'s with the parameters cut. */
static void demangle_all(struct elfbin *b)
{
    size_t i;

    b->demangled = calloc(b->nsyms ? b->nsyms : 1, sizeof(char *));
    if (!b->demangled)
        return;
#ifdef HAVE_LIBIBERTY
    for (i = 0; i < b->nsyms; i++)
        b->demangled[i] = demangle_user(b->syms[i].name);
#else
    demangle_fn fn = NULL;
    int status;

    b->libcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (b->libcxx)
        fn = (demangle_fn)dlsym(b->libcxx, "__cxa_demangle");
    for (i = 0; fn && i < b->nsyms; i++)
        if (!strncmp(b->syms[i].name, "_Z", 2) && (b->demangled[i] = fn(b->syms[i].name, NULL, NULL, &status)))
            strip_params(b->demangled[i]);
#endif
}

static int name_matches(const char *demangled, const char *want)
{
    char tmp[4096];

    if (!demangled)
        return 0;
    if (!strcmp(demangled, want))
        return 1;
    snprintf(tmp, sizeof(tmp), "%s", demangled);
    strip_params(tmp);
    return !strcmp(tmp, want);
}

const struct esym *elfbin_find_symbol(struct elfbin *b, const char *name)
{
    size_t i;

    for (i = 0; i < b->nsyms; i++)
        if (!strcmp(b->syms[i].name, name))
            return &b->syms[i];
    if (!b->demangled)
        demangle_all(b);
    for (i = 0; b->demangled && i < b->nsyms; i++)
        if (name_matches(b->demangled[i], name))
            return &b->syms[i];
    return NULL;
}

const char *elfbin_display_name(struct elfbin *b, const struct esym *s)
{
    size_t i = (size_t)(s - b->syms);

    if (!b->demangled)
        demangle_all(b);
    return b->demangled && i < b->nsyms && b->demangled[i] ? b->demangled[i] : s->name;
}

const struct esym *elfbin_symbol_at(const struct elfbin *b, uint64_t vaddr)
{
    size_t lo = 0, hi = b->nsyms, mid;
    const struct esym *s;

    while (lo < hi) { /* first symbol with addr > vaddr */
        mid = (lo + hi) / 2;
        if (b->syms[mid].addr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo-- > 0) {
        s = &b->syms[lo];
        if (vaddr < s->addr + s->size)
            return s;
        if (lo + 64 < hi) /* bounded look-back over nested aliases */
            break;
    }
    return NULL;
}

/* The PT_LOAD segment whose file bytes hold [at, at + len): addresses when by_offset is 0, file offsets
 * when it is 1; 0 and *ph filled when found, else -EFAULT. */
static int find_load(const struct elfbin *b, uint64_t at, uint64_t len, int by_offset, GElf_Phdr *ph)
{
    size_t i, n;

    if (elf_getphdrnum(b->elf, &n))
        return -EFAULT;
    for (i = 0; i < n; i++) {
        if (!gelf_getphdr(b->elf, (int)i, ph) || ph->p_type != PT_LOAD)
            continue;
        uint64_t start = by_offset ? ph->p_offset : ph->p_vaddr;
        if (at >= start && at + len <= start + ph->p_filesz)
            return 0;
    }
    return -EFAULT;
}

int elfbin_read(const struct elfbin *b, uint64_t vaddr, void *buf, size_t len)
{
    GElf_Phdr ph;

    if (find_load(b, vaddr, len, 0, &ph))
        return -EFAULT;
    if (pread(b->fd, buf, len, (off_t)(ph.p_offset + (vaddr - ph.p_vaddr))) != (ssize_t)len)
        return -EIO;
    return 0;
}

int elfbin_offset_to_vaddr(const struct elfbin *b, uint64_t off, uint64_t *vaddr)
{
    GElf_Phdr ph;

    if (find_load(b, off, 1, 1, &ph))
        return -EFAULT;
    *vaddr = off - ph.p_offset + ph.p_vaddr;
    return 0;
}

#else /* !HAVE_ELFUTILS */

int elfbin_open(const char *path, struct elfbin **out)
{
    (void)path;
    *out = NULL;
    return -ENOSYS;
}
int elfbin_open_with(const char *p, const char *d, struct elfbin **out)
{
    (void)d;
    return elfbin_open(p, out);
}
void elfbin_close(struct elfbin *b)
{
    (void)b;
}
const char *elfbin_build_id(const struct elfbin *b)
{
    (void)b;
    return "";
}
const char *elfbin_symtab_kind(const struct elfbin *b)
{
    (void)b;
    return "none";
}
size_t elfbin_nsyms(const struct elfbin *b)
{
    (void)b;
    return 0;
}
const struct esym *elfbin_find_symbol(struct elfbin *b, const char *n)
{
    (void)b;
    (void)n;
    return NULL;
}
const struct esym *elfbin_symbol_at(const struct elfbin *b, uint64_t v)
{
    (void)b;
    (void)v;
    return NULL;
}
const char *elfbin_display_name(struct elfbin *b, const struct esym *s)
{
    (void)b;
    return s->name;
}
int elfbin_read(const struct elfbin *b, uint64_t v, void *p, size_t l)
{
    (void)b;
    (void)v;
    (void)p;
    (void)l;
    return -ENOSYS;
}
int elfbin_offset_to_vaddr(const struct elfbin *b, uint64_t o, uint64_t *v)
{
    (void)b;
    (void)o;
    (void)v;
    return -ENOSYS;
}
int elfbin_fdes(struct elfbin *b, const struct range **o, size_t *n)
{
    (void)b;
    *o = NULL;
    *n = 0;
    return -ENOSYS;
}
const struct range *elfbin_fde_at(struct elfbin *b, uint64_t v)
{
    (void)b;
    (void)v;
    return NULL;
}
#endif
