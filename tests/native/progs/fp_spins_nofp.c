/* A program with frame pointers whose threads spend their CPU inside a library without them
 * (nofp_lib.c's nofp_spin). perf's frame-pointer walk from a tick in nofp_spin skips its caller:
 *   thread a: fp_outer_a -> fp_spinner_a -> nofp_spin   (the walk shows nofp_spin <- fp_outer_a)
 *   thread b: fp_outer_b -> fp_spinner_b -> nofp_spin   (nofp_spin <- fp_outer_b)
 *   thread c: fp_outer_c -> fp_spinner_a or fp_spinner_b, through one pointer at one call site: the
 *             walk is the same for both, so no recovered caller may be given to it without a guess.
 *   thread d: fp_outer_d -> fp_clobberer -> nofp_spin_clobber, which keeps data in the frame pointer: perf's walk
 *             stops at the leaf (the stack is nofp_spin_clobber alone). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

long nofp_spin(long n);
long nofp_spin_clobber(long n);

#define SPIN 200000L

__attribute__((noinline)) long fp_spinner_a(long n)
{
    long r = nofp_spin(n);
    __asm__ volatile("" ::: "memory"); /* keep the call a call, not a tail jump */
    return r;
}

__attribute__((noinline)) long fp_spinner_b(long n)
{
    long r = nofp_spin(n);
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) void fp_outer_a(void)
{
    for (;;)
        fp_spinner_a(SPIN);
}

__attribute__((noinline)) void fp_outer_b(void)
{
    for (;;)
        fp_spinner_b(SPIN);
}

__attribute__((noinline)) long fp_clobberer(long n)
{
    long r = nofp_spin_clobber(n);
    __asm__ volatile("" ::: "memory");
    return r;
}

__attribute__((noinline)) void fp_outer_d(void)
{
    for (;;)
        fp_clobberer(SPIN);
}

long (*volatile pick[2])(long) = {fp_spinner_a, fp_spinner_b};

__attribute__((noinline)) void fp_outer_c(void)
{
    for (unsigned i = 0;; i++)
        pick[i & 1](SPIN / 4);
}

static void *run(void *arg)
{
    ((void (*)(void))arg)();
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[4];
    void (*outer[4])(void) = {fp_outer_a, fp_outer_b, fp_outer_c, fp_outer_d};
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, run, (void *)outer[i]);
    struct timespec ts = {argc > 1 ? atoi(argv[1]) : 30, 0};
    nanosleep(&ts, NULL);
    return 0;
}
