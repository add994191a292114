/* pmuprof-perfdata --symbolize: name addresses of binaries the way the reader names perf.data frames
 * (perf's symbol choice and demangling, the DWARF inline chain), for stacks taken elsewhere (the
 * off-CPU tracer's). One symbolizer: the same function gets the same name on and off the CPU.
 *
 * Input, one query a line:  PID <tab> OFFSET <tab> PATH
 *   OFFSET: hex file offset in PATH (runtime address - mapping start + mapping offset), already the
 *   call's last byte for a return address; PID: whose /proc/PID/root holds PATH (0: this namespace).
 * Output, one line per query: NAME [<tab> INLINED ...]: the symbol perf would print (empty: none), then
 * the calls DWARF says are inlined there, innermost first. Tabs and control characters in names
 * become '?'. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dso.h"
#include "inline.h"
#include "symbolize.h"

#define MAX_LINE 8192

static void put_name(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 || c == 0x7f ? '?' : (int)c, out);
    }
}

static void answer(dsos_t *dsos, int pid, uint64_t off, const char *path, FILE *out)
{
    dso_t *d = dsos_findnew(dsos, path);
    if (d && !d->loaded) {
        d->pid = pid;
        d->loaded = 1;
        d->load_ret = dso_load_user(dsos, d);
    }
    if (!d || d->load_ret <= 0) {
        fputc('\n', out);
        return;
    }
    int32_t sym = symtab_find(&d->syms, off);
    size_t len = 0;
    const char *name = sym == SYM_NONE ? NULL : symtab_name(&d->syms, sym, &len);
    if (name)
        put_name(out, name, len);
    inl_name_t chain[INL_MAX_DEPTH];
    int n = name ? inl_chain(dso_inline(d), off, chain, INL_MAX_DEPTH) : 0;
    for (int k = 0; k < n; k++) {
        fputc('\t', out);
        fwrite(chain[k].name, 1, chain[k].len, out); /* inline.c made them one line already */
    }
    fputc('\n', out);
}

int symbolize_run(FILE *in, FILE *out)
{
    dsos_t dsos;
    char line[MAX_LINE];
    if (dsos_init(&dsos))
        return -ENOMEM;
    while (fgets(line, sizeof line, in)) {
        char *end, *tab;
        line[strcspn(line, "\n")] = '\0';
        long pid = strtol(line, &end, 10);
        uint64_t off = 0;
        if (*end == '\t' && pid >= 0 && pid <= INT32_MAX) {
            off = strtoull(end + 1, &tab, 16);
            if (*tab == '\t' && tab[1] == '/') {
                answer(&dsos, (int)pid, off, tab + 1, out);
                continue;
            }
        }
        fputc('\n', out); /* not a query: an empty answer keeps the lines in step */
    }
    dsos_free(&dsos);
    return fflush(out) ? -EIO : 0;
}
