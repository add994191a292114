/* callers.h - recovered callers: what pmuprof-offcpu's on-CPU sampler recovered, with .eh_frame CFI, under
 * a leaf in a library without frame pointers (glibc), keyed by what a perf sample's frame-pointer chain
 * shows there: the leaf and its first return addresses. A run directory's recovered-callers.tsv:
 *
 *   # pmuprof recovered callers 1
 *   PID<TAB>SAMPLES<TAB>KEY<TAB>RESUME<TAB>RECOVERED
 *
 * KEY: the leaf and up to CALLERS_KEY - 1 return addresses (hex, comma-separated, as the walk has them);
 * RECOVERED: the return addresses to stand between the leaf and the walk's entry RESUME (1: nothing of
 * the walk is dropped). A file is untrusted input: lines that do not parse are counted and skipped; a
 * key listed twice with different callers is ambiguous and recovers nothing. */
#ifndef PMUPROF_PD_CALLERS_H
#define PMUPROF_PD_CALLERS_H

#include <stddef.h>
#include <stdint.h>

#define CALLERS_KEY 4 /* native/offcpu/offcpu.h OFFCPU_SAMPLE_KEY */
#define CALLERS_MAX 16 /* recovered addresses per entry (the unwinder's UNWIND_MAX_STEPS) */
#define CALLERS_MAX_ENTRIES (1u << 20)

typedef struct {
    int32_t pid;
    uint8_t nkey, nrec, resume, ambiguous;
    uint64_t key[CALLERS_KEY];
    uint64_t rec[CALLERS_MAX];
} callers_entry_t;

typedef struct {
    callers_entry_t *v;
    size_t n, cap;
    uint32_t *slots; /* open addressing: entry index + 1 */
    size_t nslots;
    uint64_t bad_lines;
} callers_t;

/* Read path into c; 0, or a negative errno (the file cannot be read, or memory). */
int callers_load(callers_t *c, const char *path);
/* The entry for pid's chain ips[0..n) (user entries, leaf first), or NULL (none, or ambiguous). */
const callers_entry_t *callers_find(const callers_t *c, int32_t pid, const uint64_t *ips, size_t n);
void callers_free(callers_t *c);

#endif
