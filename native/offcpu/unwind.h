/* unwind.h - recover the callers a frame-pointer walk skips under a leaf without frame pointers. */
#ifndef PMUPROF_OFFCPU_UNWIND_H
#define PMUPROF_OFFCPU_UNWIND_H

#include <linux/types.h>

#include "offcpu.h"

#define UNWIND_MAX_STEPS 16 /* CFI frames unwound per stack, at most */

struct uw_proc;

/* One process's file mappings (/proc/PID/maps), its executable's among them; NULL when unreadable. */
struct uw_proc *uw_proc_read(unsigned pid);
void uw_proc_free(struct uw_proc *p);

/* Unwind u's leaf with the .eh_frame CFI of the binaries its frames are in, using the registers and
 * stack words the program saved, until a return address is one the frame-pointer walk has (ips[k]) or
 * is in the process's executable (which keeps frame pointers: that frame's CFA, by its CFI, must be the
 * one the walk started from, u->fp0 + 16, or nothing is recovered). The return addresses recovered on
 * the way go into out (cap at most), to stand between ips[0] and ips[*resume]. Returns how many (0:
 * none recovered or nothing to recover; *resume is then 1). */
int uw_recover(struct uw_proc *p, const struct offcpu_ustack *u, __u64 *out, int cap, unsigned *resume);

#endif
