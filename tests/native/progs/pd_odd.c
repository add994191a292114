/* perf.data reader test program: names perf script's text makes ambiguous. pmuprof-perfdata hands the
 * folder fields, not that text, and must fold them exactly as the text folds (issue 36): functions named
 * "odd (sym", " padded", "[unknown]", "x)(y" and "ends+0x1f", each run by a thread with an awkward name,
 * each thread also calling pd_lib_spin in one of the libraries loaded from the paths given (directories
 * named with an open parenthesis and with a line break).
 * usage: pd_odd SECONDS LIBRARY... */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static volatile unsigned long sink;
static unsigned long (*lib_spin[4])(unsigned long);
static int nlibs;
static double secs;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* A function whose symbol is `name` (an assembler name in quotes: any bytes but NUL and the quote). */
#define ODD(fn, name)                                                                                              \
    __attribute__((noinline)) void fn(long n) __asm__(name);                                                      \
    __attribute__((noinline)) void fn(long n)                                                                     \
    {                                                                                                              \
        for (long i = 0; i < n; i++)                                                                               \
            sink = sink * 31 + (unsigned long)i;                                                                   \
    }

ODD(odd_paren, "\"odd (sym\"")
ODD(odd_padded, "\" padded\"")
ODD(odd_unknown, "\"[unknown]\"")
ODD(odd_flip, "\"x)(y\"")
ODD(odd_offset, "\"ends+0x1f\"")

struct job {
    void (*fn)(long);
    const char *name;
    int lib;
};

static void *run(void *p)
{
    struct job *j = p;
    double end = now() + secs;
    prctl(PR_SET_NAME, j->name);
    while (now() < end) {
        j->fn(20000);
        if (j->lib < nlibs)
            sink += lib_spin[j->lib](sink);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct job jobs[] = {{odd_paren, "odd (1)", 0}, {odd_padded, " lead", 1}, {odd_unknown, "dd", 0},
                         {odd_flip, "x\ny", 1},     {odd_offset, "inlined", 0}};
    enum { NJOBS = sizeof jobs / sizeof *jobs };
    pthread_t t[NJOBS];
    secs = argc > 1 ? atof(argv[1]) : 1.0;
    for (int i = 2; i < argc && nlibs < 4; i++) {
        void *h = dlopen(argv[i], RTLD_NOW);
        if (h && (lib_spin[nlibs] = (unsigned long (*)(unsigned long))dlsym(h, "pd_lib_spin")))
            nlibs++;
    }
    for (int i = 0; i < NJOBS; i++)
        pthread_create(&t[i], NULL, run, &jobs[i]);
    for (int i = 0; i < NJOBS; i++)
        pthread_join(t[i], NULL);
    return nlibs == argc - 2 ? 0 : 1;
}
