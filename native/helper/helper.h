/* helper.h - the subcommands of pmuprof-helper; each fills a JSON buffer. */
#ifndef PMUPROF_HELPER_H
#define PMUPROF_HELPER_H

#include <stdio.h>
#include "json.h"

/* Each returns 0 on success, or a negative errno (the JSON then holds "error"). */
int pmu_describe(struct jbuf *out);
int events_encode(struct jbuf *out, char **names, int n);
int pause_calibrate(struct jbuf *out, int trials);
/* exact: samples carry PEBS eventing IPs; hot_only: list only sampled instructions and their predecessors. */
int skid_correct_mode(struct jbuf *out, const char *binary, const char *debug, FILE *in, int exact, int hot_only);
/* offsets: input lines are file offsets, not vaddrs. */
int funcs_lookup(struct jbuf *out, const char *binary, const char *debug, FILE *in, int offsets);

/* Feature flags, reported by "features" and by every command. */
void features_describe(struct jbuf *out);

#endif
