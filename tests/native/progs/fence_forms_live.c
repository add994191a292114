/*
 * Each x86 full-fence form, hot, in a function named like where it is found (live fence-rule test):
 *   buf_get_n_pending_read_ios  __sync_synchronize(), compiled by GCC 12 as lock or $0,(%rsp): the
 *                               seeds' os_rmb in a current build (InnoDB barrier context)
 *   rw_lock_x_lock_func         mfence, as older compilers emit the same barrier (InnoDB barrier context)
 *   l_find                      a seq_cst store of a pin, compiled as xchg (MariaDB's lf_hash pins:
 *                               the code's own ordering, not a barrier the rule may blame)
 * Each runs argv[1] seconds; they only store to globals, so nothing else contends.
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long n_pend_reads[8];
unsigned long lock_word;
void *pins[4];
volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long buf_get_n_pending_read_ios(void)
{
	unsigned long sum = 0;
	int i;

	__sync_synchronize();
	for (i = 0; i < 8; i++)
		sum += n_pend_reads[i];
	return sum;
}

__attribute__((noinline)) void rw_lock_x_lock_func(unsigned long v)
{
	lock_word = v;
	__asm__ __volatile__("mfence" ::: "memory");
	sink = lock_word;
}

__attribute__((noinline)) void l_find(void *node)
{
	__atomic_store_n(&pins[1], node, __ATOMIC_SEQ_CST);
	sink = (unsigned long)pins[0];
}

int main(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 1.0, end;
	unsigned long i;

	for (end = now() + s; now() < end;)
		for (i = 0; i < 100000; i++)
			sink += buf_get_n_pending_read_ios();
	for (end = now() + s; now() < end;)
		for (i = 0; i < 100000; i++)
			rw_lock_x_lock_func(i);
	for (end = now() + s; now() < end;)
		for (i = 0; i < 100000; i++)
			l_find(&pins[i & 3]);
	return 0;
}
