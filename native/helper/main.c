/* main.c - pmuprof-helper: parse the command line, run one subcommand, print its JSON. */
#include "helper.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERSION "0.1.0"

static const char usage_text[] =
        "usage: pmuprof-helper COMMAND [options]   (JSON on stdout)\n"
        "  features                         which optional libraries were built in\n"
        "  pmu                              libpfm4 PMUs, and whether hardware counters open\n"
        "  encode NAME...                   libpfm4 event names -> perf -e syntax\n"
        "  pause [--trials N]               PAUSE latency (TSC ticks, ns) and TSC frequency\n"
        "  skid --binary PATH [--debug FILE] [--exact] [--hot-only] < samples   skid-corrected histograms\n"
        "       samples: 'symbol<TAB>hexoffset<TAB>count' or '0xvaddr<TAB>count' per line\n"
        "  funcs --binary PATH [--debug FILE] [--offsets] < addresses   containing function of each address\n";

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "pmuprof-helper: %s\n", why);
    fputs(usage_text, stderr);
    return 2;
}

static int run_binary_cmd(struct jbuf *out, int argc, char **argv, int is_skid)
{
    static const struct option opts[] = {{"binary", required_argument, 0, 'b'}, {"exact", no_argument, 0, 'x'},
                                         {"hot-only", no_argument, 0, 'h'},     {"offsets", no_argument, 0, 'o'},
                                         {"debug", required_argument, 0, 'd'},  {0, 0, 0, 0}};
    const char *binary = NULL, *debug = NULL;
    int c, exact = 0, hot = 0, offsets = 0;

    while ((c = getopt_long(argc, argv, "b:", opts, NULL)) != -1) {
        switch (c) {
        case 'b': binary = optarg; break;
        case 'd': debug = optarg; break;
        case 'x': exact = 1; break;
        case 'h': hot = 1; break;
        case 'o': offsets = 1; break;
        default: return -EINVAL;
        }
    }
    if (!binary)
        return -EINVAL;
    if (is_skid)
        return skid_correct_mode(out, binary, debug, stdin, exact, hot);
    return funcs_lookup(out, binary, debug, stdin, offsets);
}

static int run_pause(struct jbuf *out, int argc, char **argv)
{
    static const struct option opts[] = {{"trials", required_argument, 0, 't'}, {0, 0, 0, 0}};
    int c, trials = 200;

    while ((c = getopt_long(argc, argv, "t:", opts, NULL)) != -1) {
        if (c != 't')
            return -EINVAL;
        trials = atoi(optarg);
    }
    return pause_calibrate(out, trials);
}

static int dispatch(struct jbuf *out, const char *cmd, int argc, char **argv)
{
    if (!strcmp(cmd, "features")) {
        jbuf_open(out, '{');
        jbuf_kstr(out, "version", VERSION);
        features_describe(out);
        jbuf_close(out, '}');
        return 0;
    }
    if (!strcmp(cmd, "pmu"))
        return pmu_describe(out);
    if (!strcmp(cmd, "encode"))
        return argc > 1 ? events_encode(out, argv + 1, argc - 1) : -EINVAL;
    if (!strcmp(cmd, "pause"))
        return run_pause(out, argc, argv);
    if (!strcmp(cmd, "skid"))
        return run_binary_cmd(out, argc, argv, 1);
    if (!strcmp(cmd, "funcs"))
        return run_binary_cmd(out, argc, argv, 0);
    return -EINVAL;
}

int main(int argc, char **argv)
{
    struct jbuf out;
    int rc;

    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
        return usage(argc < 2 ? "missing command" : NULL);
    if (!strcmp(argv[1], "--version")) {
        printf("pmuprof-helper %s\n", VERSION);
        return 0;
    }
    jbuf_init(&out);
    rc = dispatch(&out, argv[1], argc - 1, argv + 1);
    if (out.err) {
        fprintf(stderr, "pmuprof-helper: out of memory\n");
        jbuf_free(&out);
        return 1;
    }
    if (rc == -EINVAL && !out.len) {
        jbuf_free(&out);
        return usage("bad command or options");
    }
    if (out.len)
        printf("%s\n", out.data);
    jbuf_free(&out);
    return rc ? 1 : 0;
}
