/* perf.data reader test program: code run from anonymous executable memory (named in
 * /tmp/perf-PID.map the way JITs do, and unnamed), and a shared library opened, closed and reopened.
 * usage: pd_jit SECONDS LIBRARY.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* mov ecx, 200000; 1: dec ecx; jnz 1b; ret */
static const unsigned char LOOP[] = {0xb9, 0x40, 0x0d, 0x03, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3};

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0, end = now() + secs;
    unsigned char *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return 1;
    memcpy(code, LOOP, sizeof LOOP);          /* named in the perf map */
    memcpy(code + 4096, LOOP, sizeof LOOP);   /* not named */
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *map = fopen(path, "w");
    if (map) {
        fprintf(map, "%lx %zx jitted_loop[hot]\n", (unsigned long)code, sizeof LOOP);
        fclose(map);
    }
    void (*named)(void) = (void (*)(void))code, (*unnamed)(void) = (void (*)(void))(code + 4096);
    unsigned long (*lib_spin)(unsigned long) = NULL;
    void *lib = NULL;
    int round = 0;
    while (now() < end) {
        if (!lib && argc > 2) {
            lib = dlopen(argv[2], RTLD_NOW);
            lib_spin = lib ? (unsigned long (*)(unsigned long))dlsym(lib, "pd_lib_spin") : NULL;
        }
        named();
        unnamed();
        if (lib_spin)
            lib_spin((unsigned long)round);
        if (lib && ++round % 50 == 0) { /* reopened at another address, maybe */
            dlclose(lib);
            lib = NULL;
            lib_spin = NULL;
            void *pad = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            (void)pad;
        }
    }
    return 0;
}
