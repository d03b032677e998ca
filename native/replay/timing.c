/*
 * Time: a recorded gap replayed as the step spent it (its on-CPU share burnt as compute, the rest waited out),
 * the compute burn and `--probe`, which times the burn's block on this CPU.
 */
#include <stdio.h>

#include "internal.h"

volatile sig_atomic_t stop_signal;

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
 * however long they take now, and only a burn of BURN_CLOCK_MIN_NS or more reads the CPU clock (a system call);
 * without, it is measured on the thread's CPU clock.  Either way time spent runnable but not running is not
 * counted and the burn takes longer when the CPUs are busy, as the step would.  Returns the CPU time measured
 * (0 for a burn not clocked); counts the blocks in t. */
static uint64_t burn(struct rthread *t, uint64_t ns)
{
    static volatile uint64_t sink;
    if (R.ns_per_block > 0) {
        uint64_t n = (uint64_t)((double)ns / R.ns_per_block + 0.5), x = sink;
        int clocked = ns >= BURN_CLOCK_MIN_NS;
        uint64_t c0 = clocked ? thread_cpu_ns() : 0;
        for (uint64_t i = 0; i < n && !stop_signal; i++) x = burn_block(x);
        sink = x;
        t->blocks += n;
        if (!clocked) return 0;
        uint64_t c = thread_cpu_ns() - c0;
        t->clocked_blocks += n;
        t->clocked_cpu_ns += c;
        return c;
    }
    uint64_t c0 = thread_cpu_ns(), c = c0;
    while (c - c0 < ns && !stop_signal) {
        sink = burn_block(sink);
        c = thread_cpu_ns();
    }
    return c - c0;
}

uint64_t replay_gap(struct rthread *t, const struct rp_op *o, uint64_t prev_end)
{
    uint64_t a;
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
        t->cpu_ns += burn(t, on);
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
    return a;
}

/* `iolens-replay --probe`: the median CPU time of one burn block over 9 samples of about 2 ms each (after one
 * untimed), on this thread's CPU clock, read once every CHUNK blocks (about 0.4 ms: a read costs ~0.5 us, which
 * at every 64 blocks made a block look 1.5% dearer than a replay's burn, which reads the clock twice a burn). */
int probe(void)
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
