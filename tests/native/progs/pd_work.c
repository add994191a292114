/* perf.data reader test program: known frame-pointer call chains in several threads, a thread that
 * renames itself (prctl) to awkward names, and a child that forks and execs this program again.
 * usage: pd_work SECONDS [child] */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long pd_sink;
#ifndef PD_VARIANT
#define PD_VARIANT 1 /* builds with another value get another build-id */
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long pd_leaf(unsigned long x)
{
    for (int i = 0; i < 4000; i++)
        x = x * 31 + (unsigned long)i;
    return x;
}

__attribute__((noinline)) unsigned long pd_middle(int depth, unsigned long x)
{
    return depth ? pd_middle(depth - 1, x + (unsigned long)depth) + 1 : pd_leaf(x);
}

__attribute__((noinline)) static unsigned long pd_static_helper(unsigned long x)
{
    return pd_middle(3, x) ^ 5;
}

/* Overlapping symbols: pd_inner lies inside pd_outer, and pd_outer has a weak alias at its start, so
 * perf's answer for an address in pd_inner depends on its symbol tree's shape (and its duplicate rule). */
__asm__(".text\n"
        ".globl pd_outer\n.type pd_outer, @function\npd_outer:\n"
        "    push %rbp\n    mov %rsp, %rbp\n    mov $20000, %ecx\n"
        ".globl pd_inner\n.type pd_inner, @function\npd_inner:\n"
        "1:  dec %ecx\n    jnz 1b\n    pop %rbp\n    ret\n"
        ".size pd_inner, .-pd_inner\n.size pd_outer, .-pd_outer\n"
        ".weak pd_outer_alias\n.type pd_outer_alias, @function\n.set pd_outer_alias, pd_outer\n"
        ".size pd_outer_alias, .-pd_outer\n");
void pd_outer(void);

__attribute__((noinline)) void *pd_copy(size_t n)
{
    char *a = malloc(n), *b = malloc(n);
    memset(a, 7, n);
    memcpy(b, a, n);
    pd_sink += (unsigned long)b[n / 2];
    free(a);
    free(b);
    return NULL;
}


struct job {
    long id;
    double secs;
    const char *names[3];
};

static void *run_job(void *p)
{
    struct job *j = p;
    double start = now(), end = start + j->secs;
    int renamed = 0;
    if (j->names[0])
        prctl(PR_SET_NAME, j->names[0]);
    while (now() < end) {
        if (!renamed && j->names[1] && now() > start + j->secs / 2) {
            prctl(PR_SET_NAME, j->names[1]);
            renamed = 1;
        }
        pd_sink += j->id % 2 ? pd_static_helper((unsigned long)j->id) : pd_middle(6 + (int)j->id, 1);
        if (j->id == 2)
            pd_copy(1 << 16);
        if (j->id == 1)
            pd_outer();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    if (argc > 2 && !strcmp(argv[2], "child")) { /* the exec'd child: its own comm, its own work */
        struct job j = {5, secs, {NULL, NULL, NULL}};
        run_job(&j);
        return 0;
    }
    pid_t kid = fork();
    if (kid == 0) {
        char s[32];
        /* a test that kills this program must not leave the child burning a CPU for minutes */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(0);
        snprintf(s, sizeof s, "%g", secs / 2);
        usleep(100000);
        execl("/proc/self/exe", "pd_child", s, "child", (char *)NULL);
        _exit(127);
    }
    struct job jobs[3] = {
        {0, secs, {"worker 2", "w;x</script>", NULL}},
        {1, secs, {"a 1/2 b", "", NULL}},
        {2, secs, {"copier", NULL, NULL}},
    };
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, run_job, &jobs[i]);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    waitpid(kid, NULL, 0);
    printf("%lu %d\n", pd_sink, PD_VARIANT);
    return 0;
}
