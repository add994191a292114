/* pause.c - PAUSE latency in TSC ticks and ns, TSC frequency, MariaDB's own classification. */
#include "helper.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "arch/arch.h"

/*
 * Runs of 16 PAUSEs, as MariaDB's my_cpu_init() times them: a run stays far below a
 * hypervisor's pause-loop-exiting window (KVM: 4096 cycles), so a guest measures the
 * instruction, not VM exits. Best of many runs, minus the cost of rdtsc itself.
 */
#define PAUSES_PER_RUN 16
#define MAX_WALL_NS 500e6 /* calibration never takes longer than this, however busy the host */

static double mono_ns(void);

/* TSC ticks for one run of 16 pauses. */
static uint64_t pause_ticks_once(void)
{
    uint64_t t0, t1;

    t0 = arch_ticks();
    arch_spin_hint16();
    t1 = arch_ticks();
    return t1 - t0;
}

/* Ticks between two back-to-back reads of the counter (its own overhead), best of many. */
static uint64_t ticks_overhead(void)
{
    uint64_t best = UINT64_MAX, t0, t1;
    int i;

    for (i = 0; i < 1000; i++) {
        t0 = arch_ticks();
        t1 = arch_ticks();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    return best;
}

/* Best of ``trials`` runs, stopping early at MAX_WALL_NS; *done gets the runs made. */
static uint64_t pause_best_ticks(int trials, int *done)
{
    uint64_t best = UINT64_MAX, t;
    double start = mono_ns();
    int i;

    for (i = 0; i < trials; i++) {
        t = pause_ticks_once();
        if (t < best)
            best = t;
        if ((i & 63) == 63 && mono_ns() - start > MAX_WALL_NS)
            break;
    }
    *done = i < trials ? i + 1 : trials;
    return best;
}

static double mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* TSC Hz against CLOCK_MONOTONIC_RAW over about 100 ms. */
static double tsc_hz_measured(void)
{
    struct timespec pause_ts = {0, 100 * 1000 * 1000};
    double n0, n1;
    uint64_t t0, t1;

    n0 = mono_ns();
    t0 = arch_ticks();
    nanosleep(&pause_ts, NULL);
    n1 = mono_ns();
    t1 = arch_ticks();
    return (double)(t1 - t0) * 1e9 / (n1 - n0);
}

/* MariaDB my_cpu_init: two runs of 16 PAUSEs; both over 30*16 ticks -> multiplier 100. */
static int mariadb_multiplier(uint64_t *t1, uint64_t *t2)
{
    uint64_t a, b, c;

    a = arch_ticks();
    arch_spin_hint16();
    b = arch_ticks();
    arch_spin_hint16();
    c = arch_ticks();
    *t1 = b - a;
    *t2 = c - b;
    return (*t1 > 30 * 16 && *t2 > 30 * 16) ? 100 : 200;
}

static void pause_mariadb(struct jbuf *out, double best_ticks_per_pause)
{
    uint64_t t1, t2;
    int votes100 = 0, i, m;

    for (i = 0; i < 100; i++) {
        m = mariadb_multiplier(&t1, &t2);
        votes100 += m == 100;
    }
    jbuf_key(out, "mariadb");
    jbuf_open(out, '{');
    jbuf_kint(out, "my_cpu_relax_multiplier", best_ticks_per_pause > 30.0 ? 100 : 200);
    jbuf_kint(out, "startup_runs_giving_100_of_100", votes100);
    jbuf_kuint(out, "last_run_ticks_16", t1);
    jbuf_kint(out, "threshold_ticks_per_pause", 30);
    jbuf_close(out, '}');
}

int pause_calibrate(struct jbuf *out, int trials)
{
    double hz_cpuid = arch_ticks_hz(), hz_meas = tsc_hz_measured();
    double hz = hz_cpuid > 0 ? hz_cpuid : hz_meas;
    uint64_t best, overhead;
    double ticks;
    unsigned base_mhz = arch_base_mhz();
    int done;

    if (trials <= 0)
        return -EINVAL;
    pause_ticks_once(); /* warm up */
    overhead = ticks_overhead();
    best = pause_best_ticks(trials, &done);
    ticks = (double)(best > overhead ? best - overhead : best) / PAUSES_PER_RUN;
    jbuf_open(out, '{');
    jbuf_kstr(out, "method", ARCH_TICKS_METHOD);
    jbuf_kint(out, "pauses_per_run", PAUSES_PER_RUN);
    jbuf_kint(out, "trials", done);
    jbuf_kuint(out, "rdtsc_overhead_ticks", overhead);
    jbuf_knum(out, "ticks_per_pause", ticks);
    jbuf_knum(out, "cycles", ticks);
    jbuf_knum(out, "ns", ticks * 1e9 / hz);
    jbuf_knum(out, "tsc_hz", hz);
    jbuf_kstr(out, "tsc_hz_source", hz_cpuid > 0 ? ARCH_TICKS_HZ_SOURCE : "measured vs CLOCK_MONOTONIC_RAW");
    jbuf_knum(out, "tsc_hz_measured", hz_meas);
    if (base_mhz)
        jbuf_kuint(out, "cpuid_base_mhz", base_mhz);
    pause_mariadb(out, ticks);
    jbuf_kstr(out, "note", "cycles are TSC ticks (nominal frequency), as MariaDB and MySQL measure them");
    jbuf_close(out, '}');
    return 0;
}
