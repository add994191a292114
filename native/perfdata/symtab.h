/* A DSO's symbols kept the way perf keeps them: ordered by start (ties in insertion order), with perf's
 * end and duplicate fix-ups, and found the way perf's red-black tree finds them. Lookups use a sorted
 * array while the answer cannot depend on the tree's shape; otherwise the tree perf would have built is
 * rebuilt by replaying the inserts and erases, so overlapping symbols resolve as in perf. Names are
 * demangled on first use. */
#ifndef PMUPROF_PD_SYMTAB_H
#define PMUPROF_PD_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#define SYM_NONE (-1)

enum { SYMNAME_RAW = 0, SYMNAME_DEMANGLE = 1, SYMNAME_PLT = 2 }; /* PLT: demangled + "@plt" */

typedef struct {
    uint64_t start, end;
    uint64_t name, dem; /* raw name; final name (UINT64_MAX: not computed yet) in names */
    uint32_t name_len, dem_len;
    uint8_t binding, type, kind, dead;
} sym_t;

typedef struct {
    int32_t left, right, parent;
    uint8_t red;
} rbnode_t;

typedef struct {
    sym_t *s;
    size_t n, cap;
    char *names;
    size_t names_len, names_cap;
    int32_t *order; /* live symbols by (start, insertion) */
    uint64_t *maxend; /* prefix maximum of the exclusive end over order */
    size_t norder, nsorted; /* symbols [0, nsorted) have been placed in order */
    size_t walk; /* position in order of the symbol symtab_first/next returned last */
    int ready; /* maxend is current and order holds no erased symbol */
    int64_t *log; /* inserts (i) and erases (~i) in perf's order, with the key at insert time */
    uint64_t *logkey;
    size_t nlog, caplog;
    rbnode_t *rb;
    int32_t root;
    int tree; /* the tree has been built from the log */
    uint64_t tree_finds; /* lookups the sorted array could not answer alone */
} symtab_t;

int symtab_insert(symtab_t *t, uint64_t start, uint64_t len, uint8_t binding, uint8_t type, const char *name,
                  size_t name_len, uint8_t kind);
/* In (start, insertion) order over live symbols: first, next, SYM_NONE at the end. */
int32_t symtab_first(symtab_t *t);
int32_t symtab_next(symtab_t *t, int32_t i);
void symtab_erase(symtab_t *t, int32_t i);
void symtab_moved(symtab_t *t); /* starts or ends were changed in place */
void symtab_fixup_end(symtab_t *t, int is_kallsyms);
void symtab_fixup_duplicate(symtab_t *t);
int32_t symtab_find(symtab_t *t, uint64_t addr);
/* The raw name (NUL-terminated), and the name perf prints (demangled on first use; NULL: no memory). */
static inline const char *symtab_raw(const symtab_t *t, int32_t i)
{
    return t->names + t->s[i].name;
}
const char *symtab_name(symtab_t *t, int32_t i, size_t *len);
size_t symtab_live(const symtab_t *t);
void symtab_free(symtab_t *t);

#endif
