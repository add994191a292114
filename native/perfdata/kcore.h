/* perf's kcore layout of the kernel maps (kcore.c), above kallsyms.c. */
#ifndef PMUPROF_PD_KCORE_H
#define PMUPROF_PD_KCORE_H

#include "machine.h"

/* perf's validate_kcore_addresses (0: kcore may be used) and dso__load_kcore (0: kcore maps in place). */
int kcore_validate(machine_t *m, const char *kallsyms);
int kcore_load(machine_t *m, const char *kallsyms);

#endif
