/* Inline chains from DWARF (elfutils libdw), without perf's addr2line per address.
 *
 * At open, the compile units' address ranges are read (the CU DIEs only). The first address in a CU
 * walks that CU once and keeps every subprogram and inlined-subroutine range, with its parent, sorted
 * by start (ties: deeper last). Inlined ranges nest inside their callers', so the innermost scope
 * holding an address is an ancestor of the last range starting at or below it: a binary search and a
 * short walk up the parents. Names are read (and demangled as perf prints them) once per scope. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/demangle.h"
#include "lib/regfile.h"
#include "inline.h"

#define MAX_TREE_DEPTH 512 /* DIE nesting followed (deeper: a damaged file) */
#define MAX_CU_SCOPES (1 << 22)
#define NAME_UNREAD UINT32_MAX
#define NAME_NONE (UINT32_MAX - 1)

typedef struct {
    uint64_t lo, hi;
    int32_t scope;
    uint16_t depth;
} range_t;

typedef struct {
    Dwarf_Off die;
    int32_t parent;
    uint32_t name, len; /* in inl.names; NAME_UNREAD / NAME_NONE */
    uint32_t r0, nr; /* its ranges in cu_t.own */
    uint8_t inlined;
} scope_t;

typedef struct {
    Dwarf_Off off; /* the CU DIE */
    int built; /* 0 not yet, 1 built, -1 could not be */
    scope_t *scopes;
    size_t nscopes, capscopes;
    range_t *own; /* each scope's ranges, scope by scope */
    range_t *ranges; /* the same, sorted by (lo, depth) */
    size_t nranges, capranges;
} cu_t;

typedef struct {
    uint64_t lo, hi;
    uint32_t cu;
} curange_t;

struct inl {
    int fd;
    Elf *elf;
    Dwarf *dw;
    GElf_Phdr *loads; /* the runtime file's PT_LOAD headers */
    size_t nloads;
    cu_t *cus;
    size_t ncus;
    curange_t *cur; /* CU ranges sorted by lo */
    size_t ncur;
    buf_t names;
};

/* The PT_LOAD headers of the runtime file: file offsets -> link-time addresses. */
static int read_loads(inl_t *x, const char *runtime_path)
{
    int fd = regfile_open(runtime_path);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    size_t n = 0;
    int rc = -1;
    if (elf && elf_getphdrnum(elf, &n) == 0 && n && n < 4096 && (x->loads = calloc(n, sizeof *x->loads))) {
        for (size_t i = 0; i < n; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
                x->loads[x->nloads++] = ph;
        }
        rc = x->nloads ? 0 : -1;
    }
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int cur_cmp(const void *a, const void *b)
{
    const curange_t *p = a, *q = b;
    return p->lo < q->lo ? -1 : p->lo > q->lo;
}

/* Every compile unit's DIE and address ranges (the CU DIEs only: cheap). */
static int read_units(inl_t *x)
{
    Dwarf_Off off = 0, next;
    size_t hsize, capcus = 0, capcur = 0;
    while (dwarf_nextcu(x->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t it = 0;
        if (dwarf_offdie(x->dw, off + hsize, &cu) && dwarf_tag(&cu) == DW_TAG_compile_unit) {
            if (x->ncus == capcus) {
                capcus = capcus ? capcus * 2 : 256;
                cu_t *c = realloc(x->cus, capcus * sizeof *c);
                if (!c)
                    return -ENOMEM;
                x->cus = c;
            }
            x->cus[x->ncus] = (cu_t){.off = off + hsize};
            while ((it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0) {
                if (hi <= lo)
                    continue;
                if (x->ncur == capcur) {
                    capcur = capcur ? capcur * 2 : 1024;
                    curange_t *r = realloc(x->cur, capcur * sizeof *r);
                    if (!r)
                        return -ENOMEM;
                    x->cur = r;
                }
                x->cur[x->ncur++] = (curange_t){lo, hi, (uint32_t)x->ncus};
            }
            x->ncus++;
        }
        off = next;
    }
    qsort(x->cur, x->ncur, sizeof *x->cur, cur_cmp);
    return 0;
}

inl_t *inl_open(const char *debug_path, const char *runtime_path)
{
    inl_t *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->fd = -1;
    const char *paths[2] = {debug_path, runtime_path};
    for (int i = 0; i < 2 && !x->dw; i++) {
        if (i == 1 && debug_path && runtime_path && !strcmp(debug_path, runtime_path))
            break;
        if ((x->fd = regfile_open(paths[i])) < 0)
            continue;
        x->elf = elf_begin(x->fd, ELF_C_READ_MMAP, NULL);
        x->dw = x->elf ? dwarf_begin_elf(x->elf, DWARF_C_READ, NULL) : NULL;
        if (!x->dw) {
            if (x->elf)
                elf_end(x->elf);
            close(x->fd);
            x->elf = NULL, x->fd = -1;
        }
    }
    if (!x->dw || read_loads(x, runtime_path) || read_units(x) || !x->ncur) {
        inl_close(x);
        return NULL;
    }
    return x;
}

void inl_close(inl_t *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->ncus; i++) {
        free(x->cus[i].scopes);
        free(x->cus[i].own);
        free(x->cus[i].ranges);
    }
    free(x->cus);
    free(x->cur);
    free(x->loads);
    buf_free(&x->names);
    if (x->dw)
        dwarf_end(x->dw);
    if (x->elf)
        elf_end(x->elf);
    if (x->fd >= 0)
        close(x->fd);
    free(x);
}

static int add_scope(cu_t *c, Dwarf_Die *die, int32_t parent, int inlined, uint16_t depth, int32_t *id)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t it = 0;
    *id = parent;
    while ((it = dwarf_ranges(die, it, &base, &lo, &hi)) > 0) {
        if (hi <= lo)
            continue;
        if (*id == parent) {
            if (c->nscopes >= MAX_CU_SCOPES)
                return -E2BIG;
            if (c->nscopes == c->capscopes) {
                size_t n = c->capscopes ? c->capscopes * 2 : 256;
                scope_t *s = realloc(c->scopes, n * sizeof *s);
                if (!s)
                    return -ENOMEM;
                c->scopes = s, c->capscopes = n;
            }
            c->scopes[c->nscopes] =
                    (scope_t){dwarf_dieoffset(die), parent, NAME_UNREAD, 0, (uint32_t)c->nranges, 0, (uint8_t)inlined};
            *id = (int32_t)c->nscopes++;
        }
        if (c->nranges == c->capranges) {
            size_t n = c->capranges ? c->capranges * 2 : 1024;
            range_t *r = realloc(c->own, n * sizeof *r);
            if (!r)
                return -ENOMEM;
            c->own = r, c->capranges = n;
        }
        c->own[c->nranges++] = (range_t){lo, hi, *id, depth};
        c->scopes[*id].nr++;
    }
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const range_t *p = a, *q = b;
    if (p->lo != q->lo)
        return p->lo < q->lo ? -1 : 1;
    return (p->depth > q->depth) - (p->depth < q->depth);
}

/* Walk one CU: subprograms and inlined subroutines become scopes; lexical blocks and namespaces are
 * looked into (they hold scopes) but are none themselves; types are not entered. */
static int build_cu(inl_t *x, cu_t *c)
{
    struct {
        Dwarf_Die die;
        int32_t scope;
    } stack[MAX_TREE_DEPTH];
    Dwarf_Die cu, child;
    int top = 0, rc = 0;
    if (!dwarf_offdie(x->dw, c->off, &cu))
        return -1;
    if (dwarf_child(&cu, &child) != 0)
        return 0;
    stack[0].die = child, stack[0].scope = -1;
    while (top >= 0 && rc == 0) {
        Dwarf_Die *die = &stack[top].die;
        int tag = dwarf_tag(die), descend = 0;
        int32_t scope = stack[top].scope;
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            rc = add_scope(c, die, scope, tag == DW_TAG_inlined_subroutine, (uint16_t)top, &scope);
            descend = 1;
        } else if (tag == DW_TAG_lexical_block || tag == DW_TAG_namespace) {
            descend = 1;
        }
        if (descend && top + 1 < MAX_TREE_DEPTH && dwarf_child(die, &child) == 0) {
            stack[top + 1].die = child, stack[top + 1].scope = scope;
            top++;
            continue;
        }
        while (top >= 0 && dwarf_siblingof(&stack[top].die, &stack[top].die) != 0)
            top--;
    }
    if (rc)
        return rc;
    if (c->nranges && !(c->ranges = malloc(c->nranges * sizeof *c->ranges)))
        return -ENOMEM;
    if (c->nranges)
        memcpy(c->ranges, c->own, c->nranges * sizeof *c->ranges);
    qsort(c->ranges, c->nranges, sizeof *c->ranges, range_cmp);
    return 0;
}

static const curange_t *cu_of(const inl_t *x, uint64_t addr)
{
    size_t lo = 0, hi = x->ncur;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->cur[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* CU ranges may overlap (a CU's whole [low_pc, high_pc) around another's): look back a little */
    for (size_t i = lo, seen = 0; i > 0 && seen < 16; i--, seen++)
        if (addr < x->cur[i - 1].hi)
            return &x->cur[i - 1];
    return NULL;
}

static int scope_holds(const cu_t *c, int32_t s, uint64_t addr)
{
    const scope_t *sc = &c->scopes[s];
    for (uint32_t i = sc->r0; i < sc->r0 + sc->nr; i++)
        if (c->own[i].lo <= addr && addr < c->own[i].hi)
            return 1;
    return 0;
}

/* The innermost scope holding addr (-1: none). */
static int32_t innermost(const cu_t *c, uint64_t addr)
{
    size_t lo = 0, hi = c->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->ranges[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    const range_t *r = &c->ranges[lo - 1];
    if (addr < r->hi)
        return r->scope;
    for (int32_t s = c->scopes[r->scope].parent; s >= 0; s = c->scopes[s].parent)
        if (scope_holds(c, s, addr))
            return s;
    return -1;
}

static const char *die_string(Dwarf_Die *die, int at)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, at, &a) ? dwarf_formstring(&a) : NULL;
}

/* An inlined scope's name as perf prints a symbol: the origin's linkage name demangled, else its name. */
static int scope_name(inl_t *x, scope_t *s)
{
    Dwarf_Die die, origin;
    Dwarf_Attribute a;
    s->name = NAME_NONE;
    if (!dwarf_offdie(x->dw, s->die, &die))
        return 0;
    Dwarf_Die *o = dwarf_formref_die(dwarf_attr(&die, DW_AT_abstract_origin, &a), &origin) ? &origin : &die;
    const char *raw = die_string(o, DW_AT_linkage_name);
    raw = raw ? raw : die_string(o, DW_AT_MIPS_linkage_name);
    char *dem = raw ? demangle_user(raw) : NULL;
    const char *name = dem ? dem : raw ? raw : die_string(o, DW_AT_name);
    int rc = 0;
    if (name && *name) {
        size_t n = strnlen(name, 4096), at = x->names.len;
        s->name = (uint32_t)at;
        s->len = (uint32_t)n;
        if (at + n >= NAME_NONE || buf_append(&x->names, name, n))
            rc = -ENOMEM, s->name = NAME_NONE;
        for (size_t i = 0; !rc && i < n; i++) { /* a name stays one line: control characters become '?' */
            unsigned char c = (unsigned char)x->names.p[at + i];
            x->names.p[at + i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
        }
    }
    free(dem);
    return rc;
}

static int to_addr(const inl_t *x, uint64_t off, uint64_t *addr)
{
    for (size_t i = 0; i < x->nloads; i++) {
        const GElf_Phdr *ph = &x->loads[i];
        if (off >= ph->p_offset && off - ph->p_offset < ph->p_filesz) {
            *addr = off - ph->p_offset + ph->p_vaddr;
            return 0;
        }
    }
    return -1;
}

int inl_chain(inl_t *x, uint64_t off, inl_name_t *out, size_t cap)
{
    uint64_t addr;
    const curange_t *cr;
    if (!x || to_addr(x, off, &addr) || !(cr = cu_of(x, addr)))
        return 0;
    cu_t *c = &x->cus[cr->cu];
    if (!c->built) {
        int rc = build_cu(x, c);
        if (rc == -ENOMEM)
            return rc;
        c->built = rc ? -1 : 1;
    }
    if (c->built < 0)
        return 0;
    size_t n = 0;
    int32_t hit[INL_MAX_DEPTH];
    for (int32_t s = innermost(c, addr); s >= 0 && c->scopes[s].inlined && n < cap && n < INL_MAX_DEPTH;
         s = c->scopes[s].parent) {
        scope_t *sc = &c->scopes[s];
        if (sc->name == NAME_UNREAD && scope_name(x, sc))
            return -ENOMEM;
        if (sc->name != NAME_NONE)
            hit[n++] = s;
    }
    for (size_t i = 0; i < n; i++) /* names.p is final only now: reading names may have moved it */
        out[i] = (inl_name_t){x->names.p + c->scopes[hit[i]].name, c->scopes[hit[i]].len};
    return (int)n;
}
