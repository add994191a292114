/* Decoding the records of the data section: samples, the sample_id trailer, and perf's time ordering. */
#ifndef PMUPROF_PD_RECORDS_H
#define PMUPROF_PD_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "pdfile.h"

#define PD_NO_TIME UINT64_MAX

typedef struct {
    uint64_t ip, time, id, nr;
    const uint64_t *ips; /* the call chain (nr entries, unaligned-safe reads via memcpy) */
    uint32_t pid, tid, cpu;
    uint16_t cpumode;
    int has_chain;
    int has_user_sp; /* perf record --user-regs=sp: the user sp at the sample (a kernel entry's, in a syscall) */
    uint64_t user_sp;
} pd_sample_t;

/* Fields of a SAMPLE record under attr a: 0, or -1 when the record is shorter than its sample_type says. */
int pd_sample_parse(const pd_attr_t *a, const unsigned char *rec, uint16_t size, pd_sample_t *s);
/* The time of any record (perf's evlist__parse_sample_timestamp); PD_NO_TIME when it has none. */
uint64_t pd_record_time(const pd_file_t *f, const pd_attr_t *a, const unsigned char *rec, uint32_t type, uint16_t size);

/* perf's ordered_events: records queue by time; FINISHED_ROUND flushes those up to the previous
 * round's latest time; records without a time (0 or none) are delivered at once. */
typedef struct {
    uint64_t time, seq, off;
} pd_qent_t;

typedef struct {
    pd_qent_t *q;
    size_t n, cap, head; /* sorted prefix [head, sorted) is ready; the rest arrived since */
    uint64_t seq, max_time, next_flush, last_flush;
    size_t unordered; /* events older than the last flush (perf warns about them) */
} pd_queue_t;

int pd_queue_push(pd_queue_t *q, uint64_t time, uint64_t off);
/* Sort and hand out, through cb, entries with time <= limit, in (time, arrival) order. */
int pd_queue_flush(pd_queue_t *q, uint64_t limit, int (*cb)(void *ctx, uint64_t off), void *ctx);
void pd_queue_free(pd_queue_t *q);
/* The lowest file offset still queued (UINT64_MAX when none). */
uint64_t pd_queue_min_off(const pd_queue_t *q);

#endif
