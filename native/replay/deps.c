/*
 * Dependencies between the replay's threads: a process's start (SPAWN, START) and end (WAIT), pipes
 * (PIPE_READ, PIPE_WRITE: not replayed as data, only as who waits for whom) and another thread's progress
 * (AFTER).  Every wait is under R.mu, on the condition of what it waits for.
 */
#include "internal.h"

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
        if ((stalled && t - stalled >= R.dep_timeout_ns) || stop_signal) break;
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
void passed(struct rthread *t, size_t next)
{
    __atomic_store_n(&t->next, next, __ATOMIC_SEQ_CST);
    if (next <= __atomic_load_n(&t->wake_at, __ATOMIC_SEQ_CST)) return;
    pthread_mutex_lock(&R.mu);
    __atomic_store_n(&t->wake_at, SIZE_MAX, __ATOMIC_SEQ_CST); /* those still waiting ask again */
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&R.mu);
}
static int pipe_read(const struct rp_op *o) { return __atomic_load_n(&R.pipe_r[o->obj], __ATOMIC_ACQUIRE) >= o->offset; }

uint64_t wait_turn(struct rthread *t, const struct rp_op *o, uint64_t prev_end)
{
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
    return prev_end;
}

void dep_op(struct rthread *t, const struct rp_op *o, uint64_t a)
{
    switch (o->op) {
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
    default: break;
    }
}

void thread_ended(struct rthread *t)
{
    pthread_mutex_lock(&R.mu);
    R.live--;
    struct proc *p = &R.procs[t->proc];
    if (--p->threads_left <= 0) p->done = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&R.mu);
}
