/* callers.c - the recovered-callers table (callers.h): parse, index, look up. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callers.h"

#define LINE_MAX_LEN 4096 /* a whole chain of CALLERS_MAX addresses fits */

static uint64_t key_hash(int32_t pid, int32_t tid, uint64_t sp, const uint64_t *key, size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uint32_t)pid ^ ((uint64_t)n << 40);
    h = (h ^ (uint64_t)(uint32_t)tid) * 1099511628211ULL;
    h = (h ^ sp) * 1099511628211ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ key[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/* Comma-separated lowercase hex numbers into out (at most cap, none 0); how many, or -1. */
static int addresses(const char *s, uint64_t *out, int cap)
{
    for (int n = 0;;) {
        uint64_t v = 0;
        int digits = 0;
        for (; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++, digits++) {
            if (digits == 16)
                return -1;
            v = v << 4 | (uint64_t)(*s <= '9' ? *s - '0' : *s - 'a' + 10);
        }
        if (!digits || !v || n == cap)
            return -1;
        out[n++] = v;
        if (*s == '\0')
            return n;
        if (*s++ != ',')
            return -1;
    }
}

/* A decimal in [lo, hi], the whole field; 0 parsed, -1 not. */
static int decimal(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* One line into e and rec (its recovered addresses): 1 parsed, 0 not. */
static int parse_line(char *line, callers_entry_t *e, uint64_t *rec)
{
    char *field[7], *save = NULL, *tok = strtok_r(line, "\t", &save);
    int nf = 0;
    while (tok && nf < 7) {
        field[nf++] = tok;
        tok = strtok_r(NULL, "\t", &save);
    }
    long pid, tid, samples, resume;
    uint64_t sp = 0;
    if (nf != 7 || tok || decimal(field[0], 1, INT32_MAX, &pid) || decimal(field[1], 0, INT32_MAX, &tid) ||
        decimal(field[3], 1, INT32_MAX, &samples) || decimal(field[5], 1, CALLERS_KEY, &resume))
        return 0;
    if (tid && addresses(field[2], &sp, 1) != 1)
        return 0;
    if (!tid && strcmp(field[2], "0"))
        return 0;
    memset(e, 0, sizeof *e);
    int nkey = addresses(field[4], e->key, CALLERS_KEY);
    int nrec = addresses(field[6], rec, CALLERS_MAX);
    if (nkey < 1 || nrec < 1 || resume > nkey || (tid && nkey != 1))
        return 0;
    e->pid = (int32_t)pid, e->tid = (int32_t)tid, e->sp = sp;
    e->nkey = (uint8_t)nkey, e->nrec = (uint16_t)nrec, e->resume = (uint8_t)resume;
    return 1;
}

static int same_key(const callers_entry_t *a, int32_t pid, int32_t tid, uint64_t sp, const uint64_t *key, size_t n)
{
    return a->pid == pid && a->tid == tid && a->sp == sp && a->nkey == n && !memcmp(a->key, key, n * sizeof *key);
}

static void slot_place(callers_t *c, size_t i)
{
    const callers_entry_t *e = &c->v[i];
    size_t j = key_hash(e->pid, e->tid, e->sp, e->key, e->nkey) & (c->nslots - 1);
    while (c->slots[j])
        j = (j + 1) & (c->nslots - 1);
    c->slots[j] = (uint32_t)(i + 1);
}

static int slots_build(callers_t *c)
{
    size_t ns = 16;
    while (ns < c->n * 2 + 2)
        ns *= 2;
    free(c->slots);
    c->slots = calloc(ns, sizeof *c->slots);
    if (!c->slots)
        return -ENOMEM;
    c->nslots = ns;
    for (size_t i = 0; i < c->n; i++)
        slot_place(c, i);
    return 0;
}

static callers_entry_t *find_slot(const callers_t *c, int32_t pid, int32_t tid, uint64_t sp, const uint64_t *key,
                                  size_t n)
{
    if (!c->nslots)
        return NULL;
    for (size_t j = key_hash(pid, tid, sp, key, n) & (c->nslots - 1); c->slots[j]; j = (j + 1) & (c->nslots - 1))
        if (same_key(&c->v[c->slots[j] - 1], pid, tid, sp, key, n))
            return &c->v[c->slots[j] - 1];
    return NULL;
}

static int pool_add(callers_t *c, const uint64_t *rec, size_t n)
{
    if (c->npool + n > c->cappool) {
        size_t cap = c->cappool ? c->cappool : 4096;
        while (cap < c->npool + n)
            cap *= 2;
        uint64_t *p = realloc(c->pool, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        c->pool = p, c->cappool = cap;
    }
    memcpy(c->pool + c->npool, rec, n * sizeof *rec);
    c->npool += n;
    return 0;
}

static int add(callers_t *c, callers_entry_t *e, const uint64_t *rec)
{
    callers_entry_t *had = find_slot(c, e->pid, e->tid, e->sp, e->key, e->nkey);
    if (had) { /* listed again: the same callers, or ambiguous */
        had->ambiguous |= had->nrec != e->nrec || had->resume != e->resume ||
                memcmp(callers_rec(c, had), rec, e->nrec * sizeof *rec) != 0;
        return 0;
    }
    if (c->n == CALLERS_MAX_ENTRIES) {
        c->bad_lines++;
        return 0;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        callers_entry_t *v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        c->v = v, c->cap = cap;
    }
    e->rec = c->npool;
    if (pool_add(c, rec, e->nrec))
        return -ENOMEM;
    c->v[c->n++] = *e;
    if (c->n * 2 + 2 > c->nslots)
        return slots_build(c);
    slot_place(c, c->n - 1);
    return 0;
}

int callers_load(callers_t *c, const char *path)
{
    static uint64_t rec[CALLERS_MAX];
    char line[LINE_MAX_LEN];
    callers_entry_t e;
    int rc = 0;
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    while (!rc && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len && line[len - 1] != '\n' && !feof(f)) { /* longer than any valid line: skip the rest */
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n')
                ;
            c->bad_lines++;
            continue;
        }
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || !line[0])
            continue;
        if (!parse_line(line, &e, rec)) {
            c->bad_lines++;
            continue;
        }
        rc = add(c, &e, rec);
    }
    if (ferror(f) && !rc)
        rc = -EIO;
    fclose(f);
    return rc;
}

const callers_entry_t *callers_find(const callers_t *c, int32_t pid, int32_t tid, uint64_t sp, const uint64_t *ips,
                                    size_t n)
{
    const callers_entry_t *e = find_slot(c, pid, tid, sp, ips, n < CALLERS_KEY ? n : CALLERS_KEY);
    return e && !e->ambiguous ? e : NULL;
}

void callers_free(callers_t *c)
{
    free(c->v);
    free(c->pool);
    free(c->slots);
    memset(c, 0, sizeof *c);
}
