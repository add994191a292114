/* ehframe.c - function ranges from .eh_frame FDEs (works on stripped binaries). */
#include "elfbin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_ELFUTILS
#include <gelf.h>

#include "elfbin_priv.h"

#define PE_OMIT 0xff
#define PE_FMT(e) ((e)&0x0f)
#define PE_APP(e) ((e)&0x70)

struct cursor {
    const unsigned char *p, *end;
    uint64_t vaddr_base; /* vaddr of byte 0 of the section */
    const unsigned char *start;
};

static uint64_t uleb(struct cursor *c)
{
    uint64_t v = 0;
    int shift = 0;

    while (c->p < c->end) {
        unsigned char byte = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(byte & 0x7f) << shift;
        shift += 7;
        if (!(byte & 0x80))
            break;
    }
    return v;
}

static int64_t sleb(struct cursor *c)
{
    int64_t v = 0;
    int shift = 0;
    unsigned char byte = 0;

    while (c->p < c->end) {
        byte = *c->p++;
        if (shift < 64)
            v |= (int64_t)(byte & 0x7f) << shift;
        shift += 7;
        if (!(byte & 0x80))
            break;
    }
    if (shift < 64 && (byte & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

static uint64_t fixed(struct cursor *c, int size, int is_signed)
{
    uint64_t v = 0;
    int i;

    if (c->p + size > c->end) {
        c->p = c->end;
        return 0;
    }
    for (i = 0; i < size; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += size;
    if (is_signed && size < 8 && (v >> (8 * size - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * size);
    return v;
}

/* Read a DW_EH_PE-encoded pointer; only absolute and pc-relative applications. */
static uint64_t read_encoded(struct cursor *c, unsigned char enc, int apply)
{
    uint64_t here = c->vaddr_base + (uint64_t)(c->p - c->start), v;

    switch (PE_FMT(enc)) {
    case 0x00: v = fixed(c, 8, 0); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = fixed(c, 2, 0); break;
    case 0x03: v = fixed(c, 4, 0); break;
    case 0x04: v = fixed(c, 8, 0); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = fixed(c, 2, 1); break;
    case 0x0b: v = fixed(c, 4, 1); break;
    case 0x0c: v = fixed(c, 8, 1); break;
    default: c->p = c->end; return 0;
    }
    if (apply && PE_APP(enc) == 0x10)
        v += here;
    return v;
}

/* Parse a CIE body (after the id) and return its FDE pointer encoding. */
static unsigned char cie_fde_encoding(struct cursor c)
{
    const char *aug = (const char *)c.p;
    unsigned char version = 0, enc = 0; /* default absptr */
    const char *a;

    version = *(c.p - 1);
    c.p += strnlen(aug, (size_t)(c.end - c.p)) + 1;
    if (strstr(aug, "eh"))
        c.p += 8;
    uleb(&c);
    sleb(&c);
    if (version == 1)
        c.p++;
    else
        uleb(&c);
    if (aug[0] != 'z')
        return enc;
    uleb(&c);
    for (a = aug + 1; *a && c.p < c.end; a++) {
        if (*a == 'R')
            return *c.p;
        if (*a == 'L')
            c.p++;
        else if (*a == 'P') {
            unsigned char penc = *c.p++;
            read_encoded(&c, penc, 0);
        }
    }
    return enc;
}

static int fdes_push(struct elfbin *b, size_t *cap, uint64_t start, uint64_t len)
{
    struct range *r;

    if (b->nfdes == *cap) {
        *cap = *cap ? *cap * 2 : 4096;
        r = realloc(b->fdes, *cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        b->fdes = r;
    }
    b->fdes[b->nfdes].start = start;
    b->fdes[b->nfdes].end = start + len;
    b->nfdes++;
    return 0;
}

/* One CIE/FDE record at c->p; returns the next record or NULL at the end. */
static const unsigned char *record_parse(struct elfbin *b, struct cursor *c, size_t *cap)
{
    const unsigned char *body, *next;
    unsigned char enc;
    uint64_t len = fixed(c, 4, 0), cie_off, start, range;
    struct cursor cie;
    int rc = 0;

    if (len == 0 || c->p >= c->end)
        return NULL;
    if (len == 0xffffffffu)
        len = fixed(c, 8, 0);
    body = c->p;
    next = body + len;
    if (next > c->end)
        return NULL;
    cie_off = fixed(c, 4, 0);
    if (cie_off != 0 && body - cie_off >= c->start) { /* FDE */
        cie = *c;
        cie.p = body - cie_off + 4 + 4 + 1; /* length, id, version */
        enc = cie_fde_encoding(cie);
        start = read_encoded(c, enc, 1);
        range = read_encoded(c, enc & 0x0f, 0);
        if (range && start)
            rc = fdes_push(b, cap, start, range);
    }
    c->p = next;
    return rc ? NULL : next;
}

static int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;

    return (x->start > y->start) - (x->start < y->start);
}

static Elf_Scn *section_by_name(Elf *elf, const char *want, GElf_Shdr *sh)
{
    Elf_Scn *scn = NULL;
    size_t shstrndx;
    const char *name;

    if (elf_getshdrstrndx(elf, &shstrndx))
        return NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        if (!gelf_getshdr(scn, sh))
            continue;
        name = elf_strptr(elf, shstrndx, sh->sh_name);
        if (name && !strcmp(name, want))
            return scn;
    }
    return NULL;
}

int elfbin_fdes(struct elfbin *b, const struct range **out, size_t *n)
{
    GElf_Shdr sh;
    Elf_Scn *scn;
    Elf_Data *data;
    struct cursor c;
    size_t cap = 0;

    if (!b->fdes_loaded) {
        b->fdes_loaded = 1;
        scn = section_by_name(b->elf, ".eh_frame", &sh);
        data = scn ? elf_getdata(scn, NULL) : NULL;
        if (data && data->d_buf && sh.sh_type == SHT_PROGBITS) {
            c.start = c.p = data->d_buf;
            c.end = c.p + data->d_size;
            c.vaddr_base = sh.sh_addr;
            while (c.p && c.p + 8 <= c.end && record_parse(b, &c, &cap))
                ;
            qsort(b->fdes, b->nfdes, sizeof(*b->fdes), range_cmp);
        }
    }
    *out = b->fdes;
    *n = b->nfdes;
    return b->nfdes ? 0 : -ENODATA;
}

const struct range *elfbin_fde_at(struct elfbin *b, uint64_t vaddr)
{
    const struct range *r;
    size_t n, lo = 0, hi, mid;

    if (elfbin_fdes(b, &r, &n))
        return NULL;
    hi = n;
    while (lo < hi) {
        mid = (lo + hi) / 2;
        if (r[mid].start <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && vaddr < r[lo - 1].end)
        return &r[lo - 1];
    return NULL;
}
#endif
