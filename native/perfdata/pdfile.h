/* The perf.data file: header, event attributes, feature sections, and a bounds-checked record walk. */
#ifndef PMUPROF_PD_FILE_H
#define PMUPROF_PD_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Exit statuses of pmuprof-perfdata (also used as negative-free error kinds inside). */
/* PD_EBADHEADER: a header no file can match (perf script loops on it): nothing else should be tried. */
enum { PD_OK = 0, PD_EFAIL = 1, PD_EUSAGE = 2, PD_EUNSUPPORTED = 3, PD_ECORRUPT = 4, PD_EBADHEADER = 5 };

/* perf's own record types (tools/perf/util/event.h), beside the kernel's. */
enum {
    PD_REC_HEADER_ATTR = 64,
    PD_REC_BUILD_ID = 67,
    PD_REC_FINISHED_ROUND = 68,
    PD_REC_AUXTRACE_INFO = 70,
    PD_REC_AUXTRACE = 71,
    PD_REC_COMPRESSED = 81,
    PD_REC_FINISHED_INIT = 82,
};
#define PD_MISC_BUILD_ID_SIZE (1u << 15)
#define PD_MAX_ATTRS 4096

typedef struct {
    uint32_t type;
    uint64_t config, sample_type, read_format, branch_sample_type, sample_regs_user;
    int reg_sp; /* the user sp's bit in sample_regs_user, on the architecture the file was recorded on */
    int sample_id_all;
    uint64_t *ids;
    size_t nids;
    char *name; /* from HEADER_EVENT_DESC, or NULL */
} pd_attr_t;

/* One HEADER_BUILD_ID entry: a DSO path (or "[kernel.kallsyms]", "[vdso]") and its build-id. */
typedef struct {
    char *name;
    uint8_t bid[20];
    uint8_t size;
    uint16_t cpumode;
} pd_buildid_t;

typedef struct {
    const unsigned char *map; /* the whole file, read-only */
    size_t len;
    uint64_t data_off, data_size;
    uint64_t dropped; /* mapped pages below this were given back (pd_file_release) */
    pd_attr_t *attrs;
    size_t nattrs;
    int id_pos, is_pos; /* where the sample id sits (u64 index; -1: none), as perf's evlist does */
    pd_buildid_t *bids;
    size_t nbids;
    char *hostname, *osrelease, *version, *arch, *cpudesc, *cmdline;
    uint32_t nr_cpus_avail, nr_cpus_online;
    char err[256]; /* why open failed */
} pd_file_t;

/* Map and validate PATH. Returns PD_OK, or an exit status with f->err saying why. */
int pd_file_open(pd_file_t *f, const char *path);
void pd_file_close(pd_file_t *f);
/* Let the kernel drop the mapped pages of [dropped, upto): records there are done with. */
void pd_file_release(pd_file_t *f, uint64_t upto);
/* The attribute a record belongs to (perf's evlist__event2evsel), or NULL for an unknown id. */
uint16_t pd_record_span(const pd_file_t *f, const unsigned char *rec, uint32_t type, uint16_t size);
const pd_attr_t *pd_file_attr_of(const pd_file_t *f, const unsigned char *rec, uint32_t type, uint16_t size);

#endif
