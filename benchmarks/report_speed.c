/* Benchmark workload for report_speed.py: threads walking deep, varied call chains (frame pointers kept). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NFUNC 8
typedef uint64_t (*step_fn)(int pattern, int depth, uint64_t x);
static step_fn steps[NFUNC];
static volatile uint64_t sink;
static double seconds = 30;

static uint64_t leaf_work(uint64_t x, int n)
{
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

/* Each step calls the next function of the pattern until the pattern's depth is reached. */
#define STEP(name)                                                                   \
    __attribute__((noinline)) static uint64_t name(int pattern, int depth, uint64_t x) \
    {                                                                                \
        if (depth >= 20 + pattern % 40)                                              \
            return leaf_work(x, 200 + 50 * (pattern % 7));                           \
        step_fn next = steps[(pattern * 7 + depth * 3) % NFUNC];                     \
        return next(pattern, depth + 1, x + (uint64_t)depth) + 1;                    \
    }
STEP(row_search_mvcc)
STEP(btr_cur_search_to_nth_level)
STEP(buf_page_get_gen)
STEP(page_cur_search_with_match)
STEP(mtr_commit)
STEP(lock_rec_lock)
STEP(trx_undo_report_row_operation)
STEP(fil_space_acquire)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg, x = id;
    double end = now() + seconds;
    for (int i = 0; now() < end; i++)
        for (int p = 0; p < 97; p++)
            x += steps[(p + (int)id) % NFUNC]((p * 13 + (int)id) % 97, 0, x);
    sink += x;
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    seconds = argc > 2 ? atof(argv[2]) : 30;
    step_fn all[NFUNC] = {row_search_mvcc, btr_cur_search_to_nth_level, buf_page_get_gen,
                          page_cur_search_with_match, mtr_commit, lock_rec_lock,
                          trx_undo_report_row_operation, fil_space_acquire};
    for (int i = 0; i < NFUNC; i++)
        steps[i] = all[i];
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%llu\n", (unsigned long long)sink);
    return 0;
}
