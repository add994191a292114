/* thread_churn.c - two threads that sleep in a loop, and a spawner that starts a short-lived thread every
 * 2 ms: at most three or four threads exist at any moment, hundreds come and go in a capture window.
 * An off-CPU tracer must charge each new thread only the time since it was created.
 * Usage: thread_churn SECONDS */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		usleep(10000);
	return NULL;
}

static void *brief(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	for (unsigned long i = 0; i < 20000; i++)
		n += i;
	return NULL;
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 30);
	pthread_t t;

	pthread_create(&t, NULL, sleeper, NULL);
	pthread_create(&t, NULL, sleeper, NULL);
	while (time(NULL) < end) {
		if (pthread_create(&t, NULL, brief, NULL) == 0)
			pthread_join(t, NULL);
		usleep(2000);
	}
	return 0;
}
