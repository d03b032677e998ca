/*
 * What the threads of a running phase share (the stop flags, the phase's clock, the job), and what a worker
 * records besides its ops: its first failure, each new second of its per-second series, its syncs.  The names of the
 * files a group works on are made here too, for the loops, the set-up and the eviction alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

volatile sig_atomic_t bench_stop_signal = 0;
volatile int g_abort = 0;
job_ctx *g_ctx;
int g_err_dir = -1;
uint64_t g_phase_t0;
uint64_t g_stonewall;

void fail(worker *w, int err, const char *what, const char *path)
{
    if (!w->err) {
        w->err = err;
        w->errwhat = what;
        snprintf(w->errpath, sizeof w->errpath, "%s", path ? path : "");
    }
    g_abort = 1;
}

/* Slow path: a new second of the per-second series (grows the arrays). */
void series_add(worker *w, uint64_t t_rel, uint64_t bytes)
{
    size_t sec = (size_t)(t_rel / 1000000000ull);
    if (sec >= w->ser_cap) {
        size_t cap = w->ser_cap ? w->ser_cap : 16;
        while (cap <= sec)
            cap *= 2;
        uint64_t *b = realloc(w->ser_bytes, cap * sizeof *b);
        if (b)
            w->ser_bytes = b;
        uint64_t *o = b ? realloc(w->ser_ops, cap * sizeof *o) : NULL;
        if (o)
            w->ser_ops = o;
        if (!b || !o)
            return; /* out of memory: the series stops growing, the run goes on */
        memset(w->ser_bytes + w->ser_cap, 0, (cap - w->ser_cap) * sizeof *b);
        memset(w->ser_ops + w->ser_cap, 0, (cap - w->ser_cap) * sizeof *o);
        w->ser_cap = cap;
    }
    if (sec + 1 > w->ser_len)
        w->ser_len = sec + 1;
    w->ser_bytes[sec] += bytes;
    w->ser_ops[sec]++;
    w->ser_cur = sec;
    w->ser_lo = (uint64_t)sec * 1000000000ull;
    w->ser_hi = w->ser_lo + 1000000000ull;
}

void seq_name(const group *g, int tid, char *out, size_t n)
{
    if (one_file(g))
        snprintf(out, n, "%s", g->file);
    else
        snprintf(out, n, "%s.%d", g->file, tid);
}

void small_name(uint64_t i, char *out, size_t n)
{
    snprintf(out, n, "f%08" PRIu64, i);
}

int sync_file(worker *w, int fd)
{
    group *g = w->g;
    uint64_t s0 = now_ns();
    if (g->eng->sync(g, fd)) {
        fail(w, errno, SYNC_NAMES[g->sync], g->file);
        return -1;
    }
    w->sync_ns += now_ns() - s0;
    w->syncs++;
    return 0;
}
