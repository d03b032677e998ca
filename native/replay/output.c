/*
 * Output: the result JSON of a replay (and its per-op log, when the job asks for one), and `--describe`, the op
 * codes, classes and layouts of replay.h for the Python side.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"

/* Opens the JSON document: its tag and the schema version. */
static void open_doc(jw *w, const char *tag)
{
    jw_init(w, stdout);
    jw_obj(w, NULL);
    jw_str(w, "tag", tag);
    jw_arr(w, "schema_version");
    jw_int(w, NULL, RP_SCHEMA_MAJOR);
    jw_int(w, NULL, RP_SCHEMA_MINOR);
    jw_end_arr(w);
}

void describe(void)
{
    jw w;
    open_doc(&w, "iolens-replay-describe");
    jw_obj(&w, "ops");
    for (int i = 0; i < RP_NOPS; i++) {
        jw_obj(&w, OP_NAMES[i]);
        jw_int(&w, "code", i);
        jw_str(&w, "class", CLASS_NAMES[OP_CLASS[i]]);
        jw_str(&w, "doc", OP_DOCS[i]);
        jw_end_obj(&w);
    }
    jw_end_obj(&w);
    jw_arr(&w, "classes");
    for (int i = 0; i < RP_NCLASS; i++) jw_str(&w, NULL, CLASS_NAMES[i]);
    jw_end_arr(&w);
    jw_arr(&w, "contents");
    for (int i = 0; i < CONTENT__COUNT; i++) jw_str(&w, NULL, CONTENT_NAMES[i]);
    jw_end_arr(&w);
#define RP_FIELD(type, name) jw_str(&w, NULL, #name ":" #type);
    jw_arr(&w, "op_fields");
    RP_LAYOUT_OP(RP_FIELD)
    jw_end_arr(&w);
    jw_arr(&w, "log_fields");
    RP_LAYOUT_LOG(RP_FIELD)
    jw_end_arr(&w);
#undef RP_FIELD
    jw_int(&w, "op_size", (int64_t)sizeof(struct rp_op));
    jw_int(&w, "log_size", (int64_t)sizeof(struct rp_log));
    jw_int(&w, "stream_buffer", RP_STREAM_BUF);
    jw_int(&w, "pipe_buffer", RP_PIPE_BUF);
    jw_int(&w, "burn_loop", RP_BURN_LOOP);
    jw_end_obj(&w);
    fputc('\n', stdout);
}

int write_result(int status, const char *message, uint64_t wall, uint64_t layout_ns, uint64_t setup_ns,
                 const char *logpath)
{
    uint64_t cls[RP_NCLASS] = {0}, errors = 0, timeouts = 0, nops = 0;
    char first_error[160] = "";
    for (size_t i = 0; i < R.nthreads; i++) {
        for (int c = 0; c < RP_NCLASS; c++) cls[c] += R.threads[i].cls_ns[c];
        if (R.threads[i].errors && !errors)
            snprintf(first_error, sizeof first_error, "%s: %s", OP_NAMES[R.threads[i].first_op],
                     R.threads[i].first_errno ? strerror(R.threads[i].first_errno) : "failed");
        errors += R.threads[i].errors;
        timeouts += R.threads[i].dep_timeouts;
        nops += R.threads[i].ops;
    }
    if (R.log && !status) {
        FILE *lf = fopen(logpath, "wb");
        if (!lf || fwrite(R.log, sizeof *R.log, R.nops, lf) != R.nops) {
            status = 1;
            message = "cannot write the op log";
        }
        if (lf) fclose(lf);
    }
    jw w;
    open_doc(&w, "iolens-replay-result");
    jw_str(&w, "status", status == 0 ? "ok" : status == 130 ? "interrupted" : "error");
    jw_str(&w, "message", message);
    jw_uint(&w, "wall_ns", wall);
    jw_uint(&w, "layout_ns", layout_ns);
    jw_uint(&w, "setup_ns", setup_ns);
    jw_obj(&w, "class_ns");
    for (int c = 1; c < RP_NCLASS; c++) jw_uint(&w, CLASS_NAMES[c], cls[c]);
    jw_end_obj(&w);
    jw_uint(&w, "ops", nops);
    jw_uint(&w, "errors", errors);
    jw_str(&w, "first_error", first_error); /* 1.8: the first failed op of the first thread with one, and why */
    jw_uint(&w, "dependency_timeouts", timeouts);
    jw_uint(&w, "threads", R.nthreads);
    jw_uint(&w, "processes", R.nprocs);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) { /* the replayer's own: its threads' waits and wake-ups */
        jw_uint(&w, "voluntary_switches", (uint64_t)ru.ru_nvcsw);
        jw_uint(&w, "involuntary_switches", (uint64_t)ru.ru_nivcsw);
    }
    jw_arr(&w, "thread_times");
    for (size_t i = 0; i < R.nthreads; i++) {
        const struct rthread *t = &R.threads[i];
        jw_obj(&w, NULL);
        jw_uint(&w, "begin_ns", t->begin_ns);
        jw_uint(&w, "end_ns", t->end_ns);
        jw_uint(&w, "gap_ns", t->gap_ns);
        jw_uint(&w, "late_ns", t->late_ns);
        jw_uint(&w, "dep_ns", t->dep_ns);
        jw_uint(&w, "busy_ns", t->busy_ns);
        jw_uint(&w, "own_ns", t->own_ns);
        jw_end_obj(&w);
    }
    jw_end_arr(&w);
    /* 1.9: the burn blocks burnt as work and the CPU time they took: this replay's cost of a block (from the
     * burns timed on the CPU clock, BURN_CLOCK_MIN_NS) */
    uint64_t blocks = 0, block_ns = 0;
    for (size_t i = 0; i < R.nthreads; i++) {
        blocks += R.threads[i].clocked_blocks;
        block_ns += R.threads[i].clocked_cpu_ns;
    }
    double per_block = blocks ? (double)block_ns / (double)blocks : R.ns_per_block;
    jw_arr(&w, "thread_cpu_ns"); /* per thread: CPU time burnt for the on-CPU share of its gaps */
    for (size_t i = 0; i < R.nthreads; i++) { /* the burns not clocked at the clocked ones' cost per block */
        const struct rthread *t = &R.threads[i];
        jw_uint(&w, NULL, t->cpu_ns + (uint64_t)((double)(t->blocks - t->clocked_blocks) * per_block + 0.5));
    }
    jw_end_arr(&w);
    jw_uint(&w, "burn_blocks", blocks);
    jw_uint(&w, "burn_block_cpu_ns", block_ns);
    jw_end_obj(&w);
    fputc('\n', stdout);
    return status;
}
