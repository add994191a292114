/* A sample as perf script prints it with -F comm,pid,tid[,time],ip,sym,symoff,dso --no-inline: the header
 * line, then one line per call-chain entry, each distinct (maps, address) resolved once. */
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
#include "reader.h"

/* folder_feed each '\n'-separated line, as pmuprof-fold reads perf script's output. */
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

/* "+0x<offset>" of addr in symbol sym, as perf prints it. */
static int sym_offset(const map_t *map, int32_t sym, uint64_t addr, char *out, size_t cap)
{
    const sym_t *s = &map->dso->syms.s[sym];
    uint64_t o = addr < s->end ? addr - s->start : addr - map->start - s->start;
    return snprintf(out, cap, "+0x%" PRIx64, o);
}

static int frame_text(reader_t *r, frame_t *fr, const map_t *map, int32_t sym, uint64_t ip, uint64_t addr)
{
    buf_t *b = &r->text;
    dso_t *d = map ? map->dso : NULL;
    b->len = 0;
    if (buf_reserve(b, 64))
        return -ENOMEM;
    b->len = (size_t)snprintf(b->p, 64, "\t%16" PRIx64 " ", d && d->space == DSO_USER ? addr : ip);
    fr->sym_off = (uint16_t)b->len;
    if (sym != SYM_NONE) {
        char off[24];
        size_t len;
        const char *name = symtab_name(&d->syms, sym, &len);
        int n = sym_offset(map, sym, addr, off, sizeof off);
        if (!name || buf_append(b, name, len) || buf_append(b, off, (size_t)n))
            return -ENOMEM;
    } else if (buf_append(b, "[unknown]", 9)) {
        return -ENOMEM;
    }
    const char *dn = d ? d->name : "[unknown]";
    if (buf_append(b, " (", 2) || buf_append(b, dn, strlen(dn)) || buf_putc(b, ')'))
        return -ENOMEM;
    return 0;
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

/* The text in r->text becomes frame fr's line, interned in the folder when it is one line. */
static int frame_keep_text(reader_t *r, frame_t *fr)
{
    if (buf_append(&r->lines, r->text.p, r->text.len))
        return -ENOMEM;
    fr->len = (uint32_t)r->text.len;
    size_t aoff = 0, alen = 0;
    if (!memchr(r->text.p, '\n', r->text.len))
        fr->tail = folder_frame_intern(r->fold, r->text.p, r->text.len, &aoff, &alen);
    if (fr->tail < -1)
        return -ENOMEM;
    fr->addr_off = (uint16_t)aoff, fr->addr_len = (uint16_t)alen;
    return 0;
}

/* Frames for the calls inlined at addr (perf script --inline's "name+0xoff (inlined)" lines), stored
 * before the frame they are inlined into; the count, or -ENOMEM. */
static int inline_frames(reader_t *r, const map_t *map, int32_t sym, uint64_t addr, int ret)
{
    inl_name_t names[INL_MAX_DEPTH];
    inl_t *x = dso_inline(map->dso);
    int n = x ? inl_chain(x, ret && addr ? addr - 1 : addr, names, INL_MAX_DEPTH) : 0;
    char off[24];
    int offlen = n > 0 ? sym_offset(map, sym, addr, off, sizeof off) : 0;
    for (int k = 0; k < n; k++) {
        frame_t *fr = frame_new(r);
        buf_t *b = &r->text;
        if (!fr || buf_reserve(b, 64 + names[k].len + 40))
            return -ENOMEM;
        *fr = (frame_t){UINT64_MAX, 0, -1, (uint32_t)r->lines.len, 0, 0, 0, 0, 0};
        b->len = (size_t)snprintf(b->p, 64, "\t%16" PRIx64 " ", addr);
        fr->sym_off = (uint16_t)b->len;
        if (buf_append(b, names[k].name, names[k].len) || buf_append(b, off, (size_t)offlen) ||
            buf_append(b, " (inlined)", 10) || frame_keep_text(r, fr))
            return -ENOMEM;
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
    frame_t *fr = frame_new(r);
    if (!fr)
        return -ENOMEM;
    *fr = (frame_t){empty ? UINT64_MAX : gen, ip, -1, (uint32_t)r->lines.len, 0, 0, 0, 0, (uint16_t)ninl};
    if (frame_text(r, fr, map, sym, ip, addr) || frame_keep_text(r, fr))
        return -ENOMEM;
    if (!empty)
        r->slots[j] = ++r->nframes;
    else
        r->nframes++;
    *out = (uint32_t)(r->nframes - 1);
    return 0;
}

static int push_one(reader_t *r, const frame_t *fr)
{
    const char *line = r->lines.p + fr->text;
    if (r->echo && fr->tail >= 0)
        fprintf(r->echo, "%.*s\n", (int)fr->len, line);
    if (fr->tail >= 0)
        return folder_frame_push(r->fold, fr->tail, line + fr->addr_off, fr->addr_len);
    return feed_text(r, line, fr->len);
}

/* A frame with the frames inlined into it first (innermost first, as perf script --inline). */
static int push_frame(reader_t *r, uint32_t i)
{
    const frame_t *fr = &r->frames[i];
    for (uint32_t k = i - fr->ninl; k <= i; k++) {
        int rc = push_one(r, &r->frames[k]);
        if (rc)
            return rc;
    }
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

/* The header line; with --time, the time field as perf prints it ("%12s: ", usec): the sample's own
 * time (timed == 1), or a fixed one (timed == 2: the line a thread's samples share, parsed exactly as
 * theirs, whose second folder_sample_time then sets). */
static int header_text(reader_t *r, const thread_t *t, const pd_sample_t *s, int chain, int timed)
{
    size_t n;
    const char *comm = machine_comm_str(&r->m, t, &n);
    char pid[48], when[64], usec[48];
    buf_t *b = &r->text;
    b->len = 0;
    if (!chain && n < 16 && (buf_reserve(b, 16 - n) || (memset(b->p, ' ', 16 - n), b->len = 16 - n, 0)))
        return -ENOMEM;
    int k = snprintf(pid, sizeof pid, " %5d/%-5d ", (int32_t)s->pid, (int32_t)s->tid), w = 0;
    if (timed && r->with_time) {
        uint64_t ns = timed == 1 ? s->time : 0;
        snprintf(usec, sizeof usec, "%" PRIu64 ".%06" PRIu64, (uint64_t)(ns / 1000000000u),
                 (uint64_t)(ns % 1000000000u / 1000u));
        w = snprintf(when, sizeof when, "%12s: ", usec);
    }
    return buf_append(b, comm, n) || buf_append(b, pid, (size_t)k) || buf_append(b, when, (size_t)w) ? -ENOMEM : 0;
}

/* The sample's whole seconds for the folder's table (-1 without --time). */
static int64_t sample_second(const reader_t *r, const pd_sample_t *s)
{
    return r->with_time ? (int64_t)(s->time / 1000000000ULL) : -1;
}

/* The header line through the thread's cached folder header id (same comm, pid, tid as last time). */
static int sample_header(reader_t *r, thread_t *t, const pd_sample_t *s)
{
    if (t->hdr_id == -2 || t->hdr_comm != t->comm || t->hdr_pid != (int32_t)s->pid || t->hdr_tid != (int32_t)s->tid ||
        r->echo) {
        if (header_text(r, t, s, 1, 2)) /* interned with a fixed time: one id per (comm, pid, tid) */
            return -ENOMEM;
        t->hdr_id = folder_header_intern(r->fold, r->text.p, r->text.len);
        if (t->hdr_id < -1)
            return -ENOMEM;
        t->hdr_comm = t->comm, t->hdr_pid = (int32_t)s->pid, t->hdr_tid = (int32_t)s->tid;
        if (t->hdr_id == -1 || r->echo) {
            t->hdr_id = r->echo ? -2 : t->hdr_id;
            return header_text(r, t, s, 1, 1) ? -ENOMEM : feed_text(r, r->text.p, r->text.len);
        }
    }
    if (t->hdr_id == -1) {
        if (header_text(r, t, s, 1, 1))
            return -ENOMEM;
        return feed_text(r, r->text.p, r->text.len);
    }
    int rc = folder_sample_begin(r->fold, t->hdr_id);
    folder_sample_time(r->fold, sample_second(r, s));
    return rc;
}

/* No call chain: everything on the header line, the sample ip printed as recorded. */
static int inline_line(reader_t *r, const thread_t *t, const pd_sample_t *s)
{
    uint32_t i;
    int rc = frame_resolve_ip(r, t, s->cpumode, s->ip, 0, &i);
    if (rc || header_text(r, t, s, 0, 1))
        return rc ? rc : -ENOMEM;
    const frame_t *fr = &r->frames[i];
    char ip[24];
    int k = snprintf(ip, sizeof ip, " %16" PRIx64 " ", s->ip);
    if (buf_append(&r->text, ip, (size_t)k) ||
        buf_append(&r->text, r->lines.p + fr->text + fr->sym_off, fr->len - fr->sym_off))
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
    int rc = frame_resolve_ip(r, t, s.cpumode, s.ip, 0, &dummy); /* machine__resolve's side effects */
    if (rc)
        return rc;
    if (r->npids && !pid_listed(r, t->pid))
        return 0;
    r->printed++;
    int chain = r->use_callchain && (a->sample_type & PERF_SAMPLE_CALLCHAIN);
    if (!chain)
        return inline_line(r, t, &s);
    size_t n;
    if ((rc = chain_resolve(r, t, &s, &n)) || (rc = sample_header(r, t, &s)))
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = push_frame(r, r->chain[i])))
            return rc;
    return feed_text(r, "", 0);
}
