/* script.c - perf script's text of structured samples (the inverse of parse.c for pmuprof's fields). */
#define _GNU_SOURCE
#include "script.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

int script_header(buf_t *b, const char *comm, size_t n, int32_t pid, int32_t tid, int chain, int timed,
                  uint64_t time_ns)
{
    char ids[48], when[64], usec[48];
    int k = snprintf(ids, sizeof ids, " %5d/%-5d ", pid, tid), w = 0;
    if (!chain && n < 16) {
        if (buf_reserve(b, 16 - n))
            return -ENOMEM;
        memset(b->p + b->len, ' ', 16 - n);
        b->len += 16 - n;
    }
    if (timed) {
        snprintf(usec, sizeof usec, "%" PRIu64 ".%06" PRIu64, time_ns / 1000000000u, time_ns % 1000000000u / 1000u);
        w = snprintf(when, sizeof when, "%12s: ", usec);
    }
    return buf_append(b, comm, n) || buf_append(b, ids, (size_t)k) || buf_append(b, when, (size_t)w) ? -ENOMEM : 0;
}

int script_tail(buf_t *b, const fold_frame_t *fr)
{
    char off[24];
    int n = fr->sym ? snprintf(off, sizeof off, "+0x%" PRIx64, fr->off) : 0;
    int rc = fr->sym ? buf_append(b, fr->sym, fr->sym_len) || buf_append(b, off, (size_t)n)
                     : buf_append(b, "[unknown]", 9);
    if (fr->inlined)
        return rc || buf_append(b, " (inlined)", 10) ? -ENOMEM : 0;
    return rc || buf_append(b, " (", 2) || buf_append(b, fr->dso, fr->dso_len) || buf_putc(b, ')') ? -ENOMEM : 0;
}

int script_frame(buf_t *b, uint64_t addr, const fold_frame_t *fr)
{
    char at[24];
    int n = snprintf(at, sizeof at, "\t%16" PRIx64 " ", addr);
    return buf_append(b, at, (size_t)n) ? -ENOMEM : script_tail(b, fr);
}

/* parse.c's tail_parse takes the trailing balanced "(...)" group as the DSO: scanned from its end, no
 * '(' of the DSO may close it (more '(' than ')' in a suffix), and it must hold as many of each. */
static int dso_group_kept(const char *d, size_t n)
{
    long depth = 0;
    for (size_t i = n; i-- > 0;) {
        depth += d[i] == ')' ? 1 : d[i] == '(' ? -1 : 0;
        if (depth < 0)
            return 0;
    }
    return depth == 0;
}

int script_frame_plain(const fold_frame_t *fr)
{
    const char *s = fr->sym;
    size_t n = fr->sym_len;
    if (s &&
        (!n || text_is_ws((unsigned char)s[0]) || text_is_ws((unsigned char)s[n - 1]) || memchr(s, '\n', n) ||
         (n == 9 && !memcmp(s, "[unknown]", 9))))
        return 0;
    if (fr->inlined)
        return s != NULL;
    if (memchr(fr->dso, '\n', fr->dso_len) || (s && fr->dso_len == 7 && !memcmp(fr->dso, "inlined", 7)))
        return 0;
    return dso_group_kept(fr->dso, fr->dso_len);
}
