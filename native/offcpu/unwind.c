/* unwind.c - .eh_frame CFI unwinding (elfutils libdw) of the frames at a user stack's leaf.
 *
 * glibc is built without frame pointers: when a thread sleeps in pthread_cond_timedwait, the walk from
 * its frame pointer skips the function that called it (lock_wait, buf_LRU_get_free_block) - the one that says
 * what is awaited. The program saves ip, sp, bp and the words above sp; here each leaf frame's CFA and
 * return address are computed from its binary's CFI (present in stripped libraries too), frame by
 * frame, until the chain meets the frame-pointer walk again or enters the executable. */
#define _GNU_SOURCE
#include "unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/arch.h"
#include "lib/regfile.h"

#define MAX_MAPS 4096

struct uw_file {
    char *path;
    int tried, fd;
    Elf *elf;
    Dwarf_CFI *cfi;
    GElf_Phdr *loads;
    size_t nloads;
};

struct uw_map {
    __u64 start, end, pgoff;
    struct uw_file *file;
    int exe;
};

struct uw_proc {
    unsigned pid;
    struct uw_map *maps;
    size_t nmaps;
    struct uw_file *files;
    size_t nfiles;
};

static struct uw_file *file_for(struct uw_proc *p, const char *path)
{
    for (size_t i = 0; i < p->nfiles; i++)
        if (!strcmp(p->files[i].path, path))
            return &p->files[i];
    if (p->nfiles >= MAX_MAPS)
        return NULL;
    struct uw_file *f = &p->files[p->nfiles];
    *f = (struct uw_file){.path = strdup(path), .fd = -1};
    if (!f->path)
        return NULL;
    p->nfiles++;
    return f;
}

struct uw_proc *uw_proc_read(unsigned pid)
{
    char path[64], line[4608], exe[4096] = "";
    struct uw_proc *p = calloc(1, sizeof(*p));
    FILE *fp;
    ssize_t n;

    if (!p)
        return NULL;
    p->pid = pid;
    p->maps = calloc(MAX_MAPS, sizeof(*p->maps));
    p->files = calloc(MAX_MAPS, sizeof(*p->files));
    snprintf(path, sizeof(path), "/proc/%u/exe", pid);
    if ((n = readlink(path, exe, sizeof(exe) - 1)) > 0)
        exe[n] = '\0';
    snprintf(path, sizeof(path), "/proc/%u/maps", pid);
    fp = p->maps && p->files ? fopen(path, "r") : NULL;
    if (!fp) {
        uw_proc_free(p);
        return NULL;
    }
    while (p->nmaps < MAX_MAPS && fgets(line, sizeof(line), fp)) {
        unsigned long long lo, hi, off;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &pos) < 4 || !pos || perms[2] != 'x' ||
            line[pos] != '/')
            continue;
        line[strcspn(line, "\n")] = '\0';
        struct uw_file *f = file_for(p, line + pos);
        if (!f)
            break;
        p->maps[p->nmaps++] = (struct uw_map){lo, hi, off, f, exe[0] && !strcmp(line + pos, exe)};
    }
    fclose(fp);
    return p;
}

void uw_proc_free(struct uw_proc *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nfiles; i++) {
        struct uw_file *f = &p->files[i];
        if (f->cfi)
            dwarf_cfi_end(f->cfi);
        if (f->elf)
            elf_end(f->elf);
        if (f->fd >= 0)
            close(f->fd);
        free(f->loads);
        free(f->path);
    }
    free(p->files);
    free(p->maps);
    free(p);
}

/* The file's .eh_frame CFI and PT_LOAD headers, opened once (through /proc/PID/root: the process's own
 * mount namespace). 0, or -1 when it has none. */
static int file_open(struct uw_proc *p, struct uw_file *f)
{
    char path[4200];
    size_t n = 0;

    if (f->tried)
        return f->cfi ? 0 : -1;
    f->tried = 1;
    snprintf(path, sizeof(path), "/proc/%u/root%s", p->pid, f->path);
    if ((f->fd = regfile_open(path)) < 0)
        return -1;
    elf_version(EV_CURRENT);
    f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
    if (!f->elf || elf_getphdrnum(f->elf, &n) || !n || n > 4096 || !(f->loads = calloc(n, sizeof(*f->loads))))
        return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
            f->loads[f->nloads++] = ph;
    }
    f->cfi = dwarf_getcfi_elf(f->elf);
    return f->cfi ? 0 : -1;
}

static const struct uw_map *map_of(const struct uw_proc *p, __u64 ip)
{
    for (size_t i = 0; i < p->nmaps; i++)
        if (ip >= p->maps[i].start && ip < p->maps[i].end)
            return &p->maps[i];
    return NULL;
}

/* The link-time address of a runtime address in map m. */
static int vaddr_of(const struct uw_map *m, __u64 ip, __u64 *out)
{
    __u64 off = ip - m->start + m->pgoff;
    for (size_t i = 0; i < m->file->nloads; i++) {
        const GElf_Phdr *ph = &m->file->loads[i];
        if (off >= ph->p_offset && off - ph->p_offset < ph->p_filesz) {
            *out = off - ph->p_offset + ph->p_vaddr;
            return 0;
        }
    }
    return -1;
}

struct regs {
    __u64 sp, bp, cfa;
    int have_bp, have_cfa;
};

/* A word the program saved (addr inside the window above the saved sp): 0, or -1 when outside. */
static int read_word(const struct offcpu_ustack *u, __u64 addr, __u64 *out)
{
    if ((addr & 7) || addr < u->sp || (addr - u->sp) / 8 >= u->nwords)
        return -1;
    *out = u->words[(addr - u->sp) / 8];
    return 0;
}

/* A DWARF expression of the forms CFI uses (register + offset, CFA + offset, deref). */
static int eval(const struct offcpu_ustack *u, const struct regs *r, const Dwarf_Op *ops, size_t nops, __u64 *out,
                int *is_value)
{
    __u64 stack[8];
    int top = 0;

    *is_value = 0;
    for (size_t i = 0; i < nops; i++) {
        const Dwarf_Op *op = &ops[i];
        if (top >= 8)
            return -1;
        if (op->atom == DW_OP_call_frame_cfa) {
            if (!r->have_cfa)
                return -1;
            stack[top++] = r->cfa;
        } else if (op->atom == DW_OP_breg0 + ARCH_DWARF_SP ||
                   (op->atom == DW_OP_bregx && op->number == ARCH_DWARF_SP)) {
            stack[top++] = r->sp + (__u64)(__s64)(op->atom == DW_OP_bregx ? op->number2 : op->number);
        } else if (op->atom == DW_OP_breg0 + ARCH_DWARF_FP ||
                   (op->atom == DW_OP_bregx && op->number == ARCH_DWARF_FP)) {
            if (!r->have_bp)
                return -1;
            stack[top++] = r->bp + (__u64)(__s64)(op->atom == DW_OP_bregx ? op->number2 : op->number);
        } else if (op->atom == DW_OP_plus_uconst && top >= 1) {
            stack[top - 1] += op->number;
        } else if ((op->atom == DW_OP_consts || op->atom == DW_OP_constu) ||
                   (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31)) {
            stack[top++] =
                    op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31 ? (__u64)(op->atom - DW_OP_lit0) : op->number;
        } else if ((op->atom == DW_OP_plus || op->atom == DW_OP_minus) && top >= 2) {
            top--;
            stack[top - 1] = op->atom == DW_OP_plus ? stack[top - 1] + stack[top] : stack[top - 1] - stack[top];
        } else if (op->atom == DW_OP_deref && top >= 1) {
            if (read_word(u, stack[top - 1], &stack[top - 1]))
                return -1;
        } else if (op->atom == DW_OP_stack_value) {
            *is_value = 1;
        } else {
            return -1; /* anything else: not a frame this unwinder can take */
        }
    }
    if (top != 1)
        return -1;
    *out = stack[0];
    return 0;
}

/* One CFI step from the frame at ip (a return address unless first): its caller's ip, sp and bp. */
static int step(struct uw_proc *p, const struct offcpu_ustack *u, __u64 ip, int first, struct regs *r, __u64 *ra)
{
    const struct uw_map *m = map_of(p, ip);
    Dwarf_Frame *frame = NULL;
    Dwarf_Op *ops, mem[3];
    size_t nops;
    __u64 vaddr, where;
    int is_value, rc = -1;

    if (!m || file_open(p, m->file) || vaddr_of(m, first ? ip : ip - 1, &vaddr) ||
        dwarf_cfi_addrframe(m->file->cfi, vaddr, &frame) || !frame)
        return -1;
    if (dwarf_frame_cfa(frame, &ops, &nops) || eval(u, r, ops, nops, &r->cfa, &is_value) || is_value)
        goto out;
    r->have_cfa = 1;
    if (dwarf_frame_register(frame, ARCH_DWARF_RA, mem, &ops, &nops) || !nops ||
        eval(u, r, ops, nops, &where, &is_value))
        goto out;
    if (!is_value && read_word(u, where, ra))
        goto out;
    if (is_value)
        *ra = where;
    int bp_rule = dwarf_frame_register(frame, ARCH_DWARF_FP, mem, &ops, &nops);
    if (bp_rule == 0 && nops) {
        r->have_bp = !eval(u, r, ops, nops, &where, &is_value) && (is_value || !read_word(u, where, &where));
        r->bp = where;
    } else if (bp_rule || ops) {
        r->have_bp = 0; /* undefined (libdw: no ops, *ops set to mem) */
    } /* else: the same value (libdw: no ops, *ops NULL) */
    r->sp = r->cfa;
    r->have_cfa = 0;
    rc = 0;
out:
    free(frame);
    return rc;
}

/* Whether the frame at ra (in the executable, reached by the CFI steps that left r) is the one the
 * frame-pointer walk started from: its CFA, by its own CFI, is a frame record above u->fp0 (the saved frame
 * pointer and the return address the walk read there). Otherwise the walk began at another frame (a stale
 * pointer, or a caller without a frame pointer) and the recovered callers would not join it. */
static int joins_walk(struct uw_proc *p, const struct offcpu_ustack *u, __u64 ra, const struct regs *r)
{
    const struct uw_map *m = map_of(p, ra);
    Dwarf_Frame *frame = NULL;
    Dwarf_Op *ops;
    size_t nops;
    __u64 vaddr, cfa;
    int is_value, ok = 0;

    if (!u->fp0 || !m || file_open(p, m->file) || vaddr_of(m, ra - 1, &vaddr) ||
        dwarf_cfi_addrframe(m->file->cfi, vaddr, &frame) || !frame)
        return 0;
    ok = !dwarf_frame_cfa(frame, &ops, &nops) && !eval(u, r, ops, nops, &cfa, &is_value) && !is_value &&
            cfa == u->fp0 + ARCH_FRAME_RECORD;
    free(frame);
    return ok;
}

int uw_recover(struct uw_proc *p, const struct offcpu_ustack *u, __u64 *out, int cap, unsigned *resume)
{
    struct regs r = {.sp = u->sp, .bp = u->bp, .have_bp = 1};
    __u64 ip = u->ips[0], ra;
    const struct uw_map *m;
    int n = 0;

    *resume = 1;
    if (!p || !u->nwords || u->n < 1 || !(m = map_of(p, ip)) || m->exe)
        return 0;
    for (int s = 0; s < UNWIND_MAX_STEPS && n < cap; s++) {
        if (step(p, u, ip, s == 0, &r, &ra) || ra < 4096)
            return 0; /* the chain could not be followed: keep the frame-pointer walk as it is */
        for (unsigned k = 1; k < u->n && k < OFFCPU_USER_DEPTH; k++)
            if (u->ips[k] == ra) {
                *resume = k;
                return n;
            }
        out[n++] = ra;
        if (!(m = map_of(p, ra)))
            return 0;
        if (m->exe) /* the walk's first entry must be this frame's caller */
            return joins_walk(p, u, ra, &r) ? n : 0;
        ip = ra;
    }
    return 0;
}
