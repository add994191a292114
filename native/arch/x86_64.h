/* x86_64.h - everything pmuprof's C code assumes of x86-64, and nothing else: another architecture is
 * another file beside this one (docs/internals.md, "What an aarch64 port touches").
 *
 * Two kinds of fact. The X86_64_* constants describe files and code made on x86-64 (a perf.data recorded
 * there, a binary built for it) and are read on any host. The ARCH_* names and arch_* functions below them
 * describe the machine the program runs on; arch.h defines them by including this file when the build is
 * for x86-64, and only code that runs on the capture host uses them. */
#ifndef PMUPROF_ARCH_X86_64_H
#define PMUPROF_ARCH_X86_64_H

/* perf.data: the arch header string perf writes (uname -m), and the user stack pointer's bit in
 * sample_regs_user (PERF_REG_X86_SP in the kernel's uapi asm/perf_regs.h). The registers a sample dumps are
 * in bit order, so the sp's place among them is the number of asked-for bits below this one. */
#define X86_64_PERF_ARCH "x86_64"
#define X86_64_PERF_REG_SP 7

/* ELF: e_machine EM_X86_64 (the helper decodes only x86-64 code). */
#define X86_64_ELF_MACHINE 62

/* DWARF register numbers of the System V psABI (CFI rules name registers by them): the frame pointer rbp,
 * the stack pointer rsp, and the return-address column (the pseudo-register rip). */
#define X86_64_DWARF_FP 6
#define X86_64_DWARF_SP 7
#define X86_64_DWARF_RA 16

/* A frame record, as `push %rbp; mov %rsp,%rbp` lays it out: the caller's frame pointer at [fp], the return
 * address at [fp + 8]; the frame's CFA is fp + 16 (above both). */
#define X86_64_FRAME_RECORD 16

#endif

#if defined(PMUPROF_ARCH_HOST) && !defined(PMUPROF_ARCH_X86_64_HOST) /* arch.h: the build is for x86-64 */
#define PMUPROF_ARCH_X86_64_HOST

#define ARCH_DWARF_FP X86_64_DWARF_FP
#define ARCH_DWARF_SP X86_64_DWARF_SP
#define ARCH_DWARF_RA X86_64_DWARF_RA
#define ARCH_FRAME_RECORD X86_64_FRAME_RECORD

#ifdef __bpf__
/* libbpf's name for the kernel the BPF program is built for (bpf_tracing.h reads it). */
#ifndef __TARGET_ARCH_x86
#define __TARGET_ARCH_x86
#endif

/* The kernel's struct pt_regs, only the user registers the off-CPU tracer reads, by their kernel names:
 * CO-RE (preserve_access_index) relocates the offsets against the running kernel's BTF. */
struct pt_regs {
    unsigned long bp;
    unsigned long sp;
    unsigned long ip;
} __attribute__((preserve_access_index));

#define ARCH_REGS_IP(r) ((r)->ip)
#define ARCH_REGS_SP(r) ((r)->sp)
#define ARCH_REGS_FP(r) ((r)->bp)

#else /* user space */

#include <cpuid.h>
#include <stdint.h>
#include <x86intrin.h>

/* The CPU's spin-wait hint, 16 times in a row, as MariaDB's my_cpu_init times it (PAUSE). */
static inline void arch_spin_hint16(void)
{
    __asm__ __volatile__("pause\n\tpause\n\tpause\n\tpause\n\t"
                         "pause\n\tpause\n\tpause\n\tpause\n\t"
                         "pause\n\tpause\n\tpause\n\tpause\n\t"
                         "pause\n\tpause\n\tpause\n\tpause" ::
                                 : "memory");
}

/* The cycle counter servers time their spin loops with (the TSC, at the nominal frequency). */
#define ARCH_TICKS_METHOD "rdtsc"
static inline uint64_t arch_ticks(void)
{
    return __rdtsc();
}

/* The counter's frequency as the CPU states it (CPUID leaf 0x15, crystal ratio), else 0. */
#define ARCH_TICKS_HZ_SOURCE "cpuid.0x15"
static inline double arch_ticks_hz(void)
{
    unsigned a, b, c, d;

    if (__get_cpuid_max(0, 0) < 0x15)
        return 0.0;
    __cpuid_count(0x15, 0, a, b, c, d);
    (void)d;
    if (!a || !b || !c)
        return 0.0;
    return (double)c * b / a;
}

/* The processor's base frequency in MHz (CPUID leaf 0x16), else 0. */
static inline unsigned arch_base_mhz(void)
{
    unsigned a, b, c, d;

    if (__get_cpuid_max(0, 0) < 0x16)
        return 0;
    __cpuid_count(0x16, 0, a, b, c, d);
    (void)b, (void)c, (void)d;
    return a & 0xffff;
}

#endif /* __bpf__ */
#endif /* the host */
