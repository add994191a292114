/* Known inlined helpers for the inline-frame tests: built -O2 -g, every helper but worker/outer_* inlined.
 * outer_a -> mid_a (inlined) -> worker -> latch_a_lock (inlined) -> spin_pause (inlined): the PAUSE loop
 * lands in worker, and only DWARF tells which latch helper it spins for, and which mid_ called it. */
#include <stdint.h>
#include <stdlib.h>

static volatile uint64_t sink;

static inline __attribute__((always_inline)) void spin_pause(int n)
{
    for (int i = 0; i < n; i++) {
        __builtin_ia32_pause();
        sink++;
    }
}

static inline __attribute__((always_inline)) void latch_a_lock(int n)
{
    spin_pause(n);
    sink += 3;
}

static inline __attribute__((always_inline)) void latch_b_lock(int n)
{
    spin_pause(n * 2);
    sink += 5;
}

__attribute__((noinline)) void note(int which)
{
    sink ^= (uint64_t)which;
    __asm__ volatile("" ::: "memory");
}

/* Calls note() first, so it keeps a frame (with frame pointers) around the PAUSE loops. */
__attribute__((noinline)) void worker(int which)
{
    note(which);
    if (which)
        latch_a_lock(1000);
    else
        latch_b_lock(1000);
    __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void mid_a(int i)
{
    worker(i & 1);
    sink += 7;
}

static inline __attribute__((always_inline)) void mid_b(int i)
{
    worker(i & 1);
    sink += 11;
}

__attribute__((noinline)) void outer_a(long n)
{
    for (long i = 0; i < n; i++)
        mid_a((int)i);
}

__attribute__((noinline)) void outer_b(long n)
{
    for (long i = 0; i < n; i++)
        mid_b((int)i);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    outer_a(n);
    outer_b(n);
    return 0;
}
