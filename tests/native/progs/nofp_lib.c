/* A library built without frame pointers (-O2 -fomit-frame-pointer, as Debian builds glibc): its
 * functions keep the caller's rbp, so a frame-pointer walk from a sleep inside them skips nofp_wait
 * and the program function that called it. Only their .eh_frame CFI says who called them. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int word;

__attribute__((noinline)) long nofp_sleep_inner(long ms)
{
    volatile char pad[200]; /* a frame of its own size: the CFA is not just sp + 8 */
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    pad[0] = (char)ms;
    long rc = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    return rc + pad[0];
}

__attribute__((noinline)) long nofp_wait(long ms)
{
    volatile long keep = ms;
    long rc = nofp_sleep_inner(keep);
    return rc + keep;
}

/* On the CPU inside the library: rbp is still the caller's, so perf's frame-pointer walk skips the caller
 * (fp_spinner_a / fp_spinner_b in fp_spins_nofp.c). */
__attribute__((noinline)) long nofp_spin(long n)
{
    volatile long acc = 0;
    for (long i = 0; i < n; i++)
        acc += i ^ (acc >> 3);
    return acc;
}

/* The same, keeping data in rbp (as glibc's send and recv do): perf's frame-pointer walk stops at this
 * leaf, and only the thread's sp and the CFI (gcc saves rbp in the prologue) lead back to the caller. */
__attribute__((noinline)) long nofp_spin_clobber(long n)
{
    long acc = 0;
    for (long i = 1; i <= n; i++)
        __asm__ volatile("mov %1, %%rbp\n\tadd %%rbp, %0" : "+r"(acc) : "r"(i) : "rbp");
    return acc;
}
