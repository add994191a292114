/* main.c - pmuprof-offcpu: load the off-CPU BPF program for some pids, wait, write the summed stacks.
 *
 * usage: pmuprof-offcpu --pid PID [--pid PID]... --duration S --out FILE
 *                       [--threads N] [--entries N] [--stacks N] [--min-block-us US] [--eager]
 *                       [--start-on-usr1]
 * --min-block-us: blocks shorter than this are summed per thread and state without stacks (lazy mode,
 * default 1000; 0 keeps every stack). --eager: stacks at every switch-out, as on kernels without the
 * sched_exit_tp tracepoint (which make it the mode used). --start-on-usr1: attached, count nothing until
 * SIGUSR1 (sent when perf starts recording), so both windows start together; blocks that began before
 * count from then.
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
            "--out FILE [--threads N] [--entries N] [--stacks N] [--min-block-us US] [--eager]\n",
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
            {"start-on-usr1", no_argument, 0, 'U'},      {0, 0, 0, 0}};
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
 * scanned chain early, never add a wrong one). */
static unsigned read_code(const struct offcpu_opts *o, struct offcpu_range *out)
{
    char path[64], line[512], perms[8];
    unsigned long long lo, hi;
    unsigned i, n = 0;
    FILE *f;

    for (i = 0; i < o->npids; i++) {
        snprintf(path, sizeof(path), "/proc/%u/maps", o->pids[i]);
        f = fopen(path, "r");
        while (f && fgets(line, sizeof(line), f) && n < OFFCPU_MAX_CODE)
            if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && perms[2] == 'x')
                out[n++] = (struct offcpu_range){lo, hi};
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
    if (bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "starts"), o->threads) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "waits"), o->entries) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "stacks"), o->stacks) ||
        bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "ustacks"), o->stacks))
        return -EINVAL;
    return 0;
}

static int any_alive(const struct offcpu_opts *o)
{
    unsigned i;

    for (i = 0; i < o->npids; i++)
        if (kill((pid_t)o->pids[i], 0) == 0 || errno == EPERM)
            return 1;
    return 0;
}

/* --start-on-usr1: wait (at most the duration) for SIGUSR1; a stop signal or the targets' exit first
 * is returned (the window is then empty), else NULL. */
static const char *wait_for_start(const struct offcpu_opts *o)
{
    sigset_t set;
    struct timespec tick = {0, 200 * 1000 * 1000};
    __u64 since = now_ns();
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
        if ((double)(now_ns() - since) / 1e9 >= o->duration)
            return "duration";
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
    struct bpf_link *link, *link_in = NULL;
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
    rc = offcpu_dump(obj, &o, t0, now_ns(), why);
    bpf_object__close(obj);
    if (rc)
        return offcpu_fail("write", rc);
    fprintf(stderr, "pmuprof-offcpu: stopped by %s\n", why);
    return 0;
}
