/* Kernel symbols from kallsyms (kallsyms.c); perf's kcore layout of the kernel maps is kcore.h. */
#ifndef PMUPROF_PD_KALLSYMS_H
#define PMUPROF_PD_KALLSYMS_H

#include <stdint.h>

#include "machine.h"

/* perf's dso__load_kallsyms in three steps (kernel.c runs them, mapping kcore between the first two):
 * read PATH into the kernel DSO's symbols (0, or -1 when perf gets none; *delta: the relocation from the
 * reference symbol), then split them over the kernel maps, kcore's segments or the plain layout: the
 * count (> 0), -1 when perf gets none, -2 unsupported. */
int kallsyms_read(machine_t *m, const char *path, uint64_t *delta);
int kallsyms_split_kcore(machine_t *m, const char *path);
int kallsyms_split(machine_t *m, uint64_t delta);
/* kallsyms__get_function_start: the first T/W/A symbol called name. 0, or -1. */
int kallsyms_function_start(const char *path, const char *name, uint64_t *addr);
/* perf's kptr_restrict rule for /proc/kallsyms and /proc/modules (root stands for CAP_SYSLOG). */
int kallsyms_restricted(void);
/* "dir/kallsyms" -> "dir/BASE" (0), or -1. */
int kallsyms_sibling(const char *kallsyms, const char *base, char *out, size_t cap);

#endif
