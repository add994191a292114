/* Growable byte buffers and an open-addressing interning table (ids in insertion order). */
#include "buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int buf_reserve(buf_t *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int buf_append(buf_t *b, const void *s, size_t n)
{
    if (buf_reserve(b, n))
        return -ENOMEM;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

int buf_putc(buf_t *b, char c)
{
    if (b->len == b->cap && buf_reserve(b, 1))
        return -ENOMEM;
    b->p[b->len++] = c;
    return 0;
}

int buf_put_u64(buf_t *b, uint64_t v)
{
    char tmp[24];
    int i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return buf_append(b, tmp + i, sizeof tmp - i);
}

void buf_free(buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)n * 0xff51afd7ed558ccdULL);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0x94d049bb133111ebULL;
    h ^= h >> 32;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return h;
}

int grow_u64(uint64_t **a, size_t *cap, size_t id)
{
    if (id < *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc <= id)
        nc *= 2;
    uint64_t *p = realloc(*a, nc * sizeof *p);
    if (!p)
        return -ENOMEM;
    memset(p + *cap, 0, (nc - *cap) * sizeof *p);
    *a = p;
    *cap = nc;
    return 0;
}

static int itab_rehash(itab_t *t)
{
    size_t ns = t->nslots ? t->nslots * 2 : 1024;
    uint64_t *slots = calloc(ns, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < t->nslots; i++) {
        uint64_t s = t->slots[i];
        if (!s)
            continue;
        uint32_t id = (uint32_t)s - 1;
        size_t j = hash_bytes(t->arena.p + t->offs[id], t->lens[id]) & (ns - 1);
        while (slots[j])
            j = (j + 1) & (ns - 1);
        slots[j] = s;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    return 0;
}

static int64_t itab_lookup(const itab_t *t, const void *key, size_t len, uint64_t h, size_t *slot)
{
    uint64_t tag = h >> 32;
    size_t j = h & (t->nslots - 1);
    for (;;) {
        uint64_t s = t->slots[j];
        if (!s) {
            *slot = j;
            return -1;
        }
        uint32_t id = (uint32_t)s - 1;
        if ((s >> 32) == tag && t->lens[id] == len &&
            (!len || memcmp(t->arena.p + t->offs[id], key, len) == 0)) /* an empty key stores no byte */
            return id;
        j = (j + 1) & (t->nslots - 1);
    }
}

int64_t itab_find(const itab_t *t, const void *key, size_t len)
{
    size_t slot;
    if (!t->nslots)
        return -1;
    return itab_lookup(t, key, len, hash_bytes(key, len), &slot);
}

int64_t itab_intern(itab_t *t, const void *key, size_t len, int *added)
{
    size_t slot;
    *added = 0;
    if ((t->n + 1) * 4 >= t->nslots * 3 && itab_rehash(t))
        return -ENOMEM;
    uint64_t h = hash_bytes(key, len);
    int64_t id = itab_lookup(t, key, len, h, &slot);
    if (id >= 0)
        return id;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        uint64_t *offs = realloc(t->offs, nc * sizeof *offs);
        if (!offs)
            return -ENOMEM;
        t->offs = offs;
        uint32_t *lens = realloc(t->lens, nc * sizeof *lens);
        if (!lens)
            return -ENOMEM;
        t->lens = lens;
        t->cap = nc;
    }
    t->offs[t->n] = t->arena.len;
    t->lens[t->n] = (uint32_t)len;
    if (buf_append(&t->arena, key, len))
        return -ENOMEM;
    t->slots[slot] = ((h >> 32) << 32) | (uint64_t)(t->n + 1);
    *added = 1;
    return (int64_t)t->n++;
}

void itab_free(itab_t *t)
{
    free(t->slots);
    free(t->offs);
    free(t->lens);
    buf_free(&t->arena);
    memset(t, 0, sizeof *t);
}
