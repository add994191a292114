/* offcpu.bpf.c - off-CPU time of the target processes' threads, summed per stack in the kernel.
 *
 * At sched_switch the thread leaving the CPU (prev) gets a start record: time, user and kernel
 * stack ids, and its state. When that thread is switched in again (next), the time it spent off
 * the CPU is added to its (tgid, tid, user stack, kernel stack, state) entry. Nothing is copied to
 * user space per event; the loader reads the maps once, at the end.
 *
 * CO-RE without vmlinux.h: the two task_struct fields used are declared with
 * preserve_access_index, so libbpf relocates them against the running kernel's BTF.
 */
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
	char comm[16];
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
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1;
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

static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt,
				       unsigned int prev_state, __u64 now)
{
	struct offcpu_start s = {};
	__u32 tid = prev->pid;

	if (prev_state & 0x80) /* TASK_DEAD: the thread's last switch, it never comes back */
		return;
	s.ts = now;
	s.tgid = prev->tgid;
	s.state = state_of(preempt, prev_state);
	s.kstack = bpf_get_stackid(ctx, &stacks, 0);
	s.ustack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (s.kstack < 0)
		stat_add(OFFCPU_STAT_KSTACK_LOST);
	if (s.ustack < 0)
		stat_add(OFFCPU_STAT_USTACK_LOST);
	if (bpf_map_update_elem(&starts, &tid, &s, BPF_ANY))
		stat_add(OFFCPU_STAT_THREADS_FULL);
	stat_add(OFFCPU_STAT_SWITCHES);
}

static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct offcpu_key key = {.tgid = next->tgid, .tid = next->pid};
	struct offcpu_start *s = bpf_map_lookup_elem(&starts, &key.tid);
	struct offcpu_val *v, zero = {};
	__u64 delta;

	if (s) {
		key.ustack = s->ustack;
		key.kstack = s->kstack;
		key.state = s->state;
		delta = now - s->ts;
		bpf_map_delete_elem(&starts, &key.tid);
	} else { /* off the CPU since before the capture: stack unknown, time counted from t0 */
		key.ustack = key.kstack = -1;
		key.state = OFFCPU_STATE_BEFORE;
		delta = now > cfg.t0_ns ? now - cfg.t0_ns : 0;
	}
	v = bpf_map_lookup_elem(&waits, &key);
	if (!v) {
		BPF_CORE_READ_STR_INTO(&zero.comm, next, comm);
		if (bpf_map_update_elem(&waits, &key, &zero, BPF_NOEXIST) == -7 /* -E2BIG: full */) {
			stat_add(OFFCPU_STAT_ENTRIES_FULL);
			return;
		}
		v = bpf_map_lookup_elem(&waits, &key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->ns, delta);
	__sync_fetch_and_add(&v->count, 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	int out = is_target(prev->tgid), in = is_target(next->tgid);
	__u64 now;

	if (!out && !in) /* most switches on a busy host: leave before reading the clock */
		return 0;
	now = bpf_ktime_get_ns();
	if (out)
		switch_out(ctx, prev, preempt, prev_state, now);
	if (in)
		switch_in(next, now);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
