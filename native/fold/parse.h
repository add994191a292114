/* Parsing one line of perf script text (sample headers and call-chain frames); no allocation. */
#ifndef PMUPROF_FOLD_PARSE_H
#define PMUPROF_FOLD_PARSE_H

#include <stddef.h>

typedef struct {
    const char *p;
    size_t n;
} slice_t;

typedef struct {
    slice_t comm, a, b; /* b.p == NULL: no pid/tid pair (a is the tid) */
    slice_t event;      /* event.p == NULL: no "event:" field */
} header_t;

typedef struct {
    slice_t sym, dso, off; /* off.p == NULL: no +0x offset; sym.p == NULL: "[unknown]" */
} frame_t;

/* "comm pid/tid ..." (or "comm tid ..."): 0 on success, -1 when no header form matches. */
int header_parse(const char *s, size_t n, header_t *h);
/* Body of an indented frame line: the address and the tail after it, or -1 when not a frame. */
int frame_tail(const char *s, size_t n, slice_t *addr, slice_t *tail);
/* 'sym+0xoff (dso)' -> frame: 0, or -1 when not a frame. */
int tail_parse(const char *t, size_t n, frame_t *f);
/* 1 when the line holds only blanks. */
int line_blank(const char *s, size_t n);

#endif
