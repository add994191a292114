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
};

/* Write the maps to o->out (text, format in dump.c); 0 or a negative errno. */
int offcpu_dump(struct bpf_object *obj, const struct offcpu_opts *o, __u64 t0, __u64 end, const char *why);
/* Print "pmuprof-offcpu: STEP failed: REASON" and return the exit status for it. */
int offcpu_fail(const char *step, int err);

#endif
