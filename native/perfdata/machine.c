/* perf's host machine model for user space: threads by tid, comms, per-process map tables. */
#define _GNU_SOURCE
#include "machine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int machine_init(machine_t *m)
{
    memset(m, 0, sizeof *m);
    return dsos_init(&m->dsos);
}

void machine_free(machine_t *m)
{
    for (size_t i = 0; i < m->nall; i++)
        free(m->all[i]);
    for (size_t i = 0; i < m->nmaps; i++)
        free(m->maps_all[i]->v), free(m->maps_all[i]);
    free(m->all);
    free(m->cur);
    free(m->maps_all);
    free(m->k.kmaps.v);
    free(m->k.ref_name);
    itab_free(&m->tids);
    itab_free(&m->comms);
    dsos_free(&m->dsos);
}

static maps_t *maps_new(machine_t *m)
{
    maps_t **all = realloc(m->maps_all, (m->nmaps + 1) * sizeof *all), *maps = calloc(1, sizeof *maps);
    if (all)
        m->maps_all = all;
    if (!all || !maps)
        return free(maps), NULL;
    maps->gen = ++m->next_gen;
    m->maps_all[m->nmaps++] = maps;
    return maps;
}

static int comm_id(machine_t *m, const char *s, size_t n, uint32_t *out)
{
    int added;
    int64_t id = itab_intern(&m->comms, s, n, &added);
    if (id < 0)
        return -ENOMEM;
    *out = (uint32_t)id;
    return 0;
}

const char *machine_comm_str(const machine_t *m, const thread_t *t, size_t *n)
{
    return itab_key(&m->comms, t->comm, n);
}

static thread_t *thread_new(machine_t *m, int32_t pid, int32_t tid)
{
    thread_t **all = realloc(m->all, (m->nall + 1) * sizeof *all), *t = calloc(1, sizeof *t);
    char def[16];
    if (all)
        m->all = all;
    if (!all || !t)
        return free(t), NULL;
    m->all[m->nall++] = t;
    t->pid = pid;
    t->tid = tid;
    t->hdr_id = -2;
    int n = snprintf(def, sizeof def, ":%d", tid);
    return comm_id(m, def, (size_t)n, &t->comm) ? NULL : t;
}

static thread_t **slot_of(machine_t *m, int32_t tid, int create)
{
    int added;
    int64_t id = create ? itab_intern(&m->tids, &tid, sizeof tid, &added) : itab_find(&m->tids, &tid, sizeof tid);
    if (id < 0)
        return NULL;
    if ((size_t)id >= m->ncur) {
        size_t nc = m->ncur ? m->ncur * 2 : 1024;
        while (nc <= (size_t)id)
            nc *= 2;
        thread_t **cur = realloc(m->cur, nc * sizeof *cur);
        if (!cur)
            return NULL;
        memset(cur + m->ncur, 0, (nc - m->ncur) * sizeof *cur);
        m->cur = cur;
        m->ncur = nc;
    }
    return &m->cur[id];
}

static thread_t *find_thread(machine_t *m, int32_t tid)
{
    thread_t **s = slot_of(m, tid, 0);
    return s ? *s : NULL;
}

static void remove_thread(machine_t *m, thread_t *t)
{
    thread_t **s = slot_of(m, t->tid, 0);
    if (s && *s == t)
        *s = NULL;
}

/* perf's machine__update_thread_pid: a thread first seen without its pid joins its leader's maps. */
static int update_pid(machine_t *m, thread_t *t, int32_t pid)
{
    if (pid == t->pid || pid == -1 || t->pid != -1)
        return 0;
    t->pid = pid;
    if (pid == t->tid)
        return 0;
    thread_t *leader = machine_findnew_thread(m, pid, pid);
    if (!leader)
        return -ENOMEM;
    if (!leader->maps && !(leader->maps = maps_new(m)))
        return -ENOMEM;
    t->maps = leader->maps;
    return 0;
}

thread_t *machine_findnew_thread(machine_t *m, int32_t pid, int32_t tid)
{
    thread_t *t = find_thread(m, tid), **slot;
    if (t)
        return update_pid(m, t, pid) ? NULL : t;
    if (!(t = thread_new(m, pid, tid)) || !(slot = slot_of(m, tid, 1)))
        return NULL;
    *slot = t;
    if (pid == tid || pid == -1) {
        t->maps = maps_new(m);
    } else {
        thread_t *leader = machine_findnew_thread(m, pid, pid);
        t->maps = leader ? leader->maps : NULL;
    }
    return t->maps ? t : NULL;
}

int machine_comm(machine_t *m, int32_t pid, int32_t tid, const char *comm, size_t n)
{
    thread_t *t = machine_findnew_thread(m, pid, tid);
    if (!t || comm_id(m, comm, strnlen(comm, n), &t->comm))
        return -ENOMEM;
    t->comm_set = 1;
    return 0;
}

const map_t *maps_find(const maps_t *maps, uint64_t ip)
{
    size_t lo = 0, hi = maps->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ip < maps->v[mid].start)
            hi = mid;
        else if (ip >= maps->v[mid].end)
            lo = mid + 1;
        else
            return &maps->v[mid];
    }
    return NULL;
}

static int maps_put(maps_t *maps, size_t at, const map_t *map)
{
    if (maps->n == maps->cap) {
        size_t nc = maps->cap ? maps->cap * 2 : 32;
        map_t *v = realloc(maps->v, nc * sizeof *v);
        if (!v)
            return -ENOMEM;
        maps->v = v;
        maps->cap = nc;
    }
    memmove(maps->v + at + 1, maps->v + at, (maps->n - at) * sizeof *map);
    maps->v[at] = *map;
    maps->n++;
    return 0;
}

/* perf's maps__fixup_overlappings + maps__insert: overlapped maps are cut around the new one. */
int maps_insert_fixup(machine_t *m, maps_t *maps, const map_t *map)
{
    size_t i = 0;
    while (i < maps->n && maps->v[i].end <= map->start)
        i++;
    while (i < maps->n && maps->v[i].start < map->end) {
        map_t old = maps->v[i];
        memmove(maps->v + i, maps->v + i + 1, (maps->n - i - 1) * sizeof old);
        maps->n--;
        if (map->start > old.start) {
            map_t before = old;
            before.end = map->start;
            if (maps_put(maps, i++, &before))
                return -ENOMEM;
        }
        if (map->end < old.end) {
            map_t after = old;
            after.start = map->end;
            after.pgoff += map->end - old.start;
            if (maps_put(maps, i, &after))
                return -ENOMEM;
        }
    }
    while (i < maps->n && maps->v[i].start < map->start)
        i++;
    maps->gen = ++m->next_gen;
    return maps_put(maps, i, map);
}

int machine_fork(machine_t *m, int32_t pid, int32_t ppid, int32_t tid, int32_t ptid, int clone_maps)
{
    thread_t *t = find_thread(m, tid), *parent = machine_findnew_thread(m, ppid, ptid);
    if (!parent)
        return -ENOMEM;
    if (parent->pid != ppid) { /* a stale thread under the parent's tid */
        remove_thread(m, parent);
        if (!(parent = machine_findnew_thread(m, ppid, ptid)))
            return -ENOMEM;
    }
    if (t)
        remove_thread(m, t);
    if (!(t = machine_findnew_thread(m, pid, tid)))
        return -ENOMEM;
    if (parent->comm_set) {
        t->comm = parent->comm;
        t->comm_set = 1;
    }
    if (t->pid == parent->pid || t->maps == parent->maps || !clone_maps)
        return 0;
    for (size_t i = 0; i < parent->maps->n; i++) /* maps__clone: inserted without fix-ups */
        if (maps_put(t->maps, t->maps->n, &parent->maps->v[i]))
            return -ENOMEM;
    t->maps->gen = ++m->next_gen;
    if (t->maps->n > parent->maps->n) { /* the child had maps already: keep the table sorted */
        snprintf(m->unsupported, sizeof m->unsupported, "fork into a process that already had maps");
        return -1;
    }
    return 0;
}

static const char *map_filename(const char *filename, uint32_t prot, uint32_t flags, int32_t pid, char *buf, size_t cap,
                                int *identity)
{
    int anon = !strcmp(filename, "//anon") || !strncmp(filename, "/dev/zero", 9) ||
            !strncmp(filename, "/anon_hugepage", 14) || (flags & MAP_HUGETLB);
    int nodso = !strncmp(filename, "[stack", 6) || !strncmp(filename, "/SYSV", 5) || !strcmp(filename, "[heap]");
    *identity = anon || nodso;
    if (*identity && pid != 0 && (prot & PROT_EXEC)) {
        snprintf(buf, cap, "/tmp/perf-%d.map", pid);
        return buf;
    }
    return filename;
}

int machine_mmap(machine_t *m, int32_t pid, int32_t tid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t prot,
                 uint32_t flags, const char *filename, const uint8_t *bid, int bid_size)
{
    thread_t *t = machine_findnew_thread(m, pid, tid);
    char buf[64];
    int identity;
    if (!t)
        return -ENOMEM;
    const char *name = map_filename(filename, prot, flags, t->pid, buf, sizeof buf, &identity);
    int vdso = !strcmp(name, "[vdso]");
    dso_t *dso = dsos_findnew(&m->dsos, name);
    if (!dso)
        return -ENOMEM;
    dso->pid = t->pid;
    if (bid && bid_size > 0)
        dso_set_build_id(dso, bid, (size_t)bid_size);
    if (identity && !(prot & PROT_EXEC))
        dso->loaded = 1; /* data without a file: perf marks it loaded, symbol-less */
    map_t map = {start, start + len, vdso ? 0 : pgoff, dso, (uint8_t)identity, 0};
    return maps_insert_fixup(m, t->maps, &map);
}

/* Add a kernel map, kept sorted by start (kernel.c, kallsyms.c and kcore.c build the kernel maps). */
int kmaps_insert(machine_t *m, const map_t *map)
{
    maps_t *k = &m->k.kmaps;
    map_t *v = realloc(k->v, (k->n + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    k->v = v;
    size_t at = k->n;
    while (at > 0 && k->v[at - 1].start > map->start)
        at--;
    memmove(k->v + at + 1, k->v + at, (k->n - at) * sizeof *map);
    k->v[at] = *map;
    k->n++;
    k->gen = ++m->next_gen;
    return 0;
}
