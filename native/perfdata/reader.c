/* The data section walked as perf script walks it: user records at once, the rest time-ordered by rounds. */
#define _GNU_SOURCE
#include "reader.h"
#include "bytes.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MISC_FORK_EXEC (1 << 13)

int reader_init(reader_t *r, pd_file_t *file, folder_t *fold, const int32_t *pids, size_t npids)
{
    memset(r, 0, sizeof *r);
    r->file = file;
    r->fold = fold;
    r->pids = pids;
    r->npids = npids;
    r->ordered = file->attrs[0].sample_id_all;
    for (size_t i = 0; i < file->nattrs; i++)
        r->use_callchain |= !!(file->attrs[i].sample_type & PERF_SAMPLE_CALLCHAIN);
    if (machine_init(&r->m))
        return -ENOMEM;
    r->m.osrelease = file->osrelease;
    if (machine_comm(&r->m, 0, 0, "swapper", 7)) /* perf registers the idle thread first */
        return -ENOMEM;
    for (size_t i = 0; i < file->nbids; i++) { /* perf's header build-id table: DSOs by name */
        const pd_buildid_t *b = &file->bids[i];
        dso_t *d = dsos_findnew(&r->m.dsos, b->name);
        if (!d)
            return -ENOMEM;
        dso_set_build_id(d, b->bid, b->size);
        if (b->cpumode == PERF_RECORD_MISC_KERNEL || b->cpumode == PERF_RECORD_MISC_GUEST_KERNEL)
            d->space = DSO_KERNEL;
    }
    return 0;
}

void reader_free(reader_t *r)
{
    machine_free(&r->m);
    pd_queue_free(&r->q);
    free(r->slots);
    free(r->frames);
    buf_free(&r->text);
    free(r->sample_ids);
    free(r->sample_addrs);
    callers_free(&r->callers);
}

static const char *rec_str(const unsigned char *rec, size_t at, uint16_t size, char *buf, size_t cap)
{
    size_t n = at < size ? strnlen((const char *)rec + at, size - at) : 0;
    snprintf(buf, cap, "%.*s", (int)n, (const char *)rec + at);
    return buf;
}

static int deliver_mmap(reader_t *r, const unsigned char *rec, uint32_t type, uint16_t size)
{
    char name[4096];
    uint16_t misc, cpumode;
    memcpy(&misc, rec + 4, 2);
    cpumode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
    int two = type == PERF_RECORD_MMAP2;
    if (size < (two ? 72 : 40))
        return PD_ECORRUPT;
    int32_t pid = rd32s(rec + 8), tid = rd32s(rec + 12);
    uint64_t start = rd64(rec + 16), len = rd64(rec + 24), pgoff = rd64(rec + 32);
    rec_str(rec, two ? 72 : 40, size, name, sizeof name);
    const uint8_t *bid = NULL;
    int bsize = 0;
    if (two && (misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
        bid = rec + 44, bsize = rec[40] > 20 ? 20 : rec[40];
    if (cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL)
        return kernel_mmap(&r->m, start, len, pgoff, name, bid, bsize);
    uint32_t prot = 0, flags = 0;
    if (two) {
        memcpy(&prot, rec + 64, 4);
        memcpy(&flags, rec + 68, 4);
    } else if (!(misc & PERF_RECORD_MISC_MMAP_DATA)) {
        prot = 4; /* PROT_EXEC */
    }
    return machine_mmap(&r->m, pid, tid, start, len, pgoff, prot, flags, name, bid, bsize);
}

int reader_deliver(reader_t *r, uint64_t off)
{
    const unsigned char *rec = r->file->map + off;
    uint32_t type;
    uint16_t misc, size;
    char buf[64];
    memcpy(&type, rec, 4);
    memcpy(&misc, rec + 4, 2);
    memcpy(&size, rec + 6, 2);
    if (type != PERF_RECORD_SAMPLE && type != PERF_RECORD_MMAP && type != PERF_RECORD_MMAP2 &&
        type != PERF_RECORD_COMM && type != PERF_RECORD_FORK && type != PERF_RECORD_LOST && type != PERF_RECORD_KSYMBOL)
        return 0; /* EXIT, THROTTLE, SWITCH, BPF_EVENT, ...: nothing perf script's output depends on, whatever
                   * their trailer (kernel 6.18 writes BPF_EVENT records with 64 bytes after it: no event's id) */
    const pd_attr_t *a = pd_file_attr_of(r->file, rec, type, size);
    if (!a)
        return PD_ECORRUPT;
    switch (type) {
    case PERF_RECORD_SAMPLE: return reader_sample(r, a, rec, size);
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2: return deliver_mmap(r, rec, type, size);
    case PERF_RECORD_COMM:
        if (size < 17)
            return PD_ECORRUPT;
        return machine_comm(&r->m, rd32s(rec + 8), rd32s(rec + 12), (const char *)rec + 16, size - 16u);
    case PERF_RECORD_FORK:
        if (size < 24)
            return PD_ECORRUPT;
        return machine_fork(&r->m, rd32s(rec + 8), rd32s(rec + 12), rd32s(rec + 16), rd32s(rec + 20),
                            !(misc & MISC_FORK_EXEC));
    case PERF_RECORD_LOST: r->lost += size >= 24 ? rd64(rec + 16) : 0; return 0;
    case PERF_RECORD_KSYMBOL: {
        if (size < 25)
            return PD_ECORRUPT;
        uint32_t len;
        uint16_t kt, kf;
        memcpy(&len, rec + 16, 4);
        memcpy(&kt, rec + 20, 2);
        memcpy(&kf, rec + 22, 2);
        char name[4096];
        (void)buf;
        return kernel_ksymbol(&r->m, rd64(rec + 8), len, kt, kf, rec_str(rec, 24, size, name, sizeof name));
    }
    }
    return 0;
}

static int deliver_cb(void *ctx, uint64_t off)
{
    return reader_deliver(ctx, off);
}

/* perf's user records (types >= 64), handled as they are read. */
static int user_record(reader_t *r, const unsigned char *rec, uint32_t type, uint16_t size)
{
    switch (type) {
    case PD_REC_FINISHED_ROUND: {
        int rc = pd_queue_flush(&r->q, r->q.next_flush, deliver_cb, r);
        r->q.next_flush = r->q.max_time;
        uint64_t low = pd_queue_min_off(&r->q), here = (uint64_t)(rec - r->file->map);
        pd_file_release(r->file, low < here ? low : here); /* keeps the peak RSS flat in the file size */
        return rc;
    }
    case PD_REC_COMPRESSED:
        snprintf(r->m.unsupported, sizeof r->m.unsupported, "compressed records (perf record -z)");
        return -1;
    case PD_REC_AUXTRACE_INFO:
    case PD_REC_AUXTRACE: snprintf(r->m.unsupported, sizeof r->m.unsupported, "AUX area tracing data"); return -1;
    case PD_REC_HEADER_ATTR:
        snprintf(r->m.unsupported, sizeof r->m.unsupported, "attributes inside the data section");
        return -1;
    case PD_REC_BUILD_ID: {
        if (size < 36)
            return PD_ECORRUPT;
        uint16_t misc;
        char name[4096];
        memcpy(&misc, rec + 4, 2);
        dso_t *d = dsos_findnew(&r->m.dsos, rec_str(rec, 36, size, name, sizeof name));
        if (!d)
            return -ENOMEM;
        dso_set_build_id(d, rec + 12, (misc & PD_MISC_BUILD_ID_SIZE) ? rec[32] : 20);
        return 0;
    }
    }
    return 0;
}

static int unsupported_sample_type(reader_t *r)
{
    for (size_t i = 0; i < r->file->nattrs; i++) {
        const pd_attr_t *a = &r->file->attrs[i];
        const char *why = NULL;
        if ((a->sample_type & PERF_SAMPLE_REGS_USER) && (a->sample_type & PERF_SAMPLE_STACK_USER))
            why = "DWARF call graphs (--call-graph dwarf)";
        else if ((a->sample_type & PERF_SAMPLE_BRANCH_STACK) && (a->branch_sample_type & PERF_SAMPLE_BRANCH_CALL_STACK))
            why = "LBR call graphs (--call-graph lbr)";
        else if (!(a->sample_type & PERF_SAMPLE_IP) || !(a->sample_type & PERF_SAMPLE_TID))
            why = "samples without IP or TID";
        else if (r->with_time && !(a->sample_type & PERF_SAMPLE_TIME))
            why = "--time asked for, but samples have no time (perf script -F time refuses the file too)";
        if (why) {
            snprintf(r->m.unsupported, sizeof r->m.unsupported, "%s", why);
            return 1;
        }
    }
    return 0;
}

/* One record header at off: its type and size, or PD_ECORRUPT when it runs past the data. */
static int record_at(reader_t *r, uint64_t off, uint64_t end, uint32_t *type, uint16_t *size)
{
    if (end - off < 8)
        return PD_ECORRUPT;
    memcpy(type, r->file->map + off, 4);
    memcpy(size, r->file->map + off + 6, 2);
    if (*size < 8 || *size > end - off)
        return PD_ECORRUPT;
    return 0;
}

static int walk(reader_t *r, uint64_t *bad_off)
{
    uint64_t off = r->file->data_off, end = off + r->file->data_size;
    int rc = 0;
    for (uint32_t type; off < end && !rc;) {
        uint16_t size;
        *bad_off = off;
        if ((rc = record_at(r, off, end, &type, &size)))
            break;
        const unsigned char *rec = r->file->map + off;
        if (type >= 64) {
            rc = user_record(r, rec, type, size);
        } else if (type == PERF_RECORD_SAMPLE && !pd_file_attr_of(r->file, rec, type, size)) {
            rc = PD_ECORRUPT; /* perf stops at a sample of an unknown event */
        } else {
            const pd_attr_t *a = pd_file_attr_of(r->file, rec, type, size);
            uint64_t t = a && r->ordered ? pd_record_time(r->file, a, rec, type, size) : PD_NO_TIME;
            rc = t && t != PD_NO_TIME ? pd_queue_push(&r->q, t, off) : reader_deliver(r, off);
        }
        off += size;
    }
    return rc ? rc : pd_queue_flush(&r->q, UINT64_MAX, deliver_cb, r);
}

int reader_run(reader_t *r, char *err, size_t errlen)
{
    uint64_t at = 0;
    if (unsupported_sample_type(r)) {
        snprintf(err, errlen, "%s", r->m.unsupported);
        return PD_EUNSUPPORTED;
    }
    int rc = walk(r, &at);
    if (!rc)
        return PD_OK;
    if (r->m.unsupported[0]) {
        snprintf(err, errlen, "%s", r->m.unsupported);
        return PD_EUNSUPPORTED;
    }
    if (rc == -ENOMEM) {
        snprintf(err, errlen, "out of memory");
        return PD_EFAIL;
    }
    snprintf(err, errlen, "corrupt record at file offset %llu", (unsigned long long)at);
    return PD_ECORRUPT;
}
