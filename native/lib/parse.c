/* Line parsing that mirrors pmuprof.model.perfscript (split_frame, the header and event patterns). */
#include "parse.h"

#include <string.h>

#include "text.h"

int line_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!text_is_ws((unsigned char)s[i]))
            return 0;
    return 1;
}

static size_t skip_digits(const char *s, size_t n, size_t i)
{
    while (i < n && text_is_digit((unsigned char)s[i]))
        i++;
    return i;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && text_is_ws((unsigned char)s[i]))
        i++;
    return i;
}

/* digits '.' digits ':' at i; *sec gets the whole-seconds digits */
static int time_at(const char *s, size_t n, size_t i, size_t *end, slice_t *sec)
{
    size_t k = skip_digits(s, n, i);
    if (k == i || k >= n || s[k] != '.')
        return 0;
    size_t m = skip_digits(s, n, k + 1);
    *end = m + 1;
    *sec = (slice_t){s + i, k - i};
    return m > k + 1 && m < n && s[m] == ':';
}

/* \s+ (?:\[\d+\]\s+)? \d+\.\d+: at i */
static int cpu_time_at(const char *s, size_t n, size_t i, size_t *end, slice_t *sec)
{
    size_t y = skip_ws(s, n, i);
    if (y == i)
        return 0;
    if (y < n && s[y] == '[') {
        size_t z = skip_digits(s, n, y + 1);
        if (z == y + 1 || z >= n || s[z] != ']')
            return 0;
        size_t w = skip_ws(s, n, z + 1);
        return w > z + 1 && time_at(s, n, w, end, sec);
    }
    return time_at(s, n, y, end, sec);
}

static int end_or_ws(const char *s, size_t n, size_t i)
{
    return i == n || text_is_ws((unsigned char)s[i]);
}

/* One header form at one split point i (start of a blank run); fills a/b. */
static int header_form(const char *s, size_t n, size_t i, int form, header_t *h)
{
    size_t j = skip_ws(s, n, i), k = skip_digits(s, n, j);
    if (k == j)
        return 0;
    int pair = k + 1 < n && s[k] == '/' && text_is_digit((unsigned char)s[k + 1]);
    size_t m = pair ? skip_digits(s, n, k + 1) : k;
    int ok;
    slice_t sec = {NULL, 0};
    if (form == 0)
        ok = cpu_time_at(s, n, m, &h->end, &sec);
    else if (form == 1)
        ok = pair && end_or_ws(s, n, m), h->end = m < n ? m + 1 : m;
    else
        ok = end_or_ws(s, n, k), pair = 0, h->end = k < n ? k + 1 : k;
    if (!ok)
        return 0;
    h->comm = (slice_t){s, i};
    h->a = (slice_t){s + j, k - j};
    h->b = pair ? (slice_t){s + k + 1, m - k - 1} : (slice_t){NULL, 0};
    h->sec = form == 0 ? sec : (slice_t){NULL, 0};
    return 1;
}

/* \s(event):\s*$ where event = [A-Za-z][\w.\-/=,]*(?::[a-zA-Z]*)? ; keeps the part before ':'. */
void event_parse(const char *s, size_t n, slice_t *ev)
{
    ev->p = NULL;
    while (n && text_is_ws((unsigned char)s[n - 1]))
        n--;
    if (!n || s[n - 1] != ':')
        return;
    size_t e = n - 1, st = e;
    while (st > 0 && !text_is_ws((unsigned char)s[st - 1]))
        st--;
    if (st == 0 || st == e)
        return;
    unsigned char c = (unsigned char)s[st];
    if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
        return;
    size_t i = st + 1;
    for (; i < e; i++) {
        c = (unsigned char)s[i];
        int word = ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || text_is_digit(c) || c == '_';
        if (!(word || c == '.' || c == '-' || c == '/' || c == '=' || c == ','))
            break;
    }
    size_t name_end = i;
    if (i < e) {
        if (s[i] != ':')
            return;
        for (i++; i < e; i++) {
            c = (unsigned char)s[i];
            if (!((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
                return;
        }
    }
    *ev = (slice_t){s + st, name_end - st};
}

int header_parse(const char *s, size_t n, header_t *h)
{
    if (!n || text_is_ws((unsigned char)s[0]))
        return -1;
    for (int form = 0; form < 3; form++) {
        for (size_t i = 1; i < n; i++) {
            if (!text_is_ws((unsigned char)s[i]) || text_is_ws((unsigned char)s[i - 1]))
                continue;
            if (header_form(s, n, i, form, h))
                return 0;
        }
    }
    return -1;
}

int frame_tail(const char *s, size_t n, slice_t *addr, slice_t *tail)
{
    size_t b = skip_ws(s, n, 0);
    while (n > b && text_is_ws((unsigned char)s[n - 1]))
        n--;
    const char *sp = memchr(s + b, ' ', n - b);
    if (!sp)
        return -1;
    for (const char *a = s + b; a < sp; a++)
        if (!text_is_hex((unsigned char)*a))
            return -1;
    size_t t = skip_ws(s, n, (size_t)(sp - s) + 1);
    if (t >= n)
        return -1;
    *addr = (slice_t){s + b, (size_t)(sp - s) - b};
    *tail = (slice_t){s + t, n - t};
    return 0;
}

/* Index of the '(' opening the trailing balanced group, or -1. */
static long dso_open_paren(const char *t, size_t n)
{
    long depth = 0;
    for (size_t i = n; i-- > 0;) {
        if (t[i] == ')')
            depth++;
        else if (t[i] == '(' && --depth == 0)
            return (long)i;
    }
    return -1;
}

static int has_space_paren(const char *t, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (t[i] == ' ' && t[i + 1] == '(')
            return 1;
    return 0;
}

int tail_parse(const char *t, size_t n, frame_t *f)
{
    if (!n || t[n - 1] != ')' || (!has_space_paren(t, n) && t[0] != '('))
        return -1;
    long cut = dso_open_paren(t, n);
    memset(f, 0, sizeof *f);
    if (cut <= 0) {
        f->dso = (slice_t){t + 1, n >= 2 ? n - 2 : 0};
        return 0;
    }
    size_t se = (size_t)cut;
    while (se && text_is_ws((unsigned char)t[se - 1]))
        se--;
    f->dso = (slice_t){t + cut + 1, n - (size_t)cut - 2};
    size_t h = se;
    while (h && text_is_hex((unsigned char)t[h - 1]))
        h--;
    if (h < se && h >= 3 && memcmp(t + h - 3, "+0x", 3) == 0) {
        f->off = (slice_t){t + h, se - h};
        se = h - 3;
    }
    size_t sb = skip_ws(t, se, 0);
    while (se > sb && text_is_ws((unsigned char)t[se - 1]))
        se--;
    if (se > sb)
        f->sym = (slice_t){t + sb, se - sb};
    return 0;
}

/* inline_frame(): rest of a header line, right-stripped, ending in a balanced '(dso)' group;
 * the frame starts after the last ': ' before that group. */
int inline_frame(const char *s, size_t n, slice_t *frame)
{
    while (n && text_is_ws((unsigned char)s[n - 1]))
        n--;
    if (!n || s[n - 1] != ')')
        return -1;
    long paren = dso_open_paren(s, n);
    if (paren <= 0)
        return -1;
    size_t start = 0;
    for (size_t i = (size_t)paren; i-- > 0;)
        if (i + 1 < (size_t)paren && s[i] == ':' && s[i + 1] == ' ') {
            start = i + 2;
            break;
        }
    *frame = (slice_t){s + start, n - start};
    return 0;
}
