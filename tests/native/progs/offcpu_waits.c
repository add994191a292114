/* offcpu_waits.c - threads that wait in known places, for the off-CPU capture tests.
 *
 * usage: offcpu_waits SECONDS FILE
 *   holder:   takes the mutex, holds it 200 ms sleeping (nanosleep), lets go and takes it again at once
 *             (a 1 ms sleep there became tens of ms waiting for a CPU on a busy host, and the waiters ran
 *             free on the CPU all that time)
 *   waiter x2: lock/unlock the mutex in a loop: blocked in pthread_mutex_lock (futex) ~all the time
 *   syncer:   4 KiB write + fsync of FILE in a loop: blocked in fsync (disk, state D)
 *   main:     waits in pthread_join
 * Built with frame pointers so the kernel can walk the user stacks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int running = 1;
static const char *sync_path;
volatile unsigned long sink;

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void holder_sleeps_with_lock(void)
{
	pthread_mutex_lock(&lock);
	sleep_ms(200);
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void waiter_takes_lock(void)
{
	pthread_mutex_lock(&lock);
	sink++;
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void syncer_writes_and_fsyncs(int fd, const char *buf)
{
	if (pwrite(fd, buf, 4096, (off_t)(sink % 256) * 4096) == 4096)
		fsync(fd);
	sink++;
}

static void *holder(void *arg)
{
	(void)arg;
	while (running)
		holder_sleeps_with_lock();
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	sleep_ms(5); /* let the holder take the lock first */
	while (running)
		waiter_takes_lock();
	return NULL;
}

static void *syncer(void *arg)
{
	char buf[4096];
	int fd = open(sync_path, O_WRONLY | O_CREAT, 0600);

	(void)arg;
	memset(buf, 'x', sizeof(buf));
	while (running && fd >= 0)
		syncer_writes_and_fsyncs(fd, buf);
	if (fd >= 0)
		close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[4];
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	int i;

	sync_path = argc > 2 ? argv[2] : "offcpu_waits.dat";
	pthread_create(&t[0], NULL, holder, NULL);
	pthread_create(&t[1], NULL, waiter, NULL);
	pthread_create(&t[2], NULL, waiter, NULL);
	pthread_create(&t[3], NULL, syncer, NULL);
	pthread_setname_np(t[0], "holder");
	pthread_setname_np(t[1], "waiter");
	pthread_setname_np(t[2], "waiter");
	pthread_setname_np(t[3], "syncer");
	sleep_ms((long)(seconds * 1000));
	running = 0;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
