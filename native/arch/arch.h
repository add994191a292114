/* arch.h - the architecture the program is built for: its header defines the ARCH_* names and arch_*
 * functions of the code that runs on the capture host (PAUSE calibration, the off-CPU tracer and its BPF
 * program). Any other architecture stops the build here, with the one line below. A BPF program is built
 * with clang -target bpf, which names no CPU: the Makefile passes the build's as PMUPROF_ARCH_<arch>. */
#ifndef PMUPROF_ARCH_H
#define PMUPROF_ARCH_H

#define PMUPROF_ARCH_HOST 1

#if (defined(__x86_64__) && !defined(__bpf__)) || (defined(__bpf__) && defined(PMUPROF_ARCH_x86_64))
#include "x86_64.h"
#else
#error "pmuprof: no native/arch/ header for this architecture: capture runs on x86-64 only (docs/internals.md, 'What an aarch64 port touches')"
#endif

#endif
