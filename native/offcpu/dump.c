/* dump.c - write the off-CPU maps as text, once, after the program is detached.
 *
 * Tab-separated lines (pmuprof/tools/native/offcpu.py parses them):
 *   pmuprof-offcpu 5
 *   t0_ns NS / end_ns NS / stopped_by WHY / mode lazy|eager / min_block_us US (lazy mode's threshold)
 *   wakeups on|off                       whether sched_wakeup was traced (RUNQ_NS and WAKE_NS are 0 when off)
 *   wakeup_off WHY                       it was asked for but could not attach
 *   sampler_off WHY                      --sample-hz asked for, but the sampler could not attach
 *   limit threads|entries|stacks N
 *   stat NAME COUNT                     summed over CPUs
 *   wait TGID TID STATE WAITS NS RUNQ_NS USTACK KSTACK COMM   off-CPU time summed per stack; RUNQ_NS of
 *                                        it came after a wake-up (runnable, waiting for a CPU)
 *   short TGID TID STATE WAITS NS RUNQ_NS COMM   lazy mode: blocks under min_block_us, summed without stacks
 *   open TGID TID STATE SINCE_NS USTACK KSTACK WAKE_NS  threads still off the CPU at the end (lazy
 *                                        mode: no kernel stack; the user stack walked by ulive.c); WAKE_NS:
 *                                        when it was woken (0: still asleep); SINCE_NS 0: since before t0
 *   idle TGID TID USTACK                 threads blocked since before t0 and still at the end (never
 *                                        switched out meanwhile): the user stack ulive.c walked from
 *                                        the sp and pc /proc/TID/syscall shows
 *   stack ID ADDR,ADDR,...               kernel stack, hex addresses, leaf first
 *   ustack HASH SCANNED ADDR,ADDR,... RECOVERED   user stack (hex hash), leaf first; SCANNED 1: chain
 *                                        found above sp; RECOVERED: how many addresses after the leaf
 *                                        the CFI unwinder (unwind.c) put back, which the frame-pointer
 *                                        walk skipped under a leaf without frame pointers
 *   sample TGID TID SP COUNT SCANNED KEY RESUME RECOVERED   --sample-hz: on-CPU ticks with the same
 *                                        user stack, whose leaf is in a library; KEY: the leaf and the first
 *                                        return addresses of the frame-pointer walk (OFFCPU_SAMPLE_KEY at
 *                                        most), RECOVERED: the callers the CFI unwinder put back (- none),
 *                                        to stand between the leaf and the walk's entry RESUME. SCANNED 1:
 *                                        the leaf's frame pointer was no frame (perf's walk stops at the leaf): TID
 *                                        and SP (hex) key it, KEY is the leaf alone and RECOVERED the whole
 *                                        chain after it (RESUME 1); else TID and SP are 0
 * STATE is R S D T ? or B (off the CPU since before t0); a kernel stack id below 0 is -errno (not
 * stored), a user stack hash 0 is none.
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "offcpu_user.h"
#include "unwind.h"

static const char state_letters[] = "RSDT?B";
static const char *stat_names[OFFCPU_NSTATS] = {
        "switches", "kstack_lost", "ustack_lost",    "threads_full", "entries_full", "ustack_scanned", "short",
        "long",     "samples",     "samples_fpless", "samples_lost", "wakeups",      "out_missed",     "in_missed"};

struct idset {
    __s32 *ids;
    size_t n, cap;
    struct owner *owners; /* user stack hash -> the process it was taken in */
    size_t nown, capown;
    struct live_stack *live; /* lazy mode: user stacks of the threads still blocked, walked by ulive.c */
    size_t nlive, caplive;
};

struct live_stack {
    __u64 hash;
    __u32 tgid;
    struct offcpu_ustack u;
};

struct owner {
    __u64 ustack;
    __u32 tgid;
};

static int owner_add(struct idset *s, __u64 ustack, __u32 tgid)
{
    struct owner *grown;

    if (!ustack)
        return 0;
    if (s->nown == s->capown) {
        s->capown = s->capown ? s->capown * 2 : 1024;
        grown = realloc(s->owners, s->capown * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        s->owners = grown;
    }
    s->owners[s->nown++] = (struct owner){ustack, tgid};
    return 0;
}

static int cmp_owner(const void *a, const void *b)
{
    const struct owner *x = a, *y = b;

    return (x->ustack > y->ustack) - (x->ustack < y->ustack);
}

static __u32 owner_of(const struct idset *s, __u64 ustack)
{
    size_t lo = 0, hi = s->nown;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->owners[mid].ustack < ustack)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nown && s->owners[lo].ustack == ustack ? s->owners[lo].tgid : 0;
}

static int idset_add(struct idset *s, __s32 id)
{
    __s32 *grown;

    if (id < 0)
        return 0;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        grown = realloc(s->ids, s->cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        s->ids = grown;
    }
    s->ids[s->n++] = id;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    __s32 x = *(const __s32 *)a, y = *(const __s32 *)b;

    return (x > y) - (x < y);
}

static char state_letter(__u32 state)
{
    return state < sizeof(state_letters) - 1 ? state_letters[state] : '?';
}

static int live_add(struct idset *s, __u64 hash, __u32 tgid, const struct offcpu_ustack *u)
{
    struct live_stack *grown;

    for (size_t i = 0; i < s->nlive; i++)
        if (s->live[i].hash == hash)
            return 0;
    if (s->nlive == s->caplive) {
        s->caplive = s->caplive ? s->caplive * 2 : 64;
        grown = realloc(s->live, s->caplive * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        s->live = grown;
    }
    s->live[s->nlive].hash = hash;
    s->live[s->nlive].tgid = tgid;
    s->live[s->nlive++].u = *u;
    return 0;
}

static int dump_waits(FILE *f, int fd, struct idset *ids)
{
    struct offcpu_key key, next;
    struct offcpu_val val;
    void *prev = NULL;
    int i;

    while (!bpf_map_get_next_key(fd, prev, &next)) {
        key = next;
        prev = &key;
        if (bpf_map_lookup_elem(fd, &key, &val))
            continue;
        val.comm[sizeof(val.comm) - 1] = '\0';
        for (i = 0; val.comm[i]; i++)
            if (val.comm[i] == '\t' || val.comm[i] == '\n')
                val.comm[i] = '_';
        if (key.state & OFFCPU_SHORT) {
            fprintf(f, "short\t%u\t%u\t%c\t%llu\t%llu\t%llu\t%s\n", key.tgid, key.tid,
                    state_letter(key.state & ~OFFCPU_SHORT), (unsigned long long)val.count, (unsigned long long)val.ns,
                    (unsigned long long)val.runq_ns, val.comm);
            continue;
        }
        fprintf(f, "wait\t%u\t%u\t%c\t%llu\t%llu\t%llu\t%llx\t%d\t%s\n", key.tgid, key.tid, state_letter(key.state),
                (unsigned long long)val.count, (unsigned long long)val.ns, (unsigned long long)val.runq_ns,
                (unsigned long long)key.ustack, key.kstack, val.comm);
        if (idset_add(ids, key.kstack) || owner_add(ids, key.ustack, key.tgid))
            return -ENOMEM;
    }
    return 0;
}

static int dump_open(FILE *f, int fd, struct idset *ids, const struct offcpu_opts *o)
{
    static struct offcpu_ustack u;
    struct offcpu_start s;
    __u32 tid, next;
    void *prev = NULL;

    while (!bpf_map_get_next_key(fd, prev, &next)) {
        tid = next;
        prev = &tid;
        if (bpf_map_lookup_elem(fd, &tid, &s) || s.state == OFFCPU_STATE_ON) /* ON: running, no block open */
            continue;
        if (o->lazy && !s.ustack) { /* no stack taken yet: walk it now, the thread still waits */
            s.ustack = ulive_walk(o, s.tgid, tid, s.ip, s.sp, s.bp, &u);
            if (s.ustack && live_add(ids, s.ustack, s.tgid, &u))
                return -ENOMEM;
        }
        fprintf(f, "open\t%u\t%u\t%c\t%llu\t%llx\t%d\t%llu\n", s.tgid, tid, state_letter(s.state),
                (unsigned long long)s.ts, (unsigned long long)s.ustack, s.kstack, (unsigned long long)s.wake);
        if (idset_add(ids, s.kstack) || owner_add(ids, s.ustack, s.tgid))
            return -ENOMEM;
    }
    return 0;
}

/* sp and pc of a thread blocked in the kernel, from /proc/TID/syscall ("running": 0). */
static int blocked_regs(unsigned tgid, unsigned tid, __u64 *sp, __u64 *pc)
{
    char path[64], line[256], *at;
    unsigned long long a, b;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", tgid, tid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    at = fgets(line, sizeof(line), f);
    fclose(f);
    if (!at || !strncmp(line, "running", 7) || !(at = strrchr(line, ' ')) || at == line)
        return 0;
    *at = '\0';
    if (sscanf(at + 1, "%llx", &b) != 1 || !(at = strrchr(line, ' ')) || sscanf(at + 1, "%llx", &a) != 1)
        return 0;
    *sp = a;
    *pc = b;
    return 1;
}

/* Target threads with no start record that are blocked now: off the CPU for the whole window. Their user
 * stack is walked from /proc's sp and pc (no saved frame pointer: the scan above sp finds the frame chain). */
static int dump_idle(FILE *f, int starts_fd, struct idset *ids, const struct offcpu_opts *o)
{
    static struct offcpu_ustack u;
    struct offcpu_start s;
    char path[64];
    struct dirent *d;
    __u64 sp, pc, hash;
    unsigned tid;
    DIR *dir;

    for (unsigned i = 0; i < o->npids; i++) {
        snprintf(path, sizeof(path), "/proc/%u/task", o->pids[i]);
        dir = opendir(path);
        while (dir && (d = readdir(dir))) {
            if (sscanf(d->d_name, "%u", &tid) != 1 || !bpf_map_lookup_elem(starts_fd, &tid, &s) ||
                !blocked_regs(o->pids[i], tid, &sp, &pc))
                continue;
            hash = ulive_walk(o, o->pids[i], tid, pc, sp, 0, &u);
            if (!hash)
                continue;
            fprintf(f, "idle\t%u\t%u\t%llx\n", o->pids[i], tid, (unsigned long long)hash);
            if (live_add(ids, hash, o->pids[i], &u)) {
                closedir(dir);
                return -ENOMEM;
            }
        }
        if (dir)
            closedir(dir);
    }
    return 0;
}

static void dump_stacks(FILE *f, int fd, struct idset *ids)
{
    __u64 ips[OFFCPU_MAX_DEPTH];
    size_t i;
    int d;

    qsort(ids->ids, ids->n, sizeof(*ids->ids), cmp_id);
    for (i = 0; i < ids->n; i++) {
        if (i && ids->ids[i] == ids->ids[i - 1])
            continue;
        memset(ips, 0, sizeof(ips));
        if (bpf_map_lookup_elem(fd, &ids->ids[i], ips))
            continue;
        fprintf(f, "stack\t%d\t", ids->ids[i]);
        for (d = 0; d < OFFCPU_MAX_DEPTH && ips[d]; d++)
            fprintf(f, "%s%llx", d ? "," : "", (unsigned long long)ips[d]);
        fputc('\n', f);
    }
}

struct procs {
    __u32 tgid[OFFCPU_MAX_TARGETS];
    struct uw_proc *p[OFFCPU_MAX_TARGETS];
    unsigned n;
};

/* The unwinder's view of process tgid, read once (NULL: unknown or gone). */
static struct uw_proc *proc_of(struct procs *ps, __u32 tgid)
{
    for (unsigned i = 0; i < ps->n; i++)
        if (ps->tgid[i] == tgid)
            return ps->p[i];
    if (!tgid || ps->n == OFFCPU_MAX_TARGETS)
        return NULL;
    ps->tgid[ps->n] = tgid;
    return ps->p[ps->n++] = uw_proc_read(tgid);
}

/* A stack read back from a map, its counts held to the arrays (the map is the program's, but a count past
 * them would make the writers read beyond). */
static void ustack_bound(struct offcpu_ustack *u)
{
    if (u->n > OFFCPU_USER_DEPTH)
        u->n = OFFCPU_USER_DEPTH;
    if (u->nwords > OFFCPU_RECOVER_WORDS)
        u->nwords = 0;
}

/* One user stack line, with the callers the CFI unwinder recovers between its leaf and the rest of the
 * frame-pointer walk. */
static void write_ustack(FILE *f, struct procs *ps, __u64 key, struct offcpu_ustack *u, __u32 tgid)
{
    __u64 rec[UNWIND_MAX_STEPS];
    unsigned resume, d;
    int nrec;

    ustack_bound(u);
    nrec = uw_recover(proc_of(ps, tgid), u, rec, UNWIND_MAX_STEPS, &resume);
    fprintf(f, "ustack\t%llx\t%u\t", (unsigned long long)key, u->scanned);
    if (u->n)
        fprintf(f, "%llx", (unsigned long long)u->ips[0]);
    for (int r = 0; r < nrec; r++)
        fprintf(f, ",%llx", (unsigned long long)rec[r]);
    for (d = nrec ? resume : 1; d < u->n; d++)
        fprintf(f, ",%llx", (unsigned long long)u->ips[d]);
    fprintf(f, "\t%d\n", nrec);
}

/* Every user stack in the map (the program adds only stacks of target threads), then those of the
 * threads still blocked that the loader walked itself (not already in the map). */
static void dump_ustacks(FILE *f, int fd, struct idset *ids)
{
    static struct offcpu_ustack u;
    struct procs ps = {0};
    __u64 key, next;
    void *prev = NULL;

    qsort(ids->owners, ids->nown, sizeof(*ids->owners), cmp_owner);
    while (!bpf_map_get_next_key(fd, prev, &next)) {
        key = next;
        prev = &key;
        if (bpf_map_lookup_elem(fd, &key, &u))
            continue;
        write_ustack(f, &ps, key, &u, owner_of(ids, key));
    }
    for (size_t i = 0; i < ids->nlive; i++)
        if (bpf_map_lookup_elem(fd, &ids->live[i].hash, &u))
            write_ustack(f, &ps, ids->live[i].hash, &ids->live[i].u, ids->live[i].tgid);
    for (unsigned i = 0; i < ps.n; i++)
        uw_proc_free(ps.p[i]);
}

/* The on-CPU sampler's stacks: the key a perf sample is matched on, and what the CFI unwinder recovers.
 * A scanned stack (perf's walk stops at its leaf) gives its whole chain after the leaf, keyed on the
 * thread and sp. */
static void dump_samples(FILE *f, int fd, int stacks_fd)
{
    static struct offcpu_ustack u;
    struct offcpu_skey key, next;
    __u64 rec[UNWIND_MAX_STEPS], count;
    struct procs ps = {0};
    unsigned resume, d;
    void *prev = NULL;
    int nrec;

    while (!bpf_map_get_next_key(fd, prev, &next)) {
        key = next;
        prev = &key;
        if (bpf_map_lookup_elem(fd, &key, &count) || bpf_map_lookup_elem(stacks_fd, &key.ustack, &u))
            continue;
        ustack_bound(&u);
        if (!u.n)
            continue;
        nrec = uw_recover(proc_of(&ps, key.tgid), &u, rec, UNWIND_MAX_STEPS, &resume);
        if (nrec <= 0)
            resume = 1;
        fprintf(f, "sample\t%u\t%u\t%llx\t%llu\t%u\t", key.tgid, u.scanned ? key.tid : 0,
                u.scanned ? (unsigned long long)key.sp : 0ULL, (unsigned long long)count, u.scanned);
        for (d = 0; d < u.n && (u.scanned ? d < 1 : d < OFFCPU_SAMPLE_KEY); d++)
            fprintf(f, "%s%llx", d ? "," : "", (unsigned long long)u.ips[d]);
        fprintf(f, "\t%u\t", u.scanned ? 1 : resume);
        for (int r = 0; r < nrec; r++)
            fprintf(f, "%s%llx", r ? "," : "", (unsigned long long)rec[r]);
        for (d = resume; u.scanned && nrec > 0 && d < u.n; d++) /* the scan's chain, after the recovered callers */
            fprintf(f, ",%llx", (unsigned long long)u.ips[d]);
        fputs(nrec > 0 ? "\n" : "-\n", f);
    }
    for (unsigned i = 0; i < ps.n; i++)
        uw_proc_free(ps.p[i]);
}

static void dump_stats(FILE *f, int fd)
{
    int ncpu = libbpf_num_possible_cpus();
    __u64 *vals = ncpu > 0 ? calloc((size_t)ncpu, sizeof(__u64)) : NULL;
    unsigned long long sum;
    __u32 k;
    int c;

    for (k = 0; vals && k < OFFCPU_NSTATS; k++) {
        if (bpf_map_lookup_elem(fd, &k, vals))
            continue;
        for (sum = 0, c = 0; c < ncpu; c++)
            sum += vals[c];
        fprintf(f, "stat\t%s\t%llu\n", stat_names[k], sum);
    }
    free(vals);
}

int offcpu_dump(struct bpf_object *obj, const struct offcpu_opts *o, __u64 t0, __u64 end, const char *why)
{
    struct idset ids = {0};
    /* mode 0600 (the stacks hold kernel addresses); never through a link planted at the output's name */
    int fd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    int rc;

    if (!f) {
        rc = -errno;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    fprintf(f, "pmuprof-offcpu\t5\nt0_ns\t%llu\nend_ns\t%llu\nstopped_by\t%s\nmode\t%s\nmin_block_us\t%ld\n",
            (unsigned long long)t0, (unsigned long long)end, why, o->lazy ? "lazy" : "eager",
            o->lazy ? o->min_block_us : 0L);
    fprintf(f, "wakeups\t%s\n", o->no_wakeup || o->wakeup_off[0] ? "off" : "on");
    if (o->wakeup_off[0])
        fprintf(f, "wakeup_off\t%s\n", o->wakeup_off);
    if (o->sampler_off[0])
        fprintf(f, "sampler_off\t%s\n", o->sampler_off);
    fprintf(f, "limit\tthreads\t%ld\nlimit\tentries\t%ld\nlimit\tstacks\t%ld\n", o->threads, o->entries, o->stacks);
    dump_stats(f, bpf_map__fd(bpf_object__find_map_by_name(obj, "stats")));
    rc = dump_waits(f, bpf_map__fd(bpf_object__find_map_by_name(obj, "waits")), &ids);
    if (!rc)
        rc = dump_open(f, bpf_map__fd(bpf_object__find_map_by_name(obj, "starts")), &ids, o);
    if (!rc)
        rc = dump_idle(f, bpf_map__fd(bpf_object__find_map_by_name(obj, "starts")), &ids, o);
    if (!rc) {
        dump_stacks(f, bpf_map__fd(bpf_object__find_map_by_name(obj, "stacks")), &ids);
        dump_ustacks(f, bpf_map__fd(bpf_object__find_map_by_name(obj, "ustacks")), &ids);
        if (o->sample_hz)
            dump_samples(f, bpf_map__fd(bpf_object__find_map_by_name(obj, "samples")),
                         bpf_map__fd(bpf_object__find_map_by_name(obj, "sustacks")));
    }
    free(ids.ids);
    free(ids.owners);
    free(ids.live);
    if (fclose(f) && !rc)
        rc = -errno;
    return rc;
}

int offcpu_fail(const char *step, int err)
{
    fprintf(stderr, "pmuprof-offcpu: %s failed: %s\n", step, strerror(err < 0 ? -err : err));
    return err == -EPERM || err == -EACCES ? 13 : 1;
}
