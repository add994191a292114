/* Finishing half of the folder: process names, filters, sorted folded stacks, leaves and meta. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fold_int.h"
#include "text.h"

static int rstr_wanted(folder_t *f, uint32_t r)
{
    size_t n;
    const char *s = itab_key(&f->rstr, r, &n);
    for (size_t i = 0; i < f->o.ncomms; i++)
        if (strlen(f->o.comms[i]) == n && memcmp(f->o.comms[i], s, n) == 0)
            return 1;
    return 0;
}

/* A thread name of pid-less input is kept when it is wanted (--comm, or the name of a --pid's
 * main thread), or when nothing is asked for. */
static int unknown_comm_kept(folder_t *f, uint32_t comm)
{
    if (!f->o.ncomms && !f->tid_any && !f->npids)
        return 1;
    return rstr_wanted(f, comm) || (comm < f->tid_want.cap && f->tid_want.v[comm]);
}

#define PROC_WANTED (1ULL << 40)

int folder_process_name(folder_t *f, uint64_t pid, const char *name, size_t n, int label)
{
    int64_t pi = itab_find(&f->pidinfo, &pid, 8);
    if (pi < 0 || pid == PID_UNKNOWN)
        return 0; /* no sample of it */
    int64_t r = rstr_render(f, name, n, 0);
    if (r < 0 || grow_u64(&f->pid_proc.v, &f->pid_proc.cap, (size_t)pi))
        return -ENOMEM;
    uint64_t *v = &f->pid_proc.v[pi];
    if (label && !(*v & (PROC_WANTED - 1)))
        *v |= (uint64_t)r + 1;
    if (rstr_wanted(f, (uint32_t)r))
        *v |= PROC_WANTED;
    return 0;
}

static int64_t pid_index(folder_t *f, const char *key, uint64_t *pid)
{
    memcpy(pid, key, 8);
    return itab_find(&f->pidinfo, pid, 8);
}

/* names[pid]: the main thread's last comm, else the process's own name (folder_process_name), else the
 * most common comm (first seen wins ties); then --name overrides; then, with --comm, drop processes
 * where neither the process nor any thread has a wanted name. */
static int names_compute(folder_t *f)
{
    size_t np = f->pidinfo.n;
    for (size_t i = 0; i < f->tid_want.cap && !f->tid_any; i++)
        f->tid_any = f->tid_want.v[i] != 0;
    uint64_t *best = calloc(np + 1, sizeof *best), *keep = calloc(np + 1, sizeof *keep);
    int rc = !best || !keep || grow_u64(&f->pid_name.v, &f->pid_name.cap, np) ||
            grow_u64(&f->pid_drop.v, &f->pid_drop.cap, np) || grow_u64(&f->pid_proc.v, &f->pid_proc.cap, np);
    for (size_t i = 0; !rc && i < f->pidcomm.n; i++) {
        size_t n;
        uint64_t pid;
        uint32_t comm;
        const char *k = itab_key(&f->pidcomm, (uint32_t)i, &n);
        size_t pi = (size_t)pid_index(f, k, &pid);
        memcpy(&comm, k + 8, 4);
        if (f->pc_count.v[i] > best[pi]) {
            best[pi] = f->pc_count.v[i];
            f->pid_name.v[pi] = comm;
        }
        if (pid == PID_UNKNOWN)
            f->unknown_kept |= unknown_comm_kept(f, comm);
        else if (!f->o.ncomms || f->npids || rstr_wanted(f, comm))
            keep[pi] = 1;
    }
    for (size_t pi = 0; !rc && pi < np; pi++) {
        size_t n;
        uint64_t pid;
        memcpy(&pid, itab_key(&f->pidinfo, (uint32_t)pi, &n), 8);
        uint64_t proc = f->pid_proc.v[pi];
        if (f->pid_main.v[pi])
            f->pid_name.v[pi] = f->pid_main.v[pi] - 1;
        else if (proc & (PROC_WANTED - 1))
            f->pid_name.v[pi] = (proc & (PROC_WANTED - 1)) - 1;
        keep[pi] |= (proc & PROC_WANTED) != 0;
        f->pid_drop.v[pi] = pid == PID_UNKNOWN ? 2 : !keep[pi]; /* 2: decided per thread name */
    }
    for (size_t j = 0; !rc && j < f->nname_pids; j++) {
        int64_t pi = itab_find(&f->pidinfo, &f->name_pids[j], 8);
        const char *label = strchr(f->o.names[j], '=') + 1;
        int64_t r = pi < 0 ? 0 : rstr_render(f, label, strlen(label), 0);
        if (r < 0)
            rc = 1;
        else if (pi >= 0)
            f->pid_name.v[pi] = (uint64_t)r;
    }
    free(best);
    free(keep);
    return rc ? -ENOMEM : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Python's dict order: main-thread names as first seen, then the rest in first-sample order. */
static int names_order(folder_t *f)
{
    size_t np = f->pidinfo.n, k = 0;
    uint64_t *order = calloc(np + 1, sizeof *order), *names = calloc(np + 1, sizeof *names);
    if (!order || !names)
        return free(order), free(names), -ENOMEM;
    for (size_t pi = 0; pi < np; pi++) {
        if (f->pid_drop.v[pi])
            continue; /* dropped, or pid-less: never named */
        uint64_t rank = f->pid_main.v[pi] ? f->pid_mainseq.v[pi] : np + pi;
        order[k] = rank << 24 | pi; /* sort key; pi recovered below */
        names[k++] = f->pid_name.v[pi];
    }
    f->nnames_out = k;
    if (k > 1) /* qsort of a NULL array is undefined even when empty */
        qsort(order, k, sizeof *order, cmp_u64);
    for (size_t i = 0; i < k; i++)
        order[i] &= (1ULL << 24) - 1;
    if (k > 1)
        qsort(names, k, sizeof *names, cmp_u64);
    size_t distinct = k ? 1 : 0;
    for (size_t i = 1; i < k; i++)
        distinct += names[i] != names[i - 1];
    f->label_pid = distinct < k; /* a kept pid-less group adds one to both sides */
    f->name_order = order;
    free(names);
    return 0;
}

/* Root label of a process: its name (or comm-PID when names collide), ' ' -> '_', ';' -> ':'. */
static int64_t root_label(folder_t *f, uint64_t pid, int64_t pi, uint32_t comm)
{
    size_t n;
    const char *name = itab_key(&f->rstr, pid == PID_UNKNOWN ? comm : (uint32_t)f->pid_name.v[pi], &n);
    buf_t b = {0};
    int rc = buf_append(&b, name, n);
    if (!rc && f->label_pid && pid != PID_UNKNOWN)
        rc = buf_putc(&b, '-') || put_pid(f, &b, pid);
    int64_t id = rc ? -ENOMEM : rstr_render(f, b.p, b.len, RENDER_SPACE | RENDER_SEMI);
    buf_free(&b);
    return id;
}

static int64_t thread_label(folder_t *f, uint32_t comm, uint64_t tid)
{
    size_t n;
    const char *name = itab_key(&f->rstr, comm, &n);
    buf_t b = {0};
    int rc = buf_append(&b, name, n) || buf_putc(&b, '-') || put_pid(f, &b, tid);
    int64_t id = rc ? -ENOMEM : rstr_render(f, b.p, b.len, RENDER_SEMI);
    buf_free(&b);
    return id;
}

static int stacks_build(folder_t *f)
{
    f->out = calloc(f->stacks.n + 1, sizeof *f->out);
    if (!f->out)
        return -ENOMEM;
    for (size_t i = 0; i < f->stacks.n; i++) {
        size_t n;
        uint64_t pid, tid;
        uint32_t comm, ids[2];
        const char *k = itab_key(&f->stacks, (uint32_t)i, &n);
        int64_t pi = pid_index(f, k, &pid);
        uint64_t count = f->st_count.v[i];
        memcpy(&tid, k + 8, 8);
        memcpy(&comm, k + 16, 4);
        if (pid == PID_UNKNOWN ? !unknown_comm_kept(f, comm) : f->pid_drop.v[pi] != 0) {
            f->kept -= count;
            f->filtered += count;
            continue;
        }
        int64_t root = root_label(f, pid, pi, comm);
        int64_t thr = f->o.per_thread ? thread_label(f, comm, tid) : 0;
        if (root < 0 || thr < 0)
            return -ENOMEM;
        ids[0] = (uint32_t)root;
        ids[1] = (uint32_t)thr;
        size_t head = f->o.per_thread ? 2 : 1, off = f->out_ids.len / 4;
        if (buf_append(&f->out_ids, ids, head * 4) || buf_append(&f->out_ids, k + 20, n - 20))
            return -ENOMEM;
        f->out[f->nout++] = (stack_ref_t){count, off, (uint32_t)(head + (n - 20) / 4), (uint32_t)i};
    }
    return 0;
}

static int cmp_str(const void *a, const void *b, void *ctx)
{
    const itab_t *t = ctx;
    size_t na, nb;
    const char *sa = itab_key(t, *(const uint32_t *)a, &na), *sb = itab_key(t, *(const uint32_t *)b, &nb);
    int c = memcmp(sa, sb, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* rank[id]: position of the rendered string in code-point order (UTF-8 byte order). */
static int ranks_build(folder_t *f)
{
    size_t n = f->rstr.n;
    f->rank = malloc((n + 1) * sizeof *f->rank);
    f->by_rank = malloc((n + 1) * sizeof *f->by_rank);
    if (!f->rank || !f->by_rank)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        f->by_rank[i] = (uint32_t)i;
    if (n > 1)
        qsort_r(f->by_rank, n, sizeof *f->by_rank, cmp_str, &f->rstr);
    for (size_t i = 0; i < n; i++)
        f->rank[f->by_rank[i]] = (uint32_t)i;
    return 0;
}

static int cmp_stack(const void *a, const void *b, void *ctx)
{
    const uint32_t *ids = ctx;
    const stack_ref_t *x = a, *y = b;
    const uint32_t *p = ids + x->off, *q = ids + y->off;
    uint32_t n = x->len < y->len ? x->len : y->len;
    for (uint32_t i = 0; i < n; i++)
        if (p[i] != q[i])
            return p[i] < q[i] ? -1 : 1;
    return (x->len > y->len) - (x->len < y->len);
}

/* Stacks sorted as Python sorts tuples of str, equal stacks merged; row_of[stacks id] = output row
 * (UINT32_MAX: filtered out). */
static void stacks_sort(folder_t *f, uint32_t *row_of)
{
    uint32_t *ids = (uint32_t *)f->out_ids.p;
    for (size_t i = 0; i < f->out_ids.len / 4; i++)
        ids[i] = f->rank[ids[i]];
    if (f->nout > 1)
        qsort_r(f->out, f->nout, sizeof *f->out, cmp_stack, ids);
    size_t w = 0;
    for (size_t i = 0; i < f->nout; i++) {
        uint32_t st = f->out[i].st;
        if (w && cmp_stack(&f->out[w - 1], &f->out[i], ids) == 0)
            f->out[w - 1].count += f->out[i].count;
        else
            f->out[w++] = f->out[i];
        row_of[st] = (uint32_t)(w - 1);
    }
    f->nout = w;
}

static int cmp_sample(const void *a, const void *b)
{
    const sample_ref_t *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (x->sec > y->sec) - (x->sec < y->sec);
}

/* The sample table on output rows, sorted by (row, tid, second), equal entries summed (a second met
 * twice, out of time order, is summed here too). */
static int samples_build(folder_t *f, const uint32_t *row_of)
{
    if (samples_flush(f))
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < f->nsmp; i++) {
        sample_ref_t e = f->smp[i];
        if (row_of[e.row] == UINT32_MAX)
            continue;
        e.row = row_of[e.row];
        f->smp[k++] = e;
    }
    if (k > 1)
        qsort(f->smp, k, sizeof *f->smp, cmp_sample);
    size_t w = 0;
    for (size_t i = 0; i < k; i++) {
        if (w && cmp_sample(&f->smp[w - 1], &f->smp[i]) == 0)
            f->smp[w - 1].count += f->smp[i].count;
        else
            f->smp[w++] = f->smp[i];
    }
    f->nsmp = w;
    return 0;
}

static int cmp_leaf_key(const void *a, const void *b)
{
    const leaf_ref_t *x = a, *y = b;
    if (x->dso != y->dso)
        return x->dso < y->dso ? -1 : 1;
    if (x->sym != y->sym)
        return x->sym < y->sym ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

/* write_leaves order: most samples first, then (dso, symbol, offset as a number). */
static int cmp_leaf_out(const void *a, const void *b, void *ctx)
{
    folder_t *f = ctx;
    const leaf_ref_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->dso != y->dso)
        return f->rank[x->dso] < f->rank[y->dso] ? -1 : 1;
    if (x->sym != y->sym)
        return f->rank[x->sym] < f->rank[y->sym] ? -1 : 1;
    size_t nx, ny;
    const char *ox = itab_key(&f->rstr, x->off, &nx), *oy = itab_key(&f->rstr, y->off, &ny);
    if (nx != ny)
        return nx < ny ? -1 : 1;
    return memcmp(ox, oy, nx);
}

static int leaves_build(folder_t *f)
{
    f->leaves = calloc(f->leafc.n + 1, sizeof *f->leaves);
    if (!f->leaves)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < f->leafc.n; i++) {
        size_t n;
        uint64_t pid;
        uint32_t comm, parts[3];
        const char *key = itab_key(&f->leafc, (uint32_t)i, &n);
        int64_t pi = pid_index(f, key, &pid);
        memcpy(&comm, key + 8, 4);
        memcpy(parts, key + 12, 12);
        if (pid == PID_UNKNOWN ? !unknown_comm_kept(f, comm) : f->pid_drop.v[pi] != 0)
            continue;
        f->leaves[k++] = (leaf_ref_t){parts[0], parts[1], parts[2], f->lc_count.v[i]};
    }
    if (k > 1)
        qsort(f->leaves, k, sizeof *f->leaves, cmp_leaf_key);
    size_t w = 0;
    for (size_t i = 0; i < k; i++) {
        if (w && cmp_leaf_key(&f->leaves[w - 1], &f->leaves[i]) == 0)
            f->leaves[w - 1].count += f->leaves[i].count;
        else
            f->leaves[w++] = f->leaves[i];
    }
    f->nleaves = w;
    if (w > 1)
        qsort_r(f->leaves, w, sizeof *f->leaves, cmp_leaf_out, f);
    return 0;
}

int folder_finish(folder_t *f, int truncated)
{
    if (f->in_sample && truncated) {
        f->in_sample = 0;
        f->truncated = 1;
    }
    if (folder_end_sample(f) || names_compute(f) || names_order(f) || stacks_build(f) || ranks_build(f))
        return -ENOMEM;
    /* the stacks table's keys are copied into out_ids: free them (the largest table) before the
     * sort and the writers need their memory */
    size_t nstacks = f->stacks.n;
    itab_free(&f->stacks);
    free(f->st_count.v);
    f->st_count = (col_t){0};
    uint32_t *row_of = malloc((nstacks + 1) * sizeof *row_of);
    if (!row_of)
        return -ENOMEM;
    memset(row_of, 0xff, (nstacks + 1) * sizeof *row_of);
    stacks_sort(f, row_of);
    int rc = samples_build(f, row_of);
    free(row_of);
    return rc ? rc : leaves_build(f);
}
