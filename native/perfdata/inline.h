/* Inline chains from DWARF: the inlined calls an address sits in, innermost first, as `addr2line -i`
 * names them. One index per compile unit, built on the first address that lands in it. */
#ifndef PMUPROF_PD_INLINE_H
#define PMUPROF_PD_INLINE_H

#include <stddef.h>
#include <stdint.h>

#define INL_MAX_DEPTH 32 /* inlined frames kept per address (deeper chains keep their innermost) */

typedef struct inl inl_t;

typedef struct {
    const char *name; /* valid until inl_close; control characters already '?' */
    size_t len;
} inl_name_t;

/* The DWARF of debug_path (the file the symbols came from) or, failing that, of runtime_path, whose
 * PT_LOAD headers map file offsets to addresses. NULL when neither has .debug_info (not an error). */
inl_t *inl_open(const char *debug_path, const char *runtime_path);
/* The inlined calls at file offset `off` (a return address: pass the call's last byte, ret - 1),
 * innermost first, the out-of-line function that holds them left out: the count (0: none), or -ENOMEM. */
int inl_chain(inl_t *x, uint64_t off, inl_name_t *out, size_t cap);
void inl_close(inl_t *x);

#endif
