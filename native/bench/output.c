/*
 * The result JSON: per phase its cache facts and device counters, per group
 * its totals, latency quantiles, per-second series and per-thread timing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void write_latency(jw *w, const hist *h)
{
    jw_obj(w, "latency_ns");
    jw_uint(w, "count", h->count);
    if (h->count) {
        jw_uint(w, "min", h->min);
        jw_num(w, "mean", h->sum / (double)h->count);
        jw_uint(w, "max", h->max);
    } else {
        jw_null(w, "min");
        jw_null(w, "mean");
        jw_null(w, "max");
    }
    static const struct {
        const char *k;
        double q;
    } qs[] = {{"p1", .01}, {"p5", .05}, {"p10", .10}, {"p25", .25}, {"p50", .50}, {"p75", .75}, {"p90", .90},
              {"p95", .95}, {"p99", .99}, {"p99.9", .999}, {"p99.99", .9999}};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        jw_num(w, qs[i].k, hist_quantile(h, qs[i].q));
    jw_end_obj(w);
}

static void write_group(jw *w, group *g)
{
    hist *h = malloc(sizeof *h);
    hist_init(h);
    uint64_t bytes = 0, ops = 0, syncs = 0, sync_ns = 0, tmin = UINT64_MAX, tmax = 0;
    size_t ser_len = 0;
    int direct_used = 0, direct_refused = 0;
    double cpu = 0;
    for (int t = 0; t < g->threads; t++) {
        worker *x = &g->w[t];
        hist_merge(h, x->h);
        bytes += x->bytes;
        ops += x->ops;
        syncs += x->syncs;
        sync_ns += x->sync_ns;
        cpu += x->cpu_s;
        if (x->t_start < tmin)
            tmin = x->t_start;
        if (x->t_end > tmax)
            tmax = x->t_end;
        if (x->ser_len > ser_len)
            ser_len = x->ser_len;
        direct_used |= x->direct_used;
        direct_refused |= x->direct_refused;
    }
    double wall = tmax > tmin ? (double)(tmax - tmin) * 1e-9 : 0;
    jw_obj(w, NULL);
    jw_str(w, "op", OP_NAMES[g->op]);
    jw_str(w, "engine", ENGINE_NAMES[g->engine]);
    if (g->dir >= 0)
        jw_int(w, "dir", g->dir);
    else
        jw_null(w, "dir");
    jw_int(w, "threads", g->threads);
    jw_uint(w, "iodepth", g->iodepth);
    jw_uint(w, "bs", g->bs);
    jw_str(w, "content", needs_pool(g) ? CONTENT_NAMES[g->content] : NULL);
    jw_str(w, "sync", SYNC_NAMES[g->sync]);
    jw_bool(w, "direct_requested", g->direct);
    jw_bool(w, "direct_used", direct_used && !direct_refused);
    jw_bool(w, "direct_refused", direct_refused);
    jw_uint(w, "bytes", bytes);
    jw_uint(w, "ops", ops);
    jw_num(w, "wall_s", wall);
    jw_num(w, "throughput_Bps", wall > 0 ? (double)bytes / wall : NAN);
    jw_num(w, "iops", wall > 0 ? (double)ops / wall : NAN);
    jw_num(w, "cpu_s", cpu);
    jw_uint(w, "syncs", syncs);
    jw_num(w, "sync_s", (double)sync_ns * 1e-9);
    jw_uint(w, "dirs_made", g->dirs_made);
    jw_uint(w, "dirs_removed", g->dirs_removed);
    write_latency(w, h);
    jw_arr(w, "series_bytes");
    for (size_t s = 0; s < ser_len; s++) {
        uint64_t v = 0;
        for (int t = 0; t < g->threads; t++)
            if (s < g->w[t].ser_len)
                v += g->w[t].ser_bytes[s];
        jw_uint(w, NULL, v);
    }
    jw_end_arr(w);
    jw_arr(w, "series_ops");
    for (size_t s = 0; s < ser_len; s++) {
        uint64_t v = 0;
        for (int t = 0; t < g->threads; t++)
            if (s < g->w[t].ser_len)
                v += g->w[t].ser_ops[s];
        jw_uint(w, NULL, v);
    }
    jw_end_arr(w);
    jw_arr(w, "per_thread");
    for (int t = 0; t < g->threads; t++) {
        worker *x = &g->w[t];
        jw_obj(w, NULL);
        jw_int(w, "thread", t);
        jw_uint(w, "bytes", x->bytes);
        jw_uint(w, "ops", x->ops);
        jw_num(w, "start_s", x->t_start * 1e-9);
        jw_num(w, "first_done_s", x->any_op ? x->t_first * 1e-9 : NAN);
        jw_num(w, "last_done_s", x->any_op ? x->t_last * 1e-9 : NAN);
        jw_num(w, "end_s", x->t_end * 1e-9);
        jw_num(w, "cpu_s", x->cpu_s);
        jw_end_obj(w);
    }
    jw_end_arr(w);
    jw_end_obj(w);
    free(h);
}

void write_phase(jw *w, phase *ph)
{
    jw_obj(w, NULL);
    jw_str(w, "name", ph->name);
    jw_bool(w, "report", ph->report);
    jw_num(w, "wall_s", ph->t_end > ph->t0 ? (ph->t_end - ph->t0) * 1e-9 : 0);
    if (ph->start_at > 0) /* how late this process opened its gate: its timeline is start_at + start_lag_s + t */
        jw_num(w, "start_lag_s", ph->t0_unix - ph->start_at);
    else
        jw_null(w, "start_lag_s");
    if (ph->stonewall_s > 0)
        jw_num(w, "stonewall_s", ph->stonewall_s);
    else
        jw_null(w, "stonewall_s");
    jw_num(w, "cpu_user_s", ph->cpu_user);
    jw_num(w, "cpu_sys_s", ph->cpu_sys);
    jw_obj(w, "cache");
    jw_bool(w, "evict_requested", ph->evict_before);
    jw_bool(w, "evicted", ph->evicted);
    jw_uint(w, "evicted_files", ph->evicted_files);
    jw_bool(w, "drop_requested", ph->evict_before && g_ctx->drop_caches);
    jw_bool(w, "dropped", ph->dropped);
    jw_str(w, "drop_error", ph->drop_errno ? strerror(ph->drop_errno) : NULL);
    if (ph->residency_known) {
        jw_uint(w, "checked_bytes", ph->checked_bytes);
        jw_uint(w, "resident_bytes", ph->resident_bytes);
        jw_num(w, "resident_fraction",
               ph->checked_bytes ? (double)ph->resident_bytes / (double)ph->checked_bytes : 0.0);
    } else {
        jw_null(w, "checked_bytes");
        jw_null(w, "resident_bytes");
        jw_null(w, "resident_fraction");
    }
    jw_end_obj(w);
    jw_arr(w, "devices");
    for (int d = 0; d < g_ctx->ndirs; d++) {
        if (!ph->devstat_ok[d]) {
            jw_null(w, NULL);
            continue;
        }
        const devstat *a = &ph->dev0[d], *b = &ph->dev1[d];
        jw_obj(w, NULL);
        jw_uint(w, "read_bytes", (b->read_sectors - a->read_sectors) * 512u);
        jw_uint(w, "write_bytes", (b->write_sectors - a->write_sectors) * 512u);
        jw_uint(w, "read_ios", b->read_ios - a->read_ios);
        jw_uint(w, "write_ios", b->write_ios - a->write_ios);
        jw_end_obj(w);
    }
    jw_end_arr(w);
    jw_arr(w, "groups");
    for (size_t i = 0; i < ph->ngroups; i++)
        if (ph->groups[i].w)
            write_group(w, &ph->groups[i]);
    jw_end_arr(w);
    jw_end_obj(w);
}

void write_error_obj(jw *w, const char *phase_name, const char *op, const char *path, int err,
                            const char *message)
{
    jw_obj(w, "error");
    jw_str(w, "phase", phase_name);
    jw_str(w, "op", op);
    jw_str(w, "path", path);
    if (err) {
        jw_int(w, "errno", err);
        jw_str(w, "strerror", strerror(err));
    } else {
        jw_null(w, "errno");
        jw_null(w, "strerror");
    }
    jw_str(w, "message", message);
    if (phase_name && g_err_dir >= 0)
        jw_int(w, "dir", g_err_dir);
    else
        jw_null(w, "dir");
    jw_end_obj(w);
}

void write_head(jw *w)
{
    jw_str(w, "tag", "iolens-bench-engine");
    jw_arr(w, "schema_version");
    jw_int(w, NULL, BENCH_RESULT_MAJOR);
    jw_int(w, NULL, BENCH_RESULT_MINOR);
    jw_end_arr(w);
    jw_str(w, "engine_version", BENCH_ENGINE_VERSION);
}

void bench_write_error(FILE *out, const char *message)
{
    jw w;
    jw_init(&w, out);
    jw_obj(&w, NULL);
    write_head(&w);
    jw_arr(&w, "phases");
    jw_end_arr(&w);
    jw_str(&w, "status", "error");
    write_error_obj(&w, NULL, NULL, NULL, 0, message);
    jw_end_obj(&w);
    fputc('\n', out);
    fflush(out);
}
