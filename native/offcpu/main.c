/* main.c - pmuprof-offcpu: load the off-CPU BPF program for some pids, wait, write the summed stacks.
 *
 * usage: pmuprof-offcpu --pid PID [--pid PID]... --duration S --out FILE
 *                       [--threads N] [--entries N] [--stacks N] [--min-block-us US] [--eager]
 *                       [--start-on-usr1] [--sample-hz HZ] [--no-wakeup]
 * --min-block-us: blocks shorter than this are summed per thread and state without stacks (lazy mode,
 * default 1000; 0 keeps every stack). --eager: stacks at every switch-out, as on kernels without the
 * sched_exit_tp tracepoint (which make it the mode used). --start-on-usr1: attached, say "ready" on
 * stderr and count nothing until SIGUSR1 (sent when perf starts recording, however long perf takes), so
 * both windows start together; blocks that began before count from then. --sample-hz: also sample the targets on the CPU (a cpu-clock event per CPU, HZ a second)
 * and keep the user stacks of the ticks whose leaf is in a library, for the CFI recovery of the callers
 * perf's frame-pointer walk skips there (dump.c "sample" lines). --no-wakeup: leave out the sched_wakeup
 * program, so a block is not split into blocked and runnable after its wake-up (for measuring its cost; also
 * the fallback, with a note, when it cannot attach).
 * Root only (CAP_BPF + CAP_PERFMON). Never stops or traces the targets. Stops at the duration,
 * on SIGINT/SIGTERM/SIGHUP, or when every target has exited; then detaches and writes FILE
 * (format in dump.c). If this process is killed, the kernel detaches the program with its fds.
 */
#define _GNU_SOURCE
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "offcpu.h"
#include "offcpu_user.h"

extern const unsigned char offcpu_bpf_obj[];
extern const unsigned char offcpu_bpf_obj_end[];

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "pmuprof-offcpu: %s\nusage: pmuprof-offcpu --pid PID [--pid PID]... --duration S "
            "--out FILE [--threads N] [--entries N] [--stacks N] [--min-block-us US] [--eager] [--start-on-usr1] "
            "[--sample-hz HZ] [--no-wakeup]\n",
            why);
    return 2;
}

static long clamp(long v, long lo, long hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int parse_args(int argc, char **argv, struct offcpu_opts *o)
{
    static const struct option opts[] = {
            {"pid", required_argument, 0, 'p'},          {"duration", required_argument, 0, 'd'},
            {"out", required_argument, 0, 'o'},          {"threads", required_argument, 0, 't'},
            {"entries", required_argument, 0, 'e'},      {"stacks", required_argument, 0, 's'},
            {"min-block-us", required_argument, 0, 'm'}, {"eager", no_argument, 0, 'E'},
            {"start-on-usr1", no_argument, 0, 'U'},      {"sample-hz", required_argument, 0, 'H'},
            {"no-wakeup", no_argument, 0, 'W'},          {0, 0, 0, 0}};
    int c;

    o->threads = OFFCPU_DEFAULT_THREADS;
    o->entries = OFFCPU_DEFAULT_ENTRIES;
    o->stacks = OFFCPU_DEFAULT_STACKS;
    o->min_block_us = OFFCPU_DEFAULT_MIN_BLOCK_US;
    while ((c = getopt_long(argc, argv, "p:d:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (o->npids >= OFFCPU_MAX_TARGETS || atoi(optarg) <= 0)
                return -EINVAL;
            o->pids[o->npids++] = (unsigned)atoi(optarg);
            break;
        case 'd': o->duration = atof(optarg); break;
        case 'o': o->out = optarg; break;
        case 't': o->threads = clamp(atol(optarg), 64, 1 << 20); break;
        case 'e': o->entries = clamp(atol(optarg), 64, 1 << 20); break;
        case 's': o->stacks = clamp(atol(optarg), 64, 1 << 18); break;
        case 'm': o->min_block_us = clamp(atol(optarg), 0, 60L * 1000 * 1000); break;
        case 'E': o->eager = 1; break;
        case 'U': o->start_usr1 = 1; break;
        case 'H': o->sample_hz = clamp(atol(optarg), 1, 10000); break;
        case 'W': o->no_wakeup = 1; break;
        default: return -EINVAL;
        }
    }
    return o->npids && o->out && o->duration > 0 && o->duration <= 3600 ? 0 : -EINVAL;
}

static __u64 now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static int cmp_range(const void *a, const void *b)
{
    const struct offcpu_range *x = a, *y = b;

    return (x->start > y->start) - (x->start < y->start);
}

/* The targets' executable mappings, sorted (new ones mapped later are not known: their frames end a
 * scanned chain early, never add a wrong one); those of a file other than the process's executable are
 * marked fpless (the executable is the one built with frame pointers, as unwind.c assumes too). */
static unsigned read_code(const struct offcpu_opts *o, struct offcpu_range *out)
{
    char path[64], line[4352], perms[8], exe[4096];
    unsigned long long lo, hi;
    unsigned i, n = 0;
    ssize_t len;
    int at;
    FILE *f;

    for (i = 0; i < o->npids; i++) {
        snprintf(path, sizeof(path), "/proc/%u/exe", o->pids[i]);
        len = readlink(path, exe, sizeof(exe) - 1);
        exe[len > 0 ? len : 0] = '\0';
        snprintf(path, sizeof(path), "/proc/%u/maps", o->pids[i]);
        f = fopen(path, "r");
        while (f && fgets(line, sizeof(line), f) && n < OFFCPU_MAX_CODE) {
            line[strcspn(line, "\n")] = '\0';
            at = 0;
            if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi, perms, &at) == 3 && perms[2] == 'x')
                out[n++] = (struct offcpu_range){lo, hi, !exe[0] || strcmp(line + at, exe) != 0};
        }
        if (f)
            fclose(f);
    }
    qsort(out, n, sizeof(*out), cmp_range);
    return n;
}

static int load_code(struct bpf_object *obj, const struct offcpu_range *ranges, unsigned n)
{
    int fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "code"));
    __u32 i, which = OFFCPU_CLOCK_NCODE;
    __u64 count = n;

    for (i = 0; i < n; i++)
        if (bpf_map_update_elem(fd, &i, &ranges[i], BPF_ANY))
            return -errno;
    fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "clock"));
    return bpf_map_update_elem(fd, &which, &count, BPF_ANY) ? -errno : 0;
}

/* Whether the kernel has the tracepoint lazy mode needs (sched_exit_tp: 6.16+). */
static int have_switch_in_tp(void)
{
    struct btf *vmlinux = btf__load_vmlinux_btf();
    int found;

    if (!vmlinux)
        return 0;
    found = btf__find_by_name_kind(vmlinux, "btf_trace_sched_exit_tp", BTF_KIND_TYPEDEF) > 0;
    btf__free(vmlinux);
    return found;
}

static int configure(struct bpf_object *obj, const struct offcpu_opts *o)
{
    struct bpf_map *map, *rodata = NULL;
    struct offcpu_config cfg = {.ntargets = o->npids, .lazy = o->lazy, .min_block_ns = (__u64)o->min_block_us * 1000};
    const void *init;
    size_t size = 0;
    char *data;
    unsigned i;
    int rc;

    bpf_object__for_each_map(map, obj)
    {
        const char *name = bpf_map__name(map);
        size_t len = strlen(name);

        if (len >= 7 && !strcmp(name + len - 7, ".rodata"))
            rodata = map;
    }
    init = rodata ? bpf_map__initial_value(rodata, &size) : NULL;
    if (!init || size < sizeof(cfg))
        return -ENOENT;
    for (i = 0; i < o->npids; i++)
        cfg.targets[i] = o->pids[i];
    data = malloc(size); /* cfg is the only .rodata variable: it sits at offset 0 */
    if (!data)
        return -ENOMEM;
    memcpy(data, init, size);
    memcpy(data, &cfg, sizeof(cfg));
    rc = bpf_map__set_initial_value(rodata, data, size);
    free(data);
    if (rc)
        return rc;
    if (!o->lazy && bpf_program__set_autoload(bpf_object__find_program_by_name(obj, "on_switch_in"), false))
        return -EINVAL;
    if (!o->sample_hz && bpf_program__set_autoload(bpf_object__find_program_by_name(obj, "on_sample"), false))
        return -EINVAL;
    if (o->no_wakeup && bpf_program__set_autoload(bpf_object__find_program_by_name(obj, "on_wakeup"), false))
        return -EINVAL;
    if (bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "starts"), o->threads) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "waits"), o->entries) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "stacks"), o->stacks) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "ustacks"), o->stacks) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "samples"), o->sample_hz ? o->entries : 1) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "sustacks"), o->sample_hz ? o->stacks : 1))
        return -EINVAL;
    return 0;
}

struct sampler {
    struct bpf_link **links; /* one per CPU that has its event (NULL: an offline CPU) */
    int n;
};

/* --sample-hz: the on-CPU sampler on a cpu-clock event of every possible CPU that has one (an offline CPU
 * has none: ENODEV); all tasks, the program keeps the targets' ticks. 0, or a negative errno when not
 * one CPU could be sampled or one that exists could not (a partial sampler would bias its stacks). */
static int sampler_attach(struct bpf_object *obj, const struct offcpu_opts *o, struct sampler *s)
{
    struct perf_event_attr attr = {.type = PERF_TYPE_SOFTWARE,
                                   .size = sizeof(attr),
                                   .config = PERF_COUNT_SW_CPU_CLOCK,
                                   .freq = 1,
                                   .sample_freq = (__u64)o->sample_hz};
    struct bpf_program *prog = bpf_object__find_program_by_name(obj, "on_sample");
    int ncpu = libbpf_num_possible_cpus(), cpu, fd, attached = 0, err = -ENODEV;

    if (ncpu <= 0 || !prog)
        return -EINVAL;
    s->links = calloc((size_t)ncpu, sizeof(*s->links));
    if (!s->links)
        return -ENOMEM;
    s->n = ncpu;
    for (cpu = 0; cpu < ncpu; cpu++) {
        fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0 && errno == ENODEV) /* an offline CPU */
            continue;
        if (fd < 0)
            return -errno;
        s->links[cpu] = bpf_program__attach_perf_event(prog, fd); /* the link closes fd when destroyed */
        if (!s->links[cpu]) {
            err = -errno;
            close(fd);
            return err;
        }
        attached++;
    }
    return attached ? 0 : err;
}

static void sampler_detach(struct sampler *s)
{
    for (int i = 0; i < s->n; i++)
        bpf_link__destroy(s->links[i]);
    free(s->links);
    s->links = NULL;
    s->n = 0;
}

static int any_alive(const struct offcpu_opts *o)
{
    unsigned i;

    for (i = 0; i < o->npids; i++)
        if (kill((pid_t)o->pids[i], 0) == 0 || errno == EPERM)
            return 1;
    return 0;
}

/* --start-on-usr1: wait for SIGUSR1 (no clock: perf record -a can take long to start on a loaded host, and
 * pmuprof stops this process, or its death sends SIGINT, when perf never starts); a stop signal or the
 * targets' exit first is returned (the window is then empty), else NULL. */
static const char *wait_for_start(const struct offcpu_opts *o)
{
    sigset_t set;
    struct timespec tick = {0, 200 * 1000 * 1000};
    int sig;

    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    for (;;) {
        sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGUSR1)
            return NULL;
        if (sig > 0)
            return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
        if (!any_alive(o))
            return "target-exit";
    }
}

/* Wait for the duration, a stop signal, or the targets' exit; returns what stopped it. */
static const char *wait_for_stop(const struct offcpu_opts *o, __u64 t0)
{
    sigset_t set;
    struct timespec tick = {0, 200 * 1000 * 1000};
    int sig;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    for (;;) {
        sig = sigtimedwait(&set, NULL, &tick);
        if (sig > 0)
            return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
        if ((double)(now_ns() - t0) / 1e9 >= o->duration)
            return "duration";
        if (!any_alive(o))
            return "target-exit";
    }
}

int main(int argc, char **argv)
{
    static struct offcpu_range code[OFFCPU_MAX_CODE];
    struct offcpu_opts o = {0};
    unsigned ncode;
    __u32 zero = 0;
    struct bpf_object *obj;
    struct bpf_link *link, *link_in = NULL, *link_wake = NULL;
    struct sampler sampler = {0};
    const char *why;
    sigset_t set;
    __u64 t0;
    int rc;

    if (parse_args(argc, argv, &o))
        return usage("bad arguments");
    sigemptyset(&set); /* blocked before anything starts: a stop signal is never lost */
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    libbpf_set_print(libbpf_quiet);
    obj = bpf_object__open_mem(offcpu_bpf_obj, (size_t)(offcpu_bpf_obj_end - offcpu_bpf_obj), NULL);
    if (!obj)
        return offcpu_fail("open", -errno);
    ncode = read_code(&o, code);
    o.code = code;
    o.ncode = ncode;
    o.lazy = !o.eager && have_switch_in_tp();
    rc = configure(obj, &o);
    if (rc)
        return offcpu_fail("configure", rc);
    rc = bpf_object__load(obj);
    if (rc)
        return offcpu_fail("load", rc);
    rc = load_code(obj, code, ncode);
    if (rc)
        return offcpu_fail("code ranges", rc);
    link = bpf_program__attach(bpf_object__find_program_by_name(obj, "on_switch"));
    if (!link)
        return offcpu_fail("attach", -errno);
    if (o.lazy) { /* after sched_switch: a thread is never switched in here before it was seen leaving */
        link_in = bpf_program__attach(bpf_object__find_program_by_name(obj, "on_switch_in"));
        if (!link_in)
            return offcpu_fail("attach sched_exit_tp", -errno);
    }
    if (!o.no_wakeup) { /* optional: without it every block counts as blocked, as before */
        link_wake = bpf_program__attach(bpf_object__find_program_by_name(obj, "on_wakeup"));
        if (!link_wake) {
            snprintf(o.wakeup_off, sizeof(o.wakeup_off), "attach sched_wakeup: %s", strerror(errno));
            fprintf(stderr, "pmuprof-offcpu: wake-ups not traced (%s)\n", o.wakeup_off);
        }
    }
    if (o.sample_hz && (rc = sampler_attach(obj, &o, &sampler))) { /* optional: the waits are still traced */
        snprintf(o.sampler_off, sizeof(o.sampler_off), "perf_event_open or attach: %s", strerror(-rc));
        fprintf(stderr, "pmuprof-offcpu: on-CPU sampler off (%s)\n", o.sampler_off);
        sampler_detach(&sampler);
        o.sample_hz = 0;
    }
    if (o.start_usr1) /* what pmuprof waits for before it opens perf's window: this one can count it */
        fprintf(stderr, "pmuprof-offcpu: ready\n");
    why = o.start_usr1 ? wait_for_start(&o) : NULL;
    t0 = now_ns(); /* the window starts now: waits before it count from here */
    rc = bpf_map_update_elem(bpf_map__fd(bpf_object__find_map_by_name(obj, "clock")), &zero, &t0, BPF_ANY);
    if (rc)
        return offcpu_fail("clock", -errno);
    fprintf(stderr, "pmuprof-offcpu: attached to %u process(es), t0_ns=%llu, %s\n", o.npids, (unsigned long long)t0,
            o.lazy ? "lazy (stacks at switch-in)" : "eager (stacks at switch-out)");
    if (!why)
        why = wait_for_stop(&o, t0);
    bpf_link__destroy(link); /* detach first: the maps stop changing */
    bpf_link__destroy(link_in);
    bpf_link__destroy(link_wake);
    sampler_detach(&sampler);
    rc = offcpu_dump(obj, &o, t0, now_ns(), why);
    bpf_object__close(obj);
    if (rc)
        return offcpu_fail("write", rc);
    fprintf(stderr, "pmuprof-offcpu: stopped by %s\n", why);
    return 0;
}
