/*
 * What the engine's units share, private to them (the public face is engine.h).
 *
 * A job is a list of phases; a phase is a set of thread groups that start
 * together; each thread of a group is a worker.  The units, in the order a
 * job passes through them:
 *   names.c   the name tables of bench.h's lists
 *   job.c     parse the job tree into phases and groups, each with its engine and timed loop
 *   paths.c   open and remove below a job directory, never through a symlink
 *   setup.c   untimed phase set-up: content pools, laid-out files, small-file directories
 *   evict.c   page-cache eviction before a phase, block-device counters around it
 *   record.c  what a running phase's threads share; a worker's failure, its per-second series, file names
 *   worker.c  a worker thread: open, wait for the start, run its op's loop, close
 *   loops.h   the timed loops over an engine's synchronous operations (sequential, a list of files, random,
 *             small files), compiled into each such engine with its operations
 *   psync.c   the psync engine: pread, pwrite, the small-file calls, fsync, and its loops
 *   uring.c   the io_uring engine: a ring over the raw system calls, and its queued loops
 *   engines.c the table of engines (ioengine.h), and the null engine
 *   output.c  the result JSON
 *   run.c     run the phases and write the result (bench_run)
 * No two units use each other (tests/test_native_layout.py): the shared state is record.c's, a leaf, and
 * run.c and worker.c reach the loops only through a group's engine, chosen when the job is parsed.
 */
#ifndef IOLENS_BENCH_INTERNAL_H
#define IOLENS_BENCH_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "bench.h"
#include "engine.h"
#include "hist.h"
#include "json.h"

#define MAX_DIRS 16
#define MAX_THREADS 1024
#define MIN_POOL (32u << 20)

/* ---- job structures -------------------------------------------------------- */

typedef struct group group;
struct ioengine;

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
    const struct ioengine *eng; /* the engine's operations (ENGINES[engine]) */
    void (*run)(worker *w);     /* its timed loop for this op, chosen when the job is parsed; NULL: untimed */
    int dir;       /* index into job dirs, -1 for the null engine */
    int dirfd;
    const char *file, *prefix, *tmpl;
    const jval *files;    /* list of names */
    const jval *paths;    /* remove */
    int interleave;
    layout_kind layout;
    int threads;
    uint64_t size, bs, ops_limit, file_size, count, fanout, sync_every, iodepth;
    uint64_t segment; /* shared and strided layouts: thread t is writer (segment + t) of the file */
    uint64_t writers; /* strided layout: how many writers share the file (every process's threads) */
    uint64_t first;   /* small files: names start at index first (several processes in one directory) */
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
    /* start_at: CLOCK_REALTIME seconds the gate opens at (0: at once), shared by the processes of a multi-client
     * run; stonewall_s: every op stops that long after start_at (else after the gate), whatever its size */
    double start_at, stonewall_s;
    size_t ngroups;
    group *groups;
    /* cache facts */
    int evicted, dropped, drop_errno;
    uint64_t evicted_files, checked_bytes, resident_bytes;
    int residency_known;
    /* timing */
    uint64_t t0, t_end;
    double t0_unix; /* CLOCK_REALTIME seconds at t0 */
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

/* ---- shared state (record.c) ------------------------------------------------- */

extern volatile int g_abort; /* a worker failed: the others stop */
extern job_ctx *g_ctx;
extern int g_err_dir;        /* job dir index of the failing group */
extern uint64_t g_phase_t0;  /* absolute ns of the phase start */
extern uint64_t g_stonewall; /* absolute ns (CLOCK_MONOTONIC) every op of the phase stops at; 0: none */

/* ---- names.c: one table per X-macro list in bench.h ---- */

extern const char *const OP_NAMES[OP__COUNT];
extern const kind_t OP_KIND[OP__COUNT];
extern const io_kind OP_IO[OP__COUNT];
extern const char *const SYNC_NAMES[SYNC__COUNT];
extern const char *const LAYOUT_NAMES[LAYOUT__COUNT];
extern const char *const ENGINE_NAMES[ENGINE__COUNT];

/* ---- job.c ---------------------------------------------------------------------- */

/* Parses the whole job into ctx and *phases (allocated even on error, for the caller to free).
 * 0, or -1 with the message in err. */
int parse_job(const jval *job, job_ctx *ctx, phase **phases, size_t *nphases, char *err, size_t errlen);

/* ---- paths.c ------------------------------------------------------------------- */

int valid_component(const char *c, size_t n);
int open_beneath(int rootfd, const char *rel, int flags, mode_t mode, int mkdirs);
int remove_beneath(int rootfd, const char *rel);

/* ---- setup.c --------------------------------------------------------------------- */

int needs_pool(const group *g);
int get_pool(group *g, uint64_t seed, char *err, size_t errlen);
void free_pools(void);
int prepare_file(group *g, const char *name, uint64_t size, char *err, size_t errlen);
int open_subdirs(group *g, int create, char *err, size_t errlen);
void close_subdirs(group *g, int remove);

/* ---- evict.c --------------------------------------------------------------------- */

void evict_phase(phase *ph, job_ctx *ctx);
void devstats_sample(job_ctx *ctx, devstat *into, int *ok);

/* ---- record.c -------------------------------------------------------------------- */

void fail(worker *w, int err, const char *what, const char *path);
void series_add(worker *w, uint64_t t_rel, uint64_t bytes);
void seq_name(const group *g, int tid, char *out, size_t n);
void small_name(uint64_t i, char *out, size_t n);

/* The group's sync of fd by its engine, timed and counted; 0, or -1 after fail(). */
int sync_file(worker *w, int fd);

/* ---- worker.c -------------------------------------------------------------------- */

void *worker_main(void *arg);

/* ---- output.c --------------------------------------------------------------------- */

void write_head(jw *w);
void write_phase(jw *w, phase *ph);
void write_error_obj(jw *w, const char *phase_name, const char *op, const char *path, int err,
                     const char *message);

/* ---- the hot path, inline ---------------------------------------------------------- */

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int stopping(void) { return bench_stop_signal || g_abort; }

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

/* One file for all threads (shared or strided), not a file per thread. */
static inline int one_file(const group *g) { return g->layout != LAYOUT_per_thread; }

/* The file offset of a sequential op's byte `done` (bytes this thread has moved so far). */
static inline uint64_t seq_offset(const worker *w, uint64_t done)
{
    const group *g = w->g;
    if (g->layout != LAYOUT_strided)
        return w->base_off + done;
    uint64_t block = done / g->bs;
    return (block * g->writers + g->segment + (uint64_t)w->tid) * g->bs + done % g->bs;
}

static inline int over_time(const group *g, uint64_t t1)
{
    return (g->runtime_s > 0 && (double)(t1 - g_phase_t0) >= g->runtime_s * 1e9) || (g_stonewall && t1 >= g_stonewall);
}

static inline unsigned char *pool_slice(group *g, uint64_t *pool_off, uint64_t n)
{
    if (*pool_off + n > g->pool_len)
        *pool_off = 0;
    unsigned char *p = g->pool + *pool_off;
    *pool_off += (n + 4095) & ~4095ull;
    return p;
}

#include "ioengine.h"

#endif
