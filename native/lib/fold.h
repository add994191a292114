/* The streaming folder: feed perf script lines, finish, then write folded stacks, leaves and meta. */
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
/* Structured input (pmuprof-perfdata): a call-chain frame line as perf script prints it
 * ("\t%16lx sym+0xoff (dso)") is interned once; its id then stands for that line in any sample.
 * Returns the id (>= 0), -1 when the line is not a frame (feed it as text), or -ENOMEM; *addr_off and
 * *addr_len locate the address inside the line. */
int64_t folder_frame_intern(folder_t *f, const char *line, size_t n, size_t *addr_off, size_t *addr_len);
/* A sample header line parsed once: -1 when it must go through folder_feed (blank, indented, an inline
 * frame); then folder_sample_begin(id) does what folder_feed(line) does. */
int64_t folder_header_intern(folder_t *f, const char *line, size_t n);
int folder_sample_begin(folder_t *f, int64_t id);
/* The current sample's time in whole seconds (structured input: its header was interned without one). */
void folder_sample_time(folder_t *f, int64_t sec);
/* Exactly what folder_feed does with that frame line; addr is the address text (as in the line). */
int folder_frame_push(folder_t *f, int64_t id, const char *addr, size_t addr_len);
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
