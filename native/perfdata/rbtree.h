/* perf's symbol tree, rebuilt on demand from a symtab's insert/erase log (see symtab.h). */
#ifndef PMUPROF_PD_RBTREE_H
#define PMUPROF_PD_RBTREE_H

#include "symtab.h"

/* Replay t->log into t->rb (0, or -1 out of memory). */
int rb_build(symtab_t *t);
/* perf's symbols__find over the rebuilt tree. */
int32_t rb_find(const symtab_t *t, uint64_t ip);

#endif
