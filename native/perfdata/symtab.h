/* A DSO's symbols kept the way perf keeps them: a red-black tree keyed by start address, with perf's
 * end and duplicate fix-ups, searched the way perf searches (so overlapping symbols resolve alike). */
#ifndef PMUPROF_PD_SYMTAB_H
#define PMUPROF_PD_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#define SYM_NONE (-1)

typedef struct {
    uint64_t start, end;
    uint64_t name;      /* offset in names */
    uint32_t name_len;
    uint8_t binding, type;
    int32_t left, right, parent;
    uint8_t red, dead;
} sym_t;

typedef struct {
    sym_t *s;
    size_t n, cap;
    int32_t root;
    char *names;
    size_t names_len, names_cap;
} symtab_t;

/* Insert a symbol (len 0: end = start), as perf's symbol__new + __symbols__insert. Returns 0 or -ENOMEM. */
int symtab_insert(symtab_t *t, uint64_t start, uint64_t len, uint8_t binding, uint8_t type,
                  const char *name, size_t name_len);
/* In-order walk: first node, next node, SYM_NONE at the end. */
int32_t symtab_first(const symtab_t *t);
int32_t symtab_next(const symtab_t *t, int32_t i);
void symtab_erase(symtab_t *t, int32_t i);
/* perf's symbols__fixup_end (is_kallsyms: module boundaries round up) and symbols__fixup_duplicate. */
void symtab_fixup_end(symtab_t *t, int is_kallsyms);
void symtab_fixup_duplicate(symtab_t *t);
/* perf's symbols__find: the symbol holding addr on the tree's search path, or SYM_NONE. */
int32_t symtab_find(const symtab_t *t, uint64_t addr);
static inline const char *symtab_name(const symtab_t *t, int32_t i)
{
    return t->names + t->s[i].name;
}
void symtab_free(symtab_t *t);

#endif
