/* pmu.c - PMUs libpfm4 detects, hardware-counter probe, libpfm4 name -> perf syntax. */
#define _GNU_SOURCE
#include "helper.h"
#include "perfev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef HAVE_LIBPFM
#include <dlfcn.h>
#include <limits.h>
#include <perfmon/pfmlib_perf_event.h>
#endif

static void pmu_describe_hw(struct jbuf *out)
{
    struct stat st;
    int rc = perfev_probe_cycles();

    jbuf_key(out, "hardware_counters");
    jbuf_open(out, '{');
    jbuf_kbool(out, "cycles_open", rc == 0);
    jbuf_kstr(out, "error", rc ? strerror(-rc) : NULL);
    jbuf_kbool(out, "sysfs_cpu_pmu", stat("/sys/bus/event_source/devices/cpu", &st) == 0);
    jbuf_kbool(out, "sysfs_cpu_core_pmu", stat("/sys/bus/event_source/devices/cpu_core", &st) == 0);
    jbuf_kbool(out, "sysfs_ibs_op", stat("/sys/bus/event_source/devices/ibs_op", &st) == 0);
    jbuf_close(out, '}');
}

#ifdef HAVE_LIBPFM
static const char *pmu_type_name(pfm_pmu_type_t t)
{
    switch (t) {
    case PFM_PMU_TYPE_CORE: return "core";
    case PFM_PMU_TYPE_UNCORE: return "uncore";
    case PFM_PMU_TYPE_OS_GENERIC: return "os";
    default: return "other";
    }
}

/* The package version from the loaded library's file name (libpfm.so.4.13.0 -> 4.13.0). */
static void pfm_library_version(char *buf, size_t n)
{
    char real[PATH_MAX];
    const char *p;
    Dl_info info;

    buf[0] = '\0';
    if (!dladdr((void *)pfm_initialize, &info) || !info.dli_fname || !realpath(info.dli_fname, real))
        return;
    p = strstr(real, ".so.");
    if (p)
        snprintf(buf, n, "%s", p + 4);
}

static int pfm_start(struct jbuf *out)
{
    int rc = pfm_initialize();
    int v = pfm_get_version();
    char lib[64];

    pfm_library_version(lib, sizeof(lib));
    jbuf_key(out, "libpfm");
    jbuf_open(out, '{');
    jbuf_raw(out, "\"api_version\":\"%d.%d\"", PFM_MAJ_VERSION(v), PFM_MIN_VERSION(v));
    jbuf_kstr(out, "version", lib[0] ? lib : NULL);
    jbuf_kstr(out, "force_pmu", getenv("LIBPFM_FORCE_PMU"));
    jbuf_kstr(out, "error", rc == PFM_SUCCESS ? NULL : pfm_strerror(rc));
    jbuf_close(out, '}');
    return rc == PFM_SUCCESS ? 0 : -EIO;
}

int pmu_describe(struct jbuf *out)
{
    pfm_pmu_info_t info;
    const char *core = NULL;
    int rc, i;

    jbuf_open(out, '{');
    rc = pfm_start(out);
    jbuf_key(out, "pmus");
    jbuf_open(out, '[');
    pfm_for_all_pmus(i)
    {
        memset(&info, 0, sizeof(info));
        info.size = sizeof(info);
        if (rc || pfm_get_pmu_info(i, &info) != PFM_SUCCESS || !info.is_present)
            continue;
        if (!core && info.type == PFM_PMU_TYPE_CORE)
            core = info.name;
        jbuf_open(out, '{');
        jbuf_kstr(out, "name", info.name);
        jbuf_kstr(out, "desc", info.desc);
        jbuf_kstr(out, "type", pmu_type_name(info.type));
        jbuf_kint(out, "events", info.nevents);
        jbuf_kint(out, "generic_counters", info.num_cntrs);
        jbuf_kint(out, "fixed_counters", info.num_fixed_cntrs);
        jbuf_close(out, '}');
    }
    jbuf_close(out, ']');
    jbuf_kstr(out, "core_pmu", core);
    pmu_describe_hw(out);
    jbuf_close(out, '}');
    return rc;
}

/* perf modifiers: u/k from exclusions, p repeated precise_ip times. */
static void encode_modifiers(const struct perf_event_attr *a, char *mods, size_t n)
{
    size_t k = 0;
    unsigned p;

    if (a->exclude_kernel && !a->exclude_user && k + 1 < n)
        mods[k++] = 'u';
    if (a->exclude_user && !a->exclude_kernel && k + 1 < n)
        mods[k++] = 'k';
    for (p = 0; p < a->precise_ip && k + 1 < n; p++)
        mods[k++] = 'p';
    mods[k] = '\0';
}

/* The perf -e spelling, per pmu-facts 4.3. */
static void encode_perf_string(const struct perf_event_attr *a, char *s, size_t n)
{
    const char *generic = perfev_generic_name(a->type, a->config);
    char mods[16];

    encode_modifiers(a, mods, sizeof(mods));
    if (generic && (a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_SOFTWARE))
        snprintf(s, n, "%s%s%s", generic, mods[0] ? ":" : "", mods);
    else if (a->type == PERF_TYPE_RAW && a->config1 == 0)
        snprintf(s, n, "r%llx%s%s", (unsigned long long)a->config, mods[0] ? ":" : "", mods);
    else
        snprintf(s, n, "cpu/config=0x%llx,config1=0x%llx/%s", (unsigned long long)a->config,
                 (unsigned long long)a->config1, mods);
}

static int encode_one(struct jbuf *out, const char *name)
{
    struct perf_event_attr attr;
    pfm_perf_encode_arg_t arg;
    char *fstr = NULL;
    char perf[160];
    int rc;

    memset(&attr, 0, sizeof(attr));
    memset(&arg, 0, sizeof(arg));
    arg.attr = &attr;
    arg.fstr = &fstr;
    arg.size = sizeof(arg);
    rc = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    jbuf_open(out, '{');
    jbuf_kstr(out, "name", name);
    if (rc != PFM_SUCCESS) {
        jbuf_kstr(out, "error", pfm_strerror(rc));
        jbuf_close(out, '}');
        return -ENOENT;
    }
    encode_perf_string(&attr, perf, sizeof(perf));
    jbuf_kstr(out, "perf", perf);
    jbuf_kstr(out, "fstr", fstr);
    jbuf_kuint(out, "type", attr.type);
    jbuf_khex(out, "config", attr.config);
    jbuf_khex(out, "config1", attr.config1);
    jbuf_kuint(out, "precise_ip", attr.precise_ip);
    jbuf_kbool(out, "exclude_user", attr.exclude_user);
    jbuf_kbool(out, "exclude_kernel", attr.exclude_kernel);
    jbuf_close(out, '}');
    free(fstr);
    return 0;
}

int events_encode(struct jbuf *out, char **names, int n)
{
    int i, ok = 0, rc;

    jbuf_open(out, '{');
    rc = pfm_start(out);
    jbuf_key(out, "events");
    jbuf_open(out, '[');
    for (i = 0; i < n && !rc; i++)
        ok += encode_one(out, names[i]) == 0;
    jbuf_close(out, ']');
    jbuf_kint(out, "encoded", ok);
    jbuf_kint(out, "failed", n - ok);
    jbuf_close(out, '}');
    if (rc)
        return rc;
    return (ok == 0 && n > 0) ? -ENOENT : 0;
}

#else /* !HAVE_LIBPFM */

int pmu_describe(struct jbuf *out)
{
    jbuf_open(out, '{');
    jbuf_kstr(out, "error", "built without libpfm4");
    jbuf_key(out, "pmus");
    jbuf_open(out, '[');
    jbuf_close(out, ']');
    pmu_describe_hw(out);
    jbuf_close(out, '}');
    return -ENOSYS;
}

int events_encode(struct jbuf *out, char **names, int n)
{
    (void)names;
    (void)n;
    jbuf_open(out, '{');
    jbuf_kstr(out, "error", "built without libpfm4");
    jbuf_close(out, '}');
    return -ENOSYS;
}
#endif
