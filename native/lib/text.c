/* Python-compatible rendering of undecodable bytes (\xNN) and JSON string escaping. */
#include "text.h"

#include <errno.h>

static const char HEX[] = "0123456789abcdef";

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when s[0] starts no valid sequence;
 * *prefix is then how many bytes belong to the invalid maximal subpart (each rendered \xNN). */
static size_t utf8_valid(const unsigned char *s, size_t n, size_t *prefix)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        *prefix = 1;
        return 0;
    }
    size_t i = 1;
    for (; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *prefix = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return i;
}

int text_render(buf_t *out, const char *src, size_t n, int flags)
{
    const unsigned char *s = (const unsigned char *)src;
    if (buf_reserve(out, n))
        return -ENOMEM;
    size_t i = 0;
    while (i < n) {
        size_t prefix = 0, k = utf8_valid(s + i, n - i, &prefix);
        if (k == 1) {
            char c = (char)s[i];
            if ((flags & RENDER_SEMI) && c == ';')
                c = ':';
            else if ((flags & RENDER_SPACE) && c == ' ')
                c = '_';
            if (buf_putc(out, c))
                return -ENOMEM;
        } else if (k) {
            if (buf_append(out, s + i, k))
                return -ENOMEM;
        } else {
            for (size_t j = 0; j < prefix; j++) {
                char esc[4] = {'\\', 'x', HEX[s[i + j] >> 4], HEX[s[i + j] & 15]};
                if (buf_append(out, esc, 4))
                    return -ENOMEM;
            }
            k = prefix;
        }
        i += k;
    }
    return 0;
}

int text_json(buf_t *out, const char *src, size_t n)
{
    const unsigned char *s = (const unsigned char *)src;
    if (buf_putc(out, '"'))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        int rc;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            rc = buf_append(out, esc, 2);
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', HEX[c >> 4], HEX[c & 15]};
            rc = buf_append(out, esc, 6);
        } else {
            rc = buf_putc(out, (char)c);
        }
        if (rc)
            return -ENOMEM;
    }
    return buf_putc(out, '"');
}
