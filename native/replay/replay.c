/*
 * iolens-replay: replay a step's recorded operations on a directory.
 *
 *   iolens-replay JOB.json        result JSON on stdout (exit 0 ok, 1 failed, 2 bad job, 130 interrupted)
 *   iolens-replay --describe      op codes, classes and struct sizes, as JSON (from replay.h)
 *   iolens-replay --probe         what one block of the compute burn costs this CPU now, as JSON
 *
 * Every recorded thread becomes one thread here; a recorded process is the group of its threads, started
 * when its parent replays the SPAWN op and finished when all its threads ended (WAIT).  Pipes are not
 * replayed as data: PIPE_READ waits until the pipe's writers have written what the reader read, and
 * PIPE_WRITE until the readers are less than a pipe's capacity behind.  Files live below `root`, a fresh
 * directory named iolens-bench-* that the caller made and removes; paths are opened with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, so nothing outside it is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../bench/bench.h"
#include "../bench/json.h"
#include "replay.h"

/* A dependency the trace cannot satisfy is given up when every live thread has been waiting for 10 s: no
 * thread can satisfy it then.  Not 10 s of one thread's wait: on slow storage a shell spawns its next child
 * after a loop of tens of seconds, and the child's thread, given up early, would run ahead of its parent. */
#define DEP_TIMEOUT_NS 10000000000ull /* the job's "dependency_timeout_s" when it has one */
static uint64_t dep_timeout_ns = DEP_TIMEOUT_NS;
#define IOBUF (1u << 20)
#define BURN_MIN_NS 2000 /* shorter gaps are only waited out: reading the thread's CPU clock costs ~0.5 us */
#define OWN_MAX_NS 2000  /* a thread past its gap by less was held up by the replayer's own work between ops */

static const char *const OP_NAMES[] = {
#define RP_X_OP(n, c, d) #n,
    RP_OPS(RP_X_OP)
#undef RP_X_OP
};
static const int OP_CLASS[] = {
#define RP_X_OP(n, c, d) RP_CLASS_##c,
    RP_OPS(RP_X_OP)
#undef RP_X_OP
};
static const char *const OP_DOCS[] = {
#define RP_X_OP(n, c, d) d,
    RP_OPS(RP_X_OP)
#undef RP_X_OP
};
static const char *const CLASS_NAMES[] = {
#define RP_X_CLASS(n) #n,
    RP_CLASSES(RP_X_CLASS)
#undef RP_X_CLASS
};
static const char *const CONTENTS[] = {
#define X(n, d) #n,
    BENCH_CONTENTS(X)
#undef X
};

struct rfile {
    char *path;       /* below the replay root: how the layout names it */
    const char *name; /* how the timed ops name it: below the mirrored working directory (at) when it is there */
    int at;           /* R.rootfd or R.cwdfd */
    int dir;
    int64_t layout; /* bytes to lay out before the replay; -1: not laid out */
    int content;
};

struct handle {
    pthread_mutex_t mu;
    int fd, refs, file, listed;
    int dups[RP_DUPS], ndup;  /* descriptors DUP made, closed first by the handle's closes */
    int read_only;            /* the step only read through it: opened O_RDONLY, without O_CREAT */
    uint64_t rlo, rhi;        /* stdio read buffer window */
    uint64_t woff, wlen;      /* stdio write buffer */
};

struct rthread {
    pthread_t th;
    uint32_t proc;
    size_t first, n; /* its ops */
    uint64_t cls_ns[RP_NCLASS], errors, dep_timeouts, ops;
    int first_errno, first_op; /* the first failed op of this thread, and why */
    /* where its time went, for comparing with the trace's per-thread timeline (see the result's "threads") */
    uint64_t begin_ns, end_ns; /* first op start and last op end, since the replay started */
    uint64_t gap_ns;           /* waited for recorded compute gaps */
    uint64_t late_ns;          /* reached an op after its recorded gap had already passed (behind schedule) */
    uint64_t dep_ns;           /* waited for another thread (process start, wait, pipes) */
    uint64_t busy_ns;          /* inside file operations */
    uint64_t cpu_ns;           /* compute burnt on the CPU for the on-CPU share of the gaps (thread CPU time) */
    uint64_t blocks;           /* of it, burn blocks burnt as work (the job's cpu_ns_per_block) */
    uint64_t own_ns;           /* the replayer's own time between ops, taken back from later gaps */
    uint64_t owed_ns;          /* the replayer's own time not yet taken back (late when the thread ends) */
    double cpu_share;          /* the share of each recorded gap that was on the CPU (from the capture's CPU times) */
    double wait_share;         /* the share of the rest that was a real wait, not preemption (1: all of it) */
    int copy_fd;               /* the source of the thread's next COPY (set by COPY_FROM), or -1 */
    int watched;               /* an AFTER op of another thread waits for its progress */
    size_t next;               /* (atomic) the index of its next op: every op before it is done */
    size_t wake_at;            /* (atomic; set under R.mu) the lowest op index an AFTER waits for, or SIZE_MAX */
    pthread_cond_t cv;         /* the AFTER ops of other threads wait on it for its progress */
    uint64_t copy_off;
};

struct proc {
    int started, done;
    uint64_t start_ns;
    int threads_left;
    pthread_cond_t cv; /* its threads wait on it for its start, its parent for its end */
};

static struct {
    int rootfd;
    int cwdfd; /* the step's working directory mirrored below the root; -1: none */
    int speed_max;
    double ns_per_block; /* the capture's cost of a burn block (the job's cpu_ns_per_block); 0: burn by time */
    struct rfile *files;
    size_t nfiles;
    struct handle *handles;
    size_t nhandles;
    struct rthread *threads;
    size_t nthreads;
    struct proc *procs;
    size_t nprocs;
    uint64_t *pipe_w, *pipe_r;
    pthread_cond_t *pipe_cv; /* a pipe's readers and writers wait on it for each other */
    size_t npipes;
    struct rp_op *ops;
    size_t nops;
    struct rp_log *log;
    uint64_t t0;
    pthread_mutex_t mu; /* every dependency is waited for under it, each on the condition of what it waits for */
    size_t live, waiting; /* under mu: threads not yet ended, and those of them in wait_until */
    unsigned char *wpool;
} R;

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ts_of(uint64_t ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* Wait until `deadline`: sleep for long gaps, spin for the last stretch (compute gaps are CPU time).
 * Returns how late the thread already was (0 when it had to wait); *at: the time it returned. */
static uint64_t pace(uint64_t deadline, uint64_t *at)
{
    uint64_t t0 = now_ns();
    *at = t0;
    if (t0 >= deadline) return t0 - deadline;
    for (;;) {
        uint64_t t = now_ns();
        *at = t;
        if (t >= deadline || stop_signal) return 0;
        uint64_t left = deadline - t;
        if (left > 200000) {
            struct timespec ts;
            uint64_t until = deadline - 100000;
            if (until - t > 50000000) until = t + 50000000; /* notice a stop within 50 ms */
            ts_of(until, &ts);
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        }
    }
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One block of the compute burn: RP_BURN_BLOCK dependent multiply-adds (the probe times the same code). */
static inline uint64_t burn_block(uint64_t x)
{
    for (int i = 0; i < RP_BURN_BLOCK; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

/* Burn `ns` of this thread's CPU time: the on-CPU share of a compute gap is replayed as compute, so it competes
 * for the CPUs as the recorded step's did (a sleep would not: on a loaded machine the real step slows, a sleeping
 * replay does not).  With the capture's cost of a block (R.ns_per_block) the burn is that work, ns / cost blocks,
 * however long they take now; without, it is measured on the thread's CPU clock.  Either way time spent runnable
 * but not running is not counted and the burn takes longer when the CPUs are busy, as the step would.  Returns
 * the CPU time burnt; counts the blocks burnt by work in *blocks. */
static uint64_t burn(uint64_t ns, uint64_t *blocks)
{
    uint64_t c0 = thread_cpu_ns(), c = c0;
    static volatile uint64_t sink;
    if (R.ns_per_block > 0) {
        uint64_t n = (uint64_t)((double)ns / R.ns_per_block + 0.5), x = sink;
        for (uint64_t i = 0; i < n && !stop_signal; i++) x = burn_block(x);
        sink = x;
        *blocks += n;
        return thread_cpu_ns() - c0;
    }
    while (c - c0 < ns && !stop_signal) {
        sink = burn_block(sink);
        c = thread_cpu_ns();
    }
    return c - c0;
}

/* `iolens-replay --probe`: the median CPU time of one burn block over 9 samples of about 2 ms each (after one
 * untimed), on this thread's CPU clock, read once every CHUNK blocks (about 0.4 ms: a read costs ~0.5 us, which
 * at every 64 blocks made a block look 1.5% dearer than a replay's burn, which reads the clock twice a burn). */
static int probe(void)
{
    enum { SAMPLES = 9, CHUNK = 1024 };
    static volatile uint64_t sink;
    double per[SAMPLES];
    for (int s = -1; s < SAMPLES; s++) {
        uint64_t c0 = thread_cpu_ns(), c = c0, n = 0, x = sink;
        while (c - c0 < 2000000) {
            for (int i = 0; i < CHUNK; i++) x = burn_block(x);
            n += CHUNK;
            c = thread_cpu_ns();
        }
        sink = x;
        if (s >= 0) per[s] = (double)(c - c0) / (double)n;
    }
    for (int i = 1; i < SAMPLES; i++) /* insertion sort */
        for (int j = i; j > 0 && per[j] < per[j - 1]; j--) {
            double t = per[j];
            per[j] = per[j - 1];
            per[j - 1] = t;
        }
    jw w;
    jw_init(&w, stdout);
    jw_obj(&w, NULL);
    jw_str(&w, "tag", "iolens-replay-probe");
    jw_int(&w, "loop", RP_BURN_LOOP);
    jw_num(&w, "ns_per_block", per[SAMPLES / 2]);
    jw_end_obj(&w);
    fputc('\n', stdout);
    return 0;
}

/* ---- dependencies ------------------------------------------------------------------------------- */

/* Wakes the threads waiting on one process, pipe or thread.  Each waits on the condition of what it waits for,
 * not on one for all: a broadcast to every waiting thread at each process start and end woke a shell loop's
 * children, all waiting for their own start, each time one of them started or ended (40 processes replayed
 * 0.2-0.3 ms late each, a spawn taking 0.2 ms of the parent's time). */
static void wake(pthread_cond_t *cv)
{
    pthread_mutex_lock(&R.mu);
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(&R.mu);
}

/* Waits (under R.mu, on cv) until ready(arg) or the time-out; returns 0 when ready, -1 on time-out or stop.  It
 * looks again every 50 ms, for a stop and for the time-out: when all live threads wait. */
static int wait_until(int (*ready)(const struct rp_op *), const struct rp_op *o, pthread_cond_t *cv)
{
    uint64_t stalled = 0; /* since when every live thread has been waiting (0: not all are) */
    int ok = 0;
    pthread_mutex_lock(&R.mu);
    R.waiting++;
    while (!(ok = ready(o))) {
        uint64_t t = now_ns();
        if (R.waiting < R.live) stalled = 0;
        else if (!stalled) stalled = t;
        if ((stalled && t - stalled >= dep_timeout_ns) || stop_signal) break;
        struct timespec ts;
        ts_of(t + 50000000, &ts);
        pthread_cond_timedwait(cv, &R.mu, &ts);
    }
    R.waiting--;
    pthread_mutex_unlock(&R.mu);
    return ok ? 0 : -1;
}

static int proc_started(const struct rp_op *o) { return R.procs[o->obj].started; }
static int proc_done(const struct rp_op *o) { return R.procs[o->obj].done; }
static int pipe_written(const struct rp_op *o)
{
    return __atomic_load_n(&R.pipe_w[o->obj], __ATOMIC_ACQUIRE) >= o->offset;
}
/* Under R.mu.  Asks the thread to wake the waiters once it passes the op (a broadcast after every op of a thread
 * that others wait for woke all of them thousands of times, and their wake-ups took the CPU from the burns), and
 * only then looks: either the thread sees the request or this sees its progress. */
static int thread_reached(const struct rp_op *o)
{
    struct rthread *w = &R.threads[o->obj];
    if (o->offset < __atomic_load_n(&w->wake_at, __ATOMIC_SEQ_CST))
        __atomic_store_n(&w->wake_at, (size_t)o->offset, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&w->next, __ATOMIC_SEQ_CST) > o->offset;
}

/* After a watched thread's op: wakes the waiters when it passed the op one of them waits for. */
static void passed(struct rthread *t, size_t next)
{
    __atomic_store_n(&t->next, next, __ATOMIC_SEQ_CST);
    if (next <= __atomic_load_n(&t->wake_at, __ATOMIC_SEQ_CST)) return;
    pthread_mutex_lock(&R.mu);
    __atomic_store_n(&t->wake_at, SIZE_MAX, __ATOMIC_SEQ_CST); /* those still waiting ask again */
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&R.mu);
}
static int pipe_read(const struct rp_op *o) { return __atomic_load_n(&R.pipe_r[o->obj], __ATOMIC_ACQUIRE) >= o->offset; }

/* ---- files -------------------------------------------------------------------------------------- */

/* Grows the descriptor table to hold n descriptors and a margin, while the replayer has one thread.  The kernel grows it
 * (doubling, from 64) when a descriptor number first passes its size, and in a process with several threads each
 * growth waits for an RCU grace period (expand_fdtable), 8-18 ms here, at the 256th, 512th and 1,024th file held
 * open.  The replayed step never paid that: each of its processes had its own table, and one replayer process holds
 * the descriptors of all of them (a shell that created 2,000 files stalled three times per replay). */
static void presize_fdtable(size_t n)
{
    struct rlimit rl;
    if (n == 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    size_t top = n + 64;
    if (rl.rlim_cur != RLIM_INFINITY && top >= rl.rlim_cur) top = rl.rlim_cur - 1;
    int fd = fcntl(R.rootfd, F_DUPFD_CLOEXEC, (int)top);
    if (fd >= 0) close(fd);
}

static int open_at(int at, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW), .mode = (flags & O_CREAT) ? mode : 0,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, at, rel, &how, sizeof how);
    return (int)fd;
}

static int open_rel(const char *rel, int flags, mode_t mode) { return open_at(R.rootfd, rel, flags, mode); }

/* A file as the step's timed ops name it: a name below the working directory is looked up from there, as a step
 * given relative names looks it up, not component by component from the replay root (a shell's 2,000 creates of
 * sf/fN from a name three directories deeper cost the replay 1.3 us more each, 15% of the step). */
static int open_file(const struct rfile *f, int flags, mode_t mode) { return open_at(f->at, f->name, flags, mode); }

/* Opens the handle's file as the step did: a directory to list, a file it only read read-only (made when it is
 * not there yet, as a replay whose order is inferred may need), else read-write and created when missing. */
static int open_handle(const struct handle *h, const struct rfile *f, int trunc)
{
    if (f->dir) return open_file(f, O_RDONLY | O_DIRECTORY, 0);
    if (h->read_only) {
        int fd = open_file(f, O_RDONLY, 0);
        if (fd >= 0 || errno != ENOENT) return fd;
    }
    int fd = open_file(f, O_RDWR | O_CREAT | (trunc ? O_TRUNC : 0), 0644);
    return fd < 0 && errno == EISDIR ? open_file(f, O_RDONLY | O_DIRECTORY, 0) : fd;
}

static int handle_fd(struct handle *h, int trunc)
{
    if (h->fd >= 0) return h->fd;
    struct rfile *f = &R.files[h->file];
    h->fd = open_handle(h, f, trunc);
    h->rlo = h->rhi = 0;
    h->listed = 0;
    return h->fd;
}

static int do_pread(int fd, unsigned char *buf, uint64_t size, uint64_t off)
{
    while (size) {
        size_t n = size > IOBUF ? IOBUF : (size_t)size;
        ssize_t r = pread(fd, buf, n, (off_t)off);
        if (r < 0) return -1;
        if (r == 0) return 0; /* past the end: the recorded file was larger than its layout */
        size -= (uint64_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static int do_pwrite(int fd, uint64_t size, uint64_t off)
{
    while (size) {
        size_t n = size > IOBUF ? IOBUF : (size_t)size;
        ssize_t r = pwrite(fd, R.wpool, n, (off_t)off);
        if (r <= 0) return -1;
        size -= (uint64_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* A copy between two files, as copy_file_range does it (on btrfs or NFS that is not a read and a write: clones,
 * server-side copies); pread and pwrite where the kernel cannot copy between these two files. */
static int do_copy(int in, uint64_t ioff, int out, uint64_t ooff, uint64_t size, unsigned char *buf)
{
    if (size == 0) { /* the call that found the end of the source */
        int64_t i = (int64_t)ioff, o = (int64_t)ooff;
        return syscall(SYS_copy_file_range, in, &i, out, &o, 0, 0) < 0 && errno != EXDEV && errno != EINVAL ? -1 : 0;
    }
    while (size) {
        int64_t i = (int64_t)ioff, o = (int64_t)ooff;
        long r = syscall(SYS_copy_file_range, in, &i, out, &o, (size_t)size, 0);
        if (r == 0) return 0; /* past the end: the recorded source was larger than its layout */
        if (r < 0) {
            if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return -1;
            while (size) {
                size_t n = size > IOBUF ? IOBUF : (size_t)size;
                ssize_t got = pread(in, buf, n, (off_t)ioff);
                if (got <= 0) return got < 0 ? -1 : 0;
                if (pwrite(out, buf, (size_t)got, (off_t)ooff) != got) return -1;
                size -= (uint64_t)got;
                ioff += (uint64_t)got;
                ooff += (uint64_t)got;
            }
            return 0;
        }
        size -= (uint64_t)r;
        ioff += (uint64_t)r;
        ooff += (uint64_t)r;
    }
    return 0;
}

static int drain(struct handle *h)
{
    int rc = 0;
    if (h->wlen && h->fd >= 0) rc = do_pwrite(h->fd, h->wlen, h->woff);
    h->wlen = 0;
    return rc;
}

/* Runs one file operation; returns 0 or -1 (errno set).  The handle lock is held by the caller. */
static int file_op(const struct rp_op *o, struct handle *h, unsigned char *buf)
{
    int fd;
    switch (o->op) {
    case RP_OP_OPEN: {
        if (h->fd >= 0) { /* opened again: pay for the open, keep one descriptor */
            struct rfile *f = &R.files[h->file];
            int fd2 = open_handle(h, f, 0);
            if (fd2 >= 0) close(fd2);
            h->listed = 0;
            h->refs++;
            return fd2 < 0 ? -1 : 0;
        }
        h->refs++;
        return handle_fd(h, (int)(o->flags & 1)) < 0 ? -1 : 0;
    }
    case RP_OP_CLOSE: /* a close of a copy is a close too: a flush on FUSE and NFS */
        if (h->fd < 0) return 0;
        if (--h->refs > 0) {
            if (h->ndup) close(h->dups[--h->ndup]);
            return 0;
        }
        drain(h);
        while (h->ndup) close(h->dups[--h->ndup]);
        close(h->fd);
        h->fd = -1;
        h->refs = 0;
        return 0;
    case RP_OP_DUP:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        h->refs++;
        if (h->ndup < RP_DUPS) {
            int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
            if (d < 0) return -1;
            h->dups[h->ndup++] = d;
        }
        return 0;
    case RP_OP_READ:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        return do_pread(fd, buf, o->size, o->offset);
    case RP_OP_FSTAT: {
        struct stat st;
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        return fstat(fd, &st);
    }
    case RP_OP_WRITE:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        return do_pwrite(fd, o->size, o->offset);
    case RP_OP_SREAD:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        if (o->offset >= h->rlo && o->offset + o->size <= h->rhi) return 0;
        if (o->size >= RP_STREAM_BUF) {
            h->rlo = h->rhi = 0;
            return do_pread(fd, buf, o->size, o->offset);
        }
        {
            uint64_t from = o->offset >= h->rlo && o->offset < h->rhi ? h->rhi : o->offset;
            uint64_t need = o->offset + o->size - from;
            uint64_t n = need > RP_STREAM_BUF ? need : RP_STREAM_BUF;
            h->rlo = from;
            h->rhi = from + n;
            return do_pread(fd, buf, n, from);
        }
    case RP_OP_SWRITE:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        if (h->wlen && o->offset != h->woff + h->wlen && drain(h)) return -1;
        if (!h->wlen) h->woff = o->offset;
        h->wlen += o->size;
        if (h->wlen >= RP_STREAM_BUF) {
            uint64_t whole = h->wlen - h->wlen % RP_STREAM_BUF;
            if (do_pwrite(fd, whole, h->woff)) return -1;
            h->woff += whole;
            h->wlen -= whole;
        }
        return 0;
    case RP_OP_SFLUSH:
        return h->fd >= 0 ? drain(h) : 0;
    case RP_OP_FSYNC:
    case RP_OP_FDATASYNC:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        drain(h);
        return o->op == RP_OP_FSYNC ? fsync(fd) : fdatasync(fd);
    case RP_OP_READDIR: {
        if (h->listed) return 0;
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        h->listed = 1;
        lseek(fd, 0, SEEK_SET);
        long r;
        while ((r = syscall(SYS_getdents64, fd, buf, IOBUF)) > 0) {
        }
        return r < 0 ? -1 : 0;
    }
    default: return 0;
    }
}

static int path_op(const struct rp_op *o)
{
    struct rfile *f = &R.files[o->obj];
    struct stat st;
    switch (o->op) {
    case RP_OP_STAT: return fstatat(f->at, f->name, &st, AT_SYMLINK_NOFOLLOW);
    case RP_OP_UNLINK:
        if (unlinkat(f->at, f->name, 0) == 0) return 0;
        return (errno == EISDIR || errno == EPERM) ? unlinkat(f->at, f->name, AT_REMOVEDIR) : -1;
    case RP_OP_MKDIR: return mkdirat(f->at, f->name, 0755) == 0 || errno == EEXIST ? 0 : -1;
    case RP_OP_RENAME: {
        const struct rfile *to = o->size && o->size - 1 < R.nfiles ? &R.files[o->size - 1] : f;
        return renameat(f->at, f->name, to->at, to->name);
    }
    case RP_OP_SYNCFS: return syncfs(R.rootfd);
    default: return 0;
    }
}

/* ---- the thread loop ---------------------------------------------------------------------------- */

static void *thread_main(void *arg)
{
    struct rthread *t = arg;
    unsigned char *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, IOBUF)) return NULL;
    uint64_t prev_end = R.t0;
    t->begin_ns = now_ns() - R.t0;
    t->copy_fd = -1;
    for (size_t i = t->first; i < t->first + t->n && !stop_signal; i++) {
        const struct rp_op *o = &R.ops[i];
        if (o->op == RP_OP_START) {
            if (wait_until(proc_started, o, &R.procs[o->obj].cv)) t->dep_timeouts++; /* not counted as waiting */
            prev_end = R.procs[o->obj].start_ns ? R.procs[o->obj].start_ns : now_ns();
            t->begin_ns = prev_end - R.t0;
        } else if (o->op == RP_OP_AFTER) { /* the other thread's progress first, then the gap from there */
            uint64_t d0 = now_ns();
            if (wait_until(thread_reached, o, &R.threads[o->obj].cv)) t->dep_timeouts++;
            prev_end = now_ns();
            t->dep_ns += prev_end - d0;
        }
        uint64_t a;
        if (!R.speed_max) {
            uint64_t p0 = now_ns();
            /* The replayer's own time between two operations (its loop, its clock reads, the log) is not the
             * step's: what of it ran past an op's gap is owed, and taken back from the next gaps it fits in. */
            uint64_t gap = o->gap;
            if (o->op != RP_OP_START && o->op != RP_OP_AFTER && t->owed_ns) {
                uint64_t back = t->owed_ns < gap ? t->owed_ns : gap;
                gap -= back;
                t->owed_ns -= back;
                t->own_ns += back;
            }
            /* The gap's on-CPU share is burnt as compute (a burn slowed by other work makes the thread late); of
             * the rest, off the CPU, the share taken as real waits (untraced waits, page faults) is waited out
             * after it, and the share taken as preemption while recording (waiting for a CPU) is not: the burn
             * meets today's contention instead.  cpu_share 0 and wait_share 1 keep the recorded gap as a wait.
             * A SPAWN's gap holds its child's start-up and a root's START gap its own (exec, dynamic loading):
             * their size is that start-up's CPU, burnt instead of the thread's share. */
            uint64_t on = o->op == RP_OP_SPAWN || o->op == RP_OP_START ? (o->size < gap ? o->size : gap)
                          : o->op == RP_OP_AFTER                     ? 0
                                                                     : (uint64_t)((double)gap * t->cpu_share);
            uint64_t deadline = prev_end + gap;
            int burnt = on > 0 && gap >= BURN_MIN_NS;
            if (burnt) {
                t->cpu_ns += burn(on, &t->blocks);
                uint64_t b = now_ns();
                if (b > prev_end + on) t->late_ns += b - (prev_end + on);
                deadline = (b > prev_end + on ? b : prev_end + on) + (uint64_t)((double)(gap - on) * t->wait_share);
            } else if (t->wait_share < 1 && o->op != RP_OP_START && o->op != RP_OP_AFTER) {
                /* a thread's start, and the time after another thread's progress, are waited out whole */
                deadline = prev_end + (uint64_t)((double)gap * t->wait_share);
            }
            uint64_t late = pace(deadline, &a);
            /* Past a gap with nothing burnt, a short delay is the replayer's own time (owed); a long one is the
             * thread's, kept as late (preempted, or a thread start waited for). */
            uint64_t owed = burnt || o->op == RP_OP_START || o->op == RP_OP_AFTER ? 0 : late < OWN_MAX_NS ? late : 0;
            t->owed_ns += owed;
            t->late_ns += late - owed;
            t->gap_ns += a - p0;
        } else {
            a = now_ns();
        }
        int rc = 0, cls = o->op < RP_NOPS ? OP_CLASS[o->op] : RP_CLASS_NONE;
        switch (o->op) {
        case RP_OP_START:
        case RP_OP_AFTER:
        case RP_OP_EXIT: break;
        case RP_OP_SPAWN:
            pthread_mutex_lock(&R.mu);
            R.procs[o->obj].started = 1;
            R.procs[o->obj].start_ns = a;
            pthread_cond_broadcast(&R.procs[o->obj].cv);
            pthread_mutex_unlock(&R.mu);
            break;
        case RP_OP_WAIT:
            if (wait_until(proc_done, o, &R.procs[o->obj].cv)) t->dep_timeouts++;
            break;
        case RP_OP_PIPE_READ:
            if (wait_until(pipe_written, o, &R.pipe_cv[o->obj])) t->dep_timeouts++;
            __atomic_fetch_add(&R.pipe_r[o->obj], o->size, __ATOMIC_ACQ_REL);
            wake(&R.pipe_cv[o->obj]);
            break;
        case RP_OP_PIPE_WRITE:
            if (wait_until(pipe_read, o, &R.pipe_cv[o->obj])) t->dep_timeouts++;
            __atomic_fetch_add(&R.pipe_w[o->obj], o->size, __ATOMIC_ACQ_REL);
            wake(&R.pipe_cv[o->obj]);
            break;
        case RP_OP_STAT:
        case RP_OP_UNLINK:
        case RP_OP_MKDIR:
        case RP_OP_RENAME:
        case RP_OP_SYNCFS: rc = path_op(o); break;
        case RP_OP_COPY_FROM: {
            struct handle *h = &R.handles[o->obj];
            pthread_mutex_lock(&h->mu);
            t->copy_fd = handle_fd(h, 0);
            pthread_mutex_unlock(&h->mu);
            t->copy_off = o->offset;
            rc = t->copy_fd < 0 ? -1 : 0;
            break;
        }
        case RP_OP_COPY: {
            struct handle *h = &R.handles[o->obj];
            pthread_mutex_lock(&h->mu);
            int fd = handle_fd(h, 0);
            rc = fd < 0 || t->copy_fd < 0 ? -1 : do_copy(t->copy_fd, t->copy_off, fd, o->offset, o->size, buf);
            pthread_mutex_unlock(&h->mu);
            t->copy_fd = -1;
            break;
        }
        default: {
            struct handle *h = &R.handles[o->obj];
            pthread_mutex_lock(&h->mu);
            rc = file_op(o, h, buf);
            pthread_mutex_unlock(&h->mu);
        }
        }
        uint64_t b = now_ns();
        if (rc) {
            if (!t->errors++) {
                t->first_errno = errno;
                t->first_op = (int)o->op;
            }
        }
        t->cls_ns[cls] += b - a;
        if (cls == RP_CLASS_STREAM || o->op == RP_OP_WAIT) t->dep_ns += b - a;
        else if (cls != RP_CLASS_NONE) t->busy_ns += b - a;
        t->ops++;
        if (R.log) R.log[i] = (struct rp_log){.start = a - R.t0, .end = b - R.t0, .op = o->op, .thread = o->thread};
        prev_end = b;
        if (t->watched) passed(t, i + 1);
    }
    passed(t, t->first + t->n); /* ended, or stopped: nobody waits on it */
    t->late_ns += t->owed_ns;   /* what no later gap could take back */
    t->end_ns = now_ns() - R.t0;
    free(buf);
    pthread_mutex_lock(&R.mu);
    R.live--;
    struct proc *p = &R.procs[t->proc];
    if (--p->threads_left <= 0) p->done = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&R.mu);
    return NULL;
}

/* ---- job ---------------------------------------------------------------------------------------- */

static int bad_job(const char *msg, const char *what)
{
    jw w;
    jw_init(&w, stdout);
    jw_obj(&w, NULL);
    jw_str(&w, "tag", "iolens-replay-result");
    jw_str(&w, "status", "error");
    char m[512];
    snprintf(m, sizeof m, "%s%s%s", msg, what ? ": " : "", what ? what : "");
    jw_str(&w, "message", m);
    jw_end_obj(&w);
    fputc('\n', stdout);
    return 2;
}

static int safe_rel(const char *p)
{
    if (!p || !*p || p[0] == '/') return 0;
    for (const char *c = p; *c;) {
        const char *s = strchr(c, '/');
        size_t n = s ? (size_t)(s - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) return 0;
        c = s ? s + 1 : c + n;
    }
    return 1;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[n] = 0;
    if (len) *len = (size_t)n;
    return b;
}

/* Makes every directory of `rel` below the root that is not there: its parents, and with `whole` itself. */
static int make_dirs(const char *rel, int whole, char *err, size_t errlen)
{
    char *p = strdup(rel);
    for (char *s = p;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        if (!c && !whole) break;
        *s = 0;
        if (mkdirat(R.rootfd, p, 0755) && errno != EEXIST) {
            snprintf(err, errlen, "mkdir %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        *s = c;
        if (!c) break;
    }
    free(p);
    return 0;
}

/* The step's working directory below the root (made if the layout did not), and every file below it named from
 * there (open_file).  Untimed. */
static int mirror_cwd(const char *cwd, char *err, size_t errlen)
{
    if (make_dirs(cwd, 1, err, errlen)) return -1;
    R.cwdfd = open_rel(cwd, O_RDONLY | O_DIRECTORY, 0);
    if (R.cwdfd < 0) {
        snprintf(err, errlen, "open %s: %s", cwd, strerror(errno));
        return -1;
    }
    size_t n = strlen(cwd);
    for (size_t i = 0; i < R.nfiles; i++) {
        struct rfile *f = &R.files[i];
        if (!strncmp(f->path, cwd, n) && f->path[n] == '/' && f->path[n + 1]) {
            f->at = R.cwdfd;
            f->name = f->path + n + 1;
        }
    }
    return 0;
}

/* Creates every file's parent directories, directories, and the laid-out files (untimed). */
static int layout(int cold, char *err, size_t errlen)
{
    unsigned char *pool[CONTENT__COUNT] = {0};
    for (size_t i = 0; i < R.nfiles; i++) {
        struct rfile *f = &R.files[i];
        if (make_dirs(f->path, 0, err, errlen)) return -1;
        if (f->dir) {
            if (f->layout >= 0 && mkdirat(R.rootfd, f->path, 0755) && errno != EEXIST) {
                snprintf(err, errlen, "mkdir %s: %s", f->path, strerror(errno));
                return -1;
            }
            continue;
        }
        if (f->layout < 0) continue;
        int fd = open_rel(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "create %s: %s", f->path, strerror(errno));
            return -1;
        }
        if (!pool[f->content] && content_pool((content_kind)f->content, NULL, IOBUF * 4, 7 + (uint64_t)f->content,
                                              &pool[f->content], err, errlen)) {
            close(fd);
            return -1;
        }
        uint64_t left = (uint64_t)f->layout, off = 0;
        while (left && !stop_signal) {
            size_t n = left > IOBUF * 4 ? IOBUF * 4 : (size_t)left;
            ssize_t r = pwrite(fd, pool[f->content], n, (off_t)off);
            if (r <= 0) {
                snprintf(err, errlen, "write %s: %s", f->path, r < 0 ? strerror(errno) : "short write");
                close(fd);
                return -1;
            }
            left -= (uint64_t)r;
            off += (uint64_t)r;
        }
        if (cold) {
            fdatasync(fd);
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        }
        close(fd);
    }
    for (int k = 0; k < CONTENT__COUNT; k++) free(pool[k]);
    /* The layout's dirty pages would otherwise be written back while the replay is timed, and a warm replay on
     * a disk would pay for the layout; they stay in the page cache. */
    if (!cold) syncfs(R.rootfd);
    return stop_signal ? -1 : 0;
}

static void describe(void)
{
    jw w;
    jw_init(&w, stdout);
    jw_obj(&w, NULL);
    jw_str(&w, "tag", "iolens-replay-describe");
    jw_arr(&w, "schema_version");
    jw_int(&w, NULL, RP_SCHEMA_MAJOR);
    jw_int(&w, NULL, RP_SCHEMA_MINOR);
    jw_end_arr(&w);
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
    for (int i = 0; i < CONTENT__COUNT; i++) jw_str(&w, NULL, CONTENTS[i]);
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

int main(int argc, char **argv)
{
    uint64_t main0 = now_ns();
    if (argc == 2 && !strcmp(argv[1], "--describe")) {
        describe();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--probe")) return probe();
    if (argc != 2) {
        fprintf(stderr, "usage: iolens-replay JOB.json | --describe | --probe\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    char err[512];
    char *text = slurp(argv[1], NULL);
    if (!text) return bad_job("cannot read the job", argv[1]);
    jval *job = json_parse(text, err, sizeof err);
    free(text);
    if (!job) return bad_job("the job is not JSON", err);
    const char *bad = NULL;
    const char *root = json_str(job, "root", NULL, &bad);
    const char *base = root ? strrchr(root, '/') : NULL;
    if (!root || root[0] != '/' || !base || strncmp(base + 1, "iolens-bench-", 13))
        return bad_job("root must be an absolute iolens-bench-* directory", root);
    R.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (R.rootfd < 0) return bad_job("cannot open root", strerror(errno));
    R.cwdfd = -1;
    const char *cwd = json_str(job, "cwd", "", &bad);
    if (*cwd && !safe_rel(cwd)) return bad_job("unsafe working directory", cwd);
    R.speed_max = !strcmp(json_str(job, "speed", "recorded", &bad), "max");
    int cold = !strcmp(json_str(job, "cache", "warm", &bad), "cold");
    R.ns_per_block = json_num(job, "cpu_ns_per_block", 0, &bad);
    if (!(R.ns_per_block > 0 && R.ns_per_block < 1e6)) R.ns_per_block = 0;

    const jval *files = json_get(job, "files");
    R.nfiles = json_len(files);
    R.files = calloc(R.nfiles + 1, sizeof *R.files);
    for (size_t i = 0; i < R.nfiles; i++) {
        const jval *f = json_at(files, i);
        const char *p = json_str(f, "path", NULL, &bad);
        if (!safe_rel(p)) return bad_job("unsafe file path", p);
        R.files[i].path = strdup(p);
        R.files[i].name = R.files[i].path;
        R.files[i].at = R.rootfd;
        R.files[i].dir = json_bool(f, "dir", 0, &bad);
        R.files[i].layout = (int64_t)json_num(f, "layout", -1, &bad);
        const char *c = json_str(f, "content", "random", &bad);
        for (int k = 0; k < CONTENT__COUNT; k++)
            if (!strcmp(c, CONTENTS[k]) && k != CONTENT_template) R.files[i].content = k;
    }
    const jval *handles = json_get(job, "handles");
    R.nhandles = json_len(handles);
    R.handles = calloc(R.nhandles + 1, sizeof *R.handles);
    for (size_t i = 0; i < R.nhandles; i++) {
        double fi = json_num(json_at(handles, i), "file", -1, &bad);
        if (fi < 0 || fi >= (double)R.nfiles) return bad_job("a handle names no file", NULL);
        R.handles[i].file = (int)fi;
        R.handles[i].read_only = json_bool(json_at(handles, i), "read_only", 0, &bad);
        R.handles[i].fd = -1;
        pthread_mutex_init(&R.handles[i].mu, NULL);
    }
    const jval *threads = json_get(job, "threads");
    R.nthreads = json_len(threads);
    double dto = json_num(job, "dependency_timeout_s", (double)DEP_TIMEOUT_NS / 1e9, &bad);
    if (dto > 0) dep_timeout_ns = (uint64_t)(dto * 1e9);
    R.nprocs = (size_t)json_num(job, "processes", 0, &bad);
    R.npipes = (size_t)json_num(job, "pipes", 0, &bad);
    R.threads = calloc(R.nthreads + 1, sizeof *R.threads);
    R.procs = calloc(R.nprocs + 1, sizeof *R.procs);
    R.pipe_w = calloc(R.npipes + 1, sizeof *R.pipe_w);
    R.pipe_r = calloc(R.npipes + 1, sizeof *R.pipe_r);
    R.pipe_cv = calloc(R.npipes + 1, sizeof *R.pipe_cv);
    for (size_t i = 0; i < R.nthreads; i++) {
        double p = json_num(json_at(threads, i), "process", -1, &bad);
        if (p < 0 || p >= (double)R.nprocs) return bad_job("a thread names no process", NULL);
        R.threads[i].proc = (uint32_t)p;
        R.threads[i].wake_at = SIZE_MAX;
        double share = json_num(json_at(threads, i), "cpu_share", 0, &bad);
        R.threads[i].cpu_share = share < 0 ? 0 : share > 1 ? 1 : share;
        double ws = json_num(json_at(threads, i), "wait_share", 1, &bad);
        R.threads[i].wait_share = ws < 0 ? 0 : ws > 1 ? 1 : ws;
        R.procs[(size_t)p].threads_left++;
    }
    const jval *roots = json_get(job, "roots");
    for (size_t i = 0; i < json_len(roots); i++) {
        double p = json_at(roots, i)->num;
        if (p >= 0 && p < (double)R.nprocs) R.procs[(size_t)p].started = 1;
    }
    if (bad) return bad_job("a job field has the wrong type", bad);

    size_t olen = 0;
    R.ops = (struct rp_op *)slurp(json_str(job, "ops", "", &bad), &olen);
    if (!R.ops || olen % sizeof(struct rp_op)) return bad_job("cannot read the op list", json_str(job, "ops", "", &bad));
    R.nops = olen / sizeof(struct rp_op);
    for (size_t i = 0; i < R.nops; i++) {
        const struct rp_op *o = &R.ops[i];
        if (o->op >= RP_NOPS || o->thread >= R.nthreads || (i && o->thread < R.ops[i - 1].thread))
            return bad_job("the op list is damaged or not grouped by thread", NULL);
        uint32_t lim = 0;
        switch (o->op) {
        case RP_OP_START: case RP_OP_SPAWN: case RP_OP_WAIT: lim = (uint32_t)R.nprocs; break;
        case RP_OP_EXIT: lim = UINT32_MAX; break;
        case RP_OP_PIPE_READ: case RP_OP_PIPE_WRITE: lim = (uint32_t)R.npipes; break;
        case RP_OP_AFTER: lim = (uint32_t)R.nthreads; break;
        case RP_OP_STAT: case RP_OP_UNLINK: case RP_OP_MKDIR: case RP_OP_RENAME: lim = (uint32_t)R.nfiles; break;
        case RP_OP_SYNCFS: lim = UINT32_MAX; break;
        default: lim = (uint32_t)R.nhandles;
        }
        if (o->obj >= lim) return bad_job("an op names an object out of range", OP_NAMES[o->op]);
        struct rthread *t = &R.threads[o->thread];
        if (!t->n) t->first = i;
        t->n++;
    }
    for (size_t i = 0; i < R.nops; i++) { /* an AFTER names an op of its thread obj, and not its own thread */
        const struct rp_op *o = &R.ops[i];
        if (o->op != RP_OP_AFTER) continue;
        struct rthread *w = &R.threads[o->obj];
        if (o->obj == o->thread || o->offset < w->first || o->offset >= w->first + w->n)
            return bad_job("an AFTER op names no op of another thread", NULL);
        w->watched = 1;
    }
    const char *logpath = json_str(job, "log", NULL, &bad);
    if (logpath) R.log = calloc(R.nops + 1, sizeof *R.log);
    if (content_pool(CONTENT_random, NULL, IOBUF, 11, &R.wpool, err, sizeof err))
        return bad_job("out of memory", NULL);
    pthread_mutex_init(&R.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (size_t i = 0; i < R.nprocs; i++) pthread_cond_init(&R.procs[i].cv, &ca);
    for (size_t i = 0; i < R.npipes; i++) pthread_cond_init(&R.pipe_cv[i], &ca);
    for (size_t i = 0; i < R.nthreads; i++) pthread_cond_init(&R.threads[i].cv, &ca);

    uint64_t l0 = now_ns();
    int lrc = layout(cold, err, sizeof err);
    if (!lrc && *cwd) lrc = mirror_cwd(cwd, err, sizeof err);
    uint64_t layout_ns = now_ns() - l0;
    uint64_t setup_ns = l0 - main0; /* reading the job and the op list */
    int status = 0;
    const char *message = NULL;
    uint64_t wall = 0;
    if (lrc) {
        status = stop_signal ? 130 : 1;
        message = stop_signal ? "interrupted" : err;
    } else {
        presize_fdtable(R.nhandles);
        R.t0 = now_ns();
        for (size_t i = 0; i < R.nprocs; i++)
            if (R.procs[i].started) R.procs[i].start_ns = R.t0;
        R.live = R.nthreads;
        for (size_t i = 0; i < R.nthreads; i++)
            if (pthread_create(&R.threads[i].th, NULL, thread_main, &R.threads[i])) {
                stop_signal = SIGTERM;
                R.nthreads = i;
                status = 1;
                message = "cannot create a thread";
                break;
            }
        for (size_t i = 0; i < R.nthreads; i++) pthread_join(R.threads[i].th, NULL);
        wall = now_ns() - R.t0;
        if (stop_signal && !status) {
            status = 130;
            message = "interrupted";
        }
    }
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
    jw_init(&w, stdout);
    jw_obj(&w, NULL);
    jw_str(&w, "tag", "iolens-replay-result");
    jw_arr(&w, "schema_version");
    jw_int(&w, NULL, RP_SCHEMA_MAJOR);
    jw_int(&w, NULL, RP_SCHEMA_MINOR);
    jw_end_arr(&w);
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
    jw_arr(&w, "thread_cpu_ns"); /* per thread: CPU time burnt for the on-CPU share of its gaps */
    for (size_t i = 0; i < R.nthreads; i++) jw_uint(&w, NULL, R.threads[i].cpu_ns);
    jw_end_arr(&w);
    /* 1.9: the burn blocks burnt as work and the CPU time they took: this replay's cost of a block */
    uint64_t blocks = 0, block_ns = 0;
    for (size_t i = 0; i < R.nthreads; i++) {
        if (!R.threads[i].blocks) continue;
        blocks += R.threads[i].blocks;
        block_ns += R.threads[i].cpu_ns;
    }
    jw_uint(&w, "burn_blocks", blocks);
    jw_uint(&w, "burn_block_cpu_ns", block_ns);
    jw_end_obj(&w);
    fputc('\n', stdout);
    json_free(job);
    return status;
}
