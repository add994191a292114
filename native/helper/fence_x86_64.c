/* fence_x86_64.c - tell the x86 full fences that are not mfence: `lock or $0,(%rsp)` and xchg used as a store. */
#include "fence_x86_64.h"

#include <stdlib.h>
#include <string.h>

#define XCHG_LOOKAHEAD 16 /* instructions scanned for a use of the exchanged register */

/*
 * An xchg with memory swaps and fences; when the register's old value (now the memory's) is never
 * read, the swap was a store, i.e. a seq_cst store (what GCC and Clang emit for one). Scan forward in
 * straight-line code: a read keeps it an exchange (test-and-set, fetch); a write without a read, or a
 * return with the value in a register that is not the return value, makes it a store. A jump or call
 * first leaves it undecided, so it stays an exchange: a store counts as a fence only when certain.
 */
static int xchg_value_dead(const struct func_code *f, size_t i)
{
    unsigned reg = f->insns[i].xchg_reg - 1u, bit = 1u << reg;
    size_t j, end = i + 1 + XCHG_LOOKAHEAD < f->n ? i + 1 + XCHG_LOOKAHEAD : f->n;

    for (j = i + 1; j < end; j++) {
        const struct insn *in = &f->insns[j];

        if (in->gpr_read & bit)
            return 0;
        if (in->flow == FLOW_RET)
            return reg != 0 && reg != 2; /* rax / rdx carry return values */
        if (in->flow == FLOW_OTHER)
            return 0;
        if (in->gpr_write & bit)
            return 1;
    }
    return 0;
}

void func_mark_xchg_stores(struct func_code *f)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        if (f->insns[i].kind == KIND_XCHG && f->insns[i].xchg_reg && xchg_value_dead(f, i))
            f->insns[i].kind = KIND_XCHGSTORE;
}

#ifdef HAVE_CAPSTONE

/* The GPR number (rax 0, rcx 1, rdx 2, rbx 3, rsp 4, rbp 5, rsi 6, rdi 7, r8..r15) of any width, or -1. */
static int gpr_number(csh h, unsigned reg)
{
    static const char *const names[] = {"ax", "cx", "dx", "bx", "sp", "bp", "si", "di"};
    const char *name = cs_reg_name(h, reg);
    int i;

    if (!name || !*name)
        return -1;
    if (name[0] == 'r' && name[1] >= '0' && name[1] <= '9') { /* r8, r8d, r8w, r8b */
        i = atoi(name + 1);
        return i >= 8 && i <= 15 ? i : -1;
    }
    if (strlen(name) == 3 && name[2] == 'l') /* sil, dil, spl, bpl */
        name = name[1] == 'i' ? (name[0] == 's' ? "si" : "di") : (name[0] == 's' ? "sp" : "bp");
    else if (strlen(name) == 3 && (name[0] == 'r' || name[0] == 'e')) /* rax, eax, ... */
        name++;
    if (strlen(name) != 2)
        return -1;
    for (i = 0; i < 8; i++)
        if (!strcmp(name, names[i]))
            return i;
    if (name[1] == 'l' || name[1] == 'h') /* al, ah, cl, ch, dl, dh, bl, bh */
        for (i = 0; i < 4; i++)
            if (name[0] == names[i][0])
                return i;
    return -1;
}

static uint16_t gpr_mask(csh h, const uint16_t *regs, uint8_t n)
{
    uint16_t mask = 0;
    int g;
    uint8_t i;

    for (i = 0; i < n; i++)
        if ((g = gpr_number(h, regs[i])) >= 0)
            mask |= (uint16_t)(1u << g);
    return mask;
}

int insn_is_stack_noop(const cs_insn *ci)
{
    const cs_x86 *x = &ci->detail->x86;
    const cs_x86_op *dst = &x->operands[0], *src = &x->operands[1];

    if (x->prefix[0] != X86_PREFIX_LOCK || (ci->id != X86_INS_OR && ci->id != X86_INS_ADD) || x->op_count != 2)
        return 0;
    return dst->type == X86_OP_MEM && (dst->mem.base == X86_REG_RSP || dst->mem.base == X86_REG_ESP) &&
            dst->mem.index == X86_REG_INVALID && src->type == X86_OP_IMM && src->imm == 0;
}

void insn_regs(csh h, const cs_insn *ci, struct insn *in)
{
    cs_regs rd, wr;
    uint8_t nrd = 0, nwr = 0;
    int i, g;

    if (cs_regs_access(h, ci, rd, &nrd, wr, &nwr) == CS_ERR_OK) {
        in->gpr_read = gpr_mask(h, rd, nrd);
        in->gpr_write = gpr_mask(h, wr, nwr);
    }
    in->flow = FLOW_NEXT;
    for (i = 0; i < ci->detail->groups_count; i++) {
        if (ci->detail->groups[i] == CS_GRP_RET)
            in->flow = FLOW_RET;
        else if (ci->detail->groups[i] == CS_GRP_JUMP || ci->detail->groups[i] == CS_GRP_CALL ||
                 ci->detail->groups[i] == CS_GRP_INT)
            in->flow = in->flow == FLOW_RET ? FLOW_RET : FLOW_OTHER;
    }
    if (in->kind != KIND_XCHG)
        return;
    for (i = 0; i < ci->detail->x86.op_count; i++)
        if (ci->detail->x86.operands[i].type == X86_OP_REG && (g = gpr_number(h, ci->detail->x86.operands[i].reg)) >= 0)
            in->xchg_reg = (uint8_t)(g + 1);
}
#endif
