/*
 * Runs a job: phases of concurrent thread groups, each measured with
 * per-op latency histograms, per-second series and per-thread timing.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

static void progress_line(phase *ph, size_t index)
{
    uint64_t b = 0, o = 0;
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        for (int t = 0; g->w && t < g->threads; t++) {
            b += __atomic_load_n(&g->w[t].pub_bytes, __ATOMIC_RELAXED);
            o += __atomic_load_n(&g->w[t].pub_ops, __ATOMIC_RELAXED);
        }
    }
    fprintf(stderr, "@progress {\"phase\":%zu,\"elapsed_s\":%.3f,\"bytes\":%" PRIu64 ",\"ops\":%" PRIu64 "}\n",
            index, (now_ns() - g_phase_t0) * 1e-9, b, o);
    fflush(stderr);
}

static void free_phase(phase *ph)
{
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        if (g->w) {
            for (int t = 0; t < g->threads; t++) {
                free(g->w[t].h);
                free(g->w[t].ser_bytes);
                free(g->w[t].ser_ops);
                free(g->w[t].buf);
                free(g->w[t].fds);
            }
            free(g->w);
        }
        close_subdirs(g, 0);
        free(g->sizes);
    }
    free(ph->groups);
}

/* Runs one phase.  Returns 0, or -1 with the failure described in *err fields. */
static int run_phase(job_ctx *ctx, phase *ph, size_t index, const char **eop, char *epath, size_t epathlen,
                     int *eerr, char *emsg, size_t emsglen)
{
    int total = 0;
    /* set-up (untimed): pools, layouts, small-file directories, eviction */
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        g_err_dir = g->dir;
        if (g->op == OP_remove) {
            if (!g->eng->files)
                continue;
            for (size_t k = 0; g->paths && k < json_len(g->paths); k++) {
                const jval *p = json_at(g->paths, k);
                if (p->type == J_STR && remove_beneath(g->dirfd, p->str)) {
                    *eerr = errno;
                    *eop = "remove";
                    snprintf(epath, epathlen, "%s", p->str);
                    snprintf(emsg, emsglen, "cannot remove %s: %s", p->str, strerror(errno));
                    return -1;
                }
            }
            continue;
        }
        if (needs_pool(g) && get_pool(g, ctx->seed + i, emsg, emsglen)) {
            *eerr = ENOMEM;
            return -1;
        }
        if (g->prepare && g->eng->files) {
            uint64_t fsz = g->file_size ? g->file_size : g->size;
            int n = one_file(g) ? 1 : g->threads;
            for (int t = 0; t < n; t++) {
                char name[512];
                seq_name(g, t, name, sizeof name);
                uint64_t writers = g->writers ? g->writers : (uint64_t)g->threads;
                uint64_t want = one_file(g) && !g->file_size ? fsz * writers : fsz;
                int rc = prepare_file(g, name, want, emsg, emsglen);
                if (rc) {
                    *eerr = -rc;
                    *eop = "prepare";
                    snprintf(epath, epathlen, "%s", name);
                    return -1;
                }
            }
        }
        if (OP_KIND[g->op] == KIND_small) {
            int rc = open_subdirs(g, g->op == OP_create, emsg, emsglen);
            if (rc) {
                *eerr = -rc;
                *eop = OP_NAMES[g->op];
                snprintf(epath, epathlen, "%s", g->prefix);
                return -1;
            }
        }
        /* a multi-client phase (start_at) leaves creating the shared file to its caller: a late process must not
         * truncate what the others already wrote */
        if (g->op == OP_write && one_file(g) && g->eng->files && ph->start_at <= 0) {
            int fd = open_beneath(g->dirfd, g->file, O_WRONLY | O_CREAT | O_TRUNC, 0644, 1);
            if (fd < 0) {
                *eerr = errno;
                *eop = "create";
                snprintf(epath, epathlen, "%s", g->file);
                snprintf(emsg, emsglen, "cannot create %s: %s", g->file, strerror(errno));
                return -1;
            }
            close(fd);
        }
        total += g->threads;
    }
    if (ph->evict_before)
        evict_phase(ph, ctx);
    if (!total)
        return 0;

    ctx->ready = 0;
    ctx->go = 0;
    ctx->finished = 0;
    g_abort = 0;
    int started = 0;
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        if (g->op == OP_remove)
            continue;
        g->w = calloc((size_t)g->threads, sizeof(worker));
        for (int t = 0; t < g->threads; t++) {
            worker *x = &g->w[t];
            x->g = g;
            x->tid = t;
            x->h = malloc(sizeof(hist));
            hist_init(x->h);
            rng_seed(&x->rng, ctx->seed * 1000003ull + i * 1009ull + (uint64_t)t);
        }
    }
    g_phase_t0 = now_ns(); /* provisional, so early records are sane */
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        for (int t = 0; g->w && t < g->threads; t++) {
            if (pthread_create(&g->w[t].th, NULL, worker_main, &g->w[t]) == 0) {
                started++;
            } else {
                /* cannot start: the phase fails, the others stop */
                g->w[t].err = EAGAIN;
                g->w[t].errwhat = "start thread";
                g->w[t].th = 0;
                g_abort = 1;  /* the threads that did start stop at once */
            }
        }
    }
    struct rusage r0, r1;
    /* wait until every started thread has opened its files, then release them together */
    pthread_mutex_lock(&ctx->gate);
    while (ctx->ready < started)
        pthread_cond_wait(&ctx->cond, &ctx->gate);
    for (int d = 0; d < ctx->ndirs; d++)
        ph->devstat_ok[d] = 1;
    devstats_sample(ctx, ph->dev0, ph->devstat_ok);
    if (ph->start_at > 0) { /* a multi-client run: every process opens its gate at the same wall-clock time */
        struct timespec at = {(time_t)ph->start_at, (long)((ph->start_at - (double)(time_t)ph->start_at) * 1e9)};
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR && !stopping())
            ;
    }
    getrusage(RUSAGE_SELF, &r0);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    g_phase_t0 = now_ns();
    ph->t0 = g_phase_t0;
    ph->t0_unix = (double)rt.tv_sec + rt.tv_nsec * 1e-9;
    g_stonewall = 0;
    if (ph->stonewall_s > 0) {
        /* the limit counts from start_at, so a process that starts late still stops with the others */
        double left = ph->stonewall_s - (ph->start_at > 0 ? ph->t0_unix - ph->start_at : 0);
        g_stonewall = g_phase_t0 + (left > 0 ? (uint64_t)(left * 1e9) : 0);
    }
    ctx->go = 1;
    pthread_cond_broadcast(&ctx->cond);
    pthread_mutex_unlock(&ctx->gate);
    /* wait for the workers, reporting progress every 250 ms */
    pthread_mutex_lock(&ctx->gate);
    while (ctx->finished < started) {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_nsec += 250 * 1000 * 1000;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&ctx->cond, &ctx->gate, &dl) == ETIMEDOUT && ctx->progress) {
            pthread_mutex_unlock(&ctx->gate);
            progress_line(ph, index);
            pthread_mutex_lock(&ctx->gate);
        }
    }
    pthread_mutex_unlock(&ctx->gate);
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        for (int t = 0; g->w && t < g->threads; t++)
            if (g->w[t].th) {
                pthread_join(g->w[t].th, NULL);
                g->w[t].th = 0;
            }
    }
    ph->t_end = now_ns();
    getrusage(RUSAGE_SELF, &r1);
    devstats_sample(ctx, ph->dev1, ph->devstat_ok);
    ph->cpu_user = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) * 1e-6;
    ph->cpu_sys = (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
    if (ctx->progress)
        progress_line(ph, index);

    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        if (g->op == OP_delete)
            close_subdirs(g, 1);
        for (int t = 0; g->w && t < g->threads; t++) {
            worker *x = &g->w[t];
            if (x->err) {
                g_err_dir = g->dir;
                *eerr = x->err;
                *eop = x->errwhat;
                snprintf(epath, epathlen, "%s", x->errpath);
                snprintf(emsg, emsglen, "%s %s: %s", x->errwhat, x->errpath, strerror(x->err));
                return -1;
            }
        }
    }
    return 0;
}

int bench_run(const jval *job, FILE *out)
{
    static job_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    pthread_mutex_init(&ctx.gate, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ctx.cond, &ca);
    pthread_condattr_destroy(&ca);
    g_ctx = &ctx;
    char err[1024] = "";
    phase *ph = NULL;
    size_t nph = 0;
    if (parse_job(job, &ctx, &ph, &nph, err, sizeof err)) {
        bench_write_error(out, err);
        for (size_t i = 0; i < nph; i++)
            free_phase(&ph[i]);
        free(ph);
        return 2;
    }

    jw w;
    jw_init(&w, out);
    jw_obj(&w, NULL);
    write_head(&w);
    jw_arr(&w, "phases");
    int status = 0;
    const char *eop = NULL, *ephase = NULL;
    char epath[512] = "", emsg[1024] = "";
    int eerr = 0;
    for (size_t i = 0; i < nph; i++) {
        if (bench_stop_signal) {
            status = 130;
            break;
        }
        int rc = run_phase(&ctx, &ph[i], i, &eop, epath, sizeof epath, &eerr, emsg, sizeof emsg);
        if (ph[i].t0)
            write_phase(&w, &ph[i]);
        if (rc) {
            status = 1;
            ephase = ph[i].name;
            break;
        }
        if (bench_stop_signal) {
            status = 130;
            break;
        }
    }
    jw_end_arr(&w);
    jw_str(&w, "status", status == 0 ? "ok" : status == 130 ? "interrupted" : "error");
    if (status == 1)
        write_error_obj(&w, ephase, eop, epath, eerr, emsg);
    else
        jw_null(&w, "error");
    jw_end_obj(&w);
    fputc('\n', out);
    fflush(out);
    for (size_t i = 0; i < nph; i++)
        free_phase(&ph[i]);
    free(ph);
    for (int d = 0; d < ctx.ndirs; d++)
        close(ctx.dirfds[d]);
    free_pools();
    return status;
}
