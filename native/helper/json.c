/* json.c - JSON text building into a memory buffer (main prints it). */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jbuf_init(struct jbuf *b)
{
    memset(b, 0, sizeof(*b));
}

void jbuf_free(struct jbuf *b)
{
    free(b->data);
    jbuf_init(b);
}

static int jbuf_reserve(struct jbuf *b, size_t more)
{
    size_t need = b->len + more + 1;
    char *p;

    if (b->err)
        return b->err;
    if (need <= b->cap)
        return 0;
    if (need < b->cap * 2)
        need = b->cap * 2;
    if (need < 4096)
        need = 4096;
    p = realloc(b->data, need);
    if (!p) {
        b->err = -ENOMEM;
        return b->err;
    }
    b->data = p;
    b->cap = need;
    return 0;
}

static void jbuf_vraw(struct jbuf *b, const char *fmt, va_list ap)
{
    va_list cp;
    int n;

    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0 || jbuf_reserve(b, (size_t)n))
        return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void jbuf_raw(struct jbuf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    jbuf_vraw(b, fmt, ap);
    va_end(ap);
}

static void jbuf_sep(struct jbuf *b)
{
    char last;

    if (!b->len || b->err)
        return;
    last = b->data[b->len - 1];
    if (last != '{' && last != '[' && last != ':')
        jbuf_raw(b, ",");
}

void jbuf_open(struct jbuf *b, char c)
{
    jbuf_sep(b);
    jbuf_raw(b, "%c", c);
}

void jbuf_close(struct jbuf *b, char c)
{
    jbuf_raw(b, "%c", c);
}

static void jbuf_quoted(struct jbuf *b, const char *s)
{
    const unsigned char *p;

    jbuf_raw(b, "\"");
    for (p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            jbuf_raw(b, "\\%c", *p);
        else if (*p == '\n')
            jbuf_raw(b, "\\n");
        else if (*p == '\t')
            jbuf_raw(b, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            jbuf_raw(b, "\\u%04x", *p);
        else
            jbuf_raw(b, "%c", *p);
    }
    jbuf_raw(b, "\"");
}

void jbuf_key(struct jbuf *b, const char *key)
{
    jbuf_sep(b);
    jbuf_quoted(b, key);
    jbuf_raw(b, ":");
}

void jbuf_str(struct jbuf *b, const char *s)
{
    jbuf_sep(b);
    if (s)
        jbuf_quoted(b, s);
    else
        jbuf_raw(b, "null");
}

void jbuf_int(struct jbuf *b, long long v)
{
    jbuf_sep(b);
    jbuf_raw(b, "%lld", v);
}

void jbuf_uint(struct jbuf *b, unsigned long long v)
{
    jbuf_sep(b);
    jbuf_raw(b, "%llu", v);
}

void jbuf_hex(struct jbuf *b, unsigned long long v)
{
    jbuf_sep(b);
    jbuf_raw(b, "\"0x%llx\"", v);
}

void jbuf_num(struct jbuf *b, double v)
{
    jbuf_sep(b);
    if (isfinite(v))
        jbuf_raw(b, "%.10g", v);
    else
        jbuf_raw(b, "null");
}

void jbuf_bool(struct jbuf *b, int v)
{
    jbuf_sep(b);
    jbuf_raw(b, v ? "true" : "false");
}

void jbuf_null(struct jbuf *b)
{
    jbuf_sep(b);
    jbuf_raw(b, "null");
}

void jbuf_kstr(struct jbuf *b, const char *key, const char *s)
{
    jbuf_key(b, key);
    jbuf_str(b, s);
}
void jbuf_kint(struct jbuf *b, const char *key, long long v)
{
    jbuf_key(b, key);
    jbuf_int(b, v);
}
void jbuf_kuint(struct jbuf *b, const char *key, unsigned long long v)
{
    jbuf_key(b, key);
    jbuf_uint(b, v);
}
void jbuf_khex(struct jbuf *b, const char *key, unsigned long long v)
{
    jbuf_key(b, key);
    jbuf_hex(b, v);
}
void jbuf_knum(struct jbuf *b, const char *key, double v)
{
    jbuf_key(b, key);
    jbuf_num(b, v);
}
void jbuf_kbool(struct jbuf *b, const char *key, int v)
{
    jbuf_key(b, key);
    jbuf_bool(b, v);
}
