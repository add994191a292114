/* skid.c - move samples that sit right after PAUSE / fences / locked ops back onto them. */
#include "helper.h"
#include "decode.h"
#include "elfbin.h"
#include "samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct histo {
    uint64_t *raw, *corrected;
    uint8_t *ambiguous;
    uint64_t total, moved, ambiguous_samples, misaligned, by_kind[KIND_COUNT];
};

/*
 * The instruction a sample at insns[idx] (starting at addr) really belongs to: the static
 * predecessor when it is PAUSE / a fence / a locked op, looking back past at most MAX_PASSED
 * instructions that cost nothing beside the stall: NOPs (seen on mfence; nop; pop) and at most
 * one one-cycle register op, which retires with the stall (seen on a loaded VM in ut_delay's
 * pause; add; add loop: 14 % of the samples two past the pause).
 * -1 when the sample stays. *ambiguous: some instruction on the way is also a jump target.
 */
#define MAX_PASSED 2
static long skid_culprit(const struct func_code *f, long idx, uint64_t addr, int exact, int *ambiguous)
{
    long j = idx - 1, passed = 0, cheap = 0;

    *ambiguous = f->insns[idx].is_target;
    while (j >= 0 && f->insns[j].addr + f->insns[j].size == addr) {
        if (skid_kind_moves(f->insns[j].kind, exact))
            return j;
        if (++passed > MAX_PASSED || !(f->insns[j].is_nop || (f->insns[j].is_cheap && !cheap++)))
            return -1;
        *ambiguous |= f->insns[j].is_target;
        addr = f->insns[j].addr;
        j--;
    }
    return -1;
}

/* Add one sample at addr to the histograms of f. */
static void histo_add(struct histo *h, const struct func_code *f, uint64_t addr, uint64_t count, int exact)
{
    long containing, culprit, idx = func_find(f, addr, &containing);
    int ambiguous;

    if (idx < 0) {
        h->misaligned += count;
        idx = containing >= 0 ? containing : 0;
    }
    h->raw[idx] += count;
    h->total += count;
    culprit = skid_culprit(f, idx, addr, exact, &ambiguous);
    if (culprit >= 0) {
        h->corrected[culprit] += count;
        h->moved += count;
        if (ambiguous) {
            h->ambiguous[idx] = 1;
            h->ambiguous_samples += count;
        }
        return;
    }
    h->corrected[idx] += count;
}

static void insn_emit(struct jbuf *out, const struct func_code *f, const struct histo *h, size_t i)
{
    const struct insn *in = &f->insns[i];

    jbuf_open(out, '{');
    jbuf_khex(out, "address", in->addr);
    jbuf_kuint(out, "offset", in->addr - f->start);
    jbuf_kstr(out, "text", in->text);
    jbuf_kstr(out, "kind", skid_kind_name(in->kind));
    jbuf_kuint(out, "raw", h->raw[i]);
    jbuf_kuint(out, "corrected", h->corrected[i]);
    jbuf_kbool(out, "ambiguous", h->ambiguous[i]);
    jbuf_kbool(out, "branch_target", in->is_target);
    jbuf_close(out, '}');
}

static int insn_hot(const struct func_code *f, const struct histo *h, size_t i)
{
    if (h->raw[i] || h->corrected[i])
        return 1;
    return i + 1 < f->n && (h->raw[i + 1] || h->corrected[i + 1]); /* show the predecessor too */
}

static void func_emit(struct jbuf *out, const struct fn_ref *fr, const struct func_code *f, struct histo *h,
                      int hot_only)
{
    size_t i;
    int k;

    jbuf_kuint(out, "samples", h->total);
    jbuf_kuint(out, "moved", h->moved);
    jbuf_kuint(out, "ambiguous_samples", h->ambiguous_samples);
    jbuf_kuint(out, "misaligned_samples", h->misaligned);
    jbuf_kuint(out, "past_end_samples", fr->past_end);
    jbuf_key(out, "corrected_by_kind");
    jbuf_open(out, '{');
    for (i = 0; i < f->n; i++)
        if (f->insns[i].kind)
            h->by_kind[f->insns[i].kind] += h->corrected[i];
    for (k = 1; k < KIND_COUNT; k++)
        if (h->by_kind[k])
            jbuf_kuint(out, skid_kind_name(k), h->by_kind[k]);
    jbuf_close(out, '}');
    jbuf_kint(out, "instruction_count", (long long)f->n);
    jbuf_key(out, "instructions");
    jbuf_open(out, '[');
    for (i = 0; i < f->n; i++)
        if (!hot_only || insn_hot(f, h, i))
            insn_emit(out, f, h, i);
    jbuf_close(out, ']');
}

/* Decode one function and histogram its samples; the JSON object is already open. */
static int func_correct(struct jbuf *out, struct elfbin *b, const struct sample_set *set, long fi, int exact,
                        int hot_only, uint64_t *moved)
{
    const struct fn_ref *fr = &set->f[fi];
    size_t len = fr->end - fr->start, i;
    struct func_code f;
    struct histo h;
    uint8_t *bytes = malloc(len ? len : 1);
    int rc = bytes ? elfbin_read(b, fr->start, bytes, len) : -ENOMEM;

    if (!rc)
        rc = func_decode(bytes, len, fr->start, &f);
    free(bytes);
    if (rc)
        return rc;
    memset(&h, 0, sizeof(h));
    h.raw = calloc(f.n, sizeof(*h.raw));
    h.corrected = calloc(f.n, sizeof(*h.corrected));
    h.ambiguous = calloc(f.n, 1);
    if (h.raw && h.corrected && h.ambiguous) {
        for (i = 0; i < set->n; i++)
            if (set->s[i].fn == fi)
                histo_add(&h, &f, set->s[i].addr, set->s[i].count, exact);
        func_emit(out, fr, &f, &h, hot_only);
        *moved += h.moved;
    } else {
        rc = -ENOMEM;
    }
    free(h.raw);
    free(h.corrected);
    free(h.ambiguous);
    func_free(&f);
    return rc;
}

static uint64_t fn_samples(const struct sample_set *set, long fi)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < set->n; i++)
        if (set->s[i].fn == fi)
            n += set->s[i].count;
    return n;
}

static const char *decode_error_text(int rc)
{
    if (rc == -ENOSYS)
        return "built without capstone: no x86 decoding";
    if (rc == -EFAULT)
        return "function bytes are not in the file (bss or a changed binary?)";
    if (rc == -EILSEQ)
        return "nothing decodable in the function";
    return strerror(-rc);
}

static void functions_emit(struct jbuf *out, struct elfbin *b, const struct sample_set *set, int exact, int hot_only,
                           uint64_t *moved, int *nerr)
{
    size_t fi;
    int rc;

    for (fi = 0; fi < set->nf; fi++) {
        const struct fn_ref *fr = &set->f[fi];

        jbuf_open(out, '{');
        jbuf_kstr(out, "symbol", fr->name);
        jbuf_kstr(out, "requested", fr->request);
        jbuf_khex(out, "start", fr->start);
        jbuf_khex(out, "end", fr->end);
        rc = fr->error ? -EINVAL : func_correct(out, b, set, (long)fi, exact, hot_only, moved);
        if (rc) {
            jbuf_kstr(out, "error", fr->error ? fr->error : decode_error_text(rc));
            jbuf_kuint(out, "samples", fn_samples(set, (long)fi));
            jbuf_kuint(out, "past_end_samples", fr->past_end);
            (*nerr)++;
        } else if (fr->past_end) {
            jbuf_kstr(out, "error", "some offsets are past the function end (changed binary?)");
        }
        jbuf_close(out, '}');
    }
}

static const char *open_error_text(int rc)
{
    if (rc == -ENOENT)
        return "binary not found";
    if (rc == -ENOEXEC)
        return "not an ELF file";
    if (rc == -EPROTONOSUPPORT)
        return "not an x86-64 binary";
    if (rc == -ESTALE)
        return "the debug file's build-id differs from the binary's";
    if (rc == -ENODATA)
        return "the debug file has no symbol table";
    if (rc == -ENOSYS)
        return "built without elfutils: no ELF reading";
    return strerror(-rc);
}

int skid_correct_mode(struct jbuf *out, const char *binary, const char *debug, FILE *in, int exact, int hot_only)
{
    struct sample_set set = {0};
    struct elfbin *b = NULL;
    uint64_t moved = 0;
    long bad = 0;
    int rc, nerr = 0;

    jbuf_open(out, '{');
    jbuf_kstr(out, "binary", binary);
    rc = elfbin_open_with(binary, debug, &b);
    if (!rc)
        rc = samples_read(in, &set, &bad);
    if (!rc)
        rc = samples_resolve(&set, b);
    if (rc) {
        jbuf_kstr(out, "error",
                  bad ? "malformed sample line (want symbol\\thexoffset\\tcount or 0xaddr\\tcount)"
                      : open_error_text(rc));
        if (bad)
            jbuf_kint(out, "line", bad);
    } else {
        jbuf_kstr(out, "build_id", elfbin_build_id(b));
        jbuf_kstr(out, "symbols", elfbin_symtab_kind(b));
        jbuf_kbool(out, "exact_ip", exact);
        jbuf_key(out, "functions");
        jbuf_open(out, '[');
        functions_emit(out, b, &set, exact, hot_only, &moved, &nerr);
        jbuf_close(out, ']');
        jbuf_kuint(out, "moved", moved);
        jbuf_kint(out, "function_errors", nerr);
    }
    jbuf_close(out, '}');
    if (!rc && nerr && nerr == (int)set.nf)
        rc = -ENOENT;
    samples_free(&set);
    elfbin_close(b);
    return rc;
}
