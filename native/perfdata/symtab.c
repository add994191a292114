/* Symbol storage in perf's order, perf's fix-ups, lookups, and names demangled on first use. */
#define _GNU_SOURCE
#include "symtab.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/demangle.h"
#include "rbtree.h"

#define NOT_YET UINT64_MAX

static int names_add(symtab_t *t, const char *name, size_t len, uint64_t *off)
{
    if (t->names_len + len + 1 > t->names_cap) {
        size_t nc = t->names_cap ? t->names_cap : 1 << 16;
        while (nc < t->names_len + len + 1)
            nc *= 2;
        char *p = realloc(t->names, nc);
        if (!p)
            return -ENOMEM;
        t->names = p;
        t->names_cap = nc;
    }
    memcpy(t->names + t->names_len, name, len);
    t->names[t->names_len + len] = 0;
    *off = t->names_len;
    t->names_len += len + 1;
    return 0;
}

static int log_op(symtab_t *t, int64_t op, uint64_t key)
{
    if (t->nlog == t->caplog) {
        size_t nc = t->caplog ? t->caplog * 2 : 1024;
        int64_t *l = realloc(t->log, nc * sizeof *l);
        uint64_t *k = l ? realloc(t->logkey, nc * sizeof *k) : NULL;
        if (l)
            t->log = l;
        if (!k)
            return -ENOMEM;
        t->logkey = k;
        t->caplog = nc;
    }
    t->log[t->nlog] = op;
    t->logkey[t->nlog++] = key;
    t->ready = t->tree = 0;
    return 0;
}

int symtab_insert(symtab_t *t, uint64_t start, uint64_t len, uint8_t binding, uint8_t type, const char *name,
                  size_t name_len, uint8_t kind)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        sym_t *s = realloc(t->s, nc * sizeof *s);
        if (!s)
            return -ENOMEM;
        t->s = s;
        t->cap = nc;
    }
    sym_t *s = &t->s[t->n];
    uint64_t off;
    if (names_add(t, name, name_len, &off) || log_op(t, (int64_t)t->n, start))
        return -ENOMEM;
    *s = (sym_t){start,
                 len ? start + len : start,
                 off,
                 kind == SYMNAME_RAW ? off : NOT_YET,
                 (uint32_t)name_len,
                 (uint32_t)name_len,
                 binding,
                 type,
                 kind,
                 0};
    t->n++;
    return 0;
}

void symtab_erase(symtab_t *t, int32_t i)
{
    t->s[i].dead = 1;
    log_op(t, ~(int64_t)i, 0); /* out of memory here only costs the tree fallback its exactness */
}

void symtab_moved(symtab_t *t)
{
    t->ready = 0;
}

typedef struct {
    uint64_t key;
    int32_t idx;
} pair_t;

/* Stable LSD radix sort by key (bytes that never differ are skipped). */
static int radix_sort(pair_t *a, size_t n)
{
    pair_t *tmp = malloc((n + 1) * sizeof *tmp);
    if (!tmp)
        return -ENOMEM;
    uint64_t diff = 0;
    for (size_t i = 1; i < n; i++)
        diff |= a[i].key ^ a[0].key;
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((diff >> shift) & 0xff))
            continue;
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((a[i].key >> shift) & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            tmp[count[(a[i].key >> shift) & 0xff]++] = a[i];
        memcpy(a, tmp, n * sizeof *a);
    }
    free(tmp);
    return 0;
}

/* Merge the symbols inserted since the last call into order (ties: earlier insertion first). */
static int merge_new(symtab_t *t)
{
    size_t fresh = t->n - t->nsorted, k = 0;
    pair_t *p = malloc((fresh + 1) * sizeof *p);
    int32_t *o = malloc((t->norder + fresh + 1) * sizeof *o);
    if (!p || !o)
        return free(p), free(o), -ENOMEM;
    for (size_t i = t->nsorted; i < t->n; i++)
        if (!t->s[i].dead)
            p[k++] = (pair_t){t->s[i].start, (int32_t)i};
    if (radix_sort(p, k))
        return free(p), free(o), -ENOMEM;
    size_t a = 0, b = 0, w = 0;
    while (a < t->norder || b < k) {
        if (a < t->norder && t->s[t->order[a]].dead) {
            a++;
        } else if (b == k || (a < t->norder && t->s[t->order[a]].start <= p[b].key)) {
            o[w++] = t->order[a++];
        } else {
            o[w++] = p[b++].idx;
        }
    }
    free(p);
    free(t->order);
    t->order = o;
    t->norder = w;
    t->nsorted = t->n;
    return 0;
}

/* The live symbols in tree order, and the prefix maximum of their exclusive ends. */
static int make_ready(symtab_t *t)
{
    if (t->ready && t->nsorted == t->n)
        return 0;
    if (merge_new(t))
        return -ENOMEM;
    uint64_t *m = realloc(t->maxend, (t->norder + 1) * sizeof *m), best = 0;
    if (!m)
        return -ENOMEM;
    t->maxend = m;
    for (size_t i = 0; i < t->norder; i++) {
        const sym_t *s = &t->s[t->order[i]];
        uint64_t end = s->end > s->start ? s->end : s->start + 1;
        best = end > best ? end : best;
        m[i] = best;
    }
    t->ready = 1;
    return 0;
}

/* Position of i in order (symtab_next walks it); the order is current while walking. */
static size_t pos_of(const symtab_t *t, int32_t i)
{
    size_t lo = 0, hi = t->norder;
    const sym_t *s = &t->s[i];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const sym_t *m = &t->s[t->order[mid]];
        if (m->start < s->start || (m->start == s->start && t->order[mid] < i))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int32_t walk_from(symtab_t *t, size_t k)
{
    for (; k < t->norder; k++)
        if (!t->s[t->order[k]].dead)
            return t->order[(t->walk = k)];
    return SYM_NONE;
}

int32_t symtab_first(symtab_t *t)
{
    return make_ready(t) ? SYM_NONE : walk_from(t, 0);
}

/* Next live symbol after i. Erasing, or moving starts, while walking keeps the walk's order. */
int32_t symtab_next(symtab_t *t, int32_t i)
{
    size_t k = t->walk < t->norder && t->order[t->walk] == i ? t->walk : pos_of(t, i);
    return walk_from(t, k + 1);
}

size_t symtab_live(const symtab_t *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += !t->s[i].dead;
    return n;
}

void symtab_fixup_end(symtab_t *t, int is_kallsyms)
{
    if (make_ready(t))
        return;
    int32_t cur = SYM_NONE;
    for (size_t k = 0; k < t->norder; k++) {
        int32_t prev = cur;
        cur = t->order[k];
        if (prev == SYM_NONE || t->s[prev].end != t->s[prev].start)
            continue;
        if (is_kallsyms && !strchr(symtab_raw(t, prev), '[') != !strchr(symtab_raw(t, cur), '['))
            t->s[prev].end = ((t->s[prev].end + 4096) + 4095) / 4096 * 4096;
        else
            t->s[prev].end = t->s[cur].start;
    }
    if (cur != SYM_NONE && t->s[cur].end == t->s[cur].start)
        t->s[cur].end = (t->s[cur].start + 4095) / 4096 * 4096 + 4096;
    t->ready = 0;
}

static size_t underscores(const char *s)
{
    size_t n = 0;
    while (s && s[n] == '_')
        n++;
    return n;
}

/* perf's choose_best_symbol: 1 when a should stay (ties keep a), 0 when b should. */
static int best_is_a(symtab_t *t, int32_t a, int32_t b)
{
    const sym_t *x = &t->s[a], *y = &t->s[b];
    int za = x->end == x->start, zb = y->end == y->start;
    if (zb != za)
        return zb;
    int wa = x->binding == STB_WEAK, wb = y->binding == STB_WEAK;
    if (wa != wb)
        return wb;
    int ga = x->binding == STB_GLOBAL, gb = y->binding == STB_GLOBAL;
    if (ga != gb)
        return ga;
    size_t la, lb;
    size_t ua = underscores(symtab_name(t, a, &la)), ub = underscores(symtab_name(t, b, &lb));
    if (ua != ub)
        return ub > ua;
    return la != lb ? la > lb : 1;
}

void symtab_fixup_duplicate(symtab_t *t)
{
    if (make_ready(t))
        return;
    int32_t cur = SYM_NONE;
    for (size_t k = 0; k < t->norder; k++) {
        int32_t nx = t->order[k];
        if (cur == SYM_NONE || t->s[cur].start != t->s[nx].start) {
            cur = nx;
        } else if (best_is_a(t, cur, nx)) {
            symtab_erase(t, nx);
        } else {
            symtab_erase(t, cur);
            cur = nx;
        }
    }
    t->ready = 0;
}

/* The answer perf's tree search gives, from the sorted array when no overlap can change it. */
int32_t symtab_find(symtab_t *t, uint64_t ip)
{
    if (make_ready(t) || !t->norder)
        return SYM_NONE;
    size_t lo = 0, hi = t->norder; /* the last with start <= ip */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->s[t->order[mid]].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return SYM_NONE;
    size_t k = lo - 1;
    const sym_t *c = &t->s[t->order[k]];
    int holds = ip < (c->end > c->start ? c->end : c->start + 1);
    int earlier = k > 0 && t->maxend[k - 1] > ip;
    int twin = k > 0 && t->s[t->order[k - 1]].start == c->start;
    if (!earlier && (!holds || !twin))
        return holds ? t->order[k] : SYM_NONE;
    t->tree_finds++;
    if (!t->tree && rb_build(t))
        return SYM_NONE;
    return rb_find(t, ip);
}

const char *symtab_name(symtab_t *t, int32_t i, size_t *len)
{
    sym_t *s = &t->s[i];
    if (s->dem == NOT_YET) {
        char *d = demangle_user(symtab_raw(t, i)), buf[1024];
        if (!d && s->kind != SYMNAME_PLT) { /* perf keeps the raw name */
            s->dem = s->name;
            s->dem_len = s->name_len;
            return *len = s->dem_len, t->names + s->dem;
        }
        const char *use = d ? d : symtab_raw(t, i); /* a copy (PLT) is made before names can move */
        size_t n = strlen(use);
        if (s->kind == SYMNAME_PLT) { /* perf builds "%s@plt" in a 1024-byte buffer */
            int w = snprintf(buf, sizeof buf, "%s@plt", use);
            use = buf;
            n = w < (int)sizeof buf ? (size_t)w : sizeof buf - 1;
        }
        uint64_t off;
        int rc = names_add(t, use, n, &off);
        free(d);
        if (rc)
            return *len = 0, NULL;
        s = &t->s[i];
        s->dem = off;
        s->dem_len = (uint32_t)n;
    }
    *len = s->dem_len;
    return t->names + s->dem;
}

void symtab_free(symtab_t *t)
{
    free(t->s);
    free(t->names);
    free(t->order);
    free(t->maxend);
    free(t->log);
    free(t->logkey);
    free(t->rb);
    memset(t, 0, sizeof *t);
}
