/* The engine's job runner: parse a job tree, run its phases, write the result JSON. */
#ifndef IOLENS_BENCH_ENGINE_H
#define IOLENS_BENCH_ENGINE_H

#include <signal.h>
#include <stdio.h>

#include "json.h"

extern volatile sig_atomic_t bench_stop_signal;

/* Runs the job and writes the result to out.  Returns the exit status:
 * 0 ok, 1 a phase failed (result says why), 2 bad job, 130 interrupted. */
int bench_run(const jval *job, FILE *out);

/* Result of a job that could not be parsed, in the same shape. */
void bench_write_error(FILE *out, const char *message);

#endif
