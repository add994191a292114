/* pingpong.c - pairs of threads handing a token back and forth through pipes: every hand-off puts one thread
 * to sleep and wakes the other, so the process switches tens of thousands of times a second (as a busy
 * server's connection threads do). Runs for argv[1] seconds; argv[2] pairs (default 4). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct pair {
    int ping[2], pong[2];
};

static void *ping(void *arg)
{
    struct pair *p = arg;
    char c = 0;

    for (;;)
        if (write(p->ping[1], &c, 1) != 1 || read(p->pong[0], &c, 1) != 1)
            return NULL;
}

static void *pong(void *arg)
{
    struct pair *p = arg;
    char c;

    for (;;)
        if (read(p->ping[0], &c, 1) != 1 || write(p->pong[1], &c, 1) != 1)
            return NULL;
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 10, npairs = argc > 2 ? atoi(argv[2]) : 4;
    pthread_t t;

    for (int i = 0; i < npairs; i++) {
        struct pair *p = calloc(1, sizeof(*p));

        if (!p || pipe(p->ping) || pipe(p->pong) || pthread_create(&t, NULL, ping, p) ||
            pthread_create(&t, NULL, pong, p))
            return 1;
    }
    sleep(seconds);
    return 0;
}
