/* Text rendering: Python's utf-8 "backslashreplace" decoding, and JSON string escaping. */
#ifndef PMUPROF_FOLD_TEXT_H
#define PMUPROF_FOLD_TEXT_H

#include "buf.h"

enum { RENDER_SEMI = 1, RENDER_SPACE = 2 }; /* ';' -> ':', ' ' -> '_' */

/* Append s rendered as Python's bytes.decode("utf-8", "backslashreplace") would, applying flags. */
int text_render(buf_t *out, const char *s, size_t n, int flags);
/* Append s (valid UTF-8) as a JSON string literal, quotes included. */
int text_json(buf_t *out, const char *s, size_t n);

static inline int text_is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static inline int text_is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static inline int text_is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

#endif
