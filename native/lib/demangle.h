/* Symbol names as perf 6.1 prints them: libiberty's cplus_demangle without parameters, then perf's
 * OCaml / Java / legacy-Rust rules. */
#ifndef PMUPROF_PD_DEMANGLE_H
#define PMUPROF_PD_DEMANGLE_H

/* The demangled form of a user-space ELF symbol (malloc'ed), or NULL when perf keeps the name. */
char *demangle_user(const char *name);

#endif
