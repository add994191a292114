/* perfev.c - perf_event_open and perf's generic event names. */
#include "perfev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct generic_event {
    const char *name;
    unsigned type;
    unsigned long long config;
};

static const struct generic_event generic_events[] = {
        {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
        {"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
        {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
        {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
        {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
        {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
        {"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
        {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
        {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
        {"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
        {"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
        {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
        {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
        {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
        {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
        {"faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
        {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
        {"cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
        {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
        {"migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
        {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
        {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
        {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
        {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
        {"dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY},
};

long perfev_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long flags)
{
    long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);

    return fd < 0 ? -errno : fd;
}

int perfev_parse_generic(const char *name, struct perf_event_attr *attr)
{
    size_t i;
    char *end;

    memset(attr, 0, sizeof(*attr));
    attr->size = sizeof(*attr);
    for (i = 0; i < sizeof(generic_events) / sizeof(generic_events[0]); i++) {
        if (!strcmp(name, generic_events[i].name)) {
            attr->type = generic_events[i].type;
            attr->config = generic_events[i].config;
            return 0;
        }
    }
    if (name[0] == 'r' && name[1]) {
        errno = 0;
        attr->config = strtoull(name + 1, &end, 16);
        if (!errno && *end == '\0') {
            attr->type = PERF_TYPE_RAW;
            return 0;
        }
    }
    return -ENOENT;
}

const char *perfev_generic_name(unsigned type, unsigned long long config)
{
    size_t i;

    for (i = 0; i < sizeof(generic_events) / sizeof(generic_events[0]); i++)
        if (generic_events[i].type == type && generic_events[i].config == config)
            return generic_events[i].name;
    return NULL;
}

int perfev_probe_cycles(void)
{
    struct perf_event_attr attr;
    long fd;

    perfev_parse_generic("cycles", &attr);
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    fd = perfev_open(&attr, 0, -1, -1, 0);
    if (fd < 0)
        return (int)fd;
    close((int)fd);
    return 0;
}
