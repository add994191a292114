/* The streaming folder: feed perf script lines (or structured samples), finish, then write folded stacks,
 * leaves and meta. */
#ifndef PMUPROF_FOLD_FOLD_H
#define PMUPROF_FOLD_FOLD_H

#include <stdint.h>
#include <stdio.h>

#include "buf.h"

#define PID_UNKNOWN UINT64_MAX

typedef struct {
    const char **pids; /* keep only these processes (none: all); decimal, "-1" = no pid field */
    size_t npids;
    const char **comms; /* keep processes in which any thread has one of these names */
    size_t ncomms;
    const char **names; /* "PID=LABEL": process label overrides */
    size_t nnames;
    int per_thread;
    int raw_unknown; /* unnamed frames of a file as '[base@0xaddr]' (Folder's raw_unknown) */
} fold_opts_t;

typedef struct folder folder_t;

/* NULL with *err set: -ENOMEM, or -EINVAL for a bad pid / name option. */
folder_t *folder_new(const fold_opts_t *opts, int *err);
int folder_feed(folder_t *f, const char *line, size_t n);

/* Structured input (pmuprof-perfdata): the samples of a perf.data, handed over as the fields perf script
 * would print. What repeats is interned once, a sample is then ids. The folded result is byte for byte
 * that of perf script's text of the same samples fed to folder_feed, also where the text is ambiguous (a
 * thread named "x 1/2", a symbol with a line break): such a header or frame is folded from its text
 * (script.h), once per distinct one, or per sample when its text must be fed as lines. */

/* A call-chain frame: what perf script prints after its address. */
typedef struct {
    const char *sym; /* the symbol, or NULL for unnamed code ("[unknown]") */
    size_t sym_len;
    uint64_t off; /* the address's offset into sym ("+0x%lx") */
    const char *dso; /* the DSO's name as perf prints it ("[unknown]" without one); unused when inlined */
    size_t dso_len;
    int inlined; /* a call inlined into the next frame: "name+0xoff (inlined)" (perf script --inline) */
} fold_frame_t;

/* Who a sample is from: the thread's pid, tid and name, and whether samples carry their time. */
typedef struct {
    int32_t pid, tid;
    const char *comm;
    size_t comm_len;
    int timed;
} fold_head_t;

typedef struct {
    int64_t head; /* folder_head's id */
    uint64_t time; /* ns (its whole seconds key the sample table), when the head is timed */
    const uint32_t *frames; /* folder_frame's ids, leaf first */
    const uint64_t *addrs; /* each frame's address as perf script prints it */
    size_t nframes;
} fold_sample_t;

/* The frame's id (>= 0), or -ENOMEM. */
int64_t folder_frame(folder_t *f, const fold_frame_t *fr);
/* The head's id (>= 0), or -ENOMEM. */
int64_t folder_head(folder_t *f, const fold_head_t *h);
/* Fold one sample with a call chain (a sample without one is perf script's one-line form: feed its text,
 * script.h). 0, or -ENOMEM. */
int folder_sample(folder_t *f, const fold_sample_t *s);
/* Append the text after frame id's address (script_tail of its fields). */
int folder_frame_tail(folder_t *f, int64_t id, buf_t *out);
/* What the process itself is called, besides its threads' names (structured input knows it: the main
 * thread's COMM, label=1, and the server binary it maps, label=0). Servers rename their threads
 * (MySQL 8.0.27+: 'connection', 'ib_io_rd-1'), so --comm also keeps a process whose own name is wanted,
 * and a process whose main thread has no sample is labelled with that name. Call before finish. */
int folder_process_name(folder_t *f, uint64_t pid, const char *name, size_t n, int label);
int folder_finish(folder_t *f, int truncated);
int folder_write_stacks(folder_t *f, FILE *out);
int folder_write_leaves(folder_t *f, FILE *out);
int folder_write_meta(folder_t *f, FILE *out);
/* The sample table as text (pmuprof.model.samples.write_tsv's bytes): row, tid, second, count. */
int folder_write_samples(folder_t *f, FILE *out);
/* The stacks as arrays, then the sample table (see write.c): what pmuprof reads instead of the text. */
int folder_write_stacks_bin(folder_t *f, FILE *out);
/* The stacks file's magic, header and string table; the ids, lengths and counts follow it. */
int stacksbin_head(FILE *out, const itab_t *strings, size_t nids, size_t nstacks);
int stacksbin_write(FILE *out, const itab_t *strings, const uint32_t *ids, size_t nids, const uint32_t *lens,
                    const uint64_t *counts, size_t nstacks);
/* Folded text ('frame;frame;leaf COUNT' lines; '#' and blank lines skipped) to the arrays. Returns 0,
 * -ENOMEM, -EIO, or 3 for a bad line (its number in *bad_line, what is wrong in *why). */
int folded_to_bin(FILE *in, FILE *out, uint64_t *bad_line, const char **why);
void folder_free(folder_t *f);

#endif
