/* offcpu_user.h - the loader's options and its map dump (user space only). */
#ifndef PMUPROF_OFFCPU_USER_H
#define PMUPROF_OFFCPU_USER_H

#include <linux/types.h>
#include "offcpu.h"

struct bpf_object;

struct offcpu_opts {
    unsigned pids[OFFCPU_MAX_TARGETS];
    unsigned npids;
    double duration;
    const char *out;
    long threads, entries, stacks;
    long min_block_us;
    int eager; /* asked for: stacks at every switch-out */
    int start_usr1; /* the window starts at SIGUSR1 (perf's), not at attach */
    int lazy; /* used: stacks at switch-in, for blocks of min_block_us or more */
    long sample_hz; /* the on-CPU sampler's rate (0: off) */
    char sampler_off[128]; /* asked for but not attached: why ("" otherwise) */
    int no_wakeup; /* --no-wakeup: the sched_wakeup program left out */
    char wakeup_off[128]; /* asked for but not attached: why ("" otherwise) */
    const struct offcpu_range *code; /* the targets' executable mappings at the start, sorted */
    unsigned ncode;
};

/* Write the maps to o->out (text, format in dump.c); 0 or a negative errno. */
int offcpu_dump(struct bpf_object *obj, const struct offcpu_opts *o, __u64 t0, __u64 end, const char *why);
/* Walk the user stack of thread tid of tgid, still blocked since it left the CPU with registers ip, sp,
 * bp, from user space (process_vm_readv) as the program walks one at switch-in; the hash of the
 * frames (as the program's), 0 when the stack cannot be read or the thread ran meanwhile. */
__u64 ulive_walk(const struct offcpu_opts *o, unsigned tgid, unsigned tid, __u64 ip, __u64 sp, __u64 bp,
                 struct offcpu_ustack *u);
/* Print "pmuprof-offcpu: STEP failed: REASON" and return the exit status for it. */
int offcpu_fail(const char *step, int err);

#endif
