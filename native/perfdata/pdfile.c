/* Reading a perf.data file's header, attributes and feature sections (tools/perf's file format). */
#define _GNU_SOURCE
#include "pdfile.h"
#include "arch/x86_64.h"
#include "bytes.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC2 0x32454c4946524550ULL /* "PERFILE2" read as little-endian u64 */
#define HEADER_SIZE 104
#define ATTR_VER0 64

enum {
    FEAT_BUILD_ID = 2,
    FEAT_HOSTNAME,
    FEAT_OSRELEASE,
    FEAT_VERSION,
    FEAT_ARCH,
    FEAT_NRCPUS,
    FEAT_CPUDESC,
    FEAT_CMDLINE = 11,
    FEAT_EVENT_DESC = 12,
    FEAT_BITS = 256
};

static int fail(pd_file_t *f, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->err, sizeof f->err, fmt, ap);
    va_end(ap);
    return status;
}

static int in_file(const pd_file_t *f, uint64_t off, uint64_t size)
{
    return off <= f->len && size <= f->len - off;
}

/* A perf_header_string at p (len u32, then len bytes, NUL padded) inside [p, end): strdup'ed, or NULL. */
static char *header_string(const unsigned char *p, const unsigned char *end, const unsigned char **next)
{
    if (end - p < 4)
        return NULL;
    uint32_t n = rd32(p);
    if ((uint64_t)(end - p - 4) < n)
        return NULL;
    *next = p + 4 + n;
    return strndup((const char *)p + 4, n);
}

static int attr_parse(pd_file_t *f, pd_attr_t *a, const unsigned char *p, uint64_t room)
{
    uint32_t size = rd32(p + 4);
    if (size < ATTR_VER0 || size > room)
        return fail(f, PD_ECORRUPT, "event attribute of %u bytes", size);
    a->type = rd32(p);
    a->config = rd64(p + 8);
    a->sample_type = rd64(p + 24);
    a->read_format = rd64(p + 32);
    a->sample_id_all = (rd64(p + 40) >> 18) & 1;
    a->branch_sample_type = size >= 80 ? rd64(p + 72) : 0;
    a->sample_regs_user = size >= 88 ? rd64(p + 80) : 0;
    return PD_OK;
}

static int attrs_read(pd_file_t *f, uint64_t attr_size, uint64_t off, uint64_t size)
{
    if (!attr_size || !in_file(f, off, size) || size / attr_size > PD_MAX_ATTRS || attr_size < ATTR_VER0 + 16)
        return fail(f, PD_ECORRUPT, "bad attribute section");
    f->nattrs = size / attr_size;
    f->attrs = calloc(f->nattrs + 1, sizeof *f->attrs);
    if (!f->attrs)
        return fail(f, PD_EFAIL, "out of memory");
    for (size_t i = 0; i < f->nattrs; i++) {
        const unsigned char *p = f->map + off + i * attr_size;
        pd_attr_t *a = &f->attrs[i];
        int rc = attr_parse(f, a, p, attr_size - 16);
        if (rc)
            return rc;
        uint64_t ioff = rd64(p + rd32(p + 4)), isize = rd64(p + rd32(p + 4) + 8);
        if (!in_file(f, ioff, isize))
            return fail(f, PD_ECORRUPT, "bad id section");
        a->nids = isize / 8;
        a->ids = malloc(isize + 8);
        if (!a->ids)
            return fail(f, PD_EFAIL, "out of memory");
        memcpy(a->ids, f->map + ioff, a->nids * 8);
    }
    return PD_OK;
}

/* perf's evlist id_pos / is_pos, and its rule that several events must agree on them. */
static int id_positions(pd_file_t *f)
{
    for (size_t i = 0; i < f->nattrs; i++) {
        uint64_t st = f->attrs[i].sample_type;
        int id = -1, is = -1;
        if (st & PERF_SAMPLE_IDENTIFIER)
            id = 0, is = 1;
        else if (st & PERF_SAMPLE_ID) {
            id = !!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) +
                    !!(st & PERF_SAMPLE_ADDR);
            is = 1 + !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_STREAM_ID);
        }
        if (i == 0)
            f->id_pos = id, f->is_pos = is;
        else if (id != f->id_pos || is != f->is_pos || id < 0)
            return fail(f, PD_EUNSUPPORTED, "events with non-matching sample_type");
        if (f->attrs[i].sample_id_all != f->attrs[0].sample_id_all)
            return fail(f, PD_EUNSUPPORTED, "events with non-matching sample_id_all");
    }
    return PD_OK;
}

static int feat_build_ids(pd_file_t *f, const unsigned char *p, const unsigned char *end)
{
    while (end - p >= 8 + 4 + 24) {
        uint16_t misc, size;
        memcpy(&misc, p + 4, 2);
        memcpy(&size, p + 6, 2);
        if (size < 8 + 4 + 24 || size > end - p)
            return fail(f, PD_ECORRUPT, "bad build-id table");
        pd_buildid_t *b = realloc(f->bids, (f->nbids + 1) * sizeof *b);
        if (!b)
            return fail(f, PD_EFAIL, "out of memory");
        f->bids = b;
        b = &f->bids[f->nbids++];
        memcpy(b->bid, p + 12, 20);
        b->size = (misc & PD_MISC_BUILD_ID_SIZE) ? p[32] : 20;
        if (b->size > 20)
            b->size = 20;
        b->cpumode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
        b->name = strndup((const char *)p + 36, size - 36u);
        if (!b->name)
            return fail(f, PD_EFAIL, "out of memory");
        p += size;
    }
    return PD_OK;
}

/* HEADER_EVENT_DESC: names of the events, matched to attributes by their first id. */
static void feat_event_desc(pd_file_t *f, const unsigned char *p, const unsigned char *end)
{
    if (end - p < 8)
        return;
    uint32_t nr = rd32(p), asz = rd32(p + 4);
    p += 8;
    for (uint32_t i = 0; i < nr && i < f->nattrs; i++) {
        if ((uint64_t)(end - p) < (uint64_t)asz + 4)
            return;
        uint32_t nids = rd32(p + asz);
        const unsigned char *q;
        char *name = header_string(p + asz + 4, end, &q);
        if (!name || (uint64_t)(end - q) < (uint64_t)nids * 8)
            return free(name);
        if (!f->attrs[i].name)
            f->attrs[i].name = name;
        else
            free(name);
        p = q + (uint64_t)nids * 8;
    }
}

static int feature_read(pd_file_t *f, int bit, const unsigned char *p, const unsigned char *end)
{
    const unsigned char *q;
    char **strs[] = {[FEAT_HOSTNAME] = &f->hostname,
                     [FEAT_OSRELEASE] = &f->osrelease,
                     [FEAT_VERSION] = &f->version,
                     [FEAT_ARCH] = &f->arch,
                     [FEAT_CPUDESC] = &f->cpudesc};
    if (bit == FEAT_BUILD_ID)
        return feat_build_ids(f, p, end);
    if (bit >= FEAT_HOSTNAME && bit <= FEAT_CPUDESC && strs[bit])
        *strs[bit] = header_string(p, end, &q);
    else if (bit == FEAT_NRCPUS && end - p >= 8)
        f->nr_cpus_avail = rd32(p), f->nr_cpus_online = rd32(p + 4);
    else if (bit == FEAT_EVENT_DESC)
        feat_event_desc(f, p, end);
    else if (bit == FEAT_CMDLINE && end - p >= 4) { /* string list: join with spaces */
        uint32_t nr = rd32(p);
        size_t len = 0;
        p += 4;
        for (uint32_t i = 0; i < nr; i++) {
            char *s = header_string(p, end, &q), *n;
            if (!s || !(n = realloc(f->cmdline, len + strlen(s) + 2)))
                return free(s), PD_OK;
            f->cmdline = n;
            len += (size_t)sprintf(n + len, "%s%s", i ? " " : "", s);
            free(s);
            p = q;
        }
    }
    return PD_OK;
}

static int features_read(pd_file_t *f, const unsigned char *bits)
{
    uint64_t table = f->data_off + f->data_size;
    int k = 0;
    for (int bit = 0; bit < FEAT_BITS; bit++) {
        if (!(bits[bit / 8] >> (bit % 8) & 1))
            continue;
        uint64_t at = table + 16 * (uint64_t)k++;
        if (!in_file(f, at, 16))
            return fail(f, PD_ECORRUPT, "feature table past the end of the file (truncated?)");
        uint64_t off = rd64(f->map + at), size = rd64(f->map + at + 8);
        if (!in_file(f, off, size))
            return fail(f, PD_ECORRUPT, "feature section %d past the end of the file (truncated?)", bit);
        int rc = feature_read(f, bit, f->map + off, f->map + off + size);
        if (rc)
            return rc;
    }
    return PD_OK;
}

/* The architectures whose recordings are read natively, and what reading their samples needs. A file
 * without an arch header is read as the first one's, as before. */
static const struct {
    const char *arch; /* perf's arch header: uname -m of the recording host */
    int reg_sp;
} ARCHES[] = {
        {X86_64_PERF_ARCH, X86_64_PERF_REG_SP},
};

static int arch_set(pd_file_t *f)
{
    size_t k = 0;
    while (f->arch && k < sizeof ARCHES / sizeof *ARCHES && strcmp(f->arch, ARCHES[k].arch))
        k++;
    if (k == sizeof ARCHES / sizeof *ARCHES)
        return fail(f, PD_EUNSUPPORTED, "recorded on %s (only %s is read natively)", f->arch, ARCHES[0].arch);
    for (size_t i = 0; i < f->nattrs; i++)
        f->attrs[i].reg_sp = ARCHES[k].reg_sp;
    return 0;
}

static int header_read(pd_file_t *f)
{
    const unsigned char *h = f->map;
    if (f->len < 16)
        return fail(f, PD_ECORRUPT, "too short for a perf.data file");
    uint64_t magic = rd64(h), hsize = rd64(h + 8);
    if (magic == __builtin_bswap64(MAGIC2))
        return fail(f, PD_EUNSUPPORTED, "big-endian (other-endian) perf.data");
    if (magic != MAGIC2)
        return fail(f, PD_ECORRUPT, "not a perf.data file (bad magic)");
    if (hsize == 16)
        return fail(f, PD_EUNSUPPORTED, "pipe-mode perf.data");
    if (hsize < HEADER_SIZE || f->len < HEADER_SIZE)
        return fail(f, PD_ECORRUPT, "bad header size %llu", (unsigned long long)hsize);
    f->data_off = rd64(h + 40);
    f->data_size = rd64(h + 48);
    if (!f->data_size)
        return fail(f, PD_EUNSUPPORTED, "data size 0 (perf record was not properly terminated)");
    if (f->data_off + f->data_size < f->data_off) /* perf 6.1's reader loops on it instead of failing */
        return fail(f, PD_EBADHEADER,
                    "corrupt header: a data section of %llu bytes at offset %llu would end past "
                    "2^64 bytes",
                    (unsigned long long)f->data_size, (unsigned long long)f->data_off);
    if (!in_file(f, f->data_off, f->data_size))
        return fail(f, PD_ECORRUPT, "data section past the end of the file (truncated?)");
    int rc = attrs_read(f, rd64(h + 16), rd64(h + 24), rd64(h + 32));
    if (!rc && !f->nattrs)
        rc = fail(f, PD_ECORRUPT, "no event attributes");
    rc = rc ? rc : id_positions(f);
    rc = rc ? rc : features_read(f, h + 72);
    return rc ? rc : arch_set(f);
}

int pd_file_open(pd_file_t *f, const char *path)
{
    memset(f, 0, sizeof *f);
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block: fstat refuses it */
    if (fd < 0)
        return fail(f, PD_EFAIL, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(f, PD_EUNSUPPORTED, "%s: not a regular file (a perf.data directory or a pipe)", path);
    }
    f->len = (size_t)st.st_size;
    f->map = f->len ? mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (f->len && f->map == MAP_FAILED) {
        f->map = NULL;
        return fail(f, PD_EFAIL, "%s: mmap: %s", path, strerror(errno));
    }
    if (f->map)
        madvise((void *)f->map, f->len, MADV_SEQUENTIAL);
    return header_read(f);
}

void pd_file_close(pd_file_t *f)
{
    for (size_t i = 0; i < f->nattrs; i++)
        free(f->attrs[i].ids), free(f->attrs[i].name);
    for (size_t i = 0; i < f->nbids; i++)
        free(f->bids[i].name);
    free(f->attrs);
    free(f->bids);
    char *strs[] = {f->hostname, f->osrelease, f->version, f->arch, f->cpudesc, f->cmdline};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        free(strs[i]);
    if (f->map)
        munmap((void *)f->map, f->len);
    memset(f, 0, sizeof *f);
}

/* Where a record's sample_id trailer ends. Kernel 6.18 was seen writing KSYMBOL records with 32 more bytes
   after the trailer (BPF programs loaded during a system-wide recording): perf 6.1 reads the trailer from the
   record's end and stops. A KSYMBOL's trailer follows its NUL-padded name, so it is read there unless those
   bytes are zero (then the record is well formed, or was repaired by moving the trailer to its end). */
uint16_t pd_record_span(const pd_file_t *f, const unsigned char *rec, uint32_t type, uint16_t size)
{
    if (type != PERF_RECORD_KSYMBOL || size <= 24 || !f->nattrs || !f->attrs[0].sample_id_all)
        return size;
    const unsigned char *nul = memchr(rec + 24, 0, size - 24u);
    if (!nul)
        return size;
    uint64_t st = f->attrs[0].sample_type;
    size_t trailer = 8u *
            (!!(st & PERF_SAMPLE_TID) + !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ID) +
             !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_IDENTIFIER));
    size_t at = 24 + ((size_t)(nul - rec - 24) + 8) / 8 * 8, end = at + trailer;
    if (!trailer || end >= size)
        return size;
    for (size_t i = at; i < end; i++)
        if (rec[i])
            return (uint16_t)end;
    return size;
}

const pd_attr_t *pd_file_attr_of(const pd_file_t *f, const unsigned char *rec, uint32_t type, uint16_t size)
{
    size = pd_record_span(f, rec, type, size);
    if (f->nattrs == 1)
        return &f->attrs[0];
    if (!f->attrs[0].sample_id_all && type != PERF_RECORD_SAMPLE)
        return &f->attrs[0];
    int64_t n = (size - 8) / 8;
    int64_t at = type == PERF_RECORD_SAMPLE ? f->id_pos : n - f->is_pos;
    if (at < 0 || at >= n)
        return NULL;
    uint64_t id = rd64(rec + 8 + 8 * at);
    if (!id)
        return &f->attrs[0];
    for (size_t i = 0; i < f->nattrs; i++)
        for (size_t j = 0; j < f->attrs[i].nids; j++)
            if (f->attrs[i].ids[j] == id)
                return &f->attrs[i];
    return NULL;
}

void pd_file_release(pd_file_t *f, uint64_t upto)
{
    uint64_t page = 4096, end = upto & ~(page - 1);
    if (!f->map || end <= f->dropped + (16u << 20))
        return;
    madvise((char *)f->map + f->dropped, end - f->dropped, MADV_DONTNEED);
    f->dropped = end;
}
