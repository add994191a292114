/* pmuprof-perfdata --symbolize (symbolize.c): name file offsets as the reader names frames. */
#ifndef PMUPROF_PD_SYMBOLIZE_H
#define PMUPROF_PD_SYMBOLIZE_H

#include <stdio.h>

/* Queries from in, answers to out (format in symbolize.c). 0, or a negative errno. */
int symbolize_run(FILE *in, FILE *out);

#endif
