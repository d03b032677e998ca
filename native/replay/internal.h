/*
 * What the replayer's rooms share, private to them (the op list itself is replay.h).
 *
 * A job passes through them in this order; each uses only those above it, never one below:
 *   plan.c      the job and its op list read into R, checked before anything runs; the name tables
 *   timing.c    the clock, the stop flag, the compute burn and its probe, a gap waited out or burnt
 *   deps.c      what one thread waits for from another: a process's start and end, pipes, another's progress
 *   exec.c      one recorded operation run on the replay directory (files, handles, copies, the waits of deps.c)
 *   layout.c    the untimed set-up: directories, laid-out files, the mirrored working directory
 *   schedule.c  one thread per recorded thread: its ops in order, each after its gap, and its accounting
 *   output.c    the result JSON and `--describe`
 *   main.c      the command line
 */
#ifndef IOLENS_REPLAY_INTERNAL_H
#define IOLENS_REPLAY_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "../bench/bench.h"
#include "../bench/json.h"
#include "replay.h"

/* A dependency the trace cannot satisfy is given up when every live thread has been waiting for 10 s: no
 * thread can satisfy it then.  Not 10 s of one thread's wait: on slow storage a shell spawns its next child
 * after a loop of tens of seconds, and the child's thread, given up early, would run ahead of its parent. */
#define DEP_TIMEOUT_NS 10000000000ull /* the job's "dependency_timeout_s" when it has one */
#define IOBUF (1u << 20)
#define BURN_MIN_NS 2000 /* shorter gaps are only waited out: reading the thread's CPU clock costs ~0.5 us */
/* A burn by work (the job's cpu_ns_per_block) at least this long is timed on the thread's CPU clock, for the
 * result's CPU time and cost per block; shorter ones are not.  A read of that clock is a system call (1.3-1.5 us
 * on the 2-CPU VM, against 50 ns for CLOCK_MONOTONIC): two per burn made every burnt gap ~3 us longer than the
 * step's, and GNU sort's 15,000 short gaps (its fwrite calls between lines) replayed 0.04 s late of 0.30 s. */
#define BURN_CLOCK_MIN_NS 100000
#define OWN_MAX_NS 2000  /* a thread past its gap by less was held up by the replayer's own work between ops */

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
    uint64_t cpu_ns;           /* compute burnt on the CPU for the on-CPU share of the gaps (thread CPU time; of
                                * the burns by work, only the clocked ones: output.c estimates the others) */
    uint64_t blocks;           /* burn blocks burnt as work (the job's cpu_ns_per_block) */
    uint64_t clocked_blocks;   /* of them, those of burns timed on the CPU clock (BURN_CLOCK_MIN_NS) */
    uint64_t clocked_cpu_ns;   /* the CPU time those took */
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

/* The replay: the plan as read (plan.c) and the state its threads share. */
struct replay {
    int rootfd;
    int cwdfd; /* the step's working directory mirrored below the root; -1: none */
    int speed_max;
    double ns_per_block; /* the capture's cost of a burn block (the job's cpu_ns_per_block); 0: burn by time */
    uint64_t dep_timeout_ns;
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
};

/* What the job says beyond the plan itself: pointers into the job, valid until it is freed. */
struct job_args {
    jval *job;
    const char *cwd;     /* the step's working directory below the root, or "" */
    const char *logpath; /* where to write the per-op log, or NULL */
    int cold;            /* lay the files out evicted from the page cache */
    int hold;            /* after the layout, a newline on stdout, then wait for a byte on stdin (hold_layout) */
};

/* ---- plan.c ---------------------------------------------------------------------------------------------- */

extern struct replay R;
extern const char *const OP_NAMES[RP_NOPS];
extern const int OP_CLASS[RP_NOPS];
extern const char *const OP_DOCS[RP_NOPS];
extern const char *const CLASS_NAMES[RP_NCLASS];

/* Reads the job at path and its op list into R.  0, or the exit status (2) after writing the bad-job result. */
int read_plan(const char *path, struct job_args *args);

/* ---- timing.c -------------------------------------------------------------------------------------------- */

extern volatile sig_atomic_t stop_signal;

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void ts_of(uint64_t ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
}

/* Waits out op o's recorded gap after prev_end, as --speed recorded replays it; returns when the op starts. */
uint64_t replay_gap(struct rthread *t, const struct rp_op *o, uint64_t prev_end);
/* `iolens-replay --probe`: what one burn block costs this CPU now, as JSON on stdout. */
int probe(void);

/* ---- deps.c ---------------------------------------------------------------------------------------------- */

/* Before a START or AFTER op's gap: waits for the thread's process to start or for the other thread's
 * progress; returns the time its gap counts from. */
uint64_t wait_turn(struct rthread *t, const struct rp_op *o, uint64_t prev_end);
/* SPAWN, WAIT, PIPE_READ and PIPE_WRITE, started at a. */
void dep_op(struct rthread *t, const struct rp_op *o, uint64_t a);
/* After an op of a thread others wait for: its progress to next. */
void passed(struct rthread *t, size_t next);
/* The thread ended (or stopped): its process is done with its last thread. */
void thread_ended(struct rthread *t);

/* ---- exec.c ---------------------------------------------------------------------------------------------- */

int open_rel(const char *rel, int flags, mode_t mode);
/* Runs one op started at a; 0 or -1 (errno set).  buf: the thread's IOBUF bytes. */
int exec_op(struct rthread *t, const struct rp_op *o, uint64_t a, unsigned char *buf);

/* ---- layout.c -------------------------------------------------------------------------------------------- */

/* Creates every file's parent directories, directories, and the laid-out files (untimed); 0 or -1 (err). */
int layout(int cold, char *err, size_t errlen);
/* Makes the step's working directory below the root and names the files below it from there; 0 or -1 (err). */
int mirror_cwd(const char *cwd, char *err, size_t errlen);
/* Grows the descriptor table for n descriptors while the replayer has one thread. */
void presize_fdtable(size_t n);
/* The job's hold: tells the caller the layout is done (a newline on stdout, before the result) and waits for its
 * byte on stdin, so that it can put the page cache in a state between the layout and the timed part. */
void hold_layout(void);

/* ---- schedule.c ------------------------------------------------------------------------------------------ */

/* Starts one thread per recorded thread and waits for them all; NULL, or why they could not all start. */
const char *run_threads(void);

/* ---- output.c -------------------------------------------------------------------------------------------- */

void describe(void);
/* The result JSON on stdout (and the per-op log when asked); returns the exit status, which writing the log
 * can change. */
int write_result(int status, const char *message, uint64_t wall, uint64_t layout_ns, uint64_t setup_ns,
                 const char *logpath);

#endif
