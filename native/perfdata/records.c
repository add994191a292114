/* SAMPLE decoding (perf's evsel__parse_sample, up to the call chain), record times, and the time queue. */
#include "records.h"
#include "bytes.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#define FIXED_FIELDS                                                                                                   \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |                 \
     PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

/* The read values block of PERF_SAMPLE_READ: its size in u64 words, or -1 when it does not fit. */
static int64_t read_words(uint64_t read_format, const unsigned char *p, size_t left)
{
    if (left < 1)
        return -1;
    uint64_t first = rd64(p), words = 1;
    words += !!(read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(read_format & PERF_FORMAT_TOTAL_TIME_RUNNING);
    if (read_format & PERF_FORMAT_GROUP) {
        uint64_t each = 1 + !!(read_format & PERF_FORMAT_ID) + !!(read_format & PERF_FORMAT_LOST);
        if (first > left / each)
            return -1;
        words += first * each;
    } else {
        words += 1 + !!(read_format & PERF_FORMAT_LOST); /* the id is always there */
    }
    return words <= left ? (int64_t)words : -1;
}

int pd_sample_parse(const pd_attr_t *a, const unsigned char *rec, uint16_t size, pd_sample_t *s)
{
    uint64_t st = a->sample_type;
    size_t n = (size_t)(size - 8) / 8, i = 0;
    const unsigned char *w = rec + 8;
    memset(s, 0, sizeof *s);
    s->cpumode = rec[4] & PERF_RECORD_MISC_CPUMODE_MASK;
    s->time = PD_NO_TIME;
    if ((size_t)__builtin_popcountll(st & FIXED_FIELDS) > n)
        return -1;
    if (st & PERF_SAMPLE_IDENTIFIER)
        s->id = rd64(w + 8 * i++);
    if (st & PERF_SAMPLE_IP)
        s->ip = rd64(w + 8 * i++);
    if (st & PERF_SAMPLE_TID) {
        memcpy(&s->pid, w + 8 * i, 4);
        memcpy(&s->tid, w + 8 * i++ + 4, 4);
    }
    if (st & PERF_SAMPLE_TIME)
        s->time = rd64(w + 8 * i++);
    i += !!(st & PERF_SAMPLE_ADDR);
    if (st & PERF_SAMPLE_ID)
        s->id = rd64(w + 8 * i++);
    i += !!(st & PERF_SAMPLE_STREAM_ID);
    if (st & PERF_SAMPLE_CPU)
        memcpy(&s->cpu, w + 8 * i++, 4);
    i += !!(st & PERF_SAMPLE_PERIOD);
    if (st & PERF_SAMPLE_READ) {
        int64_t r = read_words(a->read_format, w + 8 * i, n - i);
        if (r < 0)
            return -1;
        i += (size_t)r;
    }
    if (st & PERF_SAMPLE_CALLCHAIN) {
        if (i >= n)
            return -1;
        s->nr = rd64(w + 8 * i++);
        if (s->nr > n - i)
            return -1;
        s->ips = (const uint64_t *)(w + 8 * i);
        s->has_chain = 1;
        i += s->nr;
    }
    if ((st & PERF_SAMPLE_REGS_USER) && !(st & (PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK)) &&
        (a->sample_regs_user & (1ULL << a->reg_sp)) && i < n && rd64(w + 8 * i) != PERF_SAMPLE_REGS_ABI_NONE) {
        size_t at = i + 1 + (size_t)__builtin_popcountll(a->sample_regs_user & ((1ULL << a->reg_sp) - 1));
        if (at >= n)
            return -1;
        s->user_sp = rd64(w + 8 * at);
        s->has_user_sp = 1;
    }
    return 0;
}

uint64_t pd_record_time(const pd_file_t *f, const pd_attr_t *a, const unsigned char *rec, uint32_t type, uint16_t size)
{
    size = pd_record_span(f, rec, type, size);
    uint64_t st = a->sample_type;
    if (!(st & PERF_SAMPLE_TIME))
        return PD_NO_TIME;
    size_t n = (size_t)(size - 8) / 8;
    if (type == PERF_RECORD_SAMPLE) {
        size_t at = !!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID);
        return at < n ? rd64(rec + 8 + 8 * at) : PD_NO_TIME;
    }
    if (!a->sample_id_all)
        return PD_NO_TIME;
    size_t back = !!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_STREAM_ID) +
            !!(st & PERF_SAMPLE_ID) + 1;
    return back <= n ? rd64(rec + 8 + 8 * (n - back)) : PD_NO_TIME;
}

int pd_queue_push(pd_queue_t *q, uint64_t time, uint64_t off)
{
    if (q->n == q->cap) {
        if (q->head > q->n / 2) { /* reclaim the delivered front */
            memmove(q->q, q->q + q->head, (q->n - q->head) * sizeof *q->q);
            q->n -= q->head;
            q->head = 0;
        } else {
            size_t nc = q->cap ? q->cap * 2 : 1 << 16;
            pd_qent_t *nq = realloc(q->q, nc * sizeof *nq);
            if (!nq)
                return -ENOMEM;
            q->q = nq;
            q->cap = nc;
        }
    }
    if (time < q->last_flush)
        q->unordered++;
    if (time > q->max_time)
        q->max_time = time;
    q->q[q->n++] = (pd_qent_t){time, q->seq++, off};
    return 0;
}

static int cmp_qent(const void *a, const void *b)
{
    const pd_qent_t *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

int pd_queue_flush(pd_queue_t *q, uint64_t limit, int (*cb)(void *ctx, uint64_t off), void *ctx)
{
    if (!limit || q->head == q->n)
        return 0;
    qsort(q->q + q->head, q->n - q->head, sizeof *q->q, cmp_qent);
    while (q->head < q->n && q->q[q->head].time <= limit) {
        int rc = cb(ctx, q->q[q->head].off);
        if (rc)
            return rc;
        q->last_flush = q->q[q->head++].time;
    }
    if (q->head == q->n)
        q->head = q->n = 0;
    return 0;
}

void pd_queue_free(pd_queue_t *q)
{
    free(q->q);
    memset(q, 0, sizeof *q);
}

uint64_t pd_queue_min_off(const pd_queue_t *q)
{
    uint64_t low = UINT64_MAX;
    for (size_t i = q->head; i < q->n; i++)
        low = q->q[i].off < low ? q->q[i].off : low;
    return low;
}
