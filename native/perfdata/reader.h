/* The reader: perf.data records -> perf script's (comm, pid, tid, call chain) per sample, as fields -> the folder. */
#ifndef PMUPROF_PD_READER_H
#define PMUPROF_PD_READER_H

#include <stdint.h>
#include <stdio.h>

#include "lib/buf.h"
#include "lib/fold.h"
#include "callers.h"
#include "machine.h"
#include "pdfile.h"
#include "records.h"

#define PD_MAX_STACK 127 /* perf script's default --max-stack */

/* One resolved (maps generation, ip): the folder's frame for it, and the address perf script prints. */
typedef struct {
    uint64_t gen, ip;
    uint64_t addr; /* the file-relative address in a user DSO, else ip */
    uint32_t id; /* folder_frame's id */
    uint16_t ninl; /* inlined frames (inline.h) stored right before this one, innermost first */
} frame_t;

typedef struct {
    pd_file_t *file;
    machine_t m;
    folder_t *fold;
    const int32_t *pids; /* perf script --pid */
    size_t npids;
    pd_queue_t q;
    int ordered, use_callchain;
    uint64_t *slots; /* open addressing: frame index + 1 */
    size_t nslots;
    frame_t *frames;
    size_t nframes, capframes;
    buf_t text; /* a line of perf script text (--script, one-line samples) */
    uint32_t chain[PD_MAX_STACK + 1];
    uint32_t *sample_ids; /* the sample being folded: frame ids and addresses, inlined frames expanded */
    uint64_t *sample_addrs;
    size_t capsample;
    uint64_t samples, lost, printed;
    FILE *echo; /* --script: also write the perf script text the folder is fed */
    int with_time; /* --time: perf script's -F ...,time,...: each header has the sample's time */
    int inline_frames; /* --inline: user frames expand into their DWARF inline chains */
    uint64_t inlined; /* inlined frames made (distinct addresses) */
    uint64_t inline_addrs; /* distinct user addresses looked up in a DWARF index */
    callers_t callers; /* --callers: recovered callers to put back under a library leaf (callers.h) */
    uint64_t recovered_samples, recovered_frames; /* samples that took callers from it, and how many */
} reader_t;

int reader_init(reader_t *r, pd_file_t *file, folder_t *fold, const int32_t *pids, size_t npids);
void reader_free(reader_t *r);
/* Walk the data section in perf's order. PD_OK, or an exit status (r->m.unsupported / corrupt). */
int reader_run(reader_t *r, char *err, size_t errlen);
/* One record at file offset off (machine updates, or a sample into the folder). */
int reader_deliver(reader_t *r, uint64_t off);
int reader_sample(reader_t *r, const pd_attr_t *a, const unsigned char *rec, uint16_t size);

#endif
