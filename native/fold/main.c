/* pmuprof-fold: perf script text on stdin -> folded stacks on stdout (+ leaves.tsv, meta JSON). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fold.h"

static const char USAGE[] =
        "usage: pmuprof-fold [--pid P ...] [--comm C ...] [--name PID=LABEL ...] [--per-thread] [--raw-unknown]\n"
        "                    [--leaves FILE] [--meta FILE] [--stacks-bin FILE] [--samples FILE] [--truncated]\n"
        "                    < perf-script-text > stacks.folded\n"
        "       pmuprof-fold --folded --stacks-bin FILE < stacks.folded\n"
        "Folds perf script text (pmuprof's -F comm,pid,tid,ip,sym,symoff,dso or perf's default format,\n"
        "with call chains) exactly as pmuprof.model.perfscript.Folder does. Counts are samples.\n"
        "A last line without a newline means the text was cut: its sample is dropped (--truncated forces it).\n"
        "--stacks-bin writes the stacks as arrays to FILE instead of the text on stdout, then the sample table\n"
        "(samples per stack, thread id and second of the time field); --samples writes that table as text\n"
        "(samples.tsv's format). --folded reads folded stacks instead of perf script text (exit 3 and\n"
        "'line N: ...' on a line that is not one).\n";

typedef struct {
    fold_opts_t o;
    const char *leaves, *meta, *stacks_bin, *samples;
    int truncated, folded;
} args_t;

static int args_parse(int argc, char **argv, args_t *a)
{
    a->o.pids = calloc((size_t)argc, sizeof(char *));
    a->o.comms = calloc((size_t)argc, sizeof(char *));
    a->o.names = calloc((size_t)argc, sizeof(char *));
    if (!a->o.pids || !a->o.comms || !a->o.names)
        return -ENOMEM;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(opt, "--per-thread"))
            a->o.per_thread = 1;
        else if (!strcmp(opt, "--raw-unknown"))
            a->o.raw_unknown = 1;
        else if (!strcmp(opt, "--truncated"))
            a->truncated = 1;
        else if (!strcmp(opt, "--folded"))
            a->folded = 1;
        else if (!val)
            return -EINVAL;
        else if (!strcmp(opt, "--pid"))
            a->o.pids[a->o.npids++] = argv[++i];
        else if (!strcmp(opt, "--comm"))
            a->o.comms[a->o.ncomms++] = argv[++i];
        else if (!strcmp(opt, "--name"))
            a->o.names[a->o.nnames++] = argv[++i];
        else if (!strcmp(opt, "--leaves"))
            a->leaves = argv[++i];
        else if (!strcmp(opt, "--meta"))
            a->meta = argv[++i];
        else if (!strcmp(opt, "--stacks-bin"))
            a->stacks_bin = argv[++i];
        else if (!strcmp(opt, "--samples"))
            a->samples = argv[++i];
        else
            return -EINVAL;
    }
    return a->folded && !a->stacks_bin ? -EINVAL : 0;
}

/* Feed stdin line by line ('\n' only, as Python's binary line iteration); returns 1 when the
 * last line had no newline (the text was cut), 0, or a negative errno. */
static int feed_stdin(folder_t *f)
{
    size_t cap = 1 << 22, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    for (;;) {
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(0, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r == 0) {
            if (len)
                rc = folder_feed(f, buf, len) ? -ENOMEM : 1;
            break;
        }
        len += (size_t)r;
        char *p = buf, *end = buf + len, *nl;
        while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
            if (folder_feed(f, p, (size_t)(nl - p))) {
                free(buf);
                return -ENOMEM;
            }
            p = nl + 1;
        }
        len = (size_t)(end - p);
        memmove(buf, p, len);
    }
    free(buf);
    return rc;
}

static int write_file(const char *path, folder_t *f, int (*writer)(folder_t *, FILE *))
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -errno;
    int rc = writer(f, out);
    if (fclose(out) && !rc)
        rc = -EIO;
    return rc;
}

static int folded_main(const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "pmuprof-fold: %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint64_t line;
    const char *why = "";
    int rc = folded_to_bin(stdin, out, &line, &why);
    if (fclose(out) && !rc)
        rc = -EIO;
    if (rc == 3) {
        fprintf(stderr, "pmuprof-fold: line %llu: %s\n", (unsigned long long)line, why);
        return 3;
    }
    if (rc) {
        fprintf(stderr, "pmuprof-fold: %s\n", strerror(-rc));
        return 1;
    }
    return 0;
}

static int fold_main(args_t *a)
{
    int err = 0, rc;
    folder_t *f = folder_new(&a->o, &err);
    if (!f) {
        fprintf(stderr, "pmuprof-fold: %s\n", err == -EINVAL ? "bad --pid or --name value" : strerror(-err));
        return 2;
    }
    (void)fcntl(0, F_SETPIPE_SZ, 1 << 20); /* fewer wake-ups when stdin is a pipe; harmless otherwise */
    rc = feed_stdin(f);
    if (rc < 0) {
        fprintf(stderr, "pmuprof-fold: reading stdin: %s\n", strerror(-rc));
        folder_free(f);
        return 1;
    }
    if (folder_finish(f, rc == 1 || a->truncated)) {
        fputs("pmuprof-fold: out of memory\n", stderr);
        folder_free(f);
        return 1;
    }
    rc = a->stacks_bin ? write_file(a->stacks_bin, f, folder_write_stacks_bin) : folder_write_stacks(f, stdout);
    if (!rc && a->leaves)
        rc = write_file(a->leaves, f, folder_write_leaves);
    if (!rc && a->meta)
        rc = write_file(a->meta, f, folder_write_meta);
    if (!rc && a->samples)
        rc = write_file(a->samples, f, folder_write_samples);
    if (!rc && fflush(stdout))
        rc = -EIO;
    folder_free(f);
    if (rc) {
        fprintf(stderr, "pmuprof-fold: writing output: %s\n", strerror(-rc));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    args_t a = {0};
    int rc = args_parse(argc, argv, &a);
    if (rc)
        fputs(USAGE, stderr);
    rc = rc ? 2 : a.folded ? folded_main(a.stacks_bin) : fold_main(&a);
    free(a.o.pids); /* every path frees what args_parse took: a sanitizer build reports leaks at exit */
    free(a.o.comms);
    free(a.o.names);
    return rc;
}
