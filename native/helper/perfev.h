/* perfev.h - perf_event_open wrapper and perf's generic event names. */
#ifndef PMUPROF_PERFEV_H
#define PMUPROF_PERFEV_H

#include <linux/perf_event.h>
#include <sys/types.h>

long perfev_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long flags);
/* Fill attr for a perf generic name ("cycles", "task-clock", ...) or "rHEX"; -ENOENT if unknown. */
int perfev_parse_generic(const char *name, struct perf_event_attr *attr);
/* perf's spelling of a generic (type 0/1) event, or NULL. */
const char *perfev_generic_name(unsigned type, unsigned long long config);
/* Whether a hardware cycles counter opens on this thread: 0 or -errno. */
int perfev_probe_cycles(void);

#endif
