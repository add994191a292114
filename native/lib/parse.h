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
    slice_t event; /* event.p == NULL: no "event:" field */
    slice_t sec; /* the time field's whole seconds (digits); sec.p == NULL: no time field */
    size_t end; /* where the matched header form ends (the rest may hold an inline frame) */
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
/* The 'ip sym+off (dso)' frame at the end of a header line (no call chains): 0, or -1. */
int inline_frame(const char *s, size_t n, slice_t *frame);
/* \s(event):\s*$ searched in s[0:n]; event.p == NULL when absent. */
void event_parse(const char *s, size_t n, slice_t *ev);
/* 1 when the line holds only blanks. */
int line_blank(const char *s, size_t n);

#endif
