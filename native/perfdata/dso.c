/* Finding a DSO's symbol sources in perf's order (debuglink, build-id cache, /usr/lib/debug, the path). */
#define _GNU_SOURCE
#include "dso.h"
#include "elfsym.h"
#include "inline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* [buildid] dir from a perf config file (git-style "key = value" under "[section]"), or NULL. */
static char *config_buildid_dir(const char *path, char *found)
{
    FILE *fp = path ? fopen(path, "r") : NULL;
    char line[4096], section[64] = "";
    while (fp && fgets(line, sizeof line, fp)) {
        char *p = line + strspn(line, " \t"), *eq, *end;
        if (*p == '[') {
            snprintf(section, sizeof section, "%.*s", (int)strcspn(p + 1, "]"), p + 1);
            continue;
        }
        if (strcasecmp(section, "buildid") || !(eq = strchr(p, '=')) || strncmp(p, "dir", 3) ||
            strspn(p + 3, " \t") != (size_t)(eq - p - 3))
            continue;
        p = eq + 1 + strspn(eq + 1, " \t");
        end = p + strcspn(p, "\r\n");
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end - p >= 2 && *p == '"' && end[-1] == '"')
            p++, end--;
        free(found);
        found = strndup(p, (size_t)(end - p));
    }
    if (fp)
        fclose(fp);
    return found;
}

/* perf's buildid_dir: buildid.dir from $PERF_CONFIG alone, else /etc/perfconfig then ~/.perfconfig;
 * else $HOME/.debug. */
int dsos_init(dsos_t *d)
{
    memset(d, 0, sizeof *d);
    const char *only = getenv("PERF_CONFIG"), *home = getenv("HOME");
    char user[4096];
    if (only) {
        d->buildid_dir = *only ? config_buildid_dir(only, NULL) : NULL;
    } else {
        const char *nosys = getenv("PERF_CONFIG_NOSYSTEM");
        if (!nosys || !strcmp(nosys, "0") || !strcasecmp(nosys, "false"))
            d->buildid_dir = config_buildid_dir("/etc/perfconfig", NULL);
        snprintf(user, sizeof user, "%s/.perfconfig", home ? home : "");
        d->buildid_dir = config_buildid_dir(home ? user : NULL, d->buildid_dir);
    }
    if (!d->buildid_dir && asprintf(&d->buildid_dir, "%s%s.debug", home ? home : "", home ? "/" : "") < 0)
        d->buildid_dir = NULL;
    return d->buildid_dir ? 0 : -ENOMEM;
}

void dsos_free(dsos_t *d)
{
    for (size_t i = 0; i < d->n; i++) {
        symtab_free(&d->v[i]->syms);
        inl_close(d->v[i]->inl);
        free(d->v[i]->name);
        free(d->v[i]->syms_path);
        free(d->v[i]->runtime_path);
        free(d->v[i]);
    }
    free(d->v);
    free(d->named);
    itab_free(&d->by_name);
    free(d->buildid_dir);
}

struct inl *dso_inline(dso_t *d)
{
    if (!d->inl_tried) {
        d->inl_tried = 1;
        d->inl = inl_open(d->syms_path, d->runtime_path);
    }
    return d->inl;
}

dso_t *dsos_find(dsos_t *d, const char *name)
{
    int64_t id = itab_find(&d->by_name, name, strlen(name));
    return id < 0 ? NULL : d->named[id];
}

/* A DSO outside the name table (perf's dso__new for KSYMBOL images: one per registration). */
dso_t *dsos_new_unnamed(dsos_t *d, const char *name)
{
    dso_t **v = realloc(d->v, (d->n + 1) * sizeof *v), *dso = calloc(1, sizeof *dso);
    if (v)
        d->v = v;
    if (!v || !dso || !(dso->name = strdup(name)))
        return free(dso), NULL;
    d->v[d->n++] = dso;
    return dso;
}

dso_t *dsos_findnew(dsos_t *d, const char *name)
{
    int added;
    int64_t id = itab_intern(&d->by_name, name, strlen(name), &added);
    if (id < 0)
        return NULL;
    if (!added)
        return d->named[id];
    dso_t **named = realloc(d->named, ((size_t)id + 1) * sizeof *named), *dso;
    if (!named)
        return NULL;
    d->named = named;
    if (!(dso = named[id] = dsos_new_unnamed(d, name)))
        return NULL;
    dso->vdso = !strcmp(name, "[vdso]");
    dso->perfmap = !strncmp(name, "/tmp/perf-", 10);
    return dso;
}

void dso_set_build_id(dso_t *dso, const uint8_t *bid, size_t size)
{
    if (size > 20)
        size = 20;
    memset(dso->bid, 0, sizeof dso->bid);
    memcpy(dso->bid, bid, size);
    dso->bid_size = (uint8_t)size;
    dso->has_bid = 1;
}

static int is_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void hex_id(const dso_t *dso, char *out)
{
    for (int i = 0; i < dso->bid_size; i++)
        sprintf(out + 2 * i, "%02x", dso->bid[i]);
    out[2 * dso->bid_size] = 0;
}

/* .gnu_debuglink's file name, or -1. */
static int debuglink_name(const char *path, char *out, size_t cap)
{
    symsrc_t ss = {0};
    dso_t none = {0};
    if (symsrc_open(&ss, &none, path, NULL, 0))
        return -1;
    GElf_Shdr sh;
    Elf_Scn *sec = elf_section_named(ss.elf, &ss.ehdr, &sh, ".gnu_debuglink", NULL);
    Elf_Data *data = sec ? elf_getdata(sec, NULL) : NULL;
    int rc = -1;
    if (data && data->d_buf && data->d_size) {
        snprintf(out, cap, "%.*s", (int)strnlen(data->d_buf, data->d_size), (const char *)data->d_buf);
        rc = 0;
    }
    symsrc_close(&ss);
    return rc;
}

static int try_debuglink(const dso_t *dso, char *out, size_t cap)
{
    char dir[4096], link[1024];
    const char *slash = strrchr(dso->name, '/');
    if (!is_regular(dso->name) || debuglink_name(dso->name, link, sizeof link))
        return -1;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - dso->name) : 0, dso->name);
    const char *fmts[] = {"%.0s%s", "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
    for (size_t i = 0; i < sizeof fmts / sizeof *fmts; i++) {
        snprintf(out, cap, fmts[i], dir, link);
        if (is_regular(out))
            return 0;
    }
    return -1;
}

/* The k-th candidate path of perf's binary_type_symtab order for a user DSO; -1 when that kind has none. */
static int candidate(const dsos_t *d, const dso_t *dso, int k, char *out, size_t cap)
{
    char hex[41], link[4096];
    const char *name = dso->name, *slash = strrchr(name, '/');
    if (dso->has_bid)
        hex_id(dso, hex);
    switch (k) {
    case 0: return try_debuglink(dso, out, cap);
    case 1:
    case 2:
        if (!dso->has_bid)
            return -1;
        snprintf(link, sizeof link, "%s/.build-id/%.2s/%s", d->buildid_dir, hex, hex + 2);
        if (is_regular(link))
            snprintf(out, cap, "%s", link);
        else
            snprintf(out, cap, "%s/%s", link, k == 2 ? "debug" : dso->vdso ? "vdso" : "elf");
        return 0;
    case 3: return snprintf(out, cap, "/usr/lib/debug%s.debug", name), 0;
    case 4: return snprintf(out, cap, "/usr/lib/debug%s", name), 0;
    case 5:
        if (!dso->has_bid)
            return -1;
        return snprintf(out, cap, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2), 0;
    case 6: return snprintf(out, cap, "%s", name), 0;
    case 7:
        if (!slash)
            slash = name;
        return snprintf(out, cap, "%.*s.debug%s", (int)(slash - name + 1), name, slash), 0;
    case 8:
        if (strncmp(name, "/usr/lib/", 9))
            return -1;
        return snprintf(out, cap, "/usr/lib/debug%s", name + 4), 0;
    }
    return -1;
}

/* is_regular_file, then perf's retry inside the process's root when the path is missing here. */
static int candidate_file(const dso_t *dso, char *path, size_t cap)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return S_ISREG(st.st_mode);
    if (errno != ENOENT || dso->pid <= 0)
        return 0;
    char alt[8448];
    int n = snprintf(alt, sizeof alt, "/proc/%d/root%s", dso->pid, path);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    memcpy(path, alt, (size_t)n + 1);
    return is_regular(path);
}

/* The running process's own vdso (perf copies its own when the header names no build-id for it). */
static void *own_vdso(size_t *len)
{
    unsigned long base = getauxval(AT_SYSINFO_EHDR);
    FILE *fp = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long lo, hi;
    void *copy = NULL;
    while (fp && base && fgets(line, sizeof line, fp))
        if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base &&
            (copy = malloc(hi - lo))) {
            memcpy(copy, (void *)lo, hi - lo);
            *len = hi - lo;
            break;
        }
    if (fp)
        fclose(fp);
    return copy;
}

/* Read the file's own build-id when the header gave none (perf does this before searching). */
static void own_build_id(dso_t *dso)
{
    symsrc_t ss = {0};
    dso_t none = {0};
    uint8_t bid[20];
    if (dso->has_bid || !is_regular(dso->name) || symsrc_open(&ss, &none, dso->name, NULL, 0))
        return;
    int n = elf_build_id(ss.elf, bid, sizeof bid);
    if (n > 0)
        dso_set_build_id(dso, bid, (size_t)n);
    symsrc_close(&ss);
}

static int keep_source(dso_t *dso, symsrc_t *ss, symsrc_t **syms, symsrc_t **run)
{
    int kept = 0;
    if (!*syms && ss->symtab) {
        *syms = ss, kept = 1;
        free(dso->syms_path);
        dso->syms_path = strdup(ss->path ? ss->path : "");
    }
    if (!*run && (ss->dynsym || ss->opd))
        *run = ss, kept = 1;
    return kept;
}

int dso_load_user(dsos_t *d, dso_t *dso)
{
    symsrc_t ss[2] = {{0}}, *syms = NULL, *run = NULL;
    int pos = 0, ret = -1;
    char path[8400];
    own_build_id(dso);
    for (int k = 0; k < 9 && !(syms && run); k++) {
        if (candidate(d, dso, k, path, sizeof path) || !candidate_file(dso, path, sizeof path))
            continue;
        if (symsrc_open(&ss[pos], dso, path, NULL, 0))
            continue;
        if (keep_source(dso, &ss[pos], &syms, &run))
            pos++;
        else
            symsrc_close(&ss[pos]);
    }
    size_t vlen = 0;
    void *vmem = dso->vdso && !dso->has_bid && !syms && !run ? own_vdso(&vlen) : NULL;
    if (vmem && symsrc_open(&ss[pos], dso, NULL, vmem, vlen) == 0 && keep_source(dso, &ss[pos], &syms, &run))
        pos++;
    if (syms || run) {
        syms = syms ? syms : run;
        run = run ? run : syms;
        free(dso->runtime_path);
        dso->runtime_path = strdup(run->path ? run->path : "[vdso image]");
        ret = elfsym_load(dso, syms, run);
    }
    while (pos > 0)
        symsrc_close(&ss[--pos]);
    if (ret < 0 && strstr(dso->name, " (deleted)"))
        ret = 0;
    return ret;
}
