/* perf's demangle_sym for user DSOs (kernel names are never demangled): the same libiberty call. */
#define _GNU_SOURCE
#include "demangle.h"

#include <ctype.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

/* "caml" + capital: "__" -> ".", "$xx" -> that byte. */
static char *ocaml(const char *s)
{
    if (strncmp(s, "caml", 4) || !isupper((unsigned char)s[4]))
        return NULL;
    size_t n = strlen(s), j = 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 4; i < n;) {
        if (s[i] == '_' && s[i + 1] == '_') {
            out[j++] = '.';
            i += 2;
        } else if (s[i] == '$' && isxdigit((unsigned char)s[i + 1]) && isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            out[j++] = (char)strtol(hex, NULL, 16);
            i += 3;
        } else {
            out[j++] = s[i++];
        }
    }
    out[j] = 0;
    return out;
}

enum { J_PREFIX, J_CLASS, J_FUNC, J_TYPE, J_CTYPE };

static const char *java_base(char c)
{
    switch (c) {
    case 'B': return "byte";
    case 'C': return "char";
    case 'D': return "double";
    case 'F': return "float";
    case 'I': return "int";
    case 'J': return "long";
    case 'S': return "short";
    case 'Z': return "boolean";
    }
    return NULL;
}

typedef struct {
    char *buf;
    size_t len, cap;
} jout_t;

static void jput(jout_t *o, const char *s)
{
    for (; *s && o->len + 1 < o->cap; s++)
        o->buf[o->len++] = *s;
}

/* One character of perf's Java signature walk (PREFIX mode, up to the return type): 0, or -1 to give up. */
static int java_char(jout_t *o, const char *q, int *mode, int *narg, int *array)
{
    char c = *q, one[2] = {c, 0};
    const char *base = java_base(c);
    if (c == 'L' && (*mode == J_PREFIX || *mode == J_TYPE)) {
        if (*mode == J_TYPE && (*narg)++)
            jput(o, ", ");
        *mode = *mode == J_PREFIX ? J_CLASS : J_CTYPE;
    } else if ((base || c == 'V') && *mode == J_TYPE) {
        if (base && (*narg)++)
            jput(o, ", ");
        jput(o, base ? base : "void");
        for (; *array > 0; (*array)--)
            jput(o, "[]");
        *array = 0;
    } else if (c == '[' || c == '(' || c == ')') {
        int need = c == '[' ? J_TYPE : c == '(' ? J_FUNC : J_TYPE;
        if (*mode != need)
            return -1;
        if (c == '[')
            (*array)++;
        else
            jput(o, one), *mode = c == '(' ? J_TYPE : *mode, *narg = c == ')' ? 0 : *narg;
    } else if (c == ';' || c == '/') {
        if (*mode != J_CLASS && *mode != J_CTYPE)
            return -1;
        if (c == '/' || (isalpha((unsigned char)q[1]) && *mode == J_CLASS))
            jput(o, ".");
        if (c == ';')
            *mode = *mode == J_CLASS ? J_FUNC : J_TYPE;
    } else {
        jput(o, one);
    }
    return 0;
}

/* perf's java_demangle_sym without the return type: "Lpkg/Cls;method(II)V" -> "pkg.Cls.method(int, int)". */
static char *java(const char *s)
{
    const char *ret = strrchr(s, ')');
    if (!ret)
        return NULL;
    jout_t o = {NULL, 0, strlen(s) * 3 + 1};
    int mode = J_PREFIX, narg = 0, array = 0;
    if (!(o.buf = malloc(o.cap)))
        return NULL;
    for (const char *q = s; q != ret + 1 && o.len != o.cap - 1; q++)
        if (java_char(&o, q, &mode, &narg, &array))
            return free(o.buf), NULL;
    o.buf[o.len] = 0;
    return o.buf;
}

/* perf's legacy-Rust check on an already demangled name: "...::h" + 16 hex digits (5-15 distinct). */
static int rust_hash_tail(const char *s, size_t n)
{
    if (n <= 19 || strncmp(s + n - 19, "::h", 3))
        return 0;
    int seen[16] = {0}, count = 0;
    for (size_t i = n - 16; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9')
            seen[c - '0'] = 1;
        else if (c >= 'a' && c <= 'f')
            seen[c - 'a' + 10] = 1;
        else
            return 0;
    }
    for (int i = 0; i < 16; i++)
        count += seen[i];
    return count >= 5 && count <= 15;
}

static const char *const RUST_ESC[][2] = {{"$C$", ","},   {"$SP$", "@"},  {"$BP$", "*"}, {"$RF$", "&"},  {"$LT$", "<"},
                                          {"$GT$", ">"},  {"$LP$", "("},  {"$RP$", ")"}, {"$u20$", " "}, {"$u27$", "'"},
                                          {"$u5b$", "["}, {"$u5d$", "]"}, {"$u7e$", "~"}};

static int rust_escape(const char *s)
{
    for (size_t i = 0; i < sizeof RUST_ESC / sizeof *RUST_ESC; i++)
        if (!strncmp(s, RUST_ESC[i][0], strlen(RUST_ESC[i][0])))
            return (int)i;
    return -1;
}

static int rust_like(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        char c = s[i];
        int e;
        if (c == '$') {
            if ((e = rust_escape(s + i)) < 0)
                return 0;
            i += strlen(RUST_ESC[e][0]);
        } else if (c == '.' && !strncmp(s + i, "...", 3)) {
            return 0;
        } else if (isalnum((unsigned char)c) || c == '.' || c == '_' || c == ':') {
            i++;
        } else {
            return 0;
        }
    }
    return 1;
}

/* perf's rust_demangle_sym, in place: drop the hash, unescape $..$, ".." -> "::", "." -> "-". */
static void rust_rewrite(char *s)
{
    const char *in = s, *end = s + strlen(s) - 19;
    char *out = s;
    while (in < end) {
        int e;
        if (*in == '$') {
            if ((e = rust_escape(in)) < 0)
                break;
            *out++ = RUST_ESC[e][1][0];
            in += strlen(RUST_ESC[e][0]);
        } else if (*in == '_') {
            if ((in == s || in[-1] == ':') && in[1] == '$')
                in++;
            else
                *out++ = *in++;
        } else if (*in == '.') {
            if (in[1] == '.')
                *out++ = ':', *out++ = ':', in += 2;
            else
                *out++ = '-', in++;
        } else if (isalnum((unsigned char)*in) || *in == ':') {
            *out++ = *in++;
        } else {
            break;
        }
    }
    *out = 0;
}

char *demangle_user(const char *name)
{
    char *d = cplus_demangle(name, DMGL_NO_OPTS);
    if (!d) {
        d = ocaml(name);
        return d ? d : java(name);
    }
    size_t n = strlen(d);
    if (rust_hash_tail(d, n) && rust_like(d, n - 19))
        rust_rewrite(d);
    return d;
}
