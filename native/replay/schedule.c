/*
 * Scheduling: every recorded thread becomes one thread here, running its ops in their recorded order, each after
 * its gap (waited out or burnt, timing.c) and after what it waits for (deps.c), and counting where its time went.
 * A recorded process is the group of its threads, started when its parent replays the SPAWN op and finished when
 * all its threads ended (WAIT).
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

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
        if (o->op == RP_OP_START || o->op == RP_OP_AFTER) prev_end = wait_turn(t, o, prev_end);
        uint64_t a = R.speed_max ? now_ns() : replay_gap(t, o, prev_end);
        int cls = o->op < RP_NOPS ? OP_CLASS[o->op] : RP_CLASS_NONE;
        int rc = exec_op(t, o, a, buf);
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
    thread_ended(t);
    return NULL;
}

const char *run_threads(void)
{
    const char *message = NULL;
    R.t0 = now_ns();
    for (size_t i = 0; i < R.nprocs; i++)
        if (R.procs[i].started) R.procs[i].start_ns = R.t0;
    R.live = R.nthreads;
    for (size_t i = 0; i < R.nthreads; i++)
        if (pthread_create(&R.threads[i].th, NULL, thread_main, &R.threads[i])) {
            stop_signal = SIGTERM;
            R.nthreads = i;
            message = "cannot create a thread";
            break;
        }
    for (size_t i = 0; i < R.nthreads; i++) pthread_join(R.threads[i].th, NULL);
    return message;
}
