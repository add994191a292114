/* Threads, their comms and their address maps, built from MMAP/MMAP2/COMM/FORK/EXIT/KSYMBOL records
 * the way perf's machine.c builds them (maps shared by a process's threads, copied on fork). */
#ifndef PMUPROF_PD_MACHINE_H
#define PMUPROF_PD_MACHINE_H

#include <stdint.h>

#include "lib/buf.h"
#include "dso.h"

enum { MAP_FILE = 0, MAP_IDENTITY = 1 }; /* map_ip: ip - start + pgoff, or ip itself */
enum { KMAP_VMLINUX = 1, KMAP_MODULE, KMAP_EXTRA, KMAP_KSYM, KMAP_KCORE };

typedef struct {
    uint64_t start, end, pgoff;
    dso_t *dso;
    uint8_t identity, kind;
} map_t;

typedef struct {
    map_t *v;
    size_t n, cap;
    uint64_t gen; /* changes whenever the table does: resolution caches key on it */
} maps_t;

typedef struct {
    int32_t pid, tid;
    uint32_t comm; /* id in machine.comms */
    int comm_set;
    maps_t *maps;
    /* the folder's id for this thread's last sample header (comm, pid, tid): -2 none */
    int64_t hdr_id;
    uint32_t hdr_comm;
    int32_t hdr_pid, hdr_tid;
    uint8_t ns_checked, ns_other; /* its process's mount namespace was compared with ours; it is another */
} thread_t;

typedef struct {
    maps_t kmaps;
    dso_t *kernel; /* [kernel.kallsyms] */
    char *ref_name; /* the kernel map's reference symbol ("_text") and where it was at record time */
    uint64_t ref_addr;
    int loaded_map; /* the vmlinux map's symbols have been read */
    int trampolines; /* the kernel has PTI entry trampolines (perf would map them per CPU) */
    int kcore; /* the kernel maps are kcore's segments */
} kernel_t;

typedef struct {
    itab_t tids; /* tid -> slot; cur[slot] is the live thread */
    thread_t **cur;
    size_t ncur;
    thread_t **all;
    size_t nall;
    maps_t **maps_all;
    size_t nmaps;
    itab_t comms;
    uint64_t next_gen;
    dsos_t dsos;
    kernel_t k;
    const char *osrelease; /* the recording's kernel release (vmlinux search paths) */
    const char *kallsyms; /* perf's --kallsyms: this file names the kernel, no build-id search */
    char unsupported[200]; /* set when something met needs perf script (the caller exits 3) */
} machine_t;

int machine_init(machine_t *m);
void machine_free(machine_t *m);
/* perf's machine__findnew_thread (tid-keyed, pid filled in later, maps joined to the leader's). */
thread_t *machine_findnew_thread(machine_t *m, int32_t pid, int32_t tid);
int machine_comm(machine_t *m, int32_t pid, int32_t tid, const char *comm, size_t n);
int machine_fork(machine_t *m, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, int clone_maps);
int machine_mmap(machine_t *m, int32_t pid, int32_t tid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t prot,
                 uint32_t flags, const char *filename, const uint8_t *bid, int bid_size);
/* A user map holding ip in these maps, or NULL. */
const map_t *maps_find(const maps_t *maps, uint64_t ip);
int maps_insert_fixup(machine_t *m, maps_t *maps, const map_t *map);
const char *machine_comm_str(const machine_t *m, const thread_t *t, size_t *n);

/* Kernel side (kernel.c). */
int kmaps_insert(machine_t *m, const map_t *map);
int kernel_mmap(machine_t *m, uint64_t start, uint64_t len, uint64_t pgoff, const char *name, const uint8_t *bid,
                int bid_size);
int kernel_ksymbol(machine_t *m, uint64_t addr, uint32_t len, uint16_t type, uint16_t flags, const char *name);
/* thread__find_map for kernel addresses (loads kernel symbols on first use): the map or NULL;
 * returns -1 (and sets m->unsupported) when perf would use something not implemented here. */
int kernel_find(machine_t *m, uint64_t ip, const map_t **out);

#endif
