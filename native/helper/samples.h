/* samples.h - read "symbol\toffset\tcount" or "0xaddr[\tcount]" lines and resolve them to functions. */
#ifndef PMUPROF_SAMPLES_H
#define PMUPROF_SAMPLES_H

#include <stdint.h>
#include <stdio.h>

#include "elfbin.h"

struct sample {
    char *symbol; /* NULL for an address line */
    uint64_t value; /* offset into symbol, or vaddr */
    uint64_t count;
    uint64_t addr; /* resolved vaddr */
    long fn; /* index into funcs, -1 when unresolved */
};

struct fn_ref {
    const char *name; /* symbol name, or NULL for an unnamed (FDE) function */
    char *request; /* the name the input used */
    uint64_t start, end;
    const char *error;
    uint64_t past_end; /* samples at or beyond end */
};

struct sample_set {
    struct sample *s;
    size_t n, cap;
    struct fn_ref *f;
    size_t nf, capf;
};

/* 0, -ENOMEM, or -EINVAL with *bad_line set to the first malformed line number. */
int samples_read(FILE *in, struct sample_set *set, long *bad_line);
/* Resolve every sample to a function (named symbol, else FDE range). */
int samples_resolve(struct sample_set *set, struct elfbin *b);
void samples_free(struct sample_set *set);

#endif
