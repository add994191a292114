/* A sample resolved as perf script resolves it for -F comm,pid,tid[,time],ip,sym,symoff,dso --no-inline and
 * handed to the folder as fields (lib/fold.h: folder_sample): each distinct (maps, address) resolved once. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elfsym.h"
#include "inline.h"
#include "lib/script.h"
#include "reader.h"

/* folder_feed each '\n'-separated line, as pmuprof-fold reads perf script's output (one-line samples). */
static int feed_text(reader_t *r, const char *s, size_t n)
{
    folder_t *f = r->fold;
    if (r->echo)
        fprintf(r->echo, "%.*s\n", (int)n, s);
    const char *nl;
    while ((nl = memchr(s, '\n', n))) {
        if (folder_feed(f, s, (size_t)(nl - s)))
            return -ENOMEM;
        n -= (size_t)(nl - s) + 1;
        s = nl + 1;
    }
    return folder_feed(f, s, n);
}

static uint64_t frame_hash(uint64_t gen, uint64_t ip)
{
    uint64_t h = (ip ^ (gen * 0x9E3779B97F4A7C15ULL)) * 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}

static int slots_grow(reader_t *r)
{
    size_t ns = r->nslots ? r->nslots * 2 : 1 << 16;
    uint64_t *s = calloc(ns, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < r->nframes; i++) {
        if (r->frames[i].gen == UINT64_MAX) /* not in the table: inlined frames, uncached answers */
            continue;
        size_t j = frame_hash(r->frames[i].gen, r->frames[i].ip) & (ns - 1);
        while (s[j])
            j = (j + 1) & (ns - 1);
        s[j] = i + 1;
    }
    free(r->slots);
    r->slots = s;
    r->nslots = ns;
    return 0;
}

/* 1 when the process lives in another mount namespace: perf would read its files from there. */
static int other_mount_ns(int pid)
{
    char path[64];
    struct stat self, them;
    snprintf(path, sizeof path, "/proc/%d/ns/mnt", pid);
    return pid > 0 && stat(path, &them) == 0 && stat("/proc/self/ns/mnt", &self) == 0 && self.st_ino != them.st_ino;
}

/* dso__load on first use; 1 when perf's lookup that loads it comes back empty (map__load failed). */
static int dso_ensure(reader_t *r, dso_t *d)
{
    if (d->loaded)
        return 0;
    if (other_mount_ns(d->pid)) {
        snprintf(r->m.unsupported, sizeof r->m.unsupported, "a process in another mount namespace (%s)", d->name);
        return -1;
    }
    d->loaded = 1;
    d->load_ret = d->perfmap ? perfmap_load(d, d->name) : dso_load_user(&r->m.dsos, d);
    return d->load_ret <= 0;
}

/* The map perf's thread__find_map picks for ip in this cpumode (NULL: none); -1 unsupported. */
static int find_map(reader_t *r, const thread_t *t, uint16_t cpumode, uint64_t ip, const map_t **map, uint64_t *gen)
{
    *map = NULL;
    *gen = 0;
    if (cpumode == PERF_RECORD_MISC_KERNEL) {
        int rc = kernel_find(&r->m, ip, map);
        *gen = r->m.k.kmaps.gen | 1ULL << 63;
        return rc;
    }
    if (cpumode == PERF_RECORD_MISC_USER) {
        *map = maps_find(t->maps, ip);
        *gen = t->maps->gen;
    }
    return 0;
}

/* The offset of addr in symbol sym, as perf prints it after "+0x". */
static uint64_t sym_offset(const map_t *map, int32_t sym, uint64_t addr)
{
    const sym_t *s = &map->dso->syms.s[sym];
    return addr < s->end ? addr - s->start : addr - map->start - s->start;
}

#define GEN_UNKNOWN (UINT64_MAX - 1)

/* The cache key's generation for this cpumode, known without a map search (not before the kernel's
 * symbols are read: that first lookup can change the kernel maps). */
static uint64_t gen_of(const reader_t *r, const thread_t *t, uint16_t cpumode)
{
    if (cpumode == PERF_RECORD_MISC_KERNEL)
        return r->m.k.kernel && !r->m.k.kernel->loaded ? GEN_UNKNOWN : r->m.k.kmaps.gen | 1ULL << 63;
    return cpumode == PERF_RECORD_MISC_USER ? t->maps->gen : 0;
}

/* The cached frame for (gen, ip): 1 and *out, or 0 with *slot where it would go. */
static int lookup(const reader_t *r, uint64_t gen, uint64_t ip, uint32_t *out, size_t *slot)
{
    size_t j = frame_hash(gen, ip) & (r->nslots - 1);
    for (uint64_t s; (s = r->slots[j]); j = (j + 1) & (r->nslots - 1))
        if (r->frames[s - 1].ip == ip && r->frames[s - 1].gen == gen)
            return *out = (uint32_t)(s - 1), 1;
    *slot = j;
    return 0;
}

static frame_t *frame_new(reader_t *r)
{
    if (r->nframes == r->capframes) {
        size_t nc = r->capframes ? r->capframes * 2 : 4096;
        frame_t *f = realloc(r->frames, nc * sizeof *f);
        if (!f)
            return NULL;
        r->frames = f;
        r->capframes = nc;
    }
    return &r->frames[r->nframes];
}

/* Frames for the calls inlined at addr (perf script --inline's "name+0xoff (inlined)" lines), stored
 * before the frame they are inlined into; the count, or -ENOMEM. */
static int inline_frames(reader_t *r, const map_t *map, int32_t sym, uint64_t addr, int ret)
{
    inl_name_t names[INL_MAX_DEPTH];
    inl_t *x = dso_inline(map->dso);
    int n = x ? inl_chain(x, ret && addr ? addr - 1 : addr, names, INL_MAX_DEPTH) : 0;
    uint64_t off = n > 0 ? sym_offset(map, sym, addr) : 0;
    for (int k = 0; k < n; k++) {
        frame_t *fr = frame_new(r);
        fold_frame_t ff = {names[k].name, names[k].len, off, NULL, 0, 1};
        int64_t id = fr ? folder_frame(r->fold, &ff) : -ENOMEM;
        if (id < 0)
            return -ENOMEM;
        *fr = (frame_t){UINT64_MAX, 0, addr, (uint32_t)id, 0};
        r->nframes++;
    }
    r->inlined += n > 0 ? (uint64_t)n : 0;
    r->inline_addrs += x != NULL;
    return n;
}

#define GEN_RET (1ULL << 62) /* a return address (inline chains looked up at ret - 1) */

/* Resolve (gen, ip) into a frame (cached unless perf's answer for it may change later); ret: ip is a
 * return address, not the sample's own. */
static int frame_resolve_ip(reader_t *r, const thread_t *t, uint16_t cpumode, uint64_t ip, int ret, uint32_t *out)
{
    const map_t *map;
    int expand = r->inline_frames && cpumode == PERF_RECORD_MISC_USER;
    uint64_t flag = expand && ret ? GEN_RET : 0;
    uint64_t gen = gen_of(r, t, cpumode);
    size_t j;
    if (r->nframes * 2 >= r->nslots && slots_grow(r))
        return -ENOMEM;
    if (gen != GEN_UNKNOWN && lookup(r, gen | flag, ip, out, &j))
        return 0;
    if (find_map(r, t, cpumode, ip, &map, &gen))
        return -1;
    gen |= flag;
    if (lookup(r, gen, ip, out, &j))
        return 0;
    int empty = 0, ninl = 0;
    uint64_t addr = ip;
    int32_t sym = SYM_NONE;
    if (map) {
        addr = map->identity ? ip : ip - map->start + map->pgoff;
        if ((empty = dso_ensure(r, map->dso)) < 0)
            return -1;
        sym = empty ? SYM_NONE : symtab_find(&map->dso->syms, addr);
    }
    if (expand && map && sym != SYM_NONE && map->dso->space == DSO_USER &&
        (ninl = inline_frames(r, map, sym, addr, ret)) < 0)
        return -ENOMEM;
    dso_t *d = map ? map->dso : NULL;
    fold_frame_t ff = {NULL, 0, 0, d ? d->name : "[unknown]", strlen(d ? d->name : "[unknown]"), 0};
    if (sym != SYM_NONE && !(ff.sym = symtab_name(&d->syms, sym, &ff.sym_len)))
        return -ENOMEM;
    ff.off = sym != SYM_NONE ? sym_offset(map, sym, addr) : 0;
    frame_t *fr = frame_new(r);
    int64_t id = fr ? folder_frame(r->fold, &ff) : -ENOMEM;
    if (id < 0)
        return -ENOMEM;
    *fr = (frame_t){empty ? UINT64_MAX : gen, ip, d && d->space == DSO_USER ? addr : ip, (uint32_t)id, (uint16_t)ninl};
    if (!empty)
        r->slots[j] = ++r->nframes;
    else
        r->nframes++;
    *out = (uint32_t)(r->nframes - 1);
    return 0;
}

/* The sample's frames as folder ids and printed addresses, each with the frames inlined into it first
 * (innermost first, as perf script --inline prints them). */
static int sample_frames(reader_t *r, size_t n, size_t *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += 1 + r->frames[r->chain[i]].ninl;
    if (m > r->capsample) {
        uint32_t *ids = realloc(r->sample_ids, m * sizeof *ids);
        uint64_t *addrs = ids ? realloc(r->sample_addrs, m * sizeof *addrs) : NULL;
        if (ids)
            r->sample_ids = ids;
        if (!addrs)
            return -ENOMEM;
        r->sample_addrs = addrs, r->capsample = m;
    }
    m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t at = r->chain[i];
        for (uint32_t k = at - r->frames[at].ninl; k <= at; k++, m++)
            r->sample_ids[m] = r->frames[k].id, r->sample_addrs[m] = r->frames[k].addr;
    }
    *out = m;
    return 0;
}

/* The recovered callers for the user chain starting at s->ips[at] (leaf first), or NULL: by the leaf and
 * the walk's first return addresses, or, for a walk that stopped at its leaf, by the thread and user sp. */
static const callers_entry_t *recovered_for(const reader_t *r, const thread_t *t, const pd_sample_t *s, uint64_t at)
{
    uint64_t key[CALLERS_KEY];
    size_t n = 0;
    for (; n < CALLERS_KEY && at + n < s->nr; n++) {
        memcpy(key + n, s->ips + at + n, 8);
        if (key[n] >= (uint64_t)PERF_CONTEXT_MAX)
            break;
    }
    if (n == 1)
        return s->has_user_sp ? callers_find(&r->callers, t->pid, (int32_t)s->tid, s->user_sp, key, 1) : NULL;
    return n ? callers_find(&r->callers, t->pid, 0, 0, key, n) : NULL;
}

/* thread__resolve_callchain_sample (callee order, no branch stacks): frames into r->chain. With
 * --callers, a user chain whose leaf and first return addresses are a recovered-callers key gets the
 * callers the frame-pointer walk skipped under that leaf, right after it. */
static int chain_resolve(reader_t *r, const thread_t *t, const pd_sample_t *s, size_t *n)
{
    uint16_t cpumode = PERF_RECORD_MISC_USER;
    int ret = 0; /* entries after a context's first are return addresses */
    uint64_t resume_at = 0; /* entries before this index were replaced by recovered callers */
    *n = 0;
    for (uint64_t i = 0; i < s->nr && *n < PD_MAX_STACK; i++) {
        uint64_t ip;
        memcpy(&ip, s->ips + i, 8);
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
            if (ip == (uint64_t)PERF_CONTEXT_HV)
                cpumode = PERF_RECORD_MISC_HYPERVISOR;
            else if (ip == (uint64_t)PERF_CONTEXT_KERNEL)
                cpumode = PERF_RECORD_MISC_KERNEL;
            else if (ip == (uint64_t)PERF_CONTEXT_USER)
                cpumode = PERF_RECORD_MISC_USER;
            else
                return *n = 0, 0; /* a corrupt context: perf drops the whole chain */
            ret = 0;
            continue;
        }
        if (i < resume_at)
            continue;
        int rc = frame_resolve_ip(r, t, cpumode, ip, ret, &r->chain[*n]);
        if (rc)
            return rc;
        (*n)++;
        const callers_entry_t *e =
                !ret && cpumode == PERF_RECORD_MISC_USER && r->callers.n ? recovered_for(r, t, s, i) : NULL;
        ret = 1;
        for (int k = 0; e && k < e->nrec && *n < PD_MAX_STACK; k++, (*n)++)
            if ((rc = frame_resolve_ip(r, t, cpumode, callers_rec(&r->callers, e)[k], 1, &r->chain[*n])))
                return rc;
        if (e) {
            resume_at = i + e->resume;
            r->recovered_samples++;
            r->recovered_frames += e->nrec;
        }
    }
    return 0;
}

static int pid_listed(const reader_t *r, int32_t pid)
{
    for (size_t i = 0; i < r->npids; i++)
        if (r->pids[i] == pid)
            return 1;
    return 0;
}

/* 1 when a sample of this thread is neither asked for (--pid) nor readable here: its process lives in
 * another mount namespace (a container), whose files perf would read from there. Its DSOs are not the
 * listed processes' (another namespace's files), so skipping it changes nothing they print; reading it
 * would make the whole recording unsupported. Checked once per thread. */
static int unlisted_elsewhere(const reader_t *r, thread_t *t)
{
    if (!r->npids || pid_listed(r, t->pid))
        return 0;
    if (!t->ns_checked) {
        t->ns_other = (uint8_t)other_mount_ns(t->pid);
        t->ns_checked = 1;
    }
    return t->ns_other;
}

/* The thread's folder head (cached while its comm, pid and tid stay those of its last sample). */
static int sample_head(reader_t *r, thread_t *t, const pd_sample_t *s)
{
    if (t->hdr_id >= 0 && t->hdr_comm == t->comm && t->hdr_pid == (int32_t)s->pid && t->hdr_tid == (int32_t)s->tid)
        return 0;
    fold_head_t h = {(int32_t)s->pid, (int32_t)s->tid, NULL, 0, r->with_time};
    h.comm = machine_comm_str(&r->m, t, &h.comm_len);
    t->hdr_id = folder_head(r->fold, &h);
    t->hdr_comm = t->comm, t->hdr_pid = (int32_t)s->pid, t->hdr_tid = (int32_t)s->tid;
    return t->hdr_id < 0 ? -ENOMEM : 0;
}

/* --script: the perf script text of the sample the folder is given. */
static int sample_echo(reader_t *r, const thread_t *t, const pd_sample_t *s, size_t m)
{
    size_t n;
    const char *comm = machine_comm_str(&r->m, t, &n);
    buf_t *b = &r->text;
    b->len = 0;
    if (script_header(b, comm, n, (int32_t)s->pid, (int32_t)s->tid, 1, r->with_time, s->time) || buf_putc(b, '\n'))
        return -ENOMEM;
    for (size_t i = 0; i < m; i++) {
        char at[24];
        int k = snprintf(at, sizeof at, "\t%16" PRIx64 " ", r->sample_addrs[i]);
        if (buf_append(b, at, (size_t)k) || folder_frame_tail(r->fold, r->sample_ids[i], b) || buf_putc(b, '\n'))
            return -ENOMEM;
    }
    fprintf(r->echo, "%.*s\n", (int)b->len, b->p);
    return 0;
}

/* No call chain: perf script's one-line sample, the sample ip printed as recorded, fed as text (how perf
 * pads the comm there decides how the line parses). */
static int inline_line(reader_t *r, const thread_t *t, const pd_sample_t *s)
{
    uint32_t i;
    int rc = frame_resolve_ip(r, t, s->cpumode, s->ip, 0, &i);
    if (rc)
        return rc;
    size_t n;
    const char *comm = machine_comm_str(&r->m, t, &n);
    char ip[24];
    int k = snprintf(ip, sizeof ip, " %16" PRIx64 " ", s->ip);
    r->text.len = 0;
    if (script_header(&r->text, comm, n, (int32_t)s->pid, (int32_t)s->tid, 0, r->with_time, s->time) ||
        buf_append(&r->text, ip, (size_t)k) || folder_frame_tail(r->fold, r->frames[i].id, &r->text))
        return -ENOMEM;
    return feed_text(r, r->text.p, r->text.len);
}

int reader_sample(reader_t *r, const pd_attr_t *a, const unsigned char *rec, uint16_t size)
{
    pd_sample_t s;
    uint32_t dummy;
    if (pd_sample_parse(a, rec, size, &s))
        return PD_ECORRUPT;
    r->samples++;
    thread_t *t = machine_findnew_thread(&r->m, (int32_t)s.pid, (int32_t)s.tid);
    if (!t)
        return -ENOMEM;
    if (s.cpumode == PERF_RECORD_MISC_GUEST_KERNEL || s.cpumode == PERF_RECORD_MISC_GUEST_USER)
        return 0; /* perf script keeps host samples only */
    if (unlisted_elsewhere(r, t))
        return 0;
    int rc = frame_resolve_ip(r, t, s.cpumode, s.ip, 0, &dummy); /* machine__resolve's side effects */
    if (rc)
        return rc;
    if (r->npids && !pid_listed(r, t->pid))
        return 0;
    r->printed++;
    int chain = r->use_callchain && (a->sample_type & PERF_SAMPLE_CALLCHAIN);
    if (!chain)
        return inline_line(r, t, &s);
    size_t n, m;
    if ((rc = chain_resolve(r, t, &s, &n)) || (rc = sample_head(r, t, &s)) || (rc = sample_frames(r, n, &m)))
        return rc;
    if (r->echo && (rc = sample_echo(r, t, &s, m)))
        return rc;
    fold_sample_t fs = {t->hdr_id, s.time, r->sample_ids, r->sample_addrs, m};
    return folder_sample(r->fold, &fs);
}
