/*
 * The timed loops, one per op kind: sequential (seq), random (rand), the
 * same two over io_uring, and small files (small).  Each records every
 * completed operation with record() and stops at its limit, at runtime_s,
 * or when stopping() says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "uring.h"

void run_seq(worker *w)
{
    group *g = w->g;
    int null = g->engine == ENGINE_null;
    int is_write = g->op == OP_write;
    uint64_t pool_off = g->pool ? ((uint64_t)w->tid * (g->pool_len / (uint64_t)g->threads)) & ~4095ull : 0;

    if (g->files && g->op == OP_read) {
        /* interleaved (merge) or one-after-another read of a list of files */
        size_t n = w->nfds;
        uint64_t *off = calloc(n ? n : 1, sizeof *off);
        char *done = calloc(n ? n : 1, 1);
        size_t left = n;
        for (size_t k = 0; left && !stopping(); k = (k + 1) % n) {
            if (done[k])
                continue;
            while (!stopping()) {
                uint64_t t0 = now_ns();
                ssize_t r = null ? (ssize_t)g->bs : pread(w->fds[k], w->buf, g->bs, (off_t)off[k]);
                uint64_t t1 = now_ns();
                if (r < 0) {
                    if (errno == EINTR)
                        continue;
                    /* this thread's k-th file is the job's (tid + k * threads)-th */
                    fail(w, errno, "read", json_at(g->files, (size_t)w->tid + k * (size_t)g->threads)->str);
                    left = 0;
                    break;
                }
                if (r == 0 || (null && off[k] >= g->size)) {
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
        return;
    }

    int fd = w->nfds ? w->fds[0] : -1;
    uint64_t limit = g->size;
    if (!limit && !is_write && !null) {
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
        ssize_t r;
        if (null)
            r = (ssize_t)n;
        else if (is_write)
            r = pwrite(fd, pool_slice(g, &pool_off, n), n, (off_t)off);
        else
            r = pread(fd, w->buf, n, (off_t)off);
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
        if (is_write && !null && g->sync_every && since_sync >= g->sync_every && g->sync != SYNC_none) {
            uint64_t s0 = now_ns();
            if (do_sync(g, fd)) {
                fail(w, errno, SYNC_NAMES[g->sync], g->file);
                return;
            }
            w->sync_ns += now_ns() - s0;
            w->syncs++;
            since_sync = 0;
        }
        if (over_time(g, t1))
            break;
    }
    if (is_write && !null && g->sync != SYNC_none && !w->err) {
        uint64_t s0 = now_ns();
        if (do_sync(g, fd))
            fail(w, errno, SYNC_NAMES[g->sync], g->file);
        w->sync_ns += now_ns() - s0;
        w->syncs++;
    }
}

void run_rand(worker *w)
{
    group *g = w->g;
    int null = g->engine == ENGINE_null;
    int fd = w->nfds ? w->fds[0] : -1;
    uint64_t blocks = g->file_size / g->bs;
    if (!blocks)
        blocks = 1;
    uint64_t limit_ops = g->ops_limit ? g->ops_limit : (g->size ? g->size / g->bs : (g->runtime_s > 0 ? UINT64_MAX : blocks));
    uint64_t pool_off = g->pool ? ((uint64_t)w->tid * (g->pool_len / (uint64_t)g->threads)) & ~4095ull : 0;
    uint64_t read_cut = (uint64_t)(g->read_share * 18446744073709551615.0);
    if (g->read_share >= 1.0)
        read_cut = UINT64_MAX;
    for (uint64_t k = 0; k < limit_ops && !stopping(); k++) {
        uint64_t x = rng_next(&w->rng);
        uint64_t off = (x % blocks) * g->bs;
        int is_read = g->op == OP_randread || (g->op == OP_randrw && rng_next(&w->rng) <= read_cut);
        uint64_t t0 = now_ns();
        ssize_t r;
        if (null)
            r = (ssize_t)g->bs;
        else if (is_read)
            r = pread(fd, w->buf, g->bs, (off_t)off);
        else
            r = pwrite(fd, pool_slice(g, &pool_off, g->bs), g->bs, (off_t)off);
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
    if (g->op != OP_randread && !null && g->sync != SYNC_none && !w->err) {
        uint64_t s0 = now_ns();
        if (do_sync(g, fd))
            fail(w, errno, SYNC_NAMES[g->sync], g->file);
        w->sync_ns += now_ns() - s0;
        w->syncs++;
    }
}

/* io_uring engine for seq and rand ops: up to iodepth operations in flight per thread.  Latency is
 * submission to completion, as an application with that many requests outstanding sees it. */
void run_uring(worker *w)
{
    group *g = w->g;
    int fd = w->nfds ? w->fds[0] : -1;
    unsigned qd = (unsigned)g->iodepth;
    int is_seq = !strcmp(OP_KINDS[g->op], "seq");
    uring u;
    int rc = uring_init(&u, qd);
    if (rc) {
        fail(w, -rc, "io_uring_setup", "(io_uring unavailable: use the psync engine)");
        return;
    }
    unsigned char *bufs = NULL;
    uint64_t *t0s = calloc(qd, sizeof *t0s);
    unsigned *slots = calloc(qd, sizeof *slots), nfree = qd;
    if (posix_memalign((void **)&bufs, 4096, (size_t)qd * g->bs) || !t0s || !slots) {
        fail(w, ENOMEM, "allocate", NULL);
        goto out;
    }
    for (unsigned i = 0; i < qd; i++)
        slots[i] = qd - 1 - i;
    uint64_t blocks = is_seq ? 0 : (g->file_size / g->bs ? g->file_size / g->bs : 1);
    uint64_t limit;
    if (is_seq) {
        uint64_t total = g->size;
        if (!total && g->op == OP_read) {
            struct stat st;
            if (fstat(fd, &st) == 0)
                total = (uint64_t)st.st_size > w->base_off ? (uint64_t)st.st_size - w->base_off : 0;
        }
        limit = total; /* bytes */
    } else {
        limit = g->ops_limit ? g->ops_limit
                             : (g->size ? g->size / g->bs : (g->runtime_s > 0 ? UINT64_MAX : blocks));
    }
    uint64_t pool_off = g->pool ? ((uint64_t)w->tid * (g->pool_len / (uint64_t)g->threads)) & ~4095ull : 0;
    uint64_t read_cut = g->read_share >= 1.0 ? UINT64_MAX : (uint64_t)(g->read_share * 18446744073709551615.0);
    uint64_t issued = 0, inflight = 0;
    int stop_issuing = 0;
    unsigned char is_read_of[4096];
    for (;;) {
        while (!stop_issuing && nfree && issued < limit && !stopping()) {
            uint64_t off, len = g->bs;
            int is_read;
            if (is_seq) {
                off = seq_offset(w, issued);
                if (limit - issued < len)
                    len = limit - issued;
                is_read = g->op == OP_read;
            } else {
                off = (rng_next(&w->rng) % blocks) * g->bs;
                is_read = g->op == OP_randread || (g->op == OP_randrw && rng_next(&w->rng) <= read_cut);
            }
            unsigned s = slots[--nfree];
            void *buf = is_read ? bufs + (size_t)s * g->bs : pool_slice(g, &pool_off, len);
            if (uring_prep(&u, is_read, fd, buf, (uint32_t)len, off, s)) {
                nfree++;
                break;
            }
            is_read_of[s] = (unsigned char)is_read;
            t0s[s] = now_ns();
            issued += is_seq ? len : 1;
            inflight++;
        }
        if (!inflight)
            break;
        rc = uring_submit_wait(&u, 1);
        if (rc && rc != -EINTR) {
            fail(w, -rc, "io_uring_enter", g->file);
            stop_issuing = 1;
            /* nothing new was submitted: what is in flight is still reaped below */
        }
        int32_t res;
        uint64_t ud;
        while (uring_reap(&u, &res, &ud)) {
            uint64_t t1 = now_ns();
            unsigned s = (unsigned)ud;
            inflight--;
            slots[nfree++] = s;
            if (res < 0) {
                fail(w, -res, is_read_of[s] ? "read" : "write", g->file);
                stop_issuing = 1;
                continue;
            }
            if (res == 0 && is_seq) {
                stop_issuing = 1; /* end of file */
                continue;
            }
            record(w, t0s[s], t1, (uint64_t)res);
            if (over_time(g, t1))
                stop_issuing = 1;
        }
        if (stopping())
            stop_issuing = 1;
    }
    if (g->op != OP_randread && g->op != OP_read && g->sync != SYNC_none && !w->err) {
        uint64_t s0 = now_ns();
        if (do_sync(g, fd))
            fail(w, errno, SYNC_NAMES[g->sync], g->file);
        w->sync_ns += now_ns() - s0;
        w->syncs++;
    }
out:
    free(bufs);
    free(t0s);
    free(slots);
    uring_exit(&u);
}

static uint64_t small_size(const group *g, uint64_t i)
{
    return g->nsizes ? g->sizes[i % g->nsizes] : g->size;
}

void run_small(worker *w)
{
    group *g = w->g;
    int null = g->engine == ENGINE_null;
    uint64_t pool_off = 0;
    char name[64];
    for (uint64_t i = (uint64_t)w->tid; i < g->count && !stopping(); i += (uint64_t)g->threads) {
        uint64_t k = g->first + i; /* the file's index: its name and directory */
        int dfd = null ? -1 : g->subfds[k % g->fanout];
        small_name(k, name, sizeof name);
        uint64_t moved = 0;
        uint64_t t0 = now_ns();
        int rc = 0;
        const char *what = OP_NAMES[g->op];
        if (!null) {
            switch (g->op) {
            case OP_create: {
                uint64_t sz = small_size(g, i);
                int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0) {
                    rc = -1;
                    what = "create";
                    break;
                }
                while (moved < sz) {
                    uint64_t n = sz - moved < g->bs ? sz - moved : g->bs;
                    ssize_t r = write(fd, pool_slice(g, &pool_off, n), n);
                    if (r < 0) {
                        if (errno == EINTR)
                            continue;
                        rc = -1;
                        what = "write";
                        break;
                    }
                    moved += (uint64_t)r;
                }
                if (!rc && g->fsync_files && fsync(fd)) {
                    rc = -1;
                    what = "fsync";
                }
                int saved = errno;
                if (close(fd) && !rc) {
                    rc = -1;
                    what = "close";
                } else {
                    errno = saved;
                }
                break;
            }
            case OP_readfiles: {
                int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                    rc = -1;
                    what = "open";
                    break;
                }
                for (;;) {
                    ssize_t r = read(fd, w->buf, g->bs);
                    if (r < 0) {
                        if (errno == EINTR)
                            continue;
                        rc = -1;
                        what = "read";
                        break;
                    }
                    if (r == 0)
                        break;
                    moved += (uint64_t)r;
                }
                close(fd);
                break;
            }
            case OP_stat: {
                struct stat st;
                rc = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
                break;
            }
            case OP_delete: rc = unlinkat(dfd, name, 0); break;
            default: break;
            }
        } else if (g->op == OP_create || g->op == OP_readfiles) {
            moved = small_size(g, i);
        }
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
