/* Streaming half of the folder: parse lines, intern frames, count unique stacks (memory flat in samples). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fold_int.h"
#include "parse.h"
#include "text.h"

int folder_end_sample(folder_t *f);

/* A number as Python's int(): u64 when it fits under BIG_PID, else an interned decimal string. */
int64_t parse_num(folder_t *f, const char *s, size_t n, uint64_t *out)
{
    while (n > 1 && *s == '0')
        s++, n--;
    if (n <= 19) {
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++)
            v = v * 10 + (uint64_t)(s[i] - '0');
        *out = v;
        return 0;
    }
    int added;
    int64_t id = itab_intern(&f->bignum, s, n, &added);
    if (id < 0)
        return id;
    *out = BIG_PID + (uint64_t)id;
    return 0;
}

int64_t second_of(slice_t d)
{
    if (!d.p)
        return -1;
    while (d.n > 1 && *d.p == '0')
        d.p++, d.n--;
    if (d.n > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < d.n; i++)
        v = v * 10 + (d.p[i] - '0');
    return v;
}

static int sample_start(folder_t *f, const char *s, size_t n);

/* An indented line: a call-chain frame, or a whole sample of perf script run without -g. */
static int frame_feed(folder_t *f, const char *s, size_t n)
{
    slice_t addr;
    int64_t id = frame_resolve(f, s, n, &addr);
    if (id == -ENOMEM)
        return -ENOMEM;
    if (id < 0) {
        size_t b = 0, e = n;
        header_t h;
        while (b < e && text_is_ws((unsigned char)s[b]))
            b++;
        while (e > b && text_is_ws((unsigned char)s[e - 1]))
            e--;
        if (header_parse(s + b, e - b, &h) == 0)
            return folder_end_sample(f) ? -ENOMEM : sample_start(f, s + b, e - b);
    }
    if (!f->in_sample || id < 0) {
        f->bad_lines++;
        return 0;
    }
    return f->keep ? frame_push(f, id, addr, f->o.raw_unknown) : 0;
}

static int pid_listed(folder_t *f, uint64_t pid)
{
    for (size_t i = 0; i < f->npids; i++)
        if (f->pids[i] == pid)
            return 1;
    return 0;
}

static int wanted(folder_t *f, uint64_t pid, uint64_t comm_r)
{
    if (pid == PID_UNKNOWN) /* no pid field: filters are settled in finish */
        return 1;
    if (f->npids)
        return pid_listed(f, pid);
    (void)comm_r;
    return 1;
}

static int64_t comm_intern(folder_t *f, slice_t comm)
{
    int added;
    int64_t id = itab_intern(&f->comms, comm.p, comm.n, &added);
    if (id < 0 || !added)
        return id;
    int64_t r = rstr_render(f, comm.p, comm.n, 0);
    if (r < 0)
        return r;
    uint64_t want = 0;
    for (size_t i = 0; i < f->o.ncomms; i++)
        if (strlen(f->o.comms[i]) == f->tmp.len && memcmp(f->o.comms[i], f->tmp.p, f->tmp.len) == 0)
            want = 1;
    return col_set(&f->comm_r, (size_t)id, (uint64_t)r | want << 32) ? -ENOMEM : id;
}

int head_compute(folder_t *f, const char *s, size_t n, head_t *hd, int64_t *inl, slice_t *addr)
{
    header_t h;
    memset(hd, 0, sizeof *hd);
    hd->event = *inl = -1;
    if (header_parse(s, n, &h))
        return 0;
    int64_t cid = comm_intern(f, h.comm);
    if (cid < 0)
        return -ENOMEM;
    hd->ok = 1;
    hd->sec = second_of(h.sec);
    hd->comm_r = (uint32_t)f->comm_r.v[cid];
    hd->pair = h.b.p != NULL;
    if (hd->pair ? parse_num(f, h.a.p, h.a.n, &hd->pid) || parse_num(f, h.b.p, h.b.n, &hd->tid)
                 : parse_num(f, h.a.p, h.a.n, &hd->tid))
        return -ENOMEM;
    if (!hd->pair)
        hd->pid = PID_UNKNOWN;
    slice_t fs;
    if (inline_frame(s + h.end, n - h.end, &fs) == 0 && (*inl = frame_resolve(f, fs.p, fs.n, addr)) == -ENOMEM)
        return -ENOMEM;
    size_t ev_n = n;
    if (*inl >= 0) { /* the event is what precedes the last ': ' */
        ev_n = 0;
        for (size_t i = n; i-- > 1;)
            if (s[i - 1] == ':' && s[i] == ' ') {
                ev_n = i;
                break;
            }
    }
    event_parse(s, ev_n, &h.event);
    if (h.event.p) {
        int added;
        if ((hd->event = itab_intern(&f->events, h.event.p, h.event.n, &added)) < 0)
            return -ENOMEM;
    }
    return 0;
}

int head_apply(folder_t *f, const head_t *hd)
{
    if (!hd->ok) {
        f->bad_lines++;
        return 0;
    }
    if (!hd->pair)
        f->pid_known = 0;
    f->pid = hd->pid;
    f->tid = hd->tid;
    f->sec = hd->sec;
    if (hd->event >= 0 && col_add(&f->ev_count, (size_t)hd->event, 1))
        return -ENOMEM;
    f->cur_comm = hd->comm_r;
    f->keep = wanted(f, f->pid, hd->comm_r);
    f->in_sample = 1;
    f->frames.len = 0;
    f->leaf_ok = 0;
    f->real_seen = 0;
    return 0;
}

static int sample_start(folder_t *f, const char *s, size_t n)
{
    head_t hd;
    slice_t addr;
    int64_t inl;
    if (head_compute(f, s, n, &hd, &inl, &addr) || head_apply(f, &hd))
        return -ENOMEM;
    return hd.ok && inl >= 0 && f->keep ? frame_push(f, inl, addr, 0) : 0;
}

int folder_feed(folder_t *f, const char *s, size_t n)
{
    if (line_blank(s, n))
        return folder_end_sample(f);
    if (s[0] == ' ' || s[0] == '\t')
        return frame_feed(f, s, n);
    if (folder_end_sample(f))
        return -ENOMEM;
    return sample_start(f, s, n);
}

static int64_t pidinfo_of(folder_t *f, uint64_t pid)
{
    if (f->last_pidinfo >= 0 && f->last_pid == pid)
        return f->last_pidinfo;
    int added;
    int64_t pi = itab_intern(&f->pidinfo, &pid, sizeof pid, &added);
    if (pi >= 0 && added && col_set(&f->pid_main, (size_t)pi, 0))
        return -ENOMEM;
    f->last_pid = pid;
    f->last_pidinfo = pi;
    return pi;
}

static int sample_count(folder_t *f, int64_t pi)
{
    int added;
    unsigned char pc[12];
    memcpy(pc, &f->pid, 8);
    memcpy(pc + 8, &f->cur_comm, 4);
    int64_t id = itab_intern(&f->pidcomm, pc, sizeof pc, &added);
    if (id < 0 || col_add(&f->pc_count, (size_t)id, 1))
        return -ENOMEM;
    if (f->pid != PID_UNKNOWN && f->tid == f->pid) {
        if (!f->pid_main.v[pi] && col_set(&f->pid_mainseq, (size_t)pi, f->main_seq++))
            return -ENOMEM;
        f->pid_main.v[pi] = (uint64_t)f->cur_comm + 1;
    }
    if (f->pid == PID_UNKNOWN && f->npids && pid_listed(f, f->tid) && col_set(&f->tid_want, f->cur_comm, 1))
        return -ENOMEM;
    if (f->leaf_ok) {
        unsigned char lk[24];
        uint32_t comm = f->pid == PID_UNKNOWN ? f->cur_comm : UINT32_MAX;
        memcpy(lk, &f->pid, 8);
        memcpy(lk + 8, &comm, 4);
        memcpy(lk + 12, f->leaf, 12);
        id = itab_intern(&f->leafc, lk, sizeof lk, &added);
        if (id < 0 || col_add(&f->lc_count, (size_t)id, 1))
            return -ENOMEM;
    }
    return 0;
}

static int stack_count(folder_t *f)
{
    uint64_t tid = f->o.per_thread ? f->tid : 0;
    uint32_t comm = (f->o.per_thread || f->pid == PID_UNKNOWN) ? f->cur_comm : UINT32_MAX;
    size_t nf = f->frames.len / 4;
    f->key.len = 0;
    if (buf_reserve(&f->key, 20 + f->frames.len))
        return -ENOMEM;
    memcpy(f->key.p, &f->pid, 8);
    memcpy(f->key.p + 8, &tid, 8);
    memcpy(f->key.p + 16, &comm, 4);
    const uint32_t *fr = (const uint32_t *)f->frames.p;
    uint32_t *dst = (uint32_t *)(f->key.p + 20);
    for (size_t i = 0; i < nf; i++)
        dst[i] = fr[nf - 1 - i];
    f->key.len = 20 + f->frames.len;
    int added;
    int64_t id = itab_intern(&f->stacks, f->key.p, f->key.len, &added);
    if (id < 0 || col_add(&f->st_count, (size_t)id, 1))
        return -ENOMEM;
    f->cur_stack = (uint32_t)id;
    return 0;
}

int samples_flush(folder_t *f)
{
    size_t n = f->samp.n;
    if (f->nsmp + n > f->cap_smp) {
        size_t cap = f->cap_smp ? f->cap_smp : 1024;
        while (cap < f->nsmp + n)
            cap *= 2;
        sample_ref_t *p = realloc(f->smp, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        f->smp = p, f->cap_smp = cap;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *key = itab_key(&f->samp, (uint32_t)i, &len);
        sample_ref_t *e = &f->smp[f->nsmp++];
        memcpy(&e->row, key, 4);
        memcpy(&e->tid, key + 4, 4);
        e->sec = f->samp_sec;
        e->count = f->sp_count.v[i];
    }
    if (n)
        memset(f->sp_count.v, 0, n * sizeof *f->sp_count.v);
    itab_free(&f->samp);
    memset(&f->samp, 0, sizeof f->samp);
    return 0;
}

/* The sample table: (stack, tid, second) -> samples; a tid that is no int32 is -1 (unknown). */
static int table_count(folder_t *f)
{
    unsigned char k[8];
    int32_t tid = f->tid > INT32_MAX ? -1 : (int32_t)f->tid; /* BIG_PID ids are above too */
    if (f->sec != f->samp_sec && samples_flush(f))
        return -ENOMEM;
    f->samp_sec = f->sec;
    memcpy(k, &f->cur_stack, 4);
    memcpy(k + 4, &tid, 4);
    int added;
    int64_t id = itab_intern(&f->samp, k, sizeof k, &added);
    return id < 0 || col_add(&f->sp_count, (size_t)id, 1) ? -ENOMEM : 0;
}

int folder_end_sample(folder_t *f)
{
    if (!f->in_sample)
        return 0;
    f->in_sample = 0;
    if (!f->keep) {
        f->filtered++;
        return 0;
    }
    if (!f->frames.len && buf_append(&f->frames, &f->unknown_id, sizeof f->unknown_id))
        return -ENOMEM;
    int64_t pi = pidinfo_of(f, f->pid);
    if (pi < 0 || sample_count(f, pi) || stack_count(f) || table_count(f))
        return -ENOMEM;
    f->kept++;
    return 0;
}

static int pid_arg(folder_t *f, const char *s, size_t n, uint64_t *out)
{
    if (n == 2 && memcmp(s, "-1", 2) == 0) {
        *out = PID_UNKNOWN;
        return 0;
    }
    if (!n)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!text_is_digit((unsigned char)s[i]))
            return -EINVAL;
    return parse_num(f, s, n, out) ? -ENOMEM : 0;
}

static int opts_parse(folder_t *f)
{
    f->pids = calloc(f->o.npids + 1, sizeof *f->pids);
    f->name_pids = calloc(f->o.nnames + 1, sizeof *f->name_pids);
    if (!f->pids || !f->name_pids)
        return -ENOMEM;
    for (size_t i = 0; i < f->o.npids; i++) {
        int rc = pid_arg(f, f->o.pids[i], strlen(f->o.pids[i]), &f->pids[i]);
        if (rc)
            return rc;
    }
    f->npids = f->o.npids;
    for (size_t i = 0; i < f->o.nnames; i++) {
        const char *eq = strchr(f->o.names[i], '=');
        int rc = eq ? pid_arg(f, f->o.names[i], (size_t)(eq - f->o.names[i]), &f->name_pids[i]) : -EINVAL;
        if (rc)
            return rc;
    }
    f->nname_pids = f->o.nnames;
    return 0;
}

folder_t *folder_new(const fold_opts_t *opts, int *err)
{
    folder_t *f = calloc(1, sizeof *f);
    int added;
    *err = -ENOMEM;
    if (!f)
        return NULL;
    f->o = *opts;
    f->pid_known = 1;
    f->last_pidinfo = -1;
    int64_t u = itab_intern(&f->rstr, "[unknown]", 9, &added);
    *err = u < 0 ? -ENOMEM : opts_parse(f);
    if (*err) {
        folder_free(f);
        return NULL;
    }
    f->unknown_id = (uint32_t)u;
    return f;
}

void folder_free(folder_t *f)
{
    if (!f)
        return;
    free(f->heads);
    itab_t *tabs[] = {&f->rstr,    &f->bignum,  &f->comms,  &f->tails, &f->events, &f->headers,
                      &f->pidinfo, &f->pidcomm, &f->stacks, &f->leafc, &f->samp};
    col_t *cols[] = {&f->tid_want, &f->comm_r,   &f->tail_info,   &f->tail_leaf, &f->tail_off,
                     &f->ev_count, &f->pid_main, &f->pid_mainseq, &f->pid_name,  &f->pid_drop,
                     &f->pc_count, &f->st_count, &f->lc_count,    &f->sp_count,  &f->pid_proc};
    for (size_t i = 0; i < sizeof tabs / sizeof *tabs; i++)
        itab_free(tabs[i]);
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        free(cols[i]->v);
    buf_free(&f->frames);
    buf_free(&f->key);
    buf_free(&f->tmp);
    buf_free(&f->fkey);
    buf_free(&f->line);
    buf_free(&f->out_ids);
    free(f->pids);
    free(f->name_pids);
    free(f->out);
    free(f->rank);
    free(f->by_rank);
    free(f->leaves);
    free(f->smp);
    free(f->name_order);
    free(f);
}
