/* decode.h - decode one function and classify skid-causing instructions (decode_x86_64.c: the helper reads
 * x86-64 code; the kinds are named by its instructions, their forms are listed there). */
#ifndef PMUPROF_DECODE_H
#define PMUPROF_DECODE_H

#include <stddef.h>
#include <stdint.h>

enum skid_kind {
    KIND_NONE = 0,
    KIND_PAUSE, /* pause / rep nop, tpause, umwait */
    KIND_FENCE, /* mfence, sfence */
    KIND_LFENCE,
    KIND_LOCK, /* lock-prefixed read-modify-write */
    KIND_XCHG, /* xchg with a memory operand (implicitly locked) */
    KIND_SERIALIZE, /* cpuid */
    KIND_RDTSC, /* rdtsc, rdtscp */
    KIND_LOCKFENCE, /* locked no-op RMW on the stack: a full fence */
    KIND_XCHGSTORE, /* xchg reg,mem whose old value is dead: a seq_cst store (a full fence) */
    KIND_COUNT
};

struct insn {
    uint64_t addr;
    uint16_t size;
    uint8_t kind;
    uint8_t is_jump; /* direct jump with a target inside the function */
    uint8_t is_target; /* some jump in the function lands here */
    uint8_t is_cheap; /* a register/immediate-only integer op (add, sub, cmp, mov, ...): retires with a stall
			      before it, so its samples may be the stall's */
    uint8_t is_nop; /* nop / multi-byte nop: never the culprit, skid passes over it */
    uint8_t flow; /* FLOW_*: how control leaves after it (fence.c reads it) */
    uint8_t xchg_reg; /* for KIND_XCHG: 1 + the general register exchanged, else 0 */
    uint16_t gpr_read, gpr_write; /* general registers read / written, bit = the decoder's GPR number */
    char text[96];
};

struct func_code {
    uint64_t start, end;
    struct insn *insns;
    size_t n;
};

enum { FLOW_NEXT = 0, FLOW_RET, FLOW_OTHER }; /* falls through; returns; jumps or calls */

/* Decode [start, start+len) from bytes; 0, -ENOSYS (no capstone), -ENOMEM, -EILSEQ (nothing decoded). */
int func_decode(const uint8_t *bytes, size_t len, uint64_t start, struct func_code *out);
void func_free(struct func_code *f);
/* Index of the instruction starting at addr, or -1; *containing gets the one holding it. */
long func_find(const struct func_code *f, uint64_t addr, long *containing);
const char *skid_kind_name(int kind);
/* Whether a sample right after an instruction of this kind moves back (exact: PEBS eventing IP). */
int skid_kind_moves(int kind, int exact);
/* Reclassify KIND_XCHG as KIND_XCHGSTORE where the exchanged register is dead afterwards (fence.c). */
void func_mark_xchg_stores(struct func_code *f);
/* Quick test: any PAUSE (f3 90) decoded in this code? */
int func_has_kind(const struct func_code *f, int kind);

#endif
