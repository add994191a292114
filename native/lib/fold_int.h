/* Folder state shared by the streaming half (fold.c) and the finishing half (finish.c). */
#ifndef PMUPROF_FOLD_INT_H
#define PMUPROF_FOLD_INT_H

#include "buf.h"
#include "fold.h"
#include "parse.h"

#define BIG_PID 10000000000000000000ULL /* ids above: numbers too long for u64, kept as text */
#define TAIL_VALID (1ULL << 32)
#define TAIL_LEAF (1ULL << 33)
#define TAIL_RAWUNK (1ULL << 34) /* '[unknown]' in a '/...' dso: tail_leaf = rendered base, tail_off = dso */
#define TAIL_INLINE (1ULL << 35) /* 'sym+0xoff (inlined)': a call inlined into the next frame, 'sym_[i]' */
#define TAIL_ALIAS (1ULL << 36) /* structured frame whose text folds as another tail: the low 32 bits */
#define TAIL_TEXT (1ULL << 37) /* structured frame whose text is no single frame line: fed as text */

typedef struct {
    uint64_t count, off;
    uint32_t len, st; /* st: the stacks table id it came from */
} stack_ref_t;

/* One entry of the sample table: samples of one output row in one thread and one second. */
typedef struct {
    uint64_t count;
    int64_t sec;
    uint32_t row;
    int32_t tid;
} sample_ref_t;

typedef struct {
    uint32_t dso, sym, off;
    uint64_t count;
} leaf_ref_t;

/* A per-id array of u64 that grows with its table. */
typedef struct {
    uint64_t *v;
    size_t cap;
} col_t;

struct folder {
    fold_opts_t o;
    uint64_t *pids;
    size_t npids;
    itab_t rstr; /* rendered text: labels, names, dso/sym (ids compared by rank) */
    itab_t bignum;
    itab_t comms; /* raw comm -> comm_r: rendered id | wanted flag << 32 */
    col_t comm_r;
    itab_t tails; /* raw 'sym+0xoff (dso)' -> label id | TAIL_* flags */
    col_t tail_info, tail_leaf, tail_off; /* leaf: dso_r << 32 | sym_r ; off_r */
    itab_t events;
    col_t ev_count;
    itab_t headers; /* structured input: (pid, tid, timed, comm) -> heads[id] (sample.c) */
    void *heads;
    buf_t fkey, line; /* structured input: a frame's key, a text to feed */
    itab_t pidinfo; /* pid -> main comm_r + 1 (0: none), first main seq, name_r, dropped */
    col_t pid_main, pid_mainseq, pid_name, pid_drop;
    col_t pid_proc; /* pidinfo id -> the process's own name (rendered id + 1), or 1 << 40 | wanted */
    itab_t pidcomm; /* (pid, comm_r) -> samples */
    col_t pc_count;
    itab_t stacks; /* (pid, tid, comm_r, frames root-first) -> samples */
    col_t st_count;
    itab_t leafc; /* (pid, comm_r when no pid, dso_r, sym_r, off_r) -> samples */
    col_t tid_want; /* rendered comm ids of pid-less samples whose tid is a --pid */
    col_t lc_count;
    itab_t samp; /* the current second's (stacks id u32, tid i32) -> samples */
    col_t sp_count;
    int64_t samp_sec; /* the second samp holds */
    sample_ref_t *smp; /* finished seconds' entries (row: the stacks id until folder_finish) */
    size_t nsmp, cap_smp;
    /* the sample being read */
    int in_sample, keep;
    uint64_t pid, tid;
    int64_t sec; /* whole seconds of the time field, -1: none */
    uint32_t cur_comm, cur_stack;
    int leaf_ok; /* the first frame makes a leaf: leaf = (dso_r, sym_r, off_r) */
    int real_seen; /* a frame that is not an inlined call has been pushed (it is the leaf) */
    uint32_t leaf[3];
    buf_t frames, key, tmp;
    uint32_t unknown_id;
    uint64_t kept, filtered, bad_lines, main_seq, last_pid;
    int64_t last_pidinfo;
    int truncated, pid_known;
    /* results of finish */
    stack_ref_t *out;
    size_t nout;
    buf_t out_ids;
    uint32_t *rank, *by_rank;
    leaf_ref_t *leaves;
    size_t nleaves;
    uint64_t *name_pids;
    size_t nname_pids;
    uint64_t *name_order; /* pidinfo ids in the order Python's dict would list them */
    size_t nnames_out;
    int label_pid, unknown_kept, tid_any;
};

static inline int col_add(col_t *c, size_t id, uint64_t by)
{
    if (grow_u64(&c->v, &c->cap, id))
        return -1;
    c->v[id] += by;
    return 0;
}

static inline int col_set(col_t *c, size_t id, uint64_t val)
{
    if (grow_u64(&c->v, &c->cap, id))
        return -1;
    c->v[id] = val;
    return 0;
}

/* What a sample header line says: parsed once per distinct line when the caller caches it. */
typedef struct {
    int ok, pair; /* the header parsed; it had a pid/tid pair */
    uint32_t comm_r;
    uint64_t pid, tid;
    int64_t sec; /* whole seconds of its time field, -1: none */
    int64_t event; /* events id, or -1 */
} head_t;

int64_t rstr_render(folder_t *f, const char *s, size_t n, int flags);
int put_pid(folder_t *f, buf_t *b, uint64_t pid);
int folder_end_sample(folder_t *f);
/* The current second's sample-table entries moved to f->smp (samples arrive in time order: memory is
 * 24 bytes per (stack, tid, second) entry plus one second's hash). */
int samples_flush(folder_t *f);
int64_t parse_num(folder_t *f, const char *s, size_t n, uint64_t *out);
/* The time field's whole seconds as the sample table keeps them (-1: none, or over 18 digits). */
int64_t second_of(slice_t digits);
/* Parse a header line (nothing counted); *inl gets its inline frame's tail id (-1: none). 0, or -ENOMEM. */
int head_compute(folder_t *f, const char *s, size_t n, head_t *hd, int64_t *inl, slice_t *addr);
/* Start the sample a parsed header line begins (a bad line counted when it did not parse). */
int head_apply(folder_t *f, const head_t *hd);
/* Tail id's labels and leaf key from its parsed fields (frames.c). 0, or -ENOMEM. */
int tail_fill(folder_t *f, size_t id, const frame_t *fr);
/* An indented frame text -> its tail id (-1: not a frame, -ENOMEM); addr is the address field. */
int64_t frame_resolve(folder_t *f, const char *s, size_t n, slice_t *addr);
/* Append frame `id` to the current sample ('[dso@0xaddr]' for unnamed code when raw). */
int frame_push(folder_t *f, int64_t id, slice_t addr, int raw);

#endif
