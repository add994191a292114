/* callers.h - recovered callers: what pmuprof-offcpu's on-CPU sampler recovered, with .eh_frame CFI, under
 * a leaf in a library without frame pointers (glibc), keyed by what a perf sample shows there. A run
 * directory's recovered-callers.tsv:
 *
 *   # pmuprof recovered callers 1
 *   PID<TAB>TID<TAB>SP<TAB>SAMPLES<TAB>KEY<TAB>RESUME<TAB>RECOVERED
 *
 * TID 0: KEY is the leaf and up to CALLERS_KEY - 1 return addresses of the frame-pointer walk (hex,
 * comma-separated); RECOVERED the return addresses to stand between the leaf and the walk's entry
 * RESUME (1: nothing of the walk is dropped). TID not 0: a walk that stops at its leaf (the leaf keeps
 * data in the frame-pointer register); KEY is the leaf alone, SP (hex) the thread's user sp there (perf record --user-regs=sp)
 * and RECOVERED the whole chain after the leaf. A file is untrusted input: lines that do not parse are
 * counted and skipped; a key listed twice with different callers is ambiguous and recovers nothing. */
#ifndef PMUPROF_PD_CALLERS_H
#define PMUPROF_PD_CALLERS_H

#include <stddef.h>
#include <stdint.h>

#define CALLERS_KEY 4 /* native/offcpu/offcpu.h OFFCPU_SAMPLE_KEY */
#define CALLERS_MAX 160 /* recovered addresses per entry (a whole chain: OFFCPU_USER_DEPTH + UNWIND_MAX_STEPS) */
#define CALLERS_MAX_ENTRIES (1u << 20)

typedef struct {
    int32_t pid, tid; /* tid 0: a walk key; else a stopped walk's, with sp */
    uint64_t sp;
    uint8_t nkey, resume, ambiguous;
    uint16_t nrec;
    uint64_t key[CALLERS_KEY];
    size_t rec; /* the recovered addresses: callers_t.pool[rec .. rec + nrec) */
} callers_entry_t;

typedef struct {
    callers_entry_t *v;
    size_t n, cap;
    uint64_t *pool;
    size_t npool, cappool;
    uint32_t *slots; /* open addressing: entry index + 1 */
    size_t nslots;
    uint64_t bad_lines;
} callers_t;

/* Read path into c; 0, or a negative errno (the file cannot be read, or memory). */
int callers_load(callers_t *c, const char *path);
/* The entry for pid's chain ips[0..n) (user entries, leaf first; tid 0), or for thread tid's walk stopped
 * at leaf ips[0] with user sp (n 1), or NULL (none, or ambiguous). */
const callers_entry_t *callers_find(const callers_t *c, int32_t pid, int32_t tid, uint64_t sp, const uint64_t *ips,
                                    size_t n);
/* The entry's recovered addresses. */
static inline const uint64_t *callers_rec(const callers_t *c, const callers_entry_t *e)
{
    return c->pool + e->rec;
}
void callers_free(callers_t *c);

#endif
