/* script.h - perf script's text of a sample as pmuprof asks for it (-F comm,pid,tid[,time],ip,sym,symoff,dso
 * --no-inline): what pmuprof-perfdata --script writes, and the folder's own text for fields that text would
 * make ambiguous (sample.c). */
#ifndef PMUPROF_LIB_SCRIPT_H
#define PMUPROF_LIB_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "fold.h"

/* Append the header line: "comm pid/tid" with perf's padding, then with timed "%12s: " of the time in
 * seconds and microseconds. Without a call chain the comm is right-aligned in 16 columns (perf script's
 * one-line samples). 0 or -ENOMEM. */
int script_header(buf_t *b, const char *comm, size_t n, int32_t pid, int32_t tid, int chain, int timed,
                  uint64_t time_ns);
/* Append what follows a frame's address: "sym+0xoff (dso)", "[unknown] (dso)" or "name+0xoff (inlined)". */
int script_tail(buf_t *b, const fold_frame_t *fr);
/* Append a call-chain line: a tab, the address in 16 columns, a blank, the tail. */
int script_frame(buf_t *b, uint64_t addr, const fold_frame_t *fr);
/* 1 when script_frame's line folds back into exactly these fields: one line, a name that is not
 * "[unknown]" and neither starts nor ends with a blank, a DSO none of whose parentheses close the
 * "(dso)" group early or leave it open, and no named frame of a DSO called "inlined". Else 0: the
 * folder then folds the text itself, so odd names fold as perf script's text of them does. */
int script_frame_plain(const fold_frame_t *fr);

#endif
