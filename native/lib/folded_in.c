/* Folded text in (FlameGraph's 'frame;frame;leaf COUNT' lines), the stacks as arrays out. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"

#define MAX_COUNT 9223372036854775807ULL /* counts and their sum fit int64, as pprof needs */

typedef struct {
    itab_t frames, stacks; /* label -> id; frame-id sequence -> stack id */
    uint64_t *counts;
    size_t cap;
    buf_t key;
    uint64_t total;
} fin_t;

/* One stack line: 0, -ENOMEM, or 3 with *why set. */
static int take_line(fin_t *s, char *p, size_t n, const char **why)
{
    while (n && (p[n - 1] == '\r' || p[n - 1] == '\n'))
        n--;
    size_t blank = 0;
    while (blank < n && (p[blank] == ' ' || p[blank] == '\t' || p[blank] == '\f' || p[blank] == '\v'))
        blank++;
    if (blank == n || p[0] == '#')
        return 0;
    char *sp = memrchr(p, ' ', n);
    size_t digits = sp ? n - (size_t)(sp - p) - 1 : 0;
    if (!sp || sp == p || !digits) {
        *why = "not a folded stack line";
        return 3;
    }
    uint64_t count = 0;
    for (size_t i = 0; i < digits; i++) {
        char c = sp[1 + i];
        if (c < '0' || c > '9') {
            *why = "not a folded stack line";
            return 3;
        }
        if (count > (MAX_COUNT - (uint64_t)(c - '0')) / 10) {
            *why = "counts over 2^63-1";
            return 3;
        }
        count = count * 10 + (uint64_t)(c - '0');
    }
    if (count > MAX_COUNT - s->total) {
        *why = "counts over 2^63-1";
        return 3;
    }
    s->total += count;
    s->key.len = 0;
    for (char *f = p, *end = sp; f <= end;) {
        char *semi = memchr(f, ';', (size_t)(end - f));
        size_t len = (size_t)((semi ? semi : end) - f);
        int added;
        int64_t id = itab_intern(&s->frames, f, len, &added);
        uint32_t id32 = (uint32_t)id;
        if (id < 0 || buf_append(&s->key, &id32, 4))
            return -ENOMEM;
        f += len + 1;
    }
    int added;
    int64_t st = itab_intern(&s->stacks, s->key.p, s->key.len, &added);
    if (st < 0 || grow_u64(&s->counts, &s->cap, (size_t)st))
        return -ENOMEM;
    if (added)
        s->counts[st] = 0;
    s->counts[st] += count;
    return 0;
}

static int write_out(fin_t *s, FILE *out)
{
    size_t nst = s->stacks.n, nids = 0;
    for (size_t i = 0; i < nst; i++)
        nids += s->stacks.lens[i] / 4;
    uint32_t *ids = malloc((nids ? nids : 1) * 4), *lens = malloc((nst ? nst : 1) * 4);
    int rc = ids && lens ? 0 : -ENOMEM;
    for (size_t i = 0, w = 0; !rc && i < nst; i++) {
        size_t n;
        const char *k = itab_key(&s->stacks, (uint32_t)i, &n);
        memcpy(ids + w, k, n);
        w += n / 4;
        lens[i] = (uint32_t)(n / 4);
    }
    if (!rc)
        rc = stacksbin_write(out, &s->frames, ids, nids, lens, s->counts, nst);
    free(ids);
    free(lens);
    return rc;
}

int folded_to_bin(FILE *in, FILE *out, uint64_t *bad_line, const char **why)
{
    fin_t s = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int rc = 0;
    *bad_line = 0;
    while (!rc && (got = getline(&line, &cap, in)) >= 0) {
        ++*bad_line;
        rc = take_line(&s, line, (size_t)got, why);
    }
    if (!rc && ferror(in))
        rc = -EIO;
    if (!rc)
        rc = write_out(&s, out);
    free(line);
    free(s.counts);
    buf_free(&s.key);
    itab_free(&s.frames);
    itab_free(&s.stacks);
    return rc;
}
