/* perf's __dso__load_kallsyms (no kcore): read kallsyms, relocate by the recorded _text, fix ends and
 * duplicates, keep the core kernel's symbols (module ones go to module maps), fix the map's range. */
#define _GNU_SOURCE
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kallsyms.h"

/* perf's symbol__read_kptr_restrict (root stands for CAP_SYSLOG). */
int kallsyms_restricted(void)
{
    FILE *fp = fopen("/proc/sys/kernel/kptr_restrict", "r");
    int v = 0, paranoid = 2, root = geteuid() == 0;
    if (fp) {
        if (fscanf(fp, "%d", &v) != 1)
            v = 0;
        fclose(fp);
    }
    fp = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    if (fp) {
        if (fscanf(fp, "%d", &paranoid) != 1)
            paranoid = 2;
        fclose(fp);
    }
    return (root ? v >= 2 : v != 0) || (paranoid > 1 && !root);
}

typedef int (*ksym_cb)(void *ctx, uint64_t addr, char type, const char *name, size_t n);

/* kallsyms__parse: "hex type name[\t[module]]" lines; names up to 513 bytes. */
static int kallsyms_parse(const char *path, ksym_cb cb, void *ctx)
{
    FILE *fp = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    if (!fp)
        return -1;
    while (!rc && (len = getline(&line, &cap, fp)) >= 0) {
        char *p = line, *end;
        if (len && line[len - 1] == '\n')
            line[--len] = 0;
        uint64_t addr = strtoull(p, &end, 16);
        if (end == p || *end != ' ' || !end[1] || end[2] != ' ')
            continue;
        size_t n = strlen(end + 3);
        rc = cb(ctx, addr, end[1], end + 3, n > 513 ? 513 : n);
    }
    free(line);
    fclose(fp);
    return rc < 0 ? rc : 0;
}

typedef struct {
    const char *name;
    uint64_t addr;
    int found;
} ref_t;

static int ref_cb(void *ctx, uint64_t addr, char type, const char *name, size_t n)
{
    ref_t *r = ctx;
    char t = (char)toupper((unsigned char)type);
    if ((t == 'T' || t == 'W' || type == 'A') && strlen(r->name) == n && !memcmp(name, r->name, n)) {
        r->addr = addr;
        r->found = 1;
        return 1;
    }
    return 0;
}

int kallsyms_function_start(const char *path, const char *name, uint64_t *addr)
{
    ref_t r = {name, 0, 0};
    if (kallsyms_parse(path, ref_cb, &r) < 0 || !r.found)
        return -1;
    *addr = r.addr;
    return 0;
}

typedef struct {
    symtab_t *syms;
    ref_t ref;
} load_t;

/* One pass: the symbols perf keeps, and the reference symbol (kallsyms__get_function_start). */
static int sym_cb(void *ctx, uint64_t addr, char type, const char *name, size_t n)
{
    load_t *l = ctx;
    symtab_t *t = l->syms;
    if (l->ref.name && !l->ref.found)
        ref_cb(&l->ref, addr, type, name, n);
    char u = (char)toupper((unsigned char)type);
    if (!(u == 'T' || u == 'W' || u == 'D' || u == 'B') || name[0] == '$')
        return 0;
    uint8_t bind = type == 'W' ? STB_WEAK : isupper((unsigned char)type) ? STB_GLOBAL : STB_LOCAL;
    uint8_t stt = (u == 'T' || u == 'W') ? STT_FUNC : STT_OBJECT;
    return symtab_insert(t, addr, 0, bind, stt, name, n, SYMNAME_RAW) ? -ENOMEM : 0;
}

static const map_t *module_map(machine_t *m, const char *mod)
{
    for (size_t i = 0; i < m->k.kmaps.n; i++) {
        const map_t *km = &m->k.kmaps.v[i];
        if (km->kind == KMAP_MODULE && !strcmp(km->dso->name, mod))
            return km;
    }
    return NULL;
}

/* perf maps per-CPU entry trampolines when the kernel has this symbol (and kcore did not map them). */
static int has_entry_trampoline(symtab_t *t)
{
    for (int32_t i = symtab_first(t); i != SYM_NONE; i = symtab_next(t, i))
        if (!strcmp(symtab_raw(t, i), "_entry_trampoline"))
            return 1;
    return 0;
}

/* maps__split_kallsyms without kcore: module symbols leave the kernel DSO, the rest is relocated. */
static int split(machine_t *m, symtab_t *t, uint64_t delta)
{
    int count = 0, in_module = 0;
    for (int32_t i = symtab_first(t), nx; i != SYM_NONE; i = nx) {
        nx = symtab_next(t, i);
        const char *name = symtab_raw(t, i), *tab = strchr(name, '\t');
        if (tab) {
            in_module = module_map(m, tab + 1) != NULL;
            symtab_erase(t, i);
            continue;
        }
        if (!strcmp(name, "__entry_SYSCALL_64_trampoline")) {
            symtab_erase(t, i);
            continue;
        }
        if (in_module) {
            snprintf(m->unsupported, sizeof m->unsupported, "kernel text after module symbols in kallsyms");
            return -2;
        }
        t->s[i].start -= delta;
        t->s[i].end -= delta;
        count++;
    }
    symtab_moved(t);
    return count;
}

/* maps__split_kallsyms_for_kcore: each symbol moves to the kcore map holding it, relative to it. */
static int split_for_kcore(machine_t *m, symtab_t *t)
{
    symtab_t fresh = {0};
    int count = 0;
    for (int32_t i = symtab_first(t); i != SYM_NONE; i = symtab_next(t, i)) {
        const sym_t *s = &t->s[i];
        const char *name = symtab_raw(t, i);
        const map_t *km = NULL;
        for (size_t j = 0; j < m->k.kmaps.n && !km; j++)
            if (s->start >= m->k.kmaps.v[j].start && s->start < m->k.kmaps.v[j].end)
                km = &m->k.kmaps.v[j];
        if (!km)
            continue;
        uint64_t shift = km->start - km->pgoff, end = s->end > km->end ? km->end : s->end;
        symtab_t *to = km->dso == m->k.kernel ? &fresh : &km->dso->syms;
        if (symtab_insert(to, s->start - shift, end ? end - shift - (s->start - shift) : 0, s->binding, s->type, name,
                          strcspn(name, "\t"), SYMNAME_RAW))
            return symtab_free(&fresh), -ENOMEM;
        if (end)
            to->s[to->n - 1].end = end - shift;
        count++;
    }
    symtab_free(t);
    *t = fresh;
    return count;
}

int kallsyms_read(machine_t *m, const char *path, uint64_t *delta)
{
    dso_t *k = m->k.kernel;
    char *real = realpath(path, NULL);
    int restricted = real && !strcmp(real, "/proc/kallsyms") && kallsyms_restricted();
    free(real);
    load_t l = {&k->syms, {m->k.ref_name, 0, 0}};
    *delta = 0;
    if (restricted || kallsyms_parse(path, sym_cb, &l) < 0)
        return -1;
    if (m->k.ref_name) {
        if (!l.ref.found)
            return -1;
        *delta = l.ref.addr - m->k.ref_addr;
    }
    symtab_fixup_end(&k->syms, 1);
    symtab_fixup_duplicate(&k->syms);
    return 0;
}

int kallsyms_split_kcore(machine_t *m, const char *path)
{
    uint64_t at;
    m->k.trampolines = kallsyms_function_start(path, "__entry_SYSCALL_64_trampoline", &at) != 0 &&
            has_entry_trampoline(&m->k.kernel->syms);
    return split_for_kcore(m, &m->k.kernel->syms);
}

int kallsyms_split(machine_t *m, uint64_t delta)
{
    dso_t *k = m->k.kernel;
    int count = split(m, &k->syms, delta);
    if (count <= 0)
        return count;
    int32_t first = symtab_first(&k->syms), last = first;
    for (int32_t i = first; i != SYM_NONE; i = symtab_next(&k->syms, i))
        last = i;
    m->k.trampolines = has_entry_trampoline(&k->syms);
    maps_t *km = &m->k.kmaps; /* map__fixup_start/end: the kernel map spans its symbols */
    for (size_t i = 0; i < km->n; i++)
        if (km->v[i].kind == KMAP_VMLINUX) {
            map_t v = km->v[i];
            memmove(km->v + i, km->v + i + 1, (km->n - i - 1) * sizeof v);
            km->n--;
            v.start = k->syms.s[first].start;
            v.end = k->syms.s[last].end;
            return kmaps_insert(m, &v) ? -ENOMEM : count;
        }
    return count;
}
