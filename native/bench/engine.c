/*
 * Runs a job: phases of concurrent thread groups, each measured with
 * per-op latency histograms, per-second series and per-thread timing.
 *
 * Safety: every path is relative to a job directory whose name starts with
 * "iolens-bench-", and is walked one component at a time with O_NOFOLLOW, so
 * a symlink anywhere below it is refused (ELOOP) instead of followed.
 */
#include "engine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "hist.h"
#include "uring.h"

volatile sig_atomic_t bench_stop_signal = 0;
static volatile int g_abort = 0; /* a worker failed: the others stop */

#define MAX_DIRS 16
#define MAX_THREADS 1024
#define MIN_POOL (32u << 20)

static const char *const OP_NAMES[] = {
#define X(n, k, d) #n,
    BENCH_OPS(X)
#undef X
};
static const char *const OP_KINDS[] = {
#define X(n, k, d) #k,
    BENCH_OPS(X)
#undef X
};
static const char *const CONTENT_NAMES[] = {
#define X(n, d) #n,
    BENCH_CONTENTS(X)
#undef X
};
static const char *const SYNC_NAMES[] = {
#define X(n) #n,
    BENCH_SYNCS(X)
#undef X
};
static const char *const LAYOUT_NAMES[] = {
#define X(n) #n,
    BENCH_LAYOUTS(X)
#undef X
};
static const char *const ENGINE_NAMES[] = {
#define X(n) #n,
    BENCH_ENGINES(X)
#undef X
};

static int lookup(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- safe paths ------------------------------------------------------------ */

static int valid_component(const char *c, size_t n)
{
    return n > 0 && !(n == 1 && c[0] == '.') && !(n == 2 && c[0] == '.' && c[1] == '.');
}

/* Opens rel (a/b/c) below rootfd without following any symlink.  Intermediate
 * directories are created when mkdirs is set.  Returns fd or -1 with errno. */
static int open_beneath(int rootfd, const char *rel, int flags, mode_t mode, int mkdirs)
{
    if (!rel || !*rel || rel[0] == '/') {
        errno = EINVAL;
        return -1;
    }
    int cur = rootfd;
    const char *p = rel;
    char comp[256];
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (!valid_component(p, n) || n >= sizeof comp) {
            if (cur != rootfd)
                close(cur);
            errno = EINVAL;
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = 0;
        int fd;
        if (slash) {
            fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0 && errno == ENOENT && mkdirs) {
                if (mkdirat(cur, comp, 0755) == 0 || errno == EEXIST)
                    fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            }
            if (fd < 0 && errno == ENOTDIR)
                errno = ELOOP; /* a symlink (or a file) where a directory should be */
        } else {
            fd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
        }
        int saved = errno;
        if (cur != rootfd)
            close(cur);
        errno = saved;
        if (fd < 0 || !slash)
            return fd;
        cur = fd;
        p = slash + 1;
    }
}

/* Removes rel (file or tree) below rootfd; symlinks are removed, never followed. */
static int remove_at(int dirfd, const char *name)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && remove_at(fd, e->d_name))
            rc = -1;
    closedir(d);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOENT)
        rc = -1;
    return rc;
}

static int remove_beneath(int rootfd, const char *rel)
{
    const char *slash = strrchr(rel, '/');
    if (!slash)
        return valid_component(rel, strlen(rel)) ? remove_at(rootfd, rel) : (errno = EINVAL, -1);
    char parent[4096];
    size_t n = (size_t)(slash - rel);
    if (n >= sizeof parent) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(parent, rel, n);
    parent[n] = 0;
    int pfd = open_beneath(rootfd, parent, O_RDONLY | O_DIRECTORY, 0, 0);
    if (pfd < 0)
        return errno == ENOENT ? 0 : -1;
    int rc = valid_component(slash + 1, strlen(slash + 1)) ? remove_at(pfd, slash + 1) : (errno = EINVAL, -1);
    int saved = errno;
    close(pfd);
    errno = saved;
    return rc;
}

/* ---- job structures -------------------------------------------------------- */

typedef struct group group;

typedef struct {
    group *g;
    int tid;
    pthread_t th;
    hist *h;
    uint64_t bytes, ops;           /* final */
    uint64_t pub_bytes, pub_ops;   /* published for progress (relaxed atomics) */
    uint64_t t_start, t_first, t_last, t_end; /* ns since phase start; t_first = 0 if no op */
    int any_op;
    double cpu_s;
    uint64_t *ser_bytes, *ser_ops;
    size_t ser_len, ser_cap;
    size_t ser_cur;                /* the second being filled, valid for [ser_lo, ser_hi) ns */
    uint64_t ser_lo, ser_hi;
    uint64_t syncs, sync_ns;
    int err;
    char errpath[512];
    const char *errwhat;
    rng_t rng;
    unsigned char *buf;
    int *fds;
    size_t nfds;
    int direct_refused, direct_used;
    uint64_t base_off;
} worker;

struct group {
    op_kind op;
    engine_kind engine;
    int dir;       /* index into job dirs, -1 for the null engine */
    int dirfd;
    const char *file, *prefix, *tmpl;
    const jval *files;    /* list of names */
    const jval *paths;    /* remove */
    int interleave;
    layout_kind layout;
    int threads;
    uint64_t size, bs, ops_limit, file_size, count, fanout, sync_every, iodepth;
    uint64_t *sizes;
    size_t nsizes;
    double runtime_s, read_share;
    int direct, prepare, fsync_files, loop;
    sync_kind sync;
    content_kind content;
    unsigned char *pool;
    size_t pool_len;
    int *subfds;
    worker *w;
    uint64_t dirs_made, dirs_removed;
};

/* What the device itself moved: the fields of /sys/dev/block/MAJ:MIN/stat (Documentation/block/stat.rst);
 * sectors there are always 512 bytes.  Bytes a read phase "read" that the device never delivered came from a
 * cache, whatever mincore said. */
typedef struct {
    uint64_t read_ios, read_sectors, write_ios, write_sectors;
} devstat;

typedef struct {
    const char *name;
    int evict_before, report;
    size_t ngroups;
    group *groups;
    /* cache facts */
    int evicted, dropped, drop_errno;
    uint64_t evicted_files, checked_bytes, resident_bytes;
    int residency_known;
    /* timing */
    uint64_t t0, t_end;
    double cpu_user, cpu_sys;
    /* block-layer counters of each dir's device around the timed part (devstat_ok: both reads worked) */
    devstat dev0[MAX_DIRS], dev1[MAX_DIRS];
    int devstat_ok[MAX_DIRS];
} phase;

typedef struct {
    int ndirs;
    int dirfds[MAX_DIRS];
    const char *dirs[MAX_DIRS];
    uint64_t seed;
    int drop_caches, progress;
    const char *devstat_path[MAX_DIRS]; /* NULL: no block device to watch (tmpfs, network, ...) */
    pthread_mutex_t gate;
    pthread_cond_t cond;
    int ready, go, finished;
    size_t pool_bytes;
} job_ctx;

static job_ctx *g_ctx;
static int g_err_dir = -1; /* job dir index of the failing group */
static uint64_t g_phase_t0;

/* ---- worker helpers -------------------------------------------------------- */

static void fail(worker *w, int err, const char *what, const char *path)
{
    if (!w->err) {
        w->err = err;
        w->errwhat = what;
        snprintf(w->errpath, sizeof w->errpath, "%s", path ? path : "");
    }
    g_abort = 1;
}

static inline int stopping(void) { return bench_stop_signal || g_abort; }

/* Slow path: a new second of the per-second series (grows the arrays). */
static void series_add(worker *w, uint64_t t_rel, uint64_t bytes)
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

/* One completed op: latency t1 - t0 (absolute ns), bytes moved. */
static inline void record(worker *w, uint64_t t0, uint64_t t1, uint64_t bytes)
{
    hist_add(w->h, t1 - t0);
    uint64_t rel = t1 - g_phase_t0;
    if (!w->any_op) {
        w->any_op = 1;
        w->t_first = rel;
    }
    w->t_last = rel;
    w->bytes += bytes;
    w->ops++;
    __atomic_store_n(&w->pub_bytes, w->bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&w->pub_ops, w->ops, __ATOMIC_RELAXED);
    if (rel >= w->ser_lo && rel < w->ser_hi && w->ser_cap) {
        w->ser_bytes[w->ser_cur] += bytes;
        w->ser_ops[w->ser_cur]++;
    } else {
        series_add(w, rel, bytes);
    }
}

static inline int over_time(const group *g, uint64_t t1)
{
    return g->runtime_s > 0 && (double)(t1 - g_phase_t0) >= g->runtime_s * 1e9;
}

static int do_sync(group *g, int fd)
{
    if (g->sync == SYNC_fsync)
        return fsync(fd);
    if (g->sync == SYNC_fdatasync)
        return fdatasync(fd);
    return 0;
}

static void seq_name(const group *g, int tid, char *out, size_t n)
{
    if (g->layout == LAYOUT_shared)
        snprintf(out, n, "%s", g->file);
    else
        snprintf(out, n, "%s.%d", g->file, tid);
}

static void small_name(const group *g, uint64_t i, char *out, size_t n)
{
    snprintf(out, n, "f%08" PRIu64, i);
}

/* Opens the file with O_DIRECT when asked, falling back to buffered I/O when the filesystem refuses it. */
static int open_data(worker *w, const char *rel, int flags, mode_t mode)
{
    group *g = w->g;
    int fd;
    if (g->direct) {
        fd = open_beneath(g->dirfd, rel, flags | O_DIRECT, mode, 1);
        if (fd >= 0) {
            w->direct_used = 1;
            return fd;
        }
        if (errno != EINVAL)
            return -1;
        w->direct_refused = 1;
    }
    return open_beneath(g->dirfd, rel, flags, mode, 1);
}

static unsigned char *pool_slice(group *g, uint64_t *pool_off, uint64_t n)
{
    if (*pool_off + n > g->pool_len)
        *pool_off = 0;
    unsigned char *p = g->pool + *pool_off;
    *pool_off += (n + 4095) & ~4095ull;
    return p;
}

/* ---- the ops ---------------------------------------------------------------- */

static void run_seq(worker *w)
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
        uint64_t off = w->base_off + done;
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

static void run_rand(worker *w)
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
static void run_uring(worker *w)
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
                off = w->base_off + issued;
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

static void run_small(worker *w)
{
    group *g = w->g;
    int null = g->engine == ENGINE_null;
    uint64_t pool_off = 0;
    char name[64];
    for (uint64_t i = (uint64_t)w->tid; i < g->count && !stopping(); i += (uint64_t)g->threads) {
        int dfd = null ? -1 : g->subfds[i % g->fanout];
        small_name(g, i, name, sizeof name);
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
            snprintf(path, sizeof path, "%s/d%04" PRIu64 "/%s", g->prefix, i % g->fanout, name);
            fail(w, errno, what, path);
            return;
        }
        record(w, t0, t1, moved);
        if (over_time(g, t1))
            break;
    }
}

/* Worker setup (untimed): open what this thread works on. */
static void worker_setup(worker *w)
{
    group *g = w->g;
    if (g->engine == ENGINE_null || strcmp(OP_KINDS[g->op], "small") == 0)
        return;
    char name[512];
    if (g->files) {
        size_t n = json_len(g->files), mine = 0;
        w->fds = calloc(n ? n : 1, sizeof(int));
        for (size_t k = (size_t)w->tid; k < n; k += (size_t)g->threads) {
            const char *f = json_at(g->files, k)->str;
            int fd = open_data(w, f, O_RDONLY, 0);
            if (fd < 0) {
                fail(w, errno, "open", f);
                return;
            }
            w->fds[mine++] = fd;
        }
        w->nfds = mine;
        return;
    }
    seq_name(g, w->tid, name, sizeof name);
    int flags;
    switch (g->op) {
    case OP_write: flags = O_WRONLY | O_CREAT | (g->layout == LAYOUT_per_thread ? O_TRUNC : 0); break;
    case OP_read:
    case OP_randread: flags = O_RDONLY; break;
    default: flags = O_RDWR; break;
    }
    int fd = open_data(w, name, flags, 0644);
    if (fd < 0) {
        fail(w, errno, "open", name);
        return;
    }
    w->fds = malloc(sizeof(int));
    w->fds[0] = fd;
    w->nfds = 1;
    if (g->layout == LAYOUT_shared && strcmp(OP_KINDS[g->op], "seq") == 0)
        w->base_off = (uint64_t)w->tid * g->size;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    group *g = w->g;
    if (!g->direct || posix_memalign((void **)&w->buf, 4096, g->bs ? g->bs : 4096))
        w->buf = NULL;
    if (!w->buf && posix_memalign((void **)&w->buf, 4096, g->bs ? g->bs : 4096))
        fail(w, ENOMEM, "allocate", NULL);
    if (w->buf)
        memset(w->buf, 0, g->bs ? g->bs : 4096);
    worker_setup(w);
    pthread_mutex_lock(&g_ctx->gate);
    g_ctx->ready++;
    pthread_cond_broadcast(&g_ctx->cond);
    while (!g_ctx->go)
        pthread_cond_wait(&g_ctx->cond, &g_ctx->gate);
    pthread_mutex_unlock(&g_ctx->gate);
    w->t_start = now_ns() - g_phase_t0;
    double c0 = thread_cpu_s();
    if (!w->err && !stopping()) {
        const char *kind = OP_KINDS[g->op];
        if (g->engine == ENGINE_io_uring && (!strcmp(kind, "rand") || (!strcmp(kind, "seq") && !g->files)))
            run_uring(w);
        else if (!strcmp(kind, "seq"))
            run_seq(w);
        else if (!strcmp(kind, "rand"))
            run_rand(w);
        else if (!strcmp(kind, "small"))
            run_small(w);
    }
    /* closing is timed: network filesystems flush on close */
    for (size_t k = 0; k < w->nfds; k++)
        if (close(w->fds[k]) && !w->err && errno != EINTR)
            fail(w, errno, "close", g->file);
    w->nfds = 0;
    w->t_end = now_ns() - g_phase_t0;
    w->cpu_s = thread_cpu_s() - c0;
    pthread_mutex_lock(&g_ctx->gate);
    g_ctx->finished++;
    pthread_cond_broadcast(&g_ctx->cond);
    pthread_mutex_unlock(&g_ctx->gate);
    return NULL;
}

/* ---- parsing ---------------------------------------------------------------- */

static int parse_group(const jval *jg, group *g, job_ctx *ctx, char *err, size_t errlen)
{
    const char *bad = NULL;
    memset(g, 0, sizeof *g);
    g->dirfd = -1;
    const char *op = json_str(jg, "op", NULL, &bad);
    if (!op || (int)(g->op = (op_kind)lookup(OP_NAMES, OP__COUNT, op)) < 0) {
        snprintf(err, errlen, "unknown op \"%s\"", op ? op : "(missing)");
        return -1;
    }
    int e = lookup(ENGINE_NAMES, ENGINE__COUNT, json_str(jg, "engine", "psync", &bad));
    if (e < 0) {
        snprintf(err, errlen, "unknown engine \"%s\"", json_str(jg, "engine", "", NULL));
        return -1;
    }
    g->engine = (engine_kind)e;
    g->dir = (int)json_num(jg, "dir", g->engine == ENGINE_null ? -1 : 0, &bad);
    if (g->engine != ENGINE_null) {
        if (g->dir < 0 || g->dir >= ctx->ndirs) {
            snprintf(err, errlen, "group dir %d is not one of the job's %d dirs", g->dir, ctx->ndirs);
            return -1;
        }
        g->dirfd = ctx->dirfds[g->dir];
    }
    g->threads = (int)json_num(jg, "threads", 1, &bad);
    if (g->threads < 1 || g->threads > MAX_THREADS) {
        snprintf(err, errlen, "threads must be 1..%d", MAX_THREADS);
        return -1;
    }
    g->bs = (uint64_t)json_num(jg, "bs", 1 << 20, &bad);
    if (!g->bs || g->bs > (1ull << 30)) {
        snprintf(err, errlen, "bs must be 1 byte .. 1 GiB");
        return -1;
    }
    g->size = (uint64_t)json_num(jg, "size", 0, &bad);
    g->ops_limit = (uint64_t)json_num(jg, "ops", 0, &bad);
    g->file_size = (uint64_t)json_num(jg, "file_size", 0, &bad);
    g->count = (uint64_t)json_num(jg, "count", 0, &bad);
    g->fanout = (uint64_t)json_num(jg, "fanout", 1, &bad);
    if (!g->fanout)
        g->fanout = 1;
    g->sync_every = (uint64_t)json_num(jg, "sync_every", 0, &bad);
    g->iodepth = (uint64_t)json_num(jg, "iodepth", 1, &bad);
    if (g->iodepth < 1 || g->iodepth > 4096) {
        snprintf(err, errlen, "iodepth must be 1..4096");
        return -1;
    }
    g->runtime_s = json_num(jg, "runtime_s", 0, &bad);
    g->loop = json_bool(jg, "loop", 0, &bad);
    g->read_share = json_num(jg, "read_share", g->op == OP_randwrite ? 0.0 : 1.0, &bad);
    if (g->op == OP_randrw && !json_get(jg, "read_share"))
        g->read_share = 0.5;
    g->direct = json_bool(jg, "direct", 0, &bad);
    g->prepare = json_bool(jg, "prepare", 0, &bad);
    g->fsync_files = json_bool(jg, "fsync_files", 0, &bad);
    g->interleave = json_bool(jg, "interleave", 0, &bad);
    g->file = json_str(jg, "file", "data", &bad);
    g->prefix = json_str(jg, "prefix", "files", &bad);
    g->tmpl = json_str(jg, "template", NULL, &bad);
    int k = lookup(SYNC_NAMES, 3, json_str(jg, "sync", "none", &bad));
    int l = lookup(LAYOUT_NAMES, 2, json_str(jg, "layout", "per_thread", &bad));
    int c = lookup(CONTENT_NAMES, CONTENT__COUNT, json_str(jg, "content", "random", &bad));
    if (k < 0 || l < 0 || c < 0) {
        snprintf(err, errlen, "unknown %s", k < 0 ? "sync mode" : l < 0 ? "layout" : "content");
        return -1;
    }
    g->sync = (sync_kind)k;
    g->layout = (layout_kind)l;
    g->content = (content_kind)c;
    const jval *files = json_get(jg, "files");
    if (files && files->type == J_ARR) {
        for (const jval *f = files->child; f; f = f->next)
            if (f->type != J_STR) {
                snprintf(err, errlen, "files must be a list of strings");
                return -1;
            }
        g->files = files;
    }
    const jval *paths = json_get(jg, "paths");
    if (paths && paths->type == J_ARR)
        g->paths = paths;
    const jval *sizes = json_get(jg, "sizes");
    if (sizes && sizes->type == J_ARR && json_len(sizes)) {
        g->nsizes = json_len(sizes);
        g->sizes = calloc(g->nsizes, sizeof *g->sizes);
        for (size_t i = 0; i < g->nsizes; i++)
            g->sizes[i] = (uint64_t)json_at(sizes, i)->num;
    }
    if (bad) {
        snprintf(err, errlen, "field \"%s\" has the wrong type", bad);
        return -1;
    }
    const char *kind = OP_KINDS[g->op];
    if (g->direct && g->bs % 512) {
        snprintf(err, errlen, "direct I/O needs bs to be a multiple of 512 (better 4096)");
        return -1;
    }
    if (!strcmp(kind, "seq") && g->op == OP_write && !g->size && g->runtime_s <= 0) {
        snprintf(err, errlen, "write needs size (bytes per thread) or runtime_s");
        return -1;
    }
    if (!strcmp(kind, "seq") && g->layout == LAYOUT_shared && !g->size) {
        snprintf(err, errlen, "a shared file needs size (bytes per thread)");
        return -1;
    }
    if (!strcmp(kind, "rand") && !g->file_size) {
        snprintf(err, errlen, "%s needs file_size", op);
        return -1;
    }
    if (!strcmp(kind, "small") && !g->count) {
        snprintf(err, errlen, "%s needs count", op);
        return -1;
    }
    if (g->engine != ENGINE_null && (strchr(g->prefix, '/') || !valid_component(g->prefix, strlen(g->prefix)))) {
        snprintf(err, errlen, "prefix must be a plain name");
        return -1;
    }
    return 0;
}

/* ---- phase set-up ------------------------------------------------------------ */

static int needs_pool(const group *g)
{
    return g->engine != ENGINE_null && (g->op == OP_write || g->op == OP_randwrite || g->op == OP_randrw ||
                                        g->op == OP_create || g->prepare);
}

/* Content pools are shared per (content, template), made once per job. */
typedef struct {
    content_kind kind;
    const char *tmpl;
    unsigned char *p;
    size_t n;
} pool_entry;
static pool_entry g_pools[16];
static int g_npools;

static int get_pool(group *g, uint64_t seed, char *err, size_t errlen)
{
    size_t need = g_ctx->pool_bytes ? g_ctx->pool_bytes : MIN_POOL;
    if (2 * g->bs > need)
        need = (size_t)(2 * g->bs);
    need = (need + 4095) & ~(size_t)4095;
    for (int i = 0; i < g_npools; i++) {
        pool_entry *e = &g_pools[i];
        if (e->kind == g->content && ((!e->tmpl && !g->tmpl) || (e->tmpl && g->tmpl && !strcmp(e->tmpl, g->tmpl))) &&
            e->n >= need) {
            g->pool = e->p;
            g->pool_len = e->n;
            return 0;
        }
    }
    unsigned char *p;
    if (content_pool(g->content, g->tmpl, need, seed, &p, err, errlen))
        return -1;
    if (g_npools < 16)
        g_pools[g_npools++] = (pool_entry){g->content, g->tmpl, p, need};
    g->pool = p;
    g->pool_len = need;
    return 0;
}

/* Lays out a file for random I/O or reads (untimed) when it is missing or short. */
static int prepare_file(group *g, const char *name, uint64_t size, char *err, size_t errlen)
{
    int fd = open_beneath(g->dirfd, name, O_WRONLY | O_CREAT, 0644, 1);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", name, strerror(errno));
        return -errno;
    }
    struct stat st;
    fstat(fd, &st);
    uint64_t off = (uint64_t)st.st_size < size ? 0 : size, step = 1 << 20, pool_off = 0;
    while (off < size) {
        uint64_t n = size - off < step ? size - off : step;
        ssize_t r = pwrite(fd, pool_slice(g, &pool_off, n), n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            snprintf(err, errlen, "cannot lay out %s: %s", name, strerror(e));
            close(fd);
            return -e;
        }
        off += (uint64_t)r;
        if (bench_stop_signal)
            break;
    }
    int rc = fsync(fd) ? -errno : 0;
    close(fd);
    if (rc)
        snprintf(err, errlen, "cannot sync %s: %s", name, strerror(-rc));
    return rc;
}

static int open_subdirs(group *g, int create, char *err, size_t errlen)
{
    if (g->engine == ENGINE_null)
        return 0;
    if (create) {
        if (mkdirat(g->dirfd, g->prefix, 0755) && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", g->prefix, strerror(errno));
            return -errno;
        }
    }
    int pfd = openat(g->dirfd, g->prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", g->prefix, strerror(errno));
        return -errno;
    }
    g->subfds = calloc(g->fanout, sizeof(int));
    for (uint64_t d = 0; d < g->fanout; d++) {
        char name[32];
        snprintf(name, sizeof name, "d%04" PRIu64, d);
        if (create) {
            if (mkdirat(pfd, name, 0755) == 0)
                g->dirs_made++;
            else if (errno != EEXIST) {
                snprintf(err, errlen, "cannot create %s/%s: %s", g->prefix, name, strerror(errno));
                int e = errno;
                close(pfd);
                return -e;
            }
        }
        g->subfds[d] = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (g->subfds[d] < 0) {
            int e = errno == ENOTDIR ? ELOOP : errno;
            snprintf(err, errlen, "cannot open %s/%s: %s", g->prefix, name, strerror(e));
            close(pfd);
            return -e;
        }
    }
    close(pfd);
    return 0;
}

static void close_subdirs(group *g, int remove)
{
    if (!g->subfds)
        return;
    for (uint64_t d = 0; d < g->fanout; d++)
        if (g->subfds[d] >= 0)
            close(g->subfds[d]);
    free(g->subfds);
    g->subfds = NULL;
    if (remove) {
        int pfd = openat(g->dirfd, g->prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pfd >= 0) {
            for (uint64_t d = 0; d < g->fanout; d++) {
                char name[32];
                snprintf(name, sizeof name, "d%04" PRIu64, d);
                if (unlinkat(pfd, name, AT_REMOVEDIR) == 0)
                    g->dirs_removed++;
            }
            close(pfd);
            if (unlinkat(g->dirfd, g->prefix, AT_REMOVEDIR) == 0)
                g->dirs_removed++;
        }
    }
}

/* Residency (bytes in the page cache) of an open file, via mincore; -1 if unknown. */
static int64_t resident_bytes(int fd, uint64_t size)
{
    if (!size)
        return 0;
    long pg = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    size_t pages = (size + (uint64_t)pg - 1) / (uint64_t)pg;
    unsigned char *vec = malloc(pages);
    int64_t res = -1;
    if (vec && mincore(m, size, vec) == 0) {
        res = 0;
        for (size_t i = 0; i < pages; i++)
            if (vec[i] & 1)
                res += pg;
        if ((uint64_t)res > size)
            res = (int64_t)size;
    }
    free(vec);
    munmap(m, size);
    return res;
}

/* Evicts one file: flush, drop its pages, measure what is left (sampled: measure=0 skips). */
static void evict_file(phase *ph, int fd, int measure)
{
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ph->evicted_files++;
    if (measure) {
        int64_t r = resident_bytes(fd, (uint64_t)st.st_size);
        if (r >= 0) {
            ph->residency_known = 1;
            ph->checked_bytes += (uint64_t)st.st_size;
            ph->resident_bytes += (uint64_t)r;
        }
    }
}

static void evict_phase(phase *ph, job_ctx *ctx)
{
    for (int d = 0; d < ctx->ndirs; d++)
        syncfs(ctx->dirfds[d]);
    if (ctx->drop_caches) {
        sync();
        int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && write(fd, "3\n", 2) == 2)
            ph->dropped = 1;
        else
            ph->drop_errno = errno ? errno : EIO;
        if (fd >= 0)
            close(fd);
    }
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        /* every file the phase's groups will touch that exists now: a write to an
         * evicted page is a cold write, as fio's invalidate=1 makes it */
        if (g->engine == ENGINE_null)
            continue;
        const char *kind = OP_KINDS[g->op];
        if (!strcmp(kind, "small")) {
            /* evict every file, measure a sample of at most 2000 */
            uint64_t step = g->count > 2000 ? g->count / 2000 : 1;
            char name[64];
            for (uint64_t k = 0; k < g->count && !bench_stop_signal; k++) {
                small_name(g, k, name, sizeof name);
                int fd = openat(g->subfds[k % g->fanout], name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                    continue;
                evict_file(ph, fd, k % step == 0);
                close(fd);
            }
        } else if (g->files) {
            for (size_t k = 0; k < json_len(g->files); k++) {
                int fd = open_beneath(g->dirfd, json_at(g->files, k)->str, O_RDONLY, 0, 0);
                if (fd >= 0) {
                    evict_file(ph, fd, 1);
                    close(fd);
                }
            }
        } else {
            int n = g->layout == LAYOUT_shared ? 1 : g->threads;
            for (int t = 0; t < n; t++) {
                char name[512];
                seq_name(g, t, name, sizeof name);
                int fd = open_beneath(g->dirfd, name, O_RDONLY, 0, 0);
                if (fd >= 0) {
                    evict_file(ph, fd, 1);
                    close(fd);
                }
            }
        }
    }
    ph->evicted = 1;
}

static int read_devstat(const char *path, devstat *out)
{
    if (!path)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    uint64_t f[7];
    char *p = buf;
    for (int i = 0; i < 7; i++) {
        char *end;
        errno = 0;
        f[i] = strtoull(p, &end, 10);
        if (end == p || errno)
            return 0;
        p = end;
    }
    *out = (devstat){f[0], f[2], f[4], f[6]};
    return 1;
}

static void devstats_sample(job_ctx *ctx, devstat *into, int *ok)
{
    for (int d = 0; d < ctx->ndirs; d++)
        ok[d] = read_devstat(ctx->devstat_path[d], &into[d]) && ok[d];
}

/* ---- output ------------------------------------------------------------------ */

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

static void write_phase(jw *w, phase *ph)
{
    jw_obj(w, NULL);
    jw_str(w, "name", ph->name);
    jw_bool(w, "report", ph->report);
    jw_num(w, "wall_s", ph->t_end > ph->t0 ? (ph->t_end - ph->t0) * 1e-9 : 0);
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

static void write_error_obj(jw *w, const char *phase_name, const char *op, const char *path, int err,
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

static void write_head(jw *w)
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

/* ---- running ----------------------------------------------------------------- */

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
            if (g->engine == ENGINE_null)
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
        if (g->prepare && g->engine != ENGINE_null) {
            uint64_t fsz = g->file_size ? g->file_size : g->size;
            int n = g->layout == LAYOUT_shared ? 1 : g->threads;
            for (int t = 0; t < n; t++) {
                char name[512];
                seq_name(g, t, name, sizeof name);
                uint64_t want = g->layout == LAYOUT_shared && !g->file_size ? fsz * (uint64_t)g->threads : fsz;
                int rc = prepare_file(g, name, want, emsg, emsglen);
                if (rc) {
                    *eerr = -rc;
                    *eop = "prepare";
                    snprintf(epath, epathlen, "%s", name);
                    return -1;
                }
            }
        }
        if (!strcmp(OP_KINDS[g->op], "small")) {
            int rc = open_subdirs(g, g->op == OP_create, emsg, emsglen);
            if (rc) {
                *eerr = -rc;
                *eop = OP_NAMES[g->op];
                snprintf(epath, epathlen, "%s", g->prefix);
                return -1;
            }
        }
        if (g->op == OP_write && g->layout == LAYOUT_shared && g->engine != ENGINE_null) {
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
    getrusage(RUSAGE_SELF, &r0);
    g_phase_t0 = now_ns();
    ph->t0 = g_phase_t0;
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
    const jval *ver = json_get(job, "schema_version");
    if (!ver || json_len(ver) != 2 || json_at(ver, 0)->type != J_NUM) {
        bench_write_error(out, "the job has no schema_version [major, minor]");
        return 2;
    }
    int major = (int)json_at(ver, 0)->num;
    if (major != BENCH_JOB_MAJOR) {
        snprintf(err, sizeof err, "job schema %d.x is not supported by this engine (it runs %d.x)", major,
                 BENCH_JOB_MAJOR);
        bench_write_error(out, err);
        return 2;
    }
    const char *bad = NULL;
    ctx.seed = (uint64_t)json_num(job, "seed", 1, &bad);
    ctx.drop_caches = json_bool(job, "drop_caches", 0, &bad);
    ctx.progress = json_bool(job, "progress", 0, &bad);
    ctx.pool_bytes = (size_t)json_num(job, "pool_bytes", 0, &bad);
    const jval *dirs = json_get(job, "dirs");
    ctx.ndirs = (int)json_len(dirs);
    if (ctx.ndirs > MAX_DIRS) {
        bench_write_error(out, "too many dirs");
        return 2;
    }
    for (int d = 0; d < ctx.ndirs; d++) {
        const jval *p = json_at(dirs, (size_t)d);
        if (!p || p->type != J_STR || p->str[0] != '/') {
            bench_write_error(out, "dirs must be absolute paths");
            return 2;
        }
        const char *base = strrchr(p->str, '/') + 1;
        if (strncmp(base, "iolens-bench-", 13)) {
            snprintf(err, sizeof err, "refusing to work in %s: the engine only writes inside iolens-bench-* directories",
                     p->str);
            bench_write_error(out, err);
            return 2;
        }
        ctx.dirs[d] = p->str;
        ctx.dirfds[d] = open(p->str, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ctx.dirfds[d] < 0) {
            snprintf(err, sizeof err, "cannot open %s: %s", p->str, strerror(errno == ENOTDIR ? ELOOP : errno));
            bench_write_error(out, err);
            return 2;
        }
    }
    const jval *devs = json_get(job, "device_stats");
    if (devs && (devs->type != J_ARR || (int)json_len(devs) != ctx.ndirs)) {
        bench_write_error(out, "device_stats must be a list with one entry (a path or null) per dir");
        return 2;
    }
    for (int d = 0; devs && d < ctx.ndirs; d++) {
        const jval *p = json_at(devs, (size_t)d);
        if (p->type == J_STR && !strncmp(p->str, "/sys/", 5))
            ctx.devstat_path[d] = p->str;
        else if (p->type != J_NULL) {
            bench_write_error(out, "device_stats entries must be /sys/... paths or null");
            return 2;
        }
    }
    const jval *phases = json_get(job, "phases");
    size_t nph = json_len(phases);
    phase *ph = calloc(nph ? nph : 1, sizeof *ph);
    for (size_t i = 0; i < nph; i++) {
        const jval *jp = json_at(phases, i);
        ph[i].name = json_str(jp, "name", "phase", &bad);
        ph[i].evict_before = json_bool(jp, "evict_before", 0, &bad);
        ph[i].report = json_bool(jp, "report", 1, &bad);
        const jval *groups = json_get(jp, "groups");
        ph[i].ngroups = json_len(groups);
        ph[i].groups = calloc(ph[i].ngroups ? ph[i].ngroups : 1, sizeof(group));
        if (!ph[i].ngroups) {
            snprintf(err, sizeof err, "phase %zu (%s) has no groups", i, ph[i].name);
            break;
        }
        for (size_t k = 0; k < ph[i].ngroups; k++) {
            char gerr[512];
            if (parse_group(json_at(groups, k), &ph[i].groups[k], &ctx, gerr, sizeof gerr)) {
                snprintf(err, sizeof err, "phase %zu (%s) group %zu: %s", i, ph[i].name, k, gerr);
                break;
            }
        }
        if (err[0])
            break;
    }
    if (!err[0] && bad)
        snprintf(err, sizeof err, "field \"%s\" has the wrong type", bad);
    if (err[0]) {
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
    for (int i = 0; i < g_npools; i++)
        free(g_pools[i].p);
    g_npools = 0;
    return status;
}
