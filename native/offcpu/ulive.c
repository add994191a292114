/* ulive.c - walk the user stack of a thread still blocked at the end, from user space.
 *
 * Lazy mode takes stacks when a thread comes back; one still off the CPU when the tracer stops never
 * does. Its user registers were saved when it left the CPU and its stack has not moved since (it is
 * blocked in the kernel), so the loader walks it as the program would at switch-in: frame pointers,
 * the scan above sp when the leaf clobbered the frame pointer, the recovery window for the CFI unwinder. Memory is
 * read with process_vm_readv (root; the target is neither stopped nor traced). /proc/TID/syscall
 * (its sp and pc) is read after the walk: a thread that ran meanwhile is not walked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "offcpu_user.h"

#define FNV_OFFSET 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

struct live {
    const struct offcpu_opts *o;
    unsigned tgid;
};

static int live_read(const struct live *l, __u64 addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(unsigned long)addr, len};

    return process_vm_readv((pid_t)l->tgid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int live_in_code(const struct live *l, __u64 addr)
{
    unsigned lo = 0, hi = l->o->ncode;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;

        if (addr < l->o->code[mid].start)
            hi = mid;
        else if (addr >= l->o->code[mid].end)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

/* The program's frame_ok: fp points up the stack to (next fp or 0, return address in code). */
static int live_frame_ok(const struct live *l, __u64 fp, __u64 sp)
{
    __u64 pair[2];

    if ((fp & 7) || fp < sp || fp >= sp + OFFCPU_STACK_WINDOW || live_read(l, fp, pair, sizeof(pair)))
        return 0;
    return (!pair[0] || (pair[0] > fp && pair[0] < fp + OFFCPU_STACK_WINDOW)) && live_in_code(l, pair[1]);
}

/* The program's chain_to_root: the chain from fp reaches a saved fp of 0 through code only. */
static int live_chain_to_root(const struct live *l, __u64 fp)
{
    __u64 pair[2];

    for (unsigned i = 0; i < OFFCPU_CHAIN_DEPTH; i++) {
        if ((fp & 7) || live_read(l, fp, pair, sizeof(pair)) || !live_in_code(l, pair[1]))
            return 0;
        if (!pair[0])
            return 1;
        if (pair[0] <= fp || pair[0] >= fp + OFFCPU_STACK_WINDOW)
            return 0;
        fp = pair[0];
    }
    return 0;
}

/* The first saved frame pointer in the words above sp whose chain reaches the root (0: none). */
static __u64 live_scan(const struct live *l, __u64 sp)
{
    __u64 words[OFFCPU_SCAN_WORDS];
    unsigned chains = 0;

    if (live_read(l, sp, words, sizeof(words)))
        return 0;
    for (unsigned i = 0; i < OFFCPU_SCAN_WORDS && chains < OFFCPU_SCAN_CHAINS; i++) {
        __u64 w = words[i];

        if ((w & 0xf) || w <= sp + i * 8 || !live_frame_ok(l, w, sp))
            continue;
        if (live_chain_to_root(l, w))
            return w;
        chains++;
    }
    return 0;
}

/* Whether the thread is still where it blocked: /proc/TID/syscall ends with its user sp and pc. */
static int live_still_blocked(const struct live *l, unsigned tid, __u64 ip, __u64 sp)
{
    char path[64], line[256], *sp_at, *pc_at;
    unsigned long long psp, ppc;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", l->tgid, tid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return 0;
    }
    fclose(f);
    pc_at = strrchr(line, ' ');
    if (!pc_at || pc_at == line)
        return 0;
    *pc_at = '\0';
    sp_at = strrchr(line, ' ');
    if (!sp_at || sscanf(sp_at + 1, "%llx", &psp) != 1 || sscanf(pc_at + 1, "%llx", &ppc) != 1)
        return 0;
    return psp == sp && ppc == ip;
}

__u64 ulive_walk(const struct offcpu_opts *o, unsigned tgid, unsigned tid, __u64 ip, __u64 sp, __u64 bp,
                 struct offcpu_ustack *u)
{
    struct live l = {o, tgid};
    __u64 hash = FNV_OFFSET, pair[2];
    unsigned i, n = 1;

    if (!ip || !sp)
        return 0;
    memset(u, 0, sizeof(*u));
    u->ips[0] = ip;
    u->sp = sp;
    u->bp = bp;
    u->nwords = live_read(&l, sp, u->words, sizeof(u->words)) ? 0 : OFFCPU_RECOVER_WORDS;
    if (!live_frame_ok(&l, bp, sp)) {
        bp = live_scan(&l, sp);
        u->scanned = bp != 0;
    }
    u->fp0 = bp;
    while (bp && !(bp & 7) && n < OFFCPU_USER_DEPTH && !live_read(&l, bp, pair, sizeof(pair)) && pair[1] >= 4096) {
        u->ips[n++] = pair[1];
        if (pair[0] <= bp)
            break;
        bp = pair[0];
    }
    u->n = n;
    if (!live_still_blocked(&l, tid, ip, sp))
        return 0;
    for (i = 0; i < n; i++) /* the program's hash: frames, then the window's code pointers */
        hash = (hash ^ u->ips[i]) * FNV_PRIME;
    for (i = 0; i < u->nwords; i++)
        if (u->words[i] >= 4096 && live_in_code(&l, u->words[i]))
            hash = (hash ^ u->words[i]) * FNV_PRIME;
    return hash ? hash : 1;
}
