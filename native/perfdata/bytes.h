/* Unaligned little-endian reads from a mapped perf.data (x86_64 only: host order is the file's). */
#ifndef PMUPROF_PD_BYTES_H
#define PMUPROF_PD_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline int32_t rd32s(const unsigned char *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

#endif
