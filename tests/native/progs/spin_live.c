/* A PAUSE loop and an MFENCE loop that run for argv[1] seconds each (live skid test). */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void pause_spin(double seconds)
{
	double end = now() + seconds;
	unsigned long i;

	while (now() < end)
		for (i = 0; i < 100000; i++)
			__asm__ __volatile__("pause\n.globl live_pause_after\nlive_pause_after:\n" ::: "memory");
}

__attribute__((noinline)) void fence_spin(double seconds)
{
	double end = now() + seconds;
	unsigned long i;

	while (now() < end)
		for (i = 0; i < 100000; i++) {
			sink = i;
			__asm__ __volatile__("mfence\n.globl live_fence_after\nlive_fence_after:\n" ::: "memory");
		}
}

int main(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 1.0;

	pause_spin(s);
	fence_spin(s);
	return 0;
}
