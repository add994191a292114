/* count.c - count events on every thread of a pid with perf_event_open (inherit on). */
#include "helper.h"
#include "perfev.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#define MAX_THREADS 4096

struct counter {
	const char *name;
	struct perf_event_attr attr;
	int fds[MAX_THREADS];
	int nfds;
	int error;  /* first open error (negative errno) */
	uint64_t value, enabled, running;
};

static int threads_list(int pid, int *tids, int max)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir)) && n < max) {
		if (d->d_name[0] >= '0' && d->d_name[0] <= '9')
			tids[n++] = atoi(d->d_name);
	}
	closedir(dir);
	return n;
}

static int counter_attr(struct counter *c)
{
	int rc = perfev_parse_generic(c->name, &c->attr);
#ifdef HAVE_LIBPFM
	pfm_perf_encode_arg_t arg;

	if (rc && pfm_initialize() == PFM_SUCCESS) {
		memset(&c->attr, 0, sizeof(c->attr));
		memset(&arg, 0, sizeof(arg));
		arg.attr = &c->attr;
		arg.size = sizeof(arg);
		rc = pfm_get_os_event_encoding(c->name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg)
			== PFM_SUCCESS ? 0 : -ENOENT;
	}
#endif
	if (rc)
		return -ENXIO; /* unknown name, distinct from an unsupported one */
	c->attr.size = sizeof(c->attr);
	c->attr.inherit = 1;
	c->attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return rc;
}

static void counter_open(struct counter *c, const int *tids, int ntids)
{
	int i;
	long fd;

	c->error = counter_attr(c);
	for (i = 0; i < ntids && !c->error; i++) {
		fd = perfev_open(&c->attr, tids[i], -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0)
			c->fds[c->nfds++] = (int)fd;
		else if (fd != -ESRCH) /* a thread that just exited is fine */
			c->error = (int)fd;
	}
	if (c->error) {
		for (i = 0; i < c->nfds; i++)
			close(c->fds[i]);
		c->nfds = 0;
	}
}

static void counter_read(struct counter *c)
{
	uint64_t v[3];
	int i;

	for (i = 0; i < c->nfds; i++) {
		if (read(c->fds[i], v, sizeof(v)) == (ssize_t)sizeof(v)) {
			c->value += v[0];
			c->enabled += v[1];
			c->running += v[2];
		}
		close(c->fds[i]);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Gone, or a zombie nobody has reaped yet. */
static int pid_gone(int pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] == '\0' || p[2] == 'Z' || p[2] == 'X';
}

/* Sleep up to seconds; return the time slept, stopping early if pid exits. */
static double wait_pid(int pid, double seconds, int *exited)
{
	double t0 = now_s(), left;
	struct timespec step;

	*exited = 0;
	while ((left = seconds - (now_s() - t0)) > 0) {
		if (pid_gone(pid)) {
			*exited = 1;
			break;
		}
		step.tv_sec = 0;
		step.tv_nsec = (long)((left < 0.05 ? left : 0.05) * 1e9);
		nanosleep(&step, NULL);
	}
	return now_s() - t0;
}

static const char *count_error_text(int err)
{
	if (err == -ENXIO)
		return "unknown event name (perf generic name, rHEX, or a libpfm4 name)";
	if (err == -ENOENT)
		return "not supported (no hardware PMU here)";
	if (err == -EOPNOTSUPP)
		return "not supported (no hardware PMU here)";
	if (err == -EACCES || err == -EPERM)
		return "permission denied (perf_event_paranoid / CAP_PERFMON)";
	return strerror(-err);
}

static void counter_emit(struct jbuf *out, const struct counter *c)
{
	jbuf_open(out, '{');
	jbuf_kstr(out, "event", c->name);
	jbuf_kbool(out, "supported", c->error == 0);
	jbuf_kstr(out, "error", c->error ? count_error_text(c->error) : NULL);
	if (!c->error) {
		jbuf_kuint(out, "value", c->value);
		jbuf_kuint(out, "time_enabled_ns", c->enabled);
		jbuf_kuint(out, "time_running_ns", c->running);
		jbuf_kuint(out, "scaled", c->running ? (uint64_t)((double)c->value * c->enabled / c->running) : 0);
		jbuf_knum(out, "running_ratio", c->enabled ? (double)c->running / c->enabled : 0.0);
	}
	jbuf_close(out, '}');
}

int counts_measure(struct jbuf *out, int pid, double seconds, char **events, int n)
{
	struct counter *cs = calloc((size_t)n, sizeof(*cs));
	int *tids = calloc(MAX_THREADS, sizeof(int));
	int ntids, i, exited = 0, ok = 0;
	double slept;

	if (!cs || !tids) {
		free(cs);
		free(tids);
		return -ENOMEM;
	}
	ntids = threads_list(pid, tids, MAX_THREADS);
	jbuf_open(out, '{');
	jbuf_kint(out, "pid", pid);
	if (ntids < 0) {
		jbuf_kstr(out, "error", "no such process");
		jbuf_close(out, '}');
		free(cs);
		free(tids);
		return ntids;
	}
	for (i = 0; i < n; i++) {
		cs[i].name = events[i];
		counter_open(&cs[i], tids, ntids);
		ok += cs[i].error == 0;
	}
	slept = ok ? wait_pid(pid, seconds, &exited) : 0.0;
	jbuf_kint(out, "threads", ntids);
	jbuf_knum(out, "duration_s", slept);
	jbuf_kbool(out, "partial", exited);
	jbuf_kstr(out, "note", exited ? "the process exited while counting; values cover the time it ran" : NULL);
	jbuf_key(out, "counters");
	jbuf_open(out, '[');
	for (i = 0; i < n; i++) {
		counter_read(&cs[i]);
		counter_emit(out, &cs[i]);
	}
	jbuf_close(out, ']');
	jbuf_close(out, '}');
	free(cs);
	free(tids);
	return ok ? 0 : -ENOENT;
}
