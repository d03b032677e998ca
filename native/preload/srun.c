/*
 * Runs of untimed stdio calls with threads (struct iolens_srun, core.h): a
 * thread's consecutive calls on one file, counted in its own memory and added
 * to the shared counters once, when the run ends.
 */
#include "internal.h"

/* One run a thread, in memory that outlives the thread (a run is ended by the
 * image's end after its thread has gone).  A thread beyond the pool has none
 * and takes the general path. */
#define SRUN_POOL 4096
static struct iolens_srun srun_pool[SRUN_POOL];
static int nsruns; /* slots handed out */

#define ATOMIC_ADD(ptr, v) add_m(ptr, v, 1)
#define ATOMIC_MAX(ptr, v) max_m(ptr, v, 1)
static void srun_flush(struct iolens_srun *s)
{
    struct iolens_file *r = s->r;
    if (!r) return;
    s->r = 0;
    uint64_t n = s->calls, b = s->bytes;
    struct iolens_proc *p = iolens_g.proc;
    struct iolens_timeline *tl = iolens_g.tl;
    add_m(&p->op_count[s->op], n, 1);
    uint64_t rel = s->t > tl->t0_mono ? s->t - tl->t0_mono : 0, idx = rel >> tl->shift;
    if (idx >= IOLENS_TIMELINE_BINS) idx = iolens_tl_coarsen(rel);
    add_m(&tl->count[idx * IOLENS_NCAT + s->cat], n, 1);
    if (s->dir == IOLENS_CAT_WRITE)
        IOLENS_STDIO_RUN(ATOMIC_ADD, ATOMIC_MAX, r, p, tl, idx, n, b, s->bin, s->end, written, writes, write);
    else
        IOLENS_STDIO_RUN(ATOMIC_ADD, ATOMIC_MAX, r, p, tl, idx, n, b, s->bin, s->end, read, reads, read);
}
#undef ATOMIC_ADD
#undef ATOMIC_MAX

void iolens_srun_end(void)
{
    int guard = iolens_guard;
    iolens_guard = 1; /* tl_coarsen may take the lock */
    iolens_tls.srun_open = 0;
    if (iolens_tls.srun) srun_flush(iolens_tls.srun);
    iolens_guard = guard;
}

void iolens_srun_end_all(void)
{
    int n = __atomic_load_n(&nsruns, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && i < SRUN_POOL; i++) srun_flush(&srun_pool[i]);
    iolens_tls.srun_open = 0;
}

void iolens_srun_drop_all(void)
{
    int n = nsruns < SRUN_POOL ? nsruns : SRUN_POOL;
    for (int i = 0; i < n; i++) srun_pool[i].r = 0;
    iolens_tls.srun_open = 0;
}

int iolens_srun_start(struct iolens_call *c, int dir, struct iolens_fdstate *f, uint64_t b, int bin)
{
    struct iolens_srun *s = iolens_tls.srun;
    if (s && s->r) iolens_srun_end();
    struct iolens_file *r = f->rec;
    uint64_t at = f->pos;
    /* what the one-thread path asks of the file: the run's calls are consecutive from its last call */
    if (dir == IOLENS_CAT_WRITE ? r->last_op != IOLENS_CAT_WRITE + 1 || at != r->last_write_end || !r->writes
                                : r->last_op != IOLENS_CAT_READ + 1 || at != r->last_read_end || !r->reads)
        return 0;
    if (!s) {
        int i = __atomic_fetch_add(&nsruns, 1, __ATOMIC_ACQ_REL);
        if (i >= SRUN_POOL) return 0;
        s = iolens_tls.srun = &srun_pool[i];
    }
    s->op = (uint32_t)c->op;
    s->cat = (uint32_t)c->cat;
    s->dir = (uint32_t)dir;
    s->bin = (uint32_t)bin;
    s->t = iolens_last_t;
    s->end = at + b;
    s->calls = 1;
    s->bytes = b;
    s->r = r;
    iolens_tls.srun_open = 1;
    f->pos = at + b;
    return 1;
}
