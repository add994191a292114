/* Growable byte buffers and the interning hash table the folder is built on. */
#ifndef PMUPROF_FOLD_BUF_H
#define PMUPROF_FOLD_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

int buf_reserve(buf_t *b, size_t extra);
int buf_append(buf_t *b, const void *s, size_t n);
int buf_putc(buf_t *b, char c);
int buf_put_u64(buf_t *b, uint64_t v);
void buf_free(buf_t *b);

/* Interning table: byte strings -> dense ids 0..n-1 in insertion order. */
typedef struct {
    uint64_t *slots; /* (hash high 32 bits << 32) | (id + 1); 0 = empty */
    size_t nslots;
    uint64_t *offs; /* per id: offset of the key in arena */
    uint32_t *lens; /* per id: key length */
    size_t n, cap;
    buf_t arena;
} itab_t;

/* Returns the id (>= 0) and sets *added when new; -ENOMEM on failure. */
int64_t itab_intern(itab_t *t, const void *key, size_t len, int *added);
/* Returns the id or -1 when absent. */
int64_t itab_find(const itab_t *t, const void *key, size_t len);
static inline const char *itab_key(const itab_t *t, uint32_t id, size_t *len)
{
    *len = t->lens[id];
    return t->arena.p + t->offs[id];
}
void itab_free(itab_t *t);
uint64_t hash_bytes(const void *p, size_t n);

/* Per-id side arrays grow with the table: ensure room for id. */
int grow_u64(uint64_t **a, size_t *cap, size_t id);

#endif
