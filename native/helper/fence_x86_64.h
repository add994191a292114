/* fence_x86_64.h - the x86 full-fence forms besides mfence: locked no-op RMW on the stack, xchg as a store. */
#ifndef PMUPROF_FENCE_X86_64_H
#define PMUPROF_FENCE_X86_64_H

#include "decode.h"

#ifdef HAVE_CAPSTONE
#include <capstone/capstone.h>

/* lock or/add $0 to a stack slot: changes nothing, so it is only there for its fence. */
int insn_is_stack_noop(const cs_insn *ci);
/* Fill in->gpr_read / gpr_write / flow / xchg_reg from capstone's register access lists. */
void insn_regs(csh h, const cs_insn *ci, struct insn *in);
#endif

#endif
