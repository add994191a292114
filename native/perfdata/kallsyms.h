/* Kernel symbols from kallsyms, and perf's kcore layout of the kernel maps (kallsyms.c, kcore.c). */
#ifndef PMUPROF_PD_KALLSYMS_H
#define PMUPROF_PD_KALLSYMS_H

#include <stdint.h>

#include "machine.h"

/* The kernel DSO's symbols from PATH: their count (> 0), -1 when perf gets none, -2 unsupported. */
int kallsyms_load(machine_t *m, const char *path);
/* kallsyms__get_function_start: the first T/W/A symbol called name. 0, or -1. */
int kallsyms_function_start(const char *path, const char *name, uint64_t *addr);
/* perf's kptr_restrict rule for /proc/kallsyms and /proc/modules (root stands for CAP_SYSLOG). */
int kallsyms_restricted(void);
/* "dir/kallsyms" -> "dir/BASE" (0), or -1. */
int kallsyms_sibling(const char *kallsyms, const char *base, char *out, size_t cap);
/* perf's validate_kcore_addresses (0: kcore may be used) and dso__load_kcore (0: kcore maps in place). */
int kcore_validate(machine_t *m, const char *kallsyms);
int kcore_load(machine_t *m, const char *kallsyms);
/* Add a kernel map (kernel.c), kept sorted by start. */
int kmaps_insert(machine_t *m, const map_t *map);

#endif
