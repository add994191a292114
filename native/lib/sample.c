/* sample.c - structured input: samples handed over as fields (pmuprof-perfdata), folded as perf script's
 * text of them would be. A frame's fields are checked once against the text grammar (script_frame_plain):
 * plain ones are labelled from the fields; others fold as their text does. A head's text is parsed once,
 * as the text path parses it. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_int.h"
#include "parse.h"
#include "script.h"
#include "text.h"

typedef struct {
    head_t hd;
    int text; /* its line must be fed as text, with each sample's own time */
} fhead_t;

/* A frame's key in the tails table: '\n' (no text tail starts with a blank), flags, offset, the symbol's
 * length, the symbol, the DSO. */
enum { KEY_NAMED = 1, KEY_INLINED = 2, KEY_HEAD = 1 + 1 + 8 + 4 };

static int key_make(buf_t *k, const fold_frame_t *fr)
{
    uint8_t flags = (fr->sym ? KEY_NAMED : 0) | (fr->inlined ? KEY_INLINED : 0);
    uint32_t n = fr->sym ? (uint32_t)fr->sym_len : 0;
    const char *dso = fr->inlined ? "" : fr->dso;
    size_t dn = fr->inlined ? 0 : fr->dso_len;
    k->len = 0;
    return buf_putc(k, '\n') || buf_putc(k, (char)flags) || buf_append(k, &fr->off, 8) || buf_append(k, &n, 4) ||
                    buf_append(k, fr->sym, n) || buf_append(k, dso, dn)
            ? -ENOMEM
            : 0;
}

static fold_frame_t key_frame(const char *k, size_t len)
{
    fold_frame_t fr = {0};
    uint32_t n;
    memcpy(&fr.off, k + 2, 8);
    memcpy(&n, k + 10, 4);
    fr.sym = (k[1] & KEY_NAMED) ? k + KEY_HEAD : NULL;
    fr.sym_len = n;
    fr.inlined = (k[1] & KEY_INLINED) != 0;
    fr.dso = k + KEY_HEAD + n;
    fr.dso_len = len - KEY_HEAD - n;
    return fr;
}

/* The fields as parse.c's tail_parse gives them back from the text of a plain frame. */
static int tail_from_fields(folder_t *f, size_t id, const fold_frame_t *fr)
{
    char off[24];
    frame_t pf = {{NULL, 0}, {fr->dso, fr->dso_len}, {NULL, 0}};
    if (fr->inlined)
        pf.dso = (slice_t){"inlined", 7};
    if (fr->sym) {
        pf.sym = (slice_t){fr->sym, fr->sym_len};
        pf.off = (slice_t){off, (size_t)snprintf(off, sizeof off, "%" PRIx64, fr->off)};
    } else {
        pf.sym = (slice_t){"[unknown]", 9};
    }
    return tail_fill(f, id, &pf);
}

/* What the text path makes of an odd frame's line: the tail it interns (an alias), or feed it as text. */
static int tail_from_text(folder_t *f, size_t id, const fold_frame_t *fr)
{
    buf_t *b = &f->line;
    b->len = 0;
    if (script_frame(b, 0, fr))
        return -ENOMEM;
    int64_t t = memchr(b->p, '\n', b->len) ? -1 : frame_resolve(f, b->p, b->len, &(slice_t){NULL, 0});
    if (t == -ENOMEM)
        return -ENOMEM;
    return col_set(&f->tail_info, id, t >= 0 ? TAIL_ALIAS | (uint64_t)t : TAIL_TEXT) ? -ENOMEM : 0;
}

int64_t folder_frame(folder_t *f, const fold_frame_t *fr)
{
    int added;
    if (key_make(&f->fkey, fr))
        return -ENOMEM;
    int64_t id = itab_intern(&f->tails, f->fkey.p, f->fkey.len, &added);
    if (id < 0 || !added)
        return id;
    int rc = script_frame_plain(fr) ? tail_from_fields(f, (size_t)id, fr) : tail_from_text(f, (size_t)id, fr);
    return rc ? rc : id;
}

int folder_frame_tail(folder_t *f, int64_t id, buf_t *out)
{
    size_t len;
    const char *k = itab_key(&f->tails, (uint32_t)id, &len);
    fold_frame_t fr = key_frame(k, len);
    return script_tail(out, &fr);
}

int64_t folder_head(folder_t *f, const fold_head_t *h)
{
    int added;
    buf_t *b = &f->line;
    b->len = 0;
    if (buf_append(b, &h->pid, 4) || buf_append(b, &h->tid, 4) || buf_putc(b, (char)!!h->timed) ||
        buf_append(b, h->comm, h->comm_len))
        return -ENOMEM;
    int64_t id = itab_intern(&f->headers, b->p, b->len, &added);
    if (id < 0 || !added)
        return id;
    fhead_t *hs = realloc(f->heads, (size_t)(id + 1) * sizeof *hs), *e = hs ? &hs[id] : NULL;
    if (!hs)
        return -ENOMEM;
    f->heads = hs;
    memset(e, 0, sizeof *e);
    b->len = 0; /* the line with a fixed time: the time's digits never change how a header parses */
    if (script_header(b, h->comm, h->comm_len, h->pid, h->tid, 1, h->timed, 0))
        return -ENOMEM;
    e->text = line_blank(b->p, b->len) || b->p[0] == ' ' || b->p[0] == '\t' || memchr(b->p, '\n', b->len);
    int64_t inl = -1;
    slice_t addr;
    if (!e->text && head_compute(f, b->p, b->len, &e->hd, &inl, &addr))
        return -ENOMEM;
    e->text |= inl >= 0; /* a header that ends like a one-line sample's frame */
    return id;
}

/* Text fed as perf script's lines would be (split at '\n'). */
static int feed_lines(folder_t *f, const char *s, size_t n)
{
    const char *nl;
    while ((nl = memchr(s, '\n', n))) {
        if (folder_feed(f, s, (size_t)(nl - s)))
            return -ENOMEM;
        n -= (size_t)(nl - s) + 1;
        s = nl + 1;
    }
    return folder_feed(f, s, n);
}

static int sample_head(folder_t *f, const fold_sample_t *s)
{
    const fhead_t *e = &((const fhead_t *)f->heads)[s->head];
    if (!e->text) {
        if (folder_end_sample(f) || head_apply(f, &e->hd))
            return -ENOMEM;
        f->sec = e->hd.sec < 0 ? -1 : (int64_t)(s->time / 1000000000u);
        return 0;
    }
    size_t len;
    const char *k = itab_key(&f->headers, (uint32_t)s->head, &len);
    int32_t pid, tid;
    memcpy(&pid, k, 4);
    memcpy(&tid, k + 4, 4);
    f->line.len = 0;
    return script_header(&f->line, k + 9, len - 9, pid, tid, 1, k[8], s->time) || feed_lines(f, f->line.p, f->line.len)
            ? -ENOMEM
            : 0;
}

static int sample_frame(folder_t *f, uint32_t id, uint64_t addr)
{
    uint64_t info = f->tail_info.v[id];
    char hex[24];
    if (info & TAIL_TEXT) {
        size_t len;
        const char *k = itab_key(&f->tails, id, &len);
        fold_frame_t fr = key_frame(k, len);
        f->line.len = 0;
        return script_frame(&f->line, addr, &fr) || feed_lines(f, f->line.p, f->line.len) ? -ENOMEM : 0;
    }
    if (info & TAIL_ALIAS)
        id = (uint32_t)info, info = f->tail_info.v[id];
    if (!f->in_sample) {
        f->bad_lines++;
        return 0;
    }
    if (!f->keep)
        return 0;
    int raw = f->o.raw_unknown && (info & TAIL_RAWUNK);
    slice_t at = {hex, raw ? (size_t)snprintf(hex, sizeof hex, "%" PRIx64, addr) : 0};
    return frame_push(f, id, at, f->o.raw_unknown);
}

int folder_sample(folder_t *f, const fold_sample_t *s)
{
    if (sample_head(f, s))
        return -ENOMEM;
    for (size_t i = 0; i < s->nframes; i++)
        if (sample_frame(f, s->frames[i], s->addrs[i]))
            return -ENOMEM;
    return folder_end_sample(f);
}
