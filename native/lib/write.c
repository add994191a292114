/* Writers: folded stacks (write_folded's bytes), leaves.tsv (write_leaves' bytes), meta JSON. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fold_int.h"
#include "text.h"

/* fwrite of n items, where an empty array may be NULL (fwrite's pointer must not be, even for none). */
static size_t put_items(const void *p, size_t size, size_t n, FILE *out)
{
    return n ? fwrite(p, size, n, out) : 0;
}

static int flush(buf_t *b, FILE *out, size_t above)
{
    if (b->len <= above)
        return 0;
    size_t w = fwrite(b->p, 1, b->len, out);
    int rc = w == b->len ? 0 : -EIO;
    b->len = 0;
    return rc;
}

static int put_rstr(folder_t *f, buf_t *b, uint32_t id)
{
    size_t n;
    const char *s = itab_key(&f->rstr, id, &n);
    return buf_append(b, s, n);
}

int folder_write_stacks(folder_t *f, FILE *out)
{
    buf_t b = {0};
    const uint32_t *ids = (const uint32_t *)f->out_ids.p;
    int rc = 0;
    for (size_t i = 0; !rc && i < f->nout; i++) {
        const stack_ref_t *s = &f->out[i];
        for (uint32_t j = 0; !rc && j < s->len; j++)
            rc = (j && buf_putc(&b, ';')) || put_rstr(f, &b, f->by_rank[ids[s->off + j]]);
        rc = rc || buf_putc(&b, ' ') || buf_put_u64(&b, s->count) || buf_putc(&b, '\n') || flush(&b, out, 1 << 20);
    }
    rc = rc || flush(&b, out, 0);
    buf_free(&b);
    return rc ? -EIO : 0;
}

int folder_write_leaves(folder_t *f, FILE *out)
{
    buf_t b = {0};
    int rc = 0;
    for (size_t i = 0; !rc && i < f->nleaves; i++) {
        const leaf_ref_t *l = &f->leaves[i];
        rc = buf_put_u64(&b, l->count) || buf_putc(&b, '\t') || put_rstr(f, &b, l->dso) || buf_putc(&b, '\t') ||
                put_rstr(f, &b, l->sym) || buf_putc(&b, '\t') || put_rstr(f, &b, l->off) || buf_putc(&b, '\n') ||
                flush(&b, out, 1 << 20);
    }
    rc = rc || flush(&b, out, 0);
    buf_free(&b);
    return rc ? -EIO : 0;
}

static int json_rstr(folder_t *f, buf_t *b, uint32_t id)
{
    size_t n;
    const char *s = itab_key(&f->rstr, id, &n);
    return text_json(b, s, n);
}

/* Processes the choice (--pid / --comm) left out: "PID": [name, samples], in first-seen order. */
static int meta_left_out(folder_t *f, buf_t *b)
{
    size_t np = f->pidinfo.n, w = 0;
    uint64_t *samples = calloc(np + 1, sizeof *samples);
    if (!samples)
        return 1;
    for (size_t i = 0; i < f->pidcomm.n; i++) {
        size_t n;
        uint64_t pid;
        const char *key = itab_key(&f->pidcomm, (uint32_t)i, &n);
        int64_t pi = itab_find(&f->pidinfo, key, 8);
        memcpy(&pid, key, 8);
        if (pi >= 0 && pid != PID_UNKNOWN && f->pid_drop.v[pi])
            samples[pi] += f->pc_count.v[i];
    }
    int rc = 0;
    for (size_t pi = 0; !rc && pi < np; pi++) {
        size_t n;
        uint64_t pid;
        if (!samples[pi])
            continue;
        memcpy(&pid, itab_key(&f->pidinfo, (uint32_t)pi, &n), 8);
        rc = (w++ && buf_append(b, ", ", 2)) || buf_putc(b, '"') || put_pid(f, b, pid) || buf_append(b, "\": [", 4) ||
                json_rstr(f, b, (uint32_t)f->pid_name.v[pi]) || buf_append(b, ", ", 2) || buf_put_u64(b, samples[pi]) ||
                buf_putc(b, ']');
    }
    free(samples);
    return rc;
}

static int meta_counts(folder_t *f, buf_t *b)
{
    int rc = buf_append(b, "{\"kept\": ", 9) || buf_put_u64(b, f->kept) || buf_append(b, ", \"filtered\": ", 14) ||
            buf_put_u64(b, f->filtered) || buf_append(b, ", \"bad_lines\": ", 15) || buf_put_u64(b, f->bad_lines);
    rc = rc || buf_append(b, ", \"truncated\": ", 15) ||
            (f->truncated ? buf_append(b, "true", 4) : buf_append(b, "false", 5));
    rc = rc || buf_append(b, ", \"pid_known\": ", 15) ||
            (f->pid_known ? buf_append(b, "true", 4) : buf_append(b, "false", 5));
    rc = rc || buf_append(b, ", \"names\": {", 12);
    for (size_t i = 0; !rc && i < f->nnames_out; i++) {
        size_t pi = f->name_order[i], n;
        uint64_t pid;
        memcpy(&pid, itab_key(&f->pidinfo, (uint32_t)pi, &n), 8);
        rc = (i && buf_append(b, ", ", 2)) || buf_putc(b, '"') || put_pid(f, b, pid) || buf_append(b, "\": ", 3) ||
                json_rstr(f, b, (uint32_t)f->pid_name.v[pi]);
    }
    rc = rc || buf_append(b, "}, \"left_out\": {", 16) || meta_left_out(f, b);
    rc = rc || buf_append(b, "}, \"events\": {", 14);
    for (size_t i = 0; !rc && i < f->events.n; i++) {
        size_t n;
        const char *s = itab_key(&f->events, (uint32_t)i, &n);
        rc = (i && buf_append(b, ", ", 2)) || text_json(b, s, n) || buf_append(b, ": ", 2) ||
                buf_put_u64(b, f->ev_count.v[i]);
    }
    return rc;
}

int folder_write_meta(folder_t *f, FILE *out)
{
    buf_t b = {0};
    int rc = meta_counts(f, &b) || buf_append(&b, "}, \"leaves\": [", 14);
    for (size_t i = 0; !rc && i < f->nleaves; i++) {
        const leaf_ref_t *l = &f->leaves[i];
        rc = (i && buf_append(&b, ", ", 2)) || buf_putc(&b, '[') || buf_put_u64(&b, l->count) ||
                buf_append(&b, ", ", 2) || json_rstr(f, &b, l->dso) || buf_append(&b, ", ", 2) ||
                json_rstr(f, &b, l->sym) || buf_append(&b, ", ", 2) || json_rstr(f, &b, l->off) || buf_putc(&b, ']') ||
                flush(&b, out, 1 << 20);
    }
    rc = rc || buf_append(&b, "]}\n", 3) || flush(&b, out, 0);
    buf_free(&b);
    return rc ? -EIO : 0;
}

/* The folded stacks as arrays for numpy (pmuprof.tools.native.stacksbin): magic "PMFSTK2\n", then
 * u64 nstrings, strings_bytes, nstacks, nids; each string's length (u32) and all string bytes (id
 * order, no separators: a name may hold any byte); every stack's frame ids (u32, root first); per
 * stack its length (u32) and count (u64). Host byte order. */
int stacksbin_head(FILE *out, const itab_t *strings, size_t nids, size_t nstacks)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < strings->n; i++)
        bytes += strings->lens[i];
    uint64_t head[4] = {strings->n, bytes, nstacks, nids};
    int bad = fwrite("PMFSTK2\n", 1, 8, out) != 8 || fwrite(head, 8, 4, out) != 4 ||
            put_items(strings->lens, 4, strings->n, out) != strings->n;
    for (size_t i = 0; !bad && i < strings->n; i++) {
        size_t n;
        const char *s = itab_key(strings, (uint32_t)i, &n);
        bad = put_items(s, 1, n, out) != n;
    }
    return bad ? -EIO : 0;
}

int stacksbin_write(FILE *out, const itab_t *strings, const uint32_t *ids, size_t nids, const uint32_t *lens,
                    const uint64_t *counts, size_t nstacks)
{
    int bad = stacksbin_head(out, strings, nids, nstacks) || put_items(ids, 4, nids, out) != nids ||
            put_items(lens, 4, nstacks, out) != nstacks || put_items(counts, 8, nstacks, out) != nstacks;
    return bad ? -EIO : 0;
}

static int put_i64(buf_t *b, int64_t v)
{
    return v < 0 ? buf_putc(b, '-') || buf_put_u64(b, (uint64_t)(-(v + 1)) + 1) : buf_put_u64(b, (uint64_t)v);
}

int folder_write_samples(folder_t *f, FILE *out)
{
    static const char head[] =
            "# pmuprof samples: row\ttid\tsecond\tcount\n"
            "# row: the stack line of stacks.folded (0: the first); tid, second: -1 when not known\n";
    buf_t b = {0};
    int rc = buf_append(&b, head, sizeof head - 1);
    for (size_t i = 0; !rc && i < f->nsmp; i++) {
        const sample_ref_t *e = &f->smp[i];
        rc = buf_put_u64(&b, e->row) || buf_putc(&b, '\t') || put_i64(&b, e->tid) || buf_putc(&b, '\t') ||
                put_i64(&b, e->sec) || buf_putc(&b, '\t') || buf_put_u64(&b, e->count) || buf_putc(&b, '\n') ||
                flush(&b, out, 1 << 20);
    }
    rc = rc || flush(&b, out, 0);
    buf_free(&b);
    return rc ? -EIO : 0;
}

#define CHUNK 65536 /* values per write of a column: no copy of a whole column is ever made */

/* One column of fixed-width values, buffered and written a chunk at a time; the first failed write
 * is kept in rc and later puts do nothing. */
typedef struct {
    FILE *out;
    unsigned char *buf; /* CHUNK * 8 bytes */
    size_t n, width;
    int rc;
} colw_t;

static int colw_flush(colw_t *c)
{
    if (!c->rc && c->n && fwrite(c->buf, c->width, c->n, c->out) != c->n)
        c->rc = -EIO;
    c->n = 0;
    return c->rc;
}

static void colw_put(colw_t *c, const void *v, size_t width)
{
    c->width = width;
    memcpy(c->buf + c->n++ * width, v, width);
    if (c->n == CHUNK)
        colw_flush(c);
}

static void colw_u32(colw_t *c, uint32_t v)
{
    colw_put(c, &v, 4);
}
static void colw_i32(colw_t *c, int32_t v)
{
    colw_put(c, &v, 4);
}
static void colw_i64(colw_t *c, int64_t v)
{
    colw_put(c, &v, 8);
}
static void colw_u64(colw_t *c, uint64_t v)
{
    colw_put(c, &v, 8);
}

/* The sample table after the stacks: magic "PMFSMP1\n", u64 entries, then per entry (columns): u32 row,
 * i32 tid, i64 second, u64 count. Host byte order. */
static int samples_bin(folder_t *f, colw_t *c)
{
    uint64_t head = f->nsmp;
    if (fwrite("PMFSMP1\n", 1, 8, c->out) != 8 || fwrite(&head, 8, 1, c->out) != 1)
        return -EIO;
    for (size_t i = 0; i < f->nsmp; i++)
        colw_u32(c, f->smp[i].row);
    colw_flush(c);
    for (size_t i = 0; i < f->nsmp; i++)
        colw_i32(c, f->smp[i].tid);
    colw_flush(c);
    for (size_t i = 0; i < f->nsmp; i++)
        colw_i64(c, f->smp[i].sec);
    colw_flush(c);
    for (size_t i = 0; i < f->nsmp; i++)
        colw_u64(c, f->smp[i].count);
    return colw_flush(c);
}

/* The stacks in rank order (out[] is sorted) with string-table ids, then their lengths and counts,
 * then the sample table; every column written a chunk at a time. */
int folder_write_stacks_bin(folder_t *f, FILE *out)
{
    const uint32_t *ids = (const uint32_t *)f->out_ids.p; /* rank ids, each stack at its out[i].off */
    size_t nids = 0;
    for (size_t i = 0; i < f->nout; i++)
        nids += f->out[i].len;
    colw_t c = {out, malloc(CHUNK * 8), 0, 4, 0};
    if (!c.buf)
        return -ENOMEM;
    c.rc = stacksbin_head(out, &f->rstr, nids, f->nout);
    for (size_t i = 0; i < f->nout; i++)
        for (uint32_t j = 0; j < f->out[i].len; j++)
            colw_u32(&c, f->by_rank[ids[f->out[i].off + j]]);
    colw_flush(&c);
    for (size_t i = 0; i < f->nout; i++)
        colw_u32(&c, f->out[i].len);
    colw_flush(&c);
    for (size_t i = 0; i < f->nout; i++)
        colw_u64(&c, f->out[i].count);
    int rc = colw_flush(&c) ? c.rc : samples_bin(f, &c);
    free(c.buf);
    return rc;
}
