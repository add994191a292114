/* samples.c - parse sample lines and group them into functions of one binary. */
#include "samples.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int sample_push(struct sample_set *set, char *sym, uint64_t value, uint64_t count)
{
    struct sample *p;

    if (set->n == set->cap) {
        set->cap = set->cap ? set->cap * 2 : 256;
        p = realloc(set->s, set->cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        set->s = p;
    }
    p = &set->s[set->n++];
    memset(p, 0, sizeof(*p));
    p->symbol = sym;
    p->value = value;
    p->count = count;
    p->fn = -1;
    return 0;
}

static int parse_u64(const char *s, int base, uint64_t *v)
{
    char *end;

    if (!*s)
        return -EINVAL;
    errno = 0;
    *v = strtoull(s, &end, base);
    return (errno || *end) ? -EINVAL : 0;
}

/* One line, already stripped of its newline. Fields are split on the last tabs. */
static int line_parse(char *line, struct sample_set *set)
{
    char *t1 = strrchr(line, '\t'), *t2;
    uint64_t count = 1, value;
    char *sym;

    if (!strncmp(line, "0x", 2) || !strncmp(line, "0X", 2)) {
        if (t1)
            *t1 = '\0';
        if (parse_u64(line, 16, &value) || (t1 && parse_u64(t1 + 1, 10, &count)))
            return -EINVAL;
        return sample_push(set, NULL, value, count);
    }
    if (!t1)
        return -EINVAL;
    *t1 = '\0';
    t2 = strrchr(line, '\t');
    if (!t2) /* symbol \t offset (count 1) */
        return -EINVAL;
    *t2 = '\0';
    if (parse_u64(t2 + 1, 16, &value) || parse_u64(t1 + 1, 10, &count))
        return -EINVAL;
    sym = strdup(line);
    return sym ? sample_push(set, sym, value, count) : -ENOMEM;
}

int samples_read(FILE *in, struct sample_set *set, long *bad_line)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long no = 0;
    int rc = 0;

    *bad_line = 0;
    while (!rc && (len = getline(&line, &cap, in)) >= 0) {
        no++;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!len || line[0] == '#')
            continue;
        rc = line_parse(line, set);
        if (rc == -EINVAL)
            *bad_line = no;
    }
    free(line);
    return rc;
}

static long fn_find_or_add(struct sample_set *set, const char *name, const char *request, uint64_t start, uint64_t end,
                           const char *error)
{
    struct fn_ref *f;
    size_t i;

    for (i = 0; i < set->nf; i++) {
        f = &set->f[i];
        if (f->start == start && f->end == end && !f->error == !error &&
            (!request || (f->request && !strcmp(f->request, request))))
            return (long)i;
    }
    if (set->nf == set->capf) {
        set->capf = set->capf ? set->capf * 2 : 64;
        f = realloc(set->f, set->capf * sizeof(*f));
        if (!f)
            return -ENOMEM;
        set->f = f;
    }
    f = &set->f[set->nf];
    memset(f, 0, sizeof(*f));
    f->name = name;
    f->request = request ? strdup(request) : NULL;
    f->start = start;
    f->end = end;
    f->error = error;
    return (long)set->nf++;
}

/* A function this input already named: skip the symbol-table search. */
static long known_request(const struct sample_set *set, const char *name)
{
    size_t i;

    for (i = set->nf; i-- > 0;)
        if (set->f[i].request && !strcmp(set->f[i].request, name))
            return (long)i;
    return -1;
}

static long resolve_named(struct sample_set *set, struct elfbin *b, struct sample *s)
{
    long fn = known_request(set, s->symbol);
    const struct esym *sym;
    const struct range *r;
    uint64_t end;

    if (fn >= 0 && !set->f[fn].error) {
        s->addr = set->f[fn].start + s->value;
        if (s->addr < set->f[fn].end)
            return fn;
        set->f[fn].past_end += s->count;
        return -ERANGE;
    }
    if (fn >= 0)
        return fn;
    sym = elfbin_find_symbol(b, s->symbol);

    if (!sym)
        return fn_find_or_add(set, NULL, s->symbol, 0, 0, "symbol not found in the binary");
    end = sym->addr + sym->size;
    if (!sym->size && (r = elfbin_fde_at(b, sym->addr)))
        end = r->end;
    fn = fn_find_or_add(set, sym->name, s->symbol, sym->addr, end, NULL);
    s->addr = sym->addr + s->value;
    if (fn >= 0 && s->addr >= end) {
        set->f[fn].past_end += s->count;
        return -ERANGE;
    }
    return fn;
}

static long resolve_addr(struct sample_set *set, struct elfbin *b, struct sample *s)
{
    const struct esym *sym = elfbin_symbol_at(b, s->value);
    const struct range *r;

    s->addr = s->value;
    if (sym)
        return fn_find_or_add(set, sym->name, NULL, sym->addr, sym->addr + sym->size, NULL);
    r = elfbin_fde_at(b, s->value);
    if (r)
        return fn_find_or_add(set, NULL, NULL, r->start, r->end, NULL);
    return fn_find_or_add(set, NULL, NULL, s->value, s->value, "address not inside any symbol or FDE function");
}

int samples_resolve(struct sample_set *set, struct elfbin *b)
{
    size_t i;
    long fn;

    for (i = 0; i < set->n; i++) {
        struct sample *s = &set->s[i];

        fn = s->symbol ? resolve_named(set, b, s) : resolve_addr(set, b, s);
        if (fn == -ENOMEM)
            return -ENOMEM;
        s->fn = fn; /* -ERANGE: counted as past_end on its function */
    }
    return 0;
}

void samples_free(struct sample_set *set)
{
    size_t i;

    for (i = 0; i < set->n; i++)
        free(set->s[i].symbol);
    for (i = 0; i < set->nf; i++)
        free(set->f[i].request);
    free(set->s);
    free(set->f);
    memset(set, 0, sizeof(*set));
}
