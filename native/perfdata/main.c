/* pmuprof-perfdata: a perf.data -> pmuprof-fold's outputs, without perf script. */
#define _GNU_SOURCE
#include <errno.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fold.h"
#include "lib/text.h"
#include "reader.h"
#include "symbolize.h"

static const char USAGE[] =
        "usage: pmuprof-perfdata [--pid P ...] [--comm C ...] [--name PID=LABEL ...] [--per-thread] [--raw-unknown]\n"
        "                        [--leaves FILE] [--meta FILE] [--stacks-bin FILE] [--samples FILE] [--time] "
        "[--inline]\n"
        "                        [--kallsyms FILE] [--process-names] [--callers FILE]\n"
        "                        perf.data > stacks.folded\n"
        "       pmuprof-perfdata --symbolize < 'PID<tab>HEXOFFSET<tab>PATH' lines (names, as perf prints them)\n"
        "Reads perf.data itself and writes what `perf script -F comm,pid,tid,ip,sym,symoff,dso --no-inline\n"
        "[--pid=P,...] | pmuprof-fold OPTIONS` writes, byte for byte; --meta adds the DSOs it resolved.\n"
        "--time: as perf script -F comm,pid,tid,time,ip,sym,symoff,dso (the sample table gets seconds).\n"
        "--script also writes that perf script text to stderr (for comparing with perf script).\n"
        "--inline: user frames of binaries with DWARF expand into their inline chains, as perf script --inline\n"
        "prints them (\"name+0xoff (inlined)\" lines before the frame they are inlined into), for the sample's\n"
        "own address and every return address (looked up at the call: address - 1).\n"
        "--kallsyms FILE: kernel symbols from FILE, as perf script --kallsyms (a kallsyms of the recording's boot).\n"
        "--process-names: a process is also known by its main thread's COMM and by the binaries it maps, which\n"
        "perf script does not print: --comm keeps a server whose threads are all renamed, and a process whose\n"
        "main thread has no sample is labelled with that COMM.\n"
        "--callers FILE: put back, after a user leaf in a library without frame pointers, the callers the\n"
        "frame-pointer walk skipped there, as pmuprof-offcpu's sampler recovered them (callers.h: a run\n"
        "directory's recovered-callers.tsv); perf script has no such option.\n"
        "Exit status: 0 done; 1 failure; 2 usage; 3 the file needs something only perf script does (one\n"
        "line on stderr says what: use perf script instead); 4 the file is corrupt or truncated; 5 its header\n"
        "is corrupt beyond what perf script copes with (it loops on it): do not try perf script.\n";

typedef struct {
    fold_opts_t o;
    const char *leaves, *meta, *input, *stacks_bin, *samples, *kallsyms, *callers;
    int script, time, inline_frames, process_names;
    int32_t *pids;
} args_t;

static int args_parse(int argc, char **argv, args_t *a)
{
    a->o.pids = calloc((size_t)argc, sizeof(char *));
    a->o.comms = calloc((size_t)argc, sizeof(char *));
    a->o.names = calloc((size_t)argc, sizeof(char *));
    a->pids = calloc((size_t)argc, sizeof *a->pids);
    if (!a->o.pids || !a->o.comms || !a->o.names || !a->pids)
        return -ENOMEM;
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (!strcmp(opt, "--per-thread"))
            a->o.per_thread = 1;
        else if (!strcmp(opt, "--raw-unknown"))
            a->o.raw_unknown = 1;
        else if (!strcmp(opt, "--script"))
            a->script = 1;
        else if (!strcmp(opt, "--time"))
            a->time = 1;
        else if (!strcmp(opt, "--inline"))
            a->inline_frames = 1;
        else if (!strcmp(opt, "--process-names"))
            a->process_names = 1;
        else if (opt[0] != '-' && !a->input)
            a->input = opt;
        else if (!val)
            return -EINVAL;
        else if (!strcmp(opt, "--pid")) {
            long p = strtol(val, &end, 10);
            if (*end || end == val || p < -1 || p > INT32_MAX)
                return -EINVAL;
            a->pids[a->o.npids] = (int32_t)p;
            a->o.pids[a->o.npids++] = argv[++i];
        } else if (!strcmp(opt, "--comm"))
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
        else if (!strcmp(opt, "--kallsyms"))
            a->kallsyms = argv[++i];
        else if (!strcmp(opt, "--callers"))
            a->callers = argv[++i];
        else
            return -EINVAL;
    }
    return a->input ? 0 : -EINVAL;
}

static int put_str(buf_t *b, const char *s)
{
    return s ? text_json(b, s, strlen(s)) : buf_append(b, "null", 4);
}

/* The DSOs symbols were looked for: where they came from and whether the build-id matched. */
static int meta_dsos(const reader_t *r, buf_t *b)
{
    int rc = buf_append(b, ", \"dsos\": [", 11), first = 1;
    for (size_t i = 0; !rc && i < r->m.dsos.n; i++) {
        const dso_t *d = r->m.dsos.v[i];
        char hex[41] = "";
        if (!d->loaded || d->ksym)
            continue;
        for (int k = 0; k < d->bid_size; k++)
            sprintf(hex + 2 * k, "%02x", d->bid[k]);
        const char *at = d->syms_path ? d->syms_path : d->runtime_path;
        rc = (!first && buf_append(b, ", ", 2)) || buf_append(b, "{\"path\": ", 9) || put_str(b, d->name) ||
                buf_append(b, ", \"build_id\": ", 14) || put_str(b, d->has_bid ? hex : NULL) ||
                buf_append(b, ", \"found_at\": ", 14) || put_str(b, d->load_ret > 0 ? at : NULL) ||
                buf_append(b, ", \"matched\": ", 13) ||
                buf_append(b, d->load_ret > 0 ? "true" : "false", d->load_ret > 0 ? 4 : 5) ||
                buf_append(b, ", \"symbols\": ", 13) || buf_put_u64(b, d->load_ret > 0 ? (uint64_t)d->load_ret : 0) ||
                buf_append(b, ", \"tree_lookups\": ", 18) || buf_put_u64(b, d->syms.tree_finds) || buf_putc(b, '}');
        first = 0;
    }
    return rc || buf_putc(b, ']');
}

/* Each process's executable: the file it mapped whose name is its comm (perf's comm is the file name, cut to 15
 * bytes), from its main thread's maps; a process with none is left out. Two servers of one name in a
 * system-wide recording are told apart by it (their version, their binary). */
static int meta_exes(const reader_t *r, buf_t *b)
{
    int rc = buf_append(b, ", \"exes\": {", 11), first = 1;
    for (size_t i = 0; !rc && i < r->m.nall; i++) {
        const thread_t *t = r->m.all[i];
        size_t n = 0;
        const char *comm = t->pid == t->tid && t->maps && t->comm_set ? machine_comm_str(&r->m, t, &n) : NULL;
        for (size_t k = 0; comm && n && k < t->maps->n; k++) {
            const dso_t *d = t->maps->v[k].dso;
            const char *base = d && d->name && d->name[0] == '/' ? strrchr(d->name, '/') + 1 : NULL;
            if (!base || strncmp(base, comm, n) || (n < 15 && base[n]))
                continue;
            rc = (!first && buf_append(b, ", ", 2)) || buf_putc(b, '"') || buf_put_u64(b, (uint64_t)t->pid) ||
                    buf_append(b, "\": ", 3) || put_str(b, d->name);
            first = 0;
            break;
        }
    }
    return rc || buf_putc(b, '}');
}

static int write_meta(const char *path, folder_t *f, const reader_t *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem || folder_write_meta(f, mem) || fclose(mem) || len < 2)
        return free(text), -EIO;
    buf_t b = {0};
    const pd_file_t *pf = r->file;
    int rc = buf_append(&b, text, len - 2) || meta_dsos(r, &b) || meta_exes(r, &b) ||
            buf_append(&b, ", \"perf_data\": {", 16) || buf_append(&b, "\"samples\": ", 11) ||
            buf_put_u64(&b, r->samples) || buf_append(&b, ", \"lost\": ", 10) || buf_put_u64(&b, r->lost) ||
            buf_append(&b, ", \"inline_addresses\": ", 22) || buf_put_u64(&b, r->inline_addrs) ||
            buf_append(&b, ", \"inline_frames\": ", 19) || buf_put_u64(&b, r->inlined) ||
            buf_append(&b, ", \"recovered_samples\": ", 23) || buf_put_u64(&b, r->recovered_samples) ||
            buf_append(&b, ", \"recovered_frames\": ", 22) || buf_put_u64(&b, r->recovered_frames) ||
            buf_append(&b, ", \"hostname\": ", 14) || put_str(&b, pf->hostname) ||
            buf_append(&b, ", \"osrelease\": ", 15) || put_str(&b, pf->osrelease) ||
            buf_append(&b, ", \"cmdline\": ", 13) || put_str(&b, pf->cmdline) || buf_append(&b, ", \"event\": ", 11) ||
            put_str(&b, pf->attrs[0].name) || buf_append(&b, "}}\n", 3);
    free(text);
    FILE *out = rc ? NULL : fopen(path, "w");
    if (out && (fwrite(b.p, 1, b.len, out) != b.len))
        rc = 1;
    if (!out || fclose(out))
        rc = 1;
    buf_free(&b);
    return rc ? -EIO : 0;
}

static int write_with(const char *path, folder_t *f, int (*writer)(folder_t *, FILE *))
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -errno;
    int rc = writer(f, out);
    return fclose(out) || rc ? -EIO : 0;
}

/* One line per file an input named that was not read, e.g. a perf map another user planted. */
static void warn_skipped(const reader_t *r)
{
    for (size_t i = 0; i < r->m.dsos.n; i++)
        if (r->m.dsos.v[i]->skipped)
            fprintf(stderr, "pmuprof-perfdata: warning: %s: %s, its symbols are left out\n", r->m.dsos.v[i]->name,
                    r->m.dsos.v[i]->skipped);
}

/* Each sampled process's own name for the folder: its main thread's COMM, and the binaries it maps
 * whose file name is a --comm (a server whose threads are all renamed is still found). Newest first. */
static int name_processes(const args_t *a, const machine_t *m, folder_t *f)
{
    for (size_t i = m->nall; i-- > 0;) {
        const thread_t *t = m->all[i];
        size_t n;
        const char *comm = machine_comm_str(m, t, &n);
        if (t->pid != t->tid || t->pid < 0)
            continue;
        if (t->comm_set && folder_process_name(f, (uint64_t)t->pid, comm, n, 1))
            return -ENOMEM;
        for (size_t j = 0; t->maps && j < t->maps->n; j++) {
            const dso_t *d = t->maps->v[j].dso;
            const char *base = d && d->name ? strrchr(d->name, '/') : NULL;
            for (size_t c = 0; base && c < a->o.ncomms; c++)
                if (!strcmp(base + 1, a->o.comms[c]) &&
                    folder_process_name(f, (uint64_t)t->pid, base + 1, strlen(base + 1), 0))
                    return -ENOMEM;
        }
    }
    return 0;
}

static int run(args_t *a, pd_file_t *pf, folder_t *f)
{
    reader_t r;
    char err[256];
    if (reader_init(&r, pf, f, a->pids, a->o.npids)) {
        fputs("pmuprof-perfdata: out of memory\n", stderr);
        return PD_EFAIL;
    }
    r.echo = a->script ? stderr : NULL;
    r.with_time = a->time;
    r.inline_frames = a->inline_frames;
    r.m.kallsyms = a->kallsyms;
    int rc = a->callers ? callers_load(&r.callers, a->callers) : 0;
    if (rc) { /* the stacks as the walk recorded them: nothing else depends on the table */
        fprintf(stderr, "pmuprof-perfdata: warning: %s: %s, no recovered callers\n", a->callers, strerror(-rc));
        callers_free(&r.callers);
    } else if (r.callers.bad_lines)
        fprintf(stderr, "pmuprof-perfdata: warning: %s: %llu line(s) not understood, left out\n", a->callers,
                (unsigned long long)r.callers.bad_lines);
    rc = reader_run(&r, err, sizeof err);
    warn_skipped(&r);
    if (rc) {
        fprintf(stderr, "pmuprof-perfdata: %s: %s\n", rc == PD_EUNSUPPORTED ? "unsupported" : "error", err);
    } else if ((a->process_names && name_processes(a, &r.m, f)) || folder_finish(f, 0)) {
        fputs("pmuprof-perfdata: out of memory\n", stderr);
        rc = PD_EFAIL;
    } else if ((a->stacks_bin ? write_with(a->stacks_bin, f, folder_write_stacks_bin)
                              : folder_write_stacks(f, stdout)) ||
               (a->leaves && write_with(a->leaves, f, folder_write_leaves)) ||
               (a->samples && write_with(a->samples, f, folder_write_samples)) ||
               (a->meta && write_meta(a->meta, f, &r)) || fflush(stdout)) {
        fprintf(stderr, "pmuprof-perfdata: writing output: %s\n", strerror(errno ? errno : EIO));
        rc = PD_EFAIL;
    }
    reader_free(&r);
    return rc;
}

int main(int argc, char **argv)
{
    args_t a = {0};
    pd_file_t pf;
    int err = 0;
    if (argc == 2 && !strcmp(argv[1], "--symbolize")) {
        elf_version(EV_CURRENT);
        return symbolize_run(stdin, stdout) ? PD_EFAIL : 0;
    }
    if (args_parse(argc, argv, &a)) {
        fputs(USAGE, stderr);
        return PD_EUSAGE;
    }
    elf_version(EV_CURRENT);
    folder_t *f = folder_new(&a.o, &err);
    if (!f) {
        fprintf(stderr, "pmuprof-perfdata: %s\n", err == -EINVAL ? "bad --pid or --name value" : strerror(-err));
        return PD_EUSAGE;
    }
    int rc = pd_file_open(&pf, a.input);
    if (rc)
        fprintf(stderr, "pmuprof-perfdata: %s: %s\n", rc == PD_EUNSUPPORTED ? "unsupported" : "error", pf.err);
    else
        rc = run(&a, &pf, f);
    pd_file_close(&pf);
    folder_free(f);
    free(a.o.pids);
    free(a.o.comms);
    free(a.o.names);
    free(a.pids);
    return rc;
}
