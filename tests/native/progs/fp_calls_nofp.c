/* A program with frame pointers whose threads sleep inside a library without them (nofp_lib.c):
 * fp_waiter_a and fp_waiter_b call nofp_wait; the frame-pointer walk alone loses them both. */
#include <pthread.h>
#include <stdlib.h>

long nofp_wait(long ms);

__attribute__((noinline)) void *fp_waiter_a(void *arg)
{
    for (;;)
        nofp_wait(100);
    return arg;
}

__attribute__((noinline)) void *fp_waiter_b(void *arg)
{
    for (;;)
        nofp_wait(150);
    return arg;
}

int main(int argc, char **argv)
{
    pthread_t a, b;
    pthread_create(&a, NULL, fp_waiter_a, NULL);
    pthread_create(&b, NULL, fp_waiter_b, NULL);
    unsigned s = argc > 1 ? (unsigned)atoi(argv[1]) : 30;
    struct timespec ts = {s, 0};
    nanosleep(&ts, NULL);
    (void)argv;
    return 0;
}
