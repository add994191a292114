/* decode_x86_64.c - the decoder of decode.h for x86-64 code (capstone): skid classes, jump targets. The helper
 * reads x86-64 binaries only (elfbin.c checks e_machine); another architecture is another decode_<arch>.c. */
#include "decode.h"
#include "fence_x86_64.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *skid_kind_name(int kind)
{
    static const char *const names[KIND_COUNT] = {"",     "pause",     "fence", "lfence",     "lock",
                                                  "xchg", "serialize", "rdtsc", "lock-fence", "xchg-store"};

    return (kind >= 0 && kind < KIND_COUNT) ? names[kind] : "";
}

int skid_kind_moves(int kind, int exact)
{
    if (kind == KIND_NONE)
        return 0;
    if (!exact)
        return 1;
    return kind == KIND_PAUSE || kind == KIND_LFENCE; /* pmu-facts 2.4: NCI charges the rest right */
}

int func_has_kind(const struct func_code *f, int kind)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        if (f->insns[i].kind == kind)
            return 1;
    return 0;
}

void func_free(struct func_code *f)
{
    free(f->insns);
    f->insns = NULL;
    f->n = 0;
}

long func_find(const struct func_code *f, uint64_t addr, long *containing)
{
    size_t lo = 0, hi = f->n, mid;

    *containing = -1;
    while (lo < hi) {
        mid = (lo + hi) / 2;
        if (f->insns[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    if (addr < f->insns[lo - 1].addr + f->insns[lo - 1].size)
        *containing = (long)lo - 1;
    return f->insns[lo - 1].addr == addr ? (long)lo - 1 : -1;
}

#ifdef HAVE_CAPSTONE
#include <capstone/capstone.h>

static int has_mem_operand(const cs_x86 *x)
{
    int i;

    for (i = 0; i < x->op_count; i++)
        if (x->operands[i].type == X86_OP_MEM)
            return 1;
    return 0;
}

/* One-cycle integer ops on registers and immediates only: nothing a sample could wait on. */
static int insn_is_cheap(const cs_insn *ci)
{
    switch (ci->id) {
    case X86_INS_ADD:
    case X86_INS_SUB:
    case X86_INS_INC:
    case X86_INS_DEC:
    case X86_INS_AND:
    case X86_INS_OR:
    case X86_INS_XOR:
    case X86_INS_CMP:
    case X86_INS_TEST:
    case X86_INS_MOV: return !has_mem_operand(&ci->detail->x86) && ci->detail->x86.prefix[0] != X86_PREFIX_LOCK;
    default: return 0;
    }
}

static int insn_kind(const cs_insn *ci)
{
    const cs_x86 *x = &ci->detail->x86;

    switch (ci->id) {
    case X86_INS_PAUSE: return KIND_PAUSE;
    case X86_INS_MFENCE:
    case X86_INS_SFENCE: return KIND_FENCE;
    case X86_INS_LFENCE: return KIND_LFENCE;
    case X86_INS_CPUID: return KIND_SERIALIZE;
    case X86_INS_RDTSC:
    case X86_INS_RDTSCP: return KIND_RDTSC;
    case X86_INS_XCHG: return has_mem_operand(x) ? KIND_XCHG : KIND_NONE;
    default: break;
    }
    if (x->prefix[0] == X86_PREFIX_LOCK && has_mem_operand(x))
        return insn_is_stack_noop(ci) ? KIND_LOCKFENCE : KIND_LOCK;
    /* capstone 4 may not know these: tpause (66 0f ae /6 reg), umwait (f2 0f ae /6 reg) */
    if (ci->size >= 4 && ci->bytes[ci->size - 4 + 0] == 0x0f && ci->bytes[ci->size - 3] == 0xae &&
        (ci->bytes[ci->size - 2] & 0xf8) == 0xf0 && (x->prefix[2] == 0x66 || x->prefix[0] == 0xf2))
        return KIND_PAUSE;
    return KIND_NONE;
}

static void insn_fill(csh h, struct insn *in, const cs_insn *ci, uint64_t start, uint64_t end, uint64_t *target)
{
    const cs_x86 *x = &ci->detail->x86;
    int i, jump = 0;

    memset(in, 0, sizeof(*in));
    in->addr = ci->address;
    in->size = ci->size;
    in->kind = (uint8_t)insn_kind(ci);
    in->is_nop = ci->id == X86_INS_NOP;
    in->is_cheap = insn_is_cheap(ci);
    insn_regs(h, ci, in);
    if (in->kind == KIND_PAUSE && ci->id == X86_INS_PAUSE)
        snprintf(in->text, sizeof(in->text), "pause");
    else
        snprintf(in->text, sizeof(in->text), "%.31s%s%.62s", ci->mnemonic, ci->op_str[0] ? " " : "", ci->op_str);
    *target = 0;
    for (i = 0; i < ci->detail->groups_count; i++)
        jump |= ci->detail->groups[i] == CS_GRP_JUMP;
    if (jump && x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
        uint64_t t = (uint64_t)x->operands[0].imm;
        if (t >= start && t < end)
            *target = t;
    }
    in->is_jump = *target != 0;
}

static int target_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static void mark_targets(struct func_code *f, uint64_t *targets, size_t nt)
{
    size_t i, j = 0;

    qsort(targets, nt, sizeof(*targets), target_cmp);
    for (i = 0; i < f->n && j < nt; i++) {
        while (j < nt && targets[j] < f->insns[i].addr)
            j++;
        if (j < nt && targets[j] == f->insns[i].addr)
            f->insns[i].is_target = 1;
    }
}

int func_decode(const uint8_t *bytes, size_t len, uint64_t start, struct func_code *out)
{
    csh h;
    cs_insn *ci;
    const uint8_t *code = bytes;
    size_t left = len, nt = 0, cap = len / 3 + 16;
    uint64_t addr = start, *targets;
    void *grown;

    memset(out, 0, sizeof(*out));
    out->start = start;
    out->end = start + len;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
        return -EINVAL;
    cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
    ci = cs_malloc(h);
    out->insns = calloc(cap, sizeof(*out->insns));
    targets = calloc(cap, sizeof(*targets));
    if (!ci || !out->insns || !targets) {
        free(targets);
        func_free(out);
        cs_close(&h);
        return -ENOMEM;
    }
    while (left) {
        if (!cs_disasm_iter(h, &code, &left, &addr, ci)) { /* undecodable byte: skip it */
            code++, left--, addr++;
            continue;
        }
        if (out->n == cap && (cap *= 2)) {
            if ((grown = realloc(out->insns, cap * sizeof(*out->insns))))
                out->insns = grown;
            if (grown && (grown = realloc(targets, cap * sizeof(*targets))))
                targets = grown;
            if (!grown)
                break;
        }
        insn_fill(h, &out->insns[out->n], ci, out->start, out->end, &targets[nt]);
        nt += targets[nt] != 0;
        out->n++;
    }
    mark_targets(out, targets, nt);
    func_mark_xchg_stores(out);
    free(targets);
    cs_free(ci, 1);
    cs_close(&h);
    return out->n ? 0 : -EILSEQ;
}

#else /* !HAVE_CAPSTONE */

int func_decode(const uint8_t *bytes, size_t len, uint64_t start, struct func_code *out)
{
    (void)bytes;
    (void)len;
    memset(out, 0, sizeof(*out));
    out->start = start;
    return -ENOSYS;
}
#endif
