/* DSOs as perf knows them: a name, a build-id (from the perf.data header), and symbols loaded once. */
#ifndef PMUPROF_PD_DSO_H
#define PMUPROF_PD_DSO_H

#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/buf.h"
#include "symtab.h"

enum { DSO_USER = 0, DSO_KERNEL = 1 };

typedef struct {
    char *name; /* perf's dso->name: what perf script prints in "(...)" */
    int space; /* DSO_USER / DSO_KERNEL */
    int vdso, perfmap, ksym; /* "[vdso]", "/tmp/perf-PID.map", a KSYMBOL (BPF / trampoline) image */
    uint8_t bid[20];
    uint8_t bid_size;
    int has_bid;
    int loaded, load_ret; /* dso__load has run; what it returned */
    int fail_first; /* dso__load failed after adding symbols: perf's first lookup finds none */
    int pid; /* pid of the process whose mapping made it (for /proc/PID/root) */
    symtab_t syms;
    char *syms_path, *runtime_path; /* the files symbols and program headers came from */
    int bid_mismatch; /* a candidate file was rejected for its build-id */
    struct inl *inl; /* its DWARF inline index (inline.h), once inl_tried */
    int inl_tried;
    const char *skipped; /* why its file was not read (a perf map another user could have planted), or NULL */
} dso_t;

typedef struct {
    dso_t **v; /* every DSO */
    size_t n;
    itab_t by_name; /* name -> id; named[id] is that DSO */
    dso_t **named;
    char *buildid_dir; /* $PERF_BUILDID_DIR or $HOME/.debug */
} dsos_t;

int dsos_init(dsos_t *d);
void dsos_free(dsos_t *d);
/* The DSO of that name, made when absent (NULL: out of memory). */
dso_t *dsos_findnew(dsos_t *d, const char *name);
dso_t *dsos_find(dsos_t *d, const char *name);
dso_t *dsos_new_unnamed(dsos_t *d, const char *name);
void dso_set_build_id(dso_t *dso, const uint8_t *bid, size_t size);
/* Its DWARF inline index (inline.h), opened on first use once symbols are loaded; NULL: no DWARF. */
struct inl *dso_inline(dso_t *dso);
/* perf's dso__load for a user-space DSO: search the candidates, load symbols. Returns dso__load's value. */
int dso_load_user(dsos_t *d, dso_t *dso);

/* Inline: elfsym.c and kernel.c compare build-ids without calling up into dso.c. */
static inline int dso_build_id_equal(const dso_t *dso, const uint8_t *bid, int size)
{
    if (size < 0)
        return 0;
    if (dso->bid_size > size && dso->bid_size == 20) { /* trailing zeros allowed, as perf does */
        for (int i = size; i < 20; i++)
            if (dso->bid[i])
                return 0;
        return !memcmp(dso->bid, bid, (size_t)size);
    }
    return dso->bid_size == size && !memcmp(dso->bid, bid, (size_t)size);
}

#endif
