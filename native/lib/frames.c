/* Call-chain frames: split_frame() through a cache of frame texts, FlameGraph labels, leaf keys. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "fold_int.h"
#include "parse.h"
#include "text.h"

static const char UNKNOWN[] = "[unknown]";
static const char INLINED[] = "inlined"; /* the dso perf script --inline prints for an inlined call */
static const char *const USER_PSEUDO[] = {"[unknown]", "[vdso]", "[vsyscall]", "[heap]",
                                          "[stack]",   "[anon]", "[uprobes]"};

static int slice_is(slice_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static int kernel_dso(slice_t d)
{
    if (d.n >= 7 && memcmp(d.p, "[kernel", 7) == 0)
        return 1;
    if (!(d.n >= 2 && d.p[0] == '[' && d.p[d.n - 1] == ']'))
        return 0;
    for (size_t i = 0; i < sizeof USER_PSEUDO / sizeof *USER_PSEUDO; i++)
        if (slice_is(d, USER_PSEUDO[i]))
            return 0;
    return 1;
}

/* frame_label(): '_[k]' for kernel frames, '_[i]' for inlined calls, '[dso]' for unnamed code, ';' -> ':'. */
static int64_t label_intern(folder_t *f, const frame_t *fr, int sym_unknown, int inlined)
{
    int added, rc = 0;
    f->tmp.len = 0;
    if (sym_unknown) {
        slice_t d = fr->dso;
        if (!d.n || slice_is(d, UNKNOWN) || slice_is(d, "unknown"))
            return itab_intern(&f->rstr, UNKNOWN, sizeof UNKNOWN - 1, &added);
        const char *slash = memrchr(d.p, '/', d.n);
        slice_t base = slash ? (slice_t){slash + 1, d.n - (size_t)(slash + 1 - d.p)} : d;
        int bracket = !(base.n && base.p[0] == '[');
        rc |= bracket ? buf_putc(&f->tmp, '[') : 0;
        rc |= text_render(&f->tmp, base.p, base.n, RENDER_SEMI);
        rc |= bracket ? buf_putc(&f->tmp, ']') : 0;
    } else {
        rc |= text_render(&f->tmp, fr->sym.p, fr->sym.n, RENDER_SEMI);
        if (inlined)
            rc |= buf_append(&f->tmp, "_[i]", 4);
        else if (kernel_dso(fr->dso))
            rc |= buf_append(&f->tmp, "_[k]", 4);
    }
    if (rc)
        return -ENOMEM;
    return itab_intern(&f->rstr, f->tmp.p, f->tmp.len, &added);
}

/* Hex digits as Python's f"{int(x, 16):x}" writes them: lowercase, no leading zeros. */
static int64_t hex_intern(folder_t *f, slice_t x)
{
    int added;
    while (x.n > 1 && *x.p == '0')
        x.p++, x.n--;
    f->tmp.len = 0;
    if (buf_reserve(&f->tmp, x.n))
        return -ENOMEM;
    for (size_t i = 0; i < x.n; i++)
        f->tmp.p[f->tmp.len++] = (char)(x.p[i] >= 'A' && x.p[i] <= 'F' ? x.p[i] | 0x20 : x.p[i]);
    return itab_intern(&f->rstr, f->tmp.p, f->tmp.len, &added);
}

/* Leaf key parts: rendered dso, rendered symbol, offset as lowercase hex without leading zeros. */
static int leaf_intern(folder_t *f, size_t id, const frame_t *fr)
{
    int64_t d = rstr_render(f, fr->dso.p, fr->dso.n, 0);
    int64_t s = d < 0 ? d : rstr_render(f, fr->sym.p, fr->sym.n, 0);
    if (s < 0)
        return -ENOMEM;
    int64_t off = hex_intern(f, fr->off);
    if (off < 0 || col_set(&f->tail_leaf, id, (uint64_t)d << 32 | (uint64_t)s) ||
        col_set(&f->tail_off, id, (uint64_t)off))
        return -ENOMEM;
    return 0;
}

int tail_fill(folder_t *f, size_t id, const frame_t *fr)
{
    int sym_unknown = !fr->sym.p || slice_is(fr->sym, UNKNOWN);
    int inlined = !sym_unknown && slice_is(fr->dso, INLINED);
    int64_t label = label_intern(f, fr, sym_unknown, inlined);
    if (label < 0)
        return -ENOMEM;
    uint64_t info = (uint64_t)label | TAIL_VALID | (inlined ? TAIL_INLINE : 0);
    if (inlined)
        return col_set(&f->tail_info, id, info) ? -ENOMEM : 0;
    if (sym_unknown && fr->dso.n && fr->dso.p[0] == '/') {
        const char *slash = memrchr(fr->dso.p, '/', fr->dso.n);
        int64_t base = rstr_render(f, slash + 1, fr->dso.n - (size_t)(slash + 1 - fr->dso.p), RENDER_SEMI);
        int64_t dso = base < 0 ? base : rstr_render(f, fr->dso.p, fr->dso.n, 0);
        if (dso < 0 || col_set(&f->tail_leaf, id, (uint64_t)base) || col_set(&f->tail_off, id, (uint64_t)dso))
            return -ENOMEM;
        info |= TAIL_RAWUNK;
    }
    if (fr->off.p && !sym_unknown) {
        if (leaf_intern(f, id, fr))
            return -ENOMEM;
        info |= TAIL_LEAF;
    }
    return col_set(&f->tail_info, id, info) ? -ENOMEM : 0;
}

static int tail_compute(folder_t *f, size_t id, slice_t tail)
{
    frame_t fr;
    if (tail_parse(tail.p, tail.n, &fr) == 0)
        return tail_fill(f, id, &fr);
    return col_set(&f->tail_info, id, 0) ? -ENOMEM : 0;
}

/* raw_unknown_label(): '[base@0xaddr]', the DSO-relative address in lowercase without leading zeros. */
static int64_t raw_label(folder_t *f, uint64_t base, slice_t addr)
{
    size_t n;
    const char *b = itab_key(&f->rstr, (uint32_t)base, &n);
    int added, rc;
    buf_t *t = &f->key;
    t->len = 0;
    rc = buf_putc(t, '[') || buf_append(t, b, n) || buf_append(t, "@0x", 3);
    while (addr.n > 1 && addr.p[0] == '0')
        addr.p++, addr.n--;
    for (size_t i = 0; !rc && i < addr.n; i++)
        rc = buf_putc(t, (char)(addr.p[i] >= 'A' && addr.p[i] <= 'F' ? addr.p[i] | 0x20 : addr.p[i]));
    if (rc || buf_putc(t, ']'))
        return -ENOMEM;
    return itab_intern(&f->rstr, t->p, t->len, &added);
}

/* split_frame() through the tail cache: the tail id, -1 when the text is not a frame, or -ENOMEM. */
int64_t frame_resolve(folder_t *f, const char *s, size_t n, slice_t *addr)
{
    slice_t tail;
    if (frame_tail(s, n, addr, &tail))
        return -1;
    int added;
    int64_t id = itab_intern(&f->tails, tail.p, tail.n, &added);
    if (id < 0 || (added && tail_compute(f, (size_t)id, tail)))
        return -ENOMEM;
    return (f->tail_info.v[id] & TAIL_VALID) ? id : -1;
}

int frame_push(folder_t *f, int64_t id, slice_t addr, int raw)
{
    uint64_t info = f->tail_info.v[id];
    uint32_t label = (uint32_t)info;
    int leaf = !f->real_seen; /* inlined calls come before the frame they are in: that one is the leaf */
    if (!(info & TAIL_INLINE))
        f->real_seen = 1;
    if (leaf && (info & TAIL_LEAF)) {
        uint64_t tl = f->tail_leaf.v[id];
        f->leaf[0] = (uint32_t)(tl >> 32), f->leaf[1] = (uint32_t)tl, f->leaf[2] = (uint32_t)f->tail_off.v[id];
        f->leaf_ok = 1;
    }
    if (raw && (info & TAIL_RAWUNK)) {
        int64_t r = raw_label(f, f->tail_leaf.v[id], addr);
        if (r < 0)
            return -ENOMEM;
        label = (uint32_t)r;
        if (leaf) { /* unnamed code: the leaf keeps its vaddr, symbol "" (skid correction) */
            int64_t off = hex_intern(f, addr), empty = off < 0 ? off : rstr_render(f, "", 0, 0);
            if (empty < 0)
                return -ENOMEM;
            f->leaf[0] = (uint32_t)f->tail_off.v[id], f->leaf[1] = (uint32_t)empty, f->leaf[2] = (uint32_t)off;
            f->leaf_ok = 1;
        }
    }
    return buf_append(&f->frames, &label, sizeof label);
}
