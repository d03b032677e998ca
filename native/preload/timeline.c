/*
 * The timeline's rare path (its bins coarsened when a call falls past the
 * last) and honest wall time with threads: per category, the time during
 * which at least one thread was inside such a call.
 */
#include "internal.h"

uint64_t iolens_tl_coarsen(uint64_t rel)
{
    struct iolens_timeline *tl = iolens_g.tl;
    iolens_clock_refine(); /* rare, and at doubling times: when the call clock's scale is refined */
    lock();
    while ((rel >> tl->shift) >= IOLENS_TIMELINE_BINS) {
        for (int i = 0; i < IOLENS_TIMELINE_BINS / 2; i++) {
            for (int c = 0; c < IOLENS_NCAT; c++)
                tl->count[i * IOLENS_NCAT + c] =
                    tl->count[2 * i * IOLENS_NCAT + c] + tl->count[(2 * i + 1) * IOLENS_NCAT + c];
            tl->bytes_read[i] = tl->bytes_read[2 * i] + tl->bytes_read[2 * i + 1];
            tl->bytes_written[i] = tl->bytes_written[2 * i] + tl->bytes_written[2 * i + 1];
        }
        for (int i = IOLENS_TIMELINE_BINS / 2; i < IOLENS_TIMELINE_BINS; i++) {
            for (int c = 0; c < IOLENS_NCAT; c++) tl->count[i * IOLENS_NCAT + c] = 0;
            tl->bytes_read[i] = tl->bytes_written[i] = 0;
        }
        tl->shift++;
    }
    unlock();
    return rel >> tl->shift;
}

void iolens_wall_enter(int cat, uint64_t t0)
{
    struct iolens_state *g = &iolens_g;
    if (__atomic_fetch_add(&g->inflight[cat], 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_store_n(&g->wall_start[cat], t0, __ATOMIC_RELEASE);
    if (cat == IOLENS_CAT_STREAM) return; /* io_wall_ns is storage I/O only */
    if (__atomic_fetch_add(&g->inflight[IOLENS_NCAT], 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_store_n(&g->wall_start[IOLENS_NCAT], t0, __ATOMIC_RELEASE);
}

void iolens_wall_leave(int cat, uint64_t t1)
{
    struct iolens_state *g = &iolens_g;
    if (__atomic_sub_fetch(&g->inflight[cat], 1, __ATOMIC_ACQ_REL) == 0) {
        uint64_t s = __atomic_load_n(&g->wall_start[cat], __ATOMIC_ACQUIRE);
        if (t1 > s) __atomic_fetch_add(&g->proc->cat_wall_ns[cat], t1 - s, __ATOMIC_RELAXED);
    }
    if (cat == IOLENS_CAT_STREAM) return;
    if (__atomic_sub_fetch(&g->inflight[IOLENS_NCAT], 1, __ATOMIC_ACQ_REL) == 0) {
        uint64_t s = __atomic_load_n(&g->wall_start[IOLENS_NCAT], __ATOMIC_ACQUIRE);
        if (t1 > s) __atomic_fetch_add(&g->proc->io_wall_ns, t1 - s, __ATOMIC_RELAXED);
    }
}
