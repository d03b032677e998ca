/*
 * The timed loops over an engine's synchronous operations, one per kind of loop: sequential (one file), a list
 * of files, random, and small files.  Each records every completed operation with record() and stops at its
 * limit, at runtime_s, or when stopping() says so.
 *
 * They are templates: an engine's file defines its operations NAME_rw and NAME_small (static inline) and then
 * ENGINE_LOOPS(NAME, FILES), which makes loop_seq_NAME, loop_files_NAME, loop_rand_NAME and loop_small_NAME
 * for its table.  Each is compiled with the engine's own operations inlined, so the timed path makes the same
 * calls as a loop written for that engine alone (no call through a pointer per op, no test of the engine).
 * FILES is the engine's `files` (ioengine.h): 0 for an engine that moves no data, nothing to write from or sync.
 */
#ifndef IOLENS_BENCH_LOOPS_H
#define IOLENS_BENCH_LOOPS_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"

#define LOOP_INLINE static inline __attribute__((always_inline))
typedef ssize_t (*rw_op)(int fd, int is_read, void *buf, size_t n, off_t off);
typedef int (*small_op)(worker *w, int dfd, const char *name, uint64_t size, uint64_t *pool_off, uint64_t *moved,
                        const char **what);

/* A thread's first byte of the group's content pool: threads write different parts of it. */
LOOP_INLINE uint64_t first_pool_off(const worker *w)
{
    const group *g = w->g;
    return g->pool ? ((uint64_t)w->tid * (g->pool_len / (uint64_t)g->threads)) & ~4095ull : 0;
}

/* Interleaved (merge) or one-after-another read of a list of files (the null engine opens none). */
LOOP_INLINE void files_loop(worker *w, rw_op rw)
{
    group *g = w->g;
    size_t n = w->nfds;
    uint64_t *off = calloc(n ? n : 1, sizeof *off);
    char *done = calloc(n ? n : 1, 1);
    size_t left = n;
    for (size_t k = 0; left && !stopping(); k = (k + 1) % n) {
        if (done[k])
            continue;
        while (!stopping()) {
            uint64_t t0 = now_ns();
            ssize_t r = rw(w->fds[k], 1, w->buf, g->bs, (off_t)off[k]);
            uint64_t t1 = now_ns();
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                /* this thread's k-th file is the job's (tid + k * threads)-th */
                fail(w, errno, "read", json_at(g->files, (size_t)w->tid + k * (size_t)g->threads)->str);
                left = 0;
                break;
            }
            if (r == 0) {
                done[k] = 1;
                left--;
                break;
            }
            record(w, t0, t1, (uint64_t)r);
            off[k] += (uint64_t)r;
            if (over_time(g, t1)) {
                left = 0;
                break;
            }
            if (g->interleave)
                break;
        }
    }
    free(off);
    free(done);
}

LOOP_INLINE void seq_loop(worker *w, rw_op rw, int files)
{
    group *g = w->g;
    int is_write = g->op == OP_write;
    uint64_t pool_off = first_pool_off(w);
    int fd = w->nfds ? w->fds[0] : -1;
    uint64_t limit = g->size;
    if (!limit && !is_write && files) {
        struct stat st;
        if (fstat(fd, &st) == 0)
            limit = (uint64_t)st.st_size > w->base_off ? (uint64_t)st.st_size - w->base_off : 0;
    }
    uint64_t done = 0, since_sync = 0;
    /* loop (with runtime_s): start over at the end of the file until the time is up, as fio's time_based does */
    int loop = g->loop && g->runtime_s > 0 && limit > 0;
    while (!stopping()) {
        if (done >= limit) {
            if (!loop)
                break;
            done = 0;
        }
        uint64_t n = limit - done < g->bs ? limit - done : g->bs;
        uint64_t off = seq_offset(w, done);
        uint64_t t0 = now_ns();
        ssize_t r = is_write ? rw(fd, 0, files ? pool_slice(g, &pool_off, n) : w->buf, n, (off_t)off)
                             : rw(fd, 1, w->buf, n, (off_t)off);
        uint64_t t1 = now_ns();
        if (r < 0) {
            if (errno == EINTR)
                continue;
            char name[512];
            seq_name(g, w->tid, name, sizeof name);
            fail(w, errno, is_write ? "write" : "read", name);
            return;
        }
        if (r == 0) { /* end of file */
            if (!loop || done == 0)
                break;
            done = limit;
            continue;
        }
        record(w, t0, t1, (uint64_t)r);
        done += (uint64_t)r;
        since_sync += (uint64_t)r;
        if (is_write && files && g->sync_every && since_sync >= g->sync_every && g->sync != SYNC_none) {
            if (sync_file(w, fd))
                return;
            since_sync = 0;
        }
        if (over_time(g, t1))
            break;
    }
    if (is_write && files && g->sync != SYNC_none && !w->err)
        sync_file(w, fd);
}

LOOP_INLINE void rand_loop(worker *w, rw_op rw, int files)
{
    group *g = w->g;
    int fd = w->nfds ? w->fds[0] : -1;
    uint64_t blocks = g->file_size / g->bs;
    if (!blocks)
        blocks = 1;
    uint64_t limit_ops = g->ops_limit ? g->ops_limit : (g->size ? g->size / g->bs : (g->runtime_s > 0 ? UINT64_MAX : blocks));
    uint64_t pool_off = first_pool_off(w);
    uint64_t read_cut = (uint64_t)(g->read_share * 18446744073709551615.0);
    if (g->read_share >= 1.0)
        read_cut = UINT64_MAX;
    for (uint64_t k = 0; k < limit_ops && !stopping(); k++) {
        uint64_t x = rng_next(&w->rng);
        uint64_t off = (x % blocks) * g->bs;
        int is_read = g->op == OP_randread || (g->op == OP_randrw && rng_next(&w->rng) <= read_cut);
        uint64_t t0 = now_ns();
        ssize_t r = is_read ? rw(fd, 1, w->buf, g->bs, (off_t)off)
                            : rw(fd, 0, files ? pool_slice(g, &pool_off, g->bs) : w->buf, g->bs, (off_t)off);
        uint64_t t1 = now_ns();
        if (r < 0) {
            if (errno == EINTR) {
                k--;
                continue;
            }
            char name[512];
            seq_name(g, w->tid, name, sizeof name);
            fail(w, errno, is_read ? "read" : "write", name);
            return;
        }
        record(w, t0, t1, (uint64_t)r);
        if (over_time(g, t1))
            break;
    }
    if (g->op != OP_randread && files && g->sync != SYNC_none && !w->err)
        sync_file(w, fd);
}

LOOP_INLINE void small_loop(worker *w, small_op small)
{
    group *g = w->g;
    uint64_t pool_off = 0;
    char name[64];
    for (uint64_t i = (uint64_t)w->tid; i < g->count && !stopping(); i += (uint64_t)g->threads) {
        uint64_t k = g->first + i; /* the file's index: its name and directory */
        int dfd = g->subfds ? g->subfds[k % g->fanout] : -1;
        small_name(k, name, sizeof name);
        uint64_t size = g->nsizes ? g->sizes[i % g->nsizes] : g->size, moved = 0;
        const char *what = OP_NAMES[g->op];
        uint64_t t0 = now_ns();
        int rc = small(w, dfd, name, size, &pool_off, &moved, &what);
        uint64_t t1 = now_ns();
        if (rc) {
            char path[512];
            snprintf(path, sizeof path, "%s/d%04" PRIu64 "/%s", g->prefix, k % g->fanout, name);
            fail(w, errno, what, path);
            return;
        }
        record(w, t0, t1, moved);
        if (over_time(g, t1))
            break;
    }
}

#define ENGINE_LOOPS(name, files)                                                                              \
    void loop_seq_##name(worker *w) { seq_loop(w, name##_rw, files); }                                         \
    void loop_files_##name(worker *w) { files_loop(w, name##_rw); }                                            \
    void loop_rand_##name(worker *w) { rand_loop(w, name##_rw, files); }                                       \
    void loop_small_##name(worker *w) { small_loop(w, name##_small); }
/* The run table of an engine made with ENGINE_LOOPS(name, ...) */
#define ENGINE_RUN(name)                                                                                       \
    {                                                                                                          \
        [LOOP_seq] = loop_seq_##name, [LOOP_files] = loop_files_##name, [LOOP_rand] = loop_rand_##name,        \
        [LOOP_small] = loop_small_##name                                                                       \
    }

#endif
