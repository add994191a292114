/* json.h - a growable text buffer that builds JSON with automatic commas. */
#ifndef PMUPROF_JSON_H
#define PMUPROF_JSON_H

#include <stddef.h>
#include <stdint.h>

struct jbuf {
    char *data;
    size_t len;
    size_t cap;
    int err; /* sticky -ENOMEM */
};

void jbuf_init(struct jbuf *b);
void jbuf_free(struct jbuf *b);
void jbuf_raw(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jbuf_open(struct jbuf *b, char c); /* '{' or '[' (comma added when needed) */
void jbuf_close(struct jbuf *b, char c); /* '}' or ']' */
void jbuf_key(struct jbuf *b, const char *key);
void jbuf_str(struct jbuf *b, const char *s); /* quoted, escaped; NULL -> null */
void jbuf_int(struct jbuf *b, long long v);
void jbuf_uint(struct jbuf *b, unsigned long long v);
void jbuf_hex(struct jbuf *b, unsigned long long v); /* "0x..." string */
void jbuf_num(struct jbuf *b, double v);
void jbuf_bool(struct jbuf *b, int v);
void jbuf_null(struct jbuf *b);

/* key + value shorthands */
void jbuf_kstr(struct jbuf *b, const char *key, const char *s);
void jbuf_kint(struct jbuf *b, const char *key, long long v);
void jbuf_kuint(struct jbuf *b, const char *key, unsigned long long v);
void jbuf_khex(struct jbuf *b, const char *key, unsigned long long v);
void jbuf_knum(struct jbuf *b, const char *key, double v);
void jbuf_kbool(struct jbuf *b, const char *key, int v);

#endif
