/* offcpu.bpf.c - off-CPU time of the target processes' threads, summed per stack in the kernel.
 *
 * Every thread seen keeps a start record until its last switch: a block open since its switch-out, or
 * none (ON, set at its switch-in). A switch-in of a thread already ON, or a switch-out of one with a block
 * open, is an event the program never saw (with other tracers starting and stopping beside it, the kernel
 * was seen to skip it for part of the switches): counted as missed, never as a wait since the window's start.
 *
 * Lazy mode (the default where the kernel has the sched_exit_tp tracepoint, 6.16+): at sched_switch
 * the thread leaving the CPU (prev) gets a start record with only its time, state and user registers,
 * no stack walk. When it runs again, sched_exit_tp fires in its own context (current is the thread,
 * its memory readable): a block of at least min_block_ns gets its kernel and user stacks taken there
 * and its time added to its (tgid, tid, user stack, kernel stack, state) entry; a shorter one is added
 * to its (tgid, tid, state | OFFCPU_SHORT) entry, without stacks. Most switches of a busy server are
 * short, so most switches walk no stack.
 *
 * Eager mode (older kernels): both stacks are taken at every switch-out and the time is added at
 * switch-in in sched_switch (next). Nothing is copied to user space per event; the loader reads the
 * maps once, at the end.
 *
 * Wake-ups (sched_wakeup, unless the loader leaves the program out): a sleeping target thread's start
 * record gets the time it was woken, so its block splits in two at switch-in: blocked (switch-out to
 * wake-up: the wait a rule names) and runnable (wake-up to switch-in: waiting for a CPU), the latter
 * summed apart in the entry's runq_ns. A preempted thread (R) waited for a CPU all along.
 *
 * CO-RE without vmlinux.h: the task_struct fields used are declared here, and the pt_regs fields in
 * arch/ (ARCH_REGS_*), with preserve_access_index, so libbpf relocates them against the running kernel's BTF.
 */
#include "arch/arch.h" /* first: it names the target for bpf_tracing.h */

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "offcpu.h"

struct task_struct {
    int pid;
    int tgid;
    int on_cpu; /* CONFIG_SMP: 1 while it runs (or is being switched out) */
    unsigned long nvcsw, nivcsw; /* its context switches, voluntary and not (counted before sched_switch) */
    char comm[16];
    __u64 start_time; /* CLOCK_MONOTONIC ns at fork */
} __attribute__((preserve_access_index));

/* The loader fills this, the only .rodata variable, before loading (frozen afterwards). */
const volatile struct offcpu_config cfg = {};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, OFFCPU_DEFAULT_THREADS); /* resized by the loader */
    __type(key, __u32);
    __type(value, struct offcpu_start);
} starts SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, OFFCPU_DEFAULT_ENTRIES);
    __type(key, struct offcpu_key);
    __type(value, struct offcpu_val);
} waits SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_STACK_TRACE);
    __uint(max_entries, OFFCPU_DEFAULT_STACKS);
    __uint(key_size, sizeof(__u32));
    __uint(value_size, OFFCPU_MAX_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, OFFCPU_DEFAULT_STACKS);
    __type(key, __u64);
    __type(value, struct offcpu_ustack);
} ustacks SEC(".maps");

/* The on-CPU sampler's ticks (--sample-hz; not loaded without it), and their user stacks: apart from the
 * off-CPU stacks, so a busy sampler never takes the room of a wait's stack. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, OFFCPU_DEFAULT_ENTRIES);
    __type(key, struct offcpu_skey);
    __type(value, __u64);
} samples SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, OFFCPU_DEFAULT_STACKS);
    __type(key, __u64);
    __type(value, struct offcpu_ustack);
} sustacks SEC(".maps");

/* enum offcpu_clock: t0 (waits that began before it count from it; 0: nothing counted yet) and the
 * number of code ranges. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, OFFCPU_NCLOCK);
    __type(key, __u32);
    __type(value, __u64);
} clock SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, OFFCPU_MAX_CODE);
    __type(key, __u32);
    __type(value, struct offcpu_range);
} code SEC(".maps");

struct scratch {
    struct offcpu_ustack u;
    __u64 words[OFFCPU_SCAN_WORDS];
};

/* One scratch area per CPU for the scheduler programs and one for the on-CPU sampler: the sampler's
 * timer interrupt can fire while on_switch_in runs (interrupts are on at sched_exit_tp). */
enum scratch_slot { SCRATCH_SCHED = 0, SCRATCH_SAMPLER = 1, NSCRATCH = 2 };

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, NSCRATCH);
    __type(key, __u32);
    __type(value, struct scratch);
} scratch SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, OFFCPU_NSTATS);
    __type(key, __u32);
    __type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 which)
{
    __u64 *v = bpf_map_lookup_elem(&stats, &which);

    if (v)
        __sync_fetch_and_add(v, 1); /* the sampler's interrupt may nest in a scheduler program */
}

static __always_inline int is_target(__u32 tgid)
{
    __u32 i;

    for (i = 0; i < OFFCPU_MAX_TARGETS; i++) {
        if (i >= cfg.ntargets)
            return 0;
        if (cfg.targets[i] == tgid)
            return 1;
    }
    return 0;
}

/* R: preempted or still runnable; S: interruptible sleep; D: uninterruptible; T: stopped/traced. */
static __always_inline __u32 state_of(bool preempt, unsigned int prev_state)
{
    if (preempt || !(prev_state & 0xff))
        return OFFCPU_STATE_R;
    if (prev_state & 0x02) /* TASK_UNINTERRUPTIBLE, also TASK_KILLABLE and TASK_IDLE */
        return OFFCPU_STATE_D;
    if (prev_state & 0x01)
        return OFFCPU_STATE_S;
    if (prev_state & 0x0c) /* __TASK_STOPPED, __TASK_TRACED */
        return OFFCPU_STATE_T;
    return OFFCPU_STATE_OTHER;
}

/* Whether addr lies in one of the targets' executable mappings (a return address must): a binary
 * search of the sorted ranges the loader wrote (no mmap lock is taken at a context switch). 0: not code;
 * 1: the executable's; 2: a library's (which may have no frame pointers). */
/* Global (not inlined) subprograms: the verifier checks each once, not at every call site and loop
 * iteration (inlined, the load took seconds and could hit the 1M-instruction limit). */
__attribute__((noinline)) int in_code(__u64 addr)
{
    __u32 lo = 0, hi, i, mid, which = OFFCPU_CLOCK_NCODE;
    __u64 *ncode = bpf_map_lookup_elem(&clock, &which);
    struct offcpu_range *r;

    if (!ncode)
        return 0;
    hi = (__u32)*ncode;
    for (i = 0; i < 11 && lo < hi; i++) { /* 2^11 > OFFCPU_MAX_CODE */
        mid = (lo + hi) / 2;
        r = bpf_map_lookup_elem(&code, &mid);
        if (!r)
            return 0;
        if (addr < r->start)
            hi = mid;
        else if (addr >= r->end)
            lo = mid + 1;
        else
            return 1 + (r->fpless != 0);
    }
    return 0;
}

/* Whether fp points up the stack to a pair (next fp, return address) that is a frame: the next fp
 * further up (or 0), the return address in an executable mapping. */
__attribute__((noinline)) int frame_ok(__u64 fp, __u64 sp)
{
    __u64 pair[2];

    if ((fp & 7) || fp < sp || fp >= sp + OFFCPU_STACK_WINDOW || bpf_probe_read_user(pair, sizeof(pair), (void *)fp))
        return 0;
    return (!pair[0] || (pair[0] > fp && pair[0] < fp + OFFCPU_STACK_WINDOW)) && in_code(pair[1]);
}

/* Whether the frame chain from fp reaches the thread's first frame (a saved fp of 0) with every return
 * address in code: a word above sp that only looks like a saved fp (a stale one, a pointer to a local)
 * does not, and is not taken. */
__attribute__((noinline)) int chain_to_root(__u64 fp)
{
    __u64 pair[2];
    __u32 i;

    for (i = 0; i < OFFCPU_CHAIN_DEPTH; i++) {
        if ((fp & 7) || bpf_probe_read_user(pair, sizeof(pair), (void *)fp) || !in_code(pair[1]))
            return 0;
        if (!pair[0])
            return 1;
        if (pair[0] <= fp || pair[0] >= fp + OFFCPU_STACK_WINDOW)
            return 0;
        fp = pair[0];
    }
    return 0;
}

struct walk { /* bpf_loop context (pointers to map values do not survive the trip: looked up again) */
    __u64 sp, bp;
    __u32 n;
    __u32 chains; /* candidates followed so far (bounded: this runs inside the scheduler) */
    __u32 slot; /* enum scratch_slot */
};

static __always_inline struct scratch *scratch_area(__u32 slot)
{
    return bpf_map_lookup_elem(&scratch, &slot);
}

/* bpf_loop body: word i above sp, if it is a saved frame pointer, ends the scan with w->bp set. */
static long scan_word(__u32 i, struct walk *w)
{
    struct scratch *sc = scratch_area(w->slot);
    __u64 word;

    if (!sc)
        return 1;
    word = sc->words[i & (OFFCPU_SCAN_WORDS - 1)]; /* bpf_loop calls this OFFCPU_SCAN_WORDS times */
    if ((word & 0xf) || word <= w->sp + i * 8 || !frame_ok(word, w->sp))
        return 0;
    if (chain_to_root(word)) {
        w->bp = word;
        return 1;
    }
    return ++w->chains >= OFFCPU_SCAN_CHAINS;
}

struct codehash {
    __u64 hash;
    __u32 slot;
};

/* bpf_loop body: word i of the recovery window, hashed in when it points into the targets' code. */
static long hash_code_word(__u32 i, struct codehash *ch)
{
    struct scratch *sc = scratch_area(ch->slot);
    __u64 word;

    if (!sc)
        return 1;
    word = sc->u.words[i & (OFFCPU_RECOVER_WORDS - 1)];
    if (word >= 4096 && in_code(word))
        ch->hash = (ch->hash ^ word) * 1099511628211ull;
    return 0;
}

/* bpf_loop body: one frame-pointer step; stops at the first implausible frame. */
static long walk_frame(__u32 i, struct walk *w)
{
    struct scratch *sc = scratch_area(w->slot);
    __u64 pair[2];
    __u32 at = i + 1;

    if (!sc || !w->bp || (w->bp & 7) || bpf_probe_read_user(pair, sizeof(pair), (void *)w->bp) || pair[1] < 4096)
        return 1;
    sc->u.ips[at & (OFFCPU_USER_DEPTH - 1)] = pair[1]; /* bpf_loop stops at OFFCPU_USER_DEPTH - 1 */
    w->n = at + 1;
    if (pair[0] <= w->bp)
        return 1;
    w->bp = pair[0];
    return 0;
}

/* Walk the current thread's user stack by frame pointers into sc->u; returns its hash (0: none).
 * When the leaf used the frame-pointer register for something else (glibc's futex waits do), the chain starts at the first
 * saved frame pointer found in the OFFCPU_SCAN_WORDS words above sp. */
static __always_inline __u64 walk_user(struct task_struct *task, struct scratch *sc, __u32 slot)
{
    struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
    struct walk w = {.n = 1, .slot = slot};
    __u64 hash = 1469598103934665603ull;
    __u32 i;

    if (!regs)
        return 0;
    w.sp = ARCH_REGS_SP(regs);
    w.bp = ARCH_REGS_FP(regs);
    sc->u.ips[0] = ARCH_REGS_IP(regs);
    sc->u.scanned = 0;
    sc->u.sp = w.sp;
    sc->u.bp = w.bp;
    sc->u.nwords = bpf_probe_read_user(sc->u.words, sizeof(sc->u.words), (void *)w.sp) ? 0 : OFFCPU_RECOVER_WORDS;
    if (!frame_ok(w.bp, w.sp)) {
        w.bp = 0;
        if (!bpf_probe_read_user(sc->words, sizeof(sc->words), (void *)w.sp))
            bpf_loop(OFFCPU_SCAN_WORDS, scan_word, &w, 0);
        sc->u.scanned = w.bp != 0;
    }
    sc->u.fp0 = w.bp;
    bpf_loop(OFFCPU_USER_DEPTH - 1, walk_frame, &w, 0);
    sc->u.n = w.n;
    for (i = 0; i < OFFCPU_USER_DEPTH; i++) {
        if (i >= w.n)
            break;
        hash = (hash ^ sc->u.ips[i]) * 1099511628211ull;
    }
    /* the return addresses a CFI unwind may recover are among the window's code pointers: stacks that
	 * differ there are kept apart (other words, data, would split one call path into many) */
    if (sc->u.nwords) {
        struct codehash ch = {.hash = hash, .slot = slot};

        bpf_loop(OFFCPU_RECOVER_WORDS, hash_code_word, &ch, 0);
        hash = ch.hash;
    }
    return hash ? hash : 1;
}

/* The current thread's user stack into map (from scratch slot ``slot``); its hash, 0 when none was kept.
 * *scanned: its chain was found by the scan above sp. */
static __always_inline __u64 user_stack(struct task_struct *task, void *map, __u32 slot, int *scanned)
{
    struct scratch *sc = scratch_area(slot);
    __u64 hash;

    if (!sc)
        return 0;
    hash = walk_user(task, sc, slot);
    if (!hash)
        return 0;
    *scanned = sc->u.scanned;
    if (!bpf_map_lookup_elem(map, &hash) && bpf_map_update_elem(map, &hash, &sc->u, BPF_NOEXIST) == -7)
        return 0; /* -E2BIG: the map is full */
    return hash;
}

/* A wait's user stack (the scheduler programs' scratch slot), counting the chains found by a scan. */
static __always_inline __u64 off_cpu_stack(struct task_struct *task)
{
    int scanned = 0;
    __u64 hash = user_stack(task, &ustacks, SCRATCH_SCHED, &scanned);

    if (hash && scanned)
        stat_add(OFFCPU_STAT_USTACK_SCANNED);
    return hash;
}

/* The thread's context switches so far: the one under way is counted already at sched_switch. */
static __always_inline __u64 switches_of(struct task_struct *task)
{
    return BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw);
}

/* The window's start (0: not started yet, nothing is counted). */
static __always_inline __u64 window_t0(void)
{
    __u32 which = OFFCPU_CLOCK_T0;
    __u64 *t0 = bpf_map_lookup_elem(&clock, &which);

    return t0 ? *t0 : 0;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt, unsigned int prev_state,
                                       __u64 now)
{
    struct offcpu_start s = {}, *was;
    __u32 tid = prev->pid;

    if (prev_state & 0x80) { /* TASK_DEAD: the thread's last switch, it never comes back */
        bpf_map_delete_elem(&starts, &tid);
        return;
    }
    was = bpf_map_lookup_elem(&starts, &tid);
    if (was && was->state != OFFCPU_STATE_ON && window_t0()) /* its block's end is unknown: replaced, not counted */
        stat_add(OFFCPU_STAT_IN_MISSED);
    s.ts = now;
    s.tgid = prev->tgid;
    s.nsw = switches_of(prev);
    s.state = state_of(preempt, prev_state);
    if (cfg.lazy) { /* no stack now: the registers, for a block still open at the end */
        struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

        s.kstack = OFFCPU_KSTACK_NONE;
        if (regs) {
            s.ip = ARCH_REGS_IP(regs);
            s.sp = ARCH_REGS_SP(regs);
            s.bp = ARCH_REGS_FP(regs);
        }
    } else {
        s.kstack = bpf_get_stackid(ctx, &stacks, 0);
        s.ustack = off_cpu_stack(prev);
        if (s.kstack < 0)
            stat_add(OFFCPU_STAT_KSTACK_LOST);
        if (!s.ustack)
            stat_add(OFFCPU_STAT_USTACK_LOST);
    }
    if (bpf_map_update_elem(&starts, &tid, &s, BPF_ANY))
        stat_add(OFFCPU_STAT_THREADS_FULL);
    stat_add(OFFCPU_STAT_SWITCHES);
}

/* Add delta to key's entry (created with next's comm), runq of it after a wake-up. */
static __always_inline void wait_add(struct offcpu_key *key, struct task_struct *task, __u64 delta, __u64 runq)
{
    struct offcpu_val *v, zero = {};

    v = bpf_map_lookup_elem(&waits, key);
    if (!v) {
        BPF_CORE_READ_STR_INTO(&zero.comm, task, comm);
        if (bpf_map_update_elem(&waits, key, &zero, BPF_NOEXIST) == -7 /* -E2BIG: full */) {
            stat_add(OFFCPU_STAT_ENTRIES_FULL);
            return;
        }
        v = bpf_map_lookup_elem(&waits, key);
        if (!v)
            return;
    }
    __sync_fetch_and_add(&v->ns, delta);
    if (runq)
        __sync_fetch_and_add(&v->runq_ns, runq);
    __sync_fetch_and_add(&v->count, 1);
}

/* The part of a block that began at ts inside the window (blocks that began before t0 count from it):
 * 0 when the window has not started, or the block ended before it. */
static __always_inline __u64 in_window(__u64 ts, __u64 now)
{
    __u64 t0 = window_t0();

    if (!t0 || now <= t0)
        return 0;
    return now - (ts > t0 ? ts : t0);
}

/* The part of a block of delta in the window that came after its wake-up (runnable, waiting for a CPU). */
static __always_inline __u64 runnable_part(const struct offcpu_start *s, __u64 delta, __u64 now)
{
    __u64 runq = s->wake ? in_window(s->wake, now) : 0;

    return runq < delta ? runq : delta;
}

/* A switch-in ends the thread's block: its record stays, marked on a CPU (deleted, a later switch-in without
 * a record would look like a thread off the CPU since before the capture, and count the whole window). */
static __always_inline void mark_on(struct offcpu_start *s, __u64 now)
{
    s->state = OFFCPU_STATE_ON;
    s->ts = now;
    s->wake = 0;
}

/* The first switch-in of a thread the program has not seen: its record, marked on a CPU. */
static __always_inline void seen_on(__u32 tid, __u32 tgid, __u64 now)
{
    struct offcpu_start on = {.ts = now, .tgid = tgid, .state = OFFCPU_STATE_ON, .kstack = OFFCPU_KSTACK_NONE};

    if (bpf_map_update_elem(&starts, &tid, &on, BPF_NOEXIST) == -7 /* -E2BIG: full */)
        stat_add(OFFCPU_STAT_THREADS_FULL);
}

/* A switch-in of a thread on a CPU since its last one: the program missed its switch-out. When the block
 * began is unknown: it is counted as missed, not as time. */
static __always_inline int out_missed(const struct offcpu_start *s)
{
    if (s->state != OFFCPU_STATE_ON)
        return 0;
    if (window_t0()) /* (the programs attach one by one: before the window, a switch-in may come first) */
        stat_add(OFFCPU_STAT_OUT_MISSED);
    return 1;
}

/* A block switched out at an earlier switch than the one ending now (its switch-in and a later switch-out
 * were both missed: the thread ran meanwhile): when it ended is unknown, nothing is counted. A block seen
 * first at its wake-up (ts 0) has no switch-out to compare. */
static __always_inline int stale(const struct offcpu_start *s, struct task_struct *task)
{
    if (!s->ts || s->nsw == switches_of(task))
        return 0;
    if (window_t0())
        stat_add(OFFCPU_STAT_IN_MISSED);
    return 1;
}

/* A switch-in that ends no block this program can count: its switch-out, or its block's end, was missed. */
static __always_inline int unknown_block(struct offcpu_start *s, struct task_struct *task, __u64 now)
{
    if (out_missed(s))
        return 1;
    if (!stale(s, task))
        return 0;
    mark_on(s, now);
    return 1;
}

/* A thread without a start record, switched in: either off the CPU since before the capture (counted
 * from t0, state B, no stacks) or created inside the window and runnable since (its first switch-in:
 * counted from its birth, state R; the tracer saw no switch-out because there was none). 0: nothing to
 * count (the window has not started). */
static __always_inline __u64 unrecorded(struct offcpu_key *key, struct task_struct *task, __u64 now)
{
    __u64 t0 = window_t0(), born = BPF_CORE_READ(task, start_time); /* both CLOCK_MONOTONIC */

    if (!t0 || now <= t0)
        return 0;
    key->ustack = 0;
    key->kstack = -1;
    if (born > t0) {
        key->state = OFFCPU_STATE_R;
        return now > born ? now - born : 0;
    }
    key->state = OFFCPU_STATE_BEFORE;
    return now - t0;
}

/* Eager mode, in sched_switch: next's stacks were taken when it left the CPU. */
static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
    struct offcpu_key key = {.tgid = next->tgid, .tid = next->pid};
    struct offcpu_start *s = bpf_map_lookup_elem(&starts, &key.tid);
    __u64 delta;

    __u64 runq = 0;

    if (s) {
        if (unknown_block(s, next, now))
            return;
        key.ustack = s->ustack;
        key.kstack = s->kstack;
        key.state = s->state;
        delta = in_window(s->ts, now);
        runq = runnable_part(s, delta, now);
        mark_on(s, now);
        if (!delta)
            return;
    } else {
        delta = unrecorded(&key, next, now);
        seen_on(key.tid, key.tgid, now);
        if (!delta)
            return;
    }
    wait_add(&key, next, delta, runq);
}

/* Lazy mode, in sched_exit_tp: the thread is current again; its stacks are taken now for a long block
 * (the kernel stack still goes through __schedule, the user registers and memory are its own). */
static __always_inline void switch_in_lazy(void *ctx, struct task_struct *task, __u32 tgid, __u32 tid, __u64 now)
{
    struct offcpu_key key = {.tgid = tgid, .tid = tid};
    struct offcpu_start *s = bpf_map_lookup_elem(&starts, &tid);
    __u64 delta, runq = 0;

    if (s) {
        if (unknown_block(s, task, now))
            return;
        delta = in_window(s->ts, now);
        runq = runnable_part(s, delta, now);
        key.state = s->state;
        mark_on(s, now);
    } else { /* blocked since before t0 (back in its own context, its stacks are the wait's), or newborn */
        delta = unrecorded(&key, task, now);
        seen_on(tid, tgid, now);
    }
    if (!delta)
        return;
    if (delta < cfg.min_block_ns) {
        key.state |= OFFCPU_SHORT;
        key.kstack = OFFCPU_KSTACK_NONE;
        key.ustack = 0;
        stat_add(OFFCPU_STAT_SHORT);
    } else {
        key.kstack = bpf_get_stackid(ctx, &stacks, 0);
        key.ustack = off_cpu_stack(task);
        if (key.kstack < 0)
            stat_add(OFFCPU_STAT_KSTACK_LOST);
        if (!key.ustack)
            stat_add(OFFCPU_STAT_USTACK_LOST);
        stat_add(OFFCPU_STAT_LONG);
    }
    wait_add(&key, task, delta, runq);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
    int out = is_target(prev->tgid), in = !cfg.lazy && is_target(next->tgid);
    __u64 now;

    if (!out && !in) /* most switches on a busy host: leave before reading the clock */
        return 0;
    now = bpf_ktime_get_ns();
    if (out)
        switch_out(ctx, prev, preempt, prev_state, now);
    if (in && !cfg.lazy)
        switch_in(next, now);
    return 0;
}

/* Lazy mode's switch-in: the end of __schedule, in the context of the thread that now runs (not
 * attached in eager mode). */
SEC("tp_btf/sched_exit_tp")
int BPF_PROG(on_switch_in, bool is_switch)
{
    __u64 id = bpf_get_current_pid_tgid();

    if (!is_switch || !is_target((__u32)(id >> 32)))
        return 0;
    switch_in_lazy(ctx, bpf_get_current_task_btf(), (__u32)(id >> 32), (__u32)id, bpf_ktime_get_ns());
    return 0;
}

/* A target thread woken: the rest of its block is spent waiting for a CPU. The first wake-up of a sleep
 * counts (a preempted thread, R, was runnable all along). A thread with no start record and not on a CPU
 * has been off it since before the capture: it gets a record (ts 0, state B) holding the wake-up, which its
 * switch-in reads as it reads a switch-out's. A thread on a CPU (woken before it could sleep) gets none. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
    struct offcpu_start *s, fresh = {};
    __u32 tid = p->pid;

    if (!is_target(p->tgid))
        return 0;
    s = bpf_map_lookup_elem(&starts, &tid);
    if (s) { /* on a CPU (ON), or preempted (R): runnable already */
        if (s->state != OFFCPU_STATE_R && s->state != OFFCPU_STATE_ON && !s->wake) {
            s->wake = bpf_ktime_get_ns();
            stat_add(OFFCPU_STAT_WAKEUPS);
        }
        return 0;
    }
    if (!bpf_core_field_exists(p->on_cpu) || BPF_CORE_READ(p, on_cpu))
        return 0;
    fresh.wake = bpf_ktime_get_ns();
    fresh.state = OFFCPU_STATE_BEFORE;
    fresh.tgid = p->tgid;
    fresh.kstack = -1;
    if (!bpf_map_update_elem(&starts, &tid, &fresh, BPF_NOEXIST))
        stat_add(OFFCPU_STAT_WAKEUPS);
    return 0;
}

/* The on-CPU sampler, on a cpu-clock event per CPU (--sample-hz): a target thread's tick whose user leaf
 * is in a library (no frame pointers: the walk perf records skips its caller) keeps the user stack with
 * its recovery window, counted per (process, stack). The loader's CFI unwind of those stacks is what a
 * perf sample with the same leaf and first return addresses takes as its skipped callers; where the
 * leaf's frame pointer is no frame (perf's walk stops at the leaf), what one with the same thread, sp and leaf
 * takes as its whole chain. */
SEC("perf_event")
int on_sample(void *ctx)
{
    __u64 id = bpf_get_current_pid_tgid(), zero = 0, *count;
    struct offcpu_skey key = {.tgid = (__u32)(id >> 32)};
    struct task_struct *task;
    struct pt_regs *regs;
    int scanned = 0;

    if (!is_target(key.tgid) || !window_t0())
        return 0;
    stat_add(OFFCPU_STAT_SAMPLES);
    task = bpf_get_current_task_btf();
    regs = (struct pt_regs *)bpf_task_pt_regs(task);
    if (!regs || in_code(ARCH_REGS_IP(regs)) != 2)
        return 0;
    stat_add(OFFCPU_STAT_SAMPLES_FPLESS);
    key.ustack = user_stack(task, &sustacks, SCRATCH_SAMPLER, &scanned);
    if (scanned) { /* perf's walk stops at this leaf: matched on the thread and sp instead */
        key.tid = (__u32)id;
        key.sp = ARCH_REGS_SP(regs);
    }
    if (!key.ustack) {
        stat_add(OFFCPU_STAT_SAMPLES_LOST);
        return 0;
    }
    count = bpf_map_lookup_elem(&samples, &key);
    if (!count) { /* as wait_add: created at 0 (by another CPU, maybe, meanwhile), then added to */
        bpf_map_update_elem(&samples, &key, &zero, BPF_NOEXIST);
        count = bpf_map_lookup_elem(&samples, &key);
    }
    if (count)
        __sync_fetch_and_add(count, 1);
    else
        stat_add(OFFCPU_STAT_SAMPLES_LOST); /* the map is full */
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
