/*
 * iolens-bench: run a benchmark job.
 *
 *   iolens-bench [JOB.json | -]     job on stdin by default; result JSON on stdout
 *   iolens-bench --describe         the job vocabulary and schema versions, as JSON
 *   iolens-bench --hist-selftest    read integers (ns) from stdin, print the histogram's quantiles
 *
 * Progress goes to stderr as lines "@progress {...}" when the job asks for it.
 * SIGINT/SIGTERM stop the run between operations; the result then says
 * "interrupted".  The engine also stops when its parent dies.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "bench.h"
#include "engine.h"
#include "hist.h"
#include "json.h"

static char *slurp(FILE *f)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
        if (n + 1 >= cap) {
            if (cap > (64u << 20)) {
                free(buf);
                return NULL;
            }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
    }
    buf[n] = 0;
    return buf;
}

static void describe(void)
{
    jw w;
    jw_init(&w, stdout);
    jw_obj(&w, NULL);
    jw_str(&w, "tag", "iolens-bench-describe");
    jw_str(&w, "engine_version", BENCH_ENGINE_VERSION);
    jw_arr(&w, "job_schema");
    jw_int(&w, NULL, BENCH_JOB_MAJOR);
    jw_int(&w, NULL, BENCH_JOB_MINOR);
    jw_end_arr(&w);
    jw_arr(&w, "result_schema");
    jw_int(&w, NULL, BENCH_RESULT_MAJOR);
    jw_int(&w, NULL, BENCH_RESULT_MINOR);
    jw_end_arr(&w);
    jw_obj(&w, "ops");
#define X(n, k, io, d)      \
    jw_obj(&w, #n);         \
    jw_str(&w, "kind", #k); \
    jw_str(&w, "io", #io);  \
    jw_str(&w, "doc", d);   \
    jw_end_obj(&w);
    BENCH_OPS(X)
#undef X
    jw_end_obj(&w);
    jw_obj(&w, "contents");
#define X(n, d) jw_str(&w, #n, d);
    BENCH_CONTENTS(X)
#undef X
    jw_end_obj(&w);
    jw_arr(&w, "syncs");
#define X(n) jw_str(&w, NULL, #n);
    BENCH_SYNCS(X)
#undef X
    jw_end_arr(&w);
    jw_arr(&w, "layouts");
#define X(n) jw_str(&w, NULL, #n);
    BENCH_LAYOUTS(X)
#undef X
    jw_end_arr(&w);
    jw_arr(&w, "engines");
#define X(n) jw_str(&w, NULL, #n);
    BENCH_ENGINES(X)
#undef X
    jw_end_arr(&w);
    jw_obj(&w, "histogram");
    jw_int(&w, "sub_bucket_bits", HIST_SUB_BITS);
    jw_num(&w, "max_relative_error", 1.0 / (double)(2u << HIST_SUB_BITS));
    jw_end_obj(&w);
    jw_end_obj(&w);
    fputc('\n', stdout);
}

static int hist_selftest(void)
{
    hist *h = malloc(sizeof *h);
    hist_init(h);
    uint64_t v;
    while (scanf("%" SCNu64, &v) == 1)
        hist_add(h, v);
    static const double qs[] = {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999};
    printf("{\"count\":%" PRIu64 ",\"quantiles\":{", h->count);
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        printf("%s\"%g\":%.6f", i ? "," : "", qs[i], hist_quantile(h, qs[i]));
    printf("}}\n");
    free(h);
    return 0;
}

static void on_signal(int sig)
{
    (void)sig;
    bench_stop_signal = 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--describe")) {
        describe();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--hist-selftest"))
        return hist_selftest();
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        puts("usage: iolens-bench [JOB.json | -] | --describe | --hist-selftest");
        return 0;
    }
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: blocking calls return EINTR and loops check the flag */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    FILE *in = stdin;
    if (argc > 1 && strcmp(argv[1], "-")) {
        in = fopen(argv[1], "r");
        if (!in) {
            char msg[600];
            snprintf(msg, sizeof msg, "cannot read job %s: %s", argv[1], strerror(errno));
            bench_write_error(stdout, msg);
            return 2;
        }
    }
    char *text = slurp(in);
    if (in != stdin)
        fclose(in);
    if (!text) {
        bench_write_error(stdout, "cannot read the job (too large or out of memory)");
        return 2;
    }
    char err[256];
    jval *job = json_parse(text, err, sizeof err);
    free(text);
    if (!job || job->type != J_OBJ) {
        char msg[400];
        snprintf(msg, sizeof msg, "the job is not a JSON object: %s", job ? "wrong type" : err);
        bench_write_error(stdout, msg);
        json_free(job);
        return 2;
    }
    int rc = bench_run(job, stdout);
    json_free(job);
    return rc;
}
