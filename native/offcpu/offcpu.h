/* offcpu.h - types shared by the BPF program and its loader (pmuprof-offcpu). */
#ifndef PMUPROF_OFFCPU_H
#define PMUPROF_OFFCPU_H

#define OFFCPU_MAX_TARGETS 16
#define OFFCPU_MAX_DEPTH 127 /* kernel stacks: the kernel's perf_event_max_stack default */
#define OFFCPU_USER_DEPTH 128 /* user stacks (a power of two: indexes are masked for the verifier) */
#define OFFCPU_DEFAULT_THREADS 16384
#define OFFCPU_DEFAULT_ENTRIES 16384
#define OFFCPU_DEFAULT_STACKS 8192
#define OFFCPU_MAX_CODE 1024 /* executable mappings of the targets known to the program */
#define OFFCPU_SCAN_WORDS 128 /* words above the user sp searched for a saved frame pointer */
#define OFFCPU_SCAN_CHAINS 4 /* candidates followed to the thread root, at most, per switch */
#define OFFCPU_CHAIN_DEPTH 48 /* frames a candidate's chain may take to reach the root */
#define OFFCPU_STACK_WINDOW (8u << 20) /* a frame pointer further than this above sp is not one */
#define OFFCPU_RECOVER_WORDS                                                                                           \
    64 /* words above sp kept with a user stack: CFI unwinding of the
                                       * frame-pointer-less frames at its leaf (glibc) reads them */
#define OFFCPU_DEFAULT_MIN_BLOCK_US 1000 /* lazy mode: blocks shorter than this are summed without stacks */
#define OFFCPU_SHORT 0x100 /* in offcpu_key.state: blocks under the threshold, no stacks */
#define OFFCPU_KSTACK_NONE (-61) /* -ENODATA: no kernel stack taken (short block, or still open) */
/* On-CPU sampler: the leaf and the frame-pointer walk's first return addresses that a perf sample must
 * share with a sampled stack to take its recovered callers (native/perfdata/callers.h CALLERS_KEY). */
#define OFFCPU_SAMPLE_KEY 4

enum offcpu_state {
    OFFCPU_STATE_R = 0, /* preempted / runnable: waited for a CPU */
    OFFCPU_STATE_S = 1, /* interruptible sleep: futex, poll, condition variables */
    OFFCPU_STATE_D = 2, /* uninterruptible: disk I/O, page faults, kernel locks */
    OFFCPU_STATE_T = 3, /* stopped or traced */
    OFFCPU_STATE_OTHER = 4,
    OFFCPU_STATE_BEFORE = 5, /* off the CPU since before the capture began */
    OFFCPU_STATE_ON = 6, /* start records only: seen switching in, no block open (never in a wait entry) */
};

enum offcpu_stat {
    OFFCPU_STAT_SWITCHES = 0, /* target threads switched out */
    OFFCPU_STAT_KSTACK_LOST = 1, /* kernel stack not stored (stack map full or hash collision) */
    OFFCPU_STAT_USTACK_LOST = 2, /* user stack not stored (same, or no user stack) */
    OFFCPU_STAT_THREADS_FULL = 3, /* a switch-out not tracked: thread map full */
    OFFCPU_STAT_ENTRIES_FULL = 4, /* off-CPU time dropped: wait map full */
    OFFCPU_STAT_USTACK_SCANNED = 5, /* user stacks whose frame chain was found by scanning above sp */
    OFFCPU_STAT_SHORT = 6, /* lazy mode: blocks under the threshold, summed without stacks */
    OFFCPU_STAT_LONG = 7, /* lazy mode: blocks at or above it, stacks taken at switch-in */
    OFFCPU_STAT_SAMPLES = 8, /* on-CPU sampler (--sample-hz): ticks that found a target thread running */
    OFFCPU_STAT_SAMPLES_FPLESS = 9, /* those whose user leaf is in code without frame pointers: stack kept */
    OFFCPU_STAT_SAMPLES_LOST = 10, /* those not kept (sample or stack map full) */
    OFFCPU_STAT_WAKEUPS = 11, /* sleeping target threads woken (sched_wakeup): the rest of their wait is runnable */
    OFFCPU_STAT_OUT_MISSED = 12, /* switch-ins of threads seen on a CPU since: a switch-out the program never saw */
    OFFCPU_STAT_IN_MISSED = 13, /* blocks whose end the program did not see (a switch-out over a block still
                                 * open; a switch-in after further switches than the block's) */
    OFFCPU_NSTATS = 14,
};

/* One per target thread seen since the program was attached (deleted at its last switch, TASK_DEAD): a block
 * open since its switch-out (state R, S, D, T, ?), off since before the capture (B), or none (ON: it switched
 * in since). A thread without one was never seen: off the CPU since the capture began. */
struct offcpu_start {
    __u64 ts; /* switch-out (ON: switch-in); 0: a thread off the CPU since before the capture, seen first at its wake-up */
    __u64 wake; /* sched_wakeup of a sleeping thread (0: not woken yet): from then on it waits for a CPU */
    __u64 ustack; /* eager mode: hash of the user frames (key of the ustacks map); 0: none */
    __s32 kstack; /* eager mode: stack map id; below 0: -errno (lazy mode: OFFCPU_KSTACK_NONE) */
    __u32 state;
    __u32 tgid;
    __u32 pad;
    __u64 nsw; /* the thread's context switches (nvcsw + nivcsw) counted at this switch-out: the switch-in
	            * that ends this block finds the same number, one after a missed switch-out finds more */
    __u64 ip, sp, bp; /* lazy mode: the user registers at switch-out (the loader walks a block still
	                   * open at the end from them) */
};

/* A user stack walked by the program itself: frame pointers, and when the leaf clobbered the frame pointer (glibc's
 * futex wrappers do), the first chain found by scanning a few words above sp. sp, bp and the words
 * above sp (nwords of them; 0: unreadable) let the loader recover, with .eh_frame CFI, the callers a
 * frame-pointer walk skips under a leaf without frame pointers. */
struct offcpu_ustack {
    __u32 n;
    __u32 scanned;
    __u64 ips[OFFCPU_USER_DEPTH];
    __u64 sp, bp;
    __u64 fp0; /* the frame the walk started from (bp, or the saved fp the scan found; 0: none): the CFI
	            * recovery must join the walk there */
    __u32 nwords;
    __u32 pad;
    __u64 words[OFFCPU_RECOVER_WORDS];
};

struct offcpu_config {
    __u32 ntargets;
    __u32 targets[OFFCPU_MAX_TARGETS]; /* tgids */
    __u32 lazy; /* 1: stacks at switch-in (tp_btf/sched_exit_tp, in the thread's own context), only
	                      * for blocks of at least min_block_ns; 0: stacks at every switch-out (eager) */
    __u64 min_block_ns;
};

enum offcpu_clock { /* entries of the clock map, written by the loader once the program is attached */
                    OFFCPU_CLOCK_T0 = 0, /* CLOCK_MONOTONIC (= bpf_ktime_get_ns) at attach; 0: not yet */
                    OFFCPU_CLOCK_NCODE = 1, /* entries of the code map (a map value, not .rodata: the verifier would
	                         * otherwise walk the binary search for that constant, seconds per load) */
                    OFFCPU_NCLOCK = 2,
};

struct offcpu_range {
    __u64 start, end;
    __u64 fpless; /* 1: not the process's executable (a library: may have no frame pointers, as glibc) */
};

/* On-CPU sampler: ticks summed per (process, user stack), for samples whose leaf has no frame pointers.
 * When the leaf's frame pointer is no frame (the chain was found by a scan), perf's own walk stops at the leaf: such
 * ticks are kept per thread and user sp too, the key a perf sample with only its leaf is matched on. */
struct offcpu_skey {
    __u64 ustack; /* key of the sampled user stacks map */
    __u64 sp; /* scanned stacks: the user sp (0 otherwise) */
    __u32 tgid;
    __u32 tid; /* scanned stacks: the thread (0 otherwise) */
};

struct offcpu_key {
    __u64 ustack;
    __u32 tgid;
    __u32 tid;
    __s32 kstack;
    __u32 state;
};

struct offcpu_val {
    __u64 ns; /* off the CPU in all */
    __u64 runq_ns; /* the part after a wake-up: runnable, waiting for a CPU (ns - runq_ns: blocked) */
    __u64 count;
    char comm[16];
};

#endif
