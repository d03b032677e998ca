/*
 * --trace: one EVENT per call, buffered per thread and written 64 KiB at a
 * time to the image's trace file (made by its first flush), in whole events
 * that fit under RLIMIT_FSIZE.
 */
#include "internal.h"

#define TRACE_BUF_EVENTS 1638 /* 64 KiB of events per thread */

struct tbuf {
    uint32_t n, tid;
    uint32_t run; /* the last event is an untimed stdio call that the next may continue (EVENT repeats) */
    struct iolens_event ev[TRACE_BUF_EVENTS];
};
static IOLENS_TLS struct tbuf *t_buf;
static uint32_t next_tid;
#define MAX_TBUFS 4096
static struct tbuf *tbufs[MAX_TBUFS];
static int ntbufs; /* high-water mark of tbufs in use */

static void tbuf_flush(struct tbuf *b)
{
    if (!b || !b->n) return;
    /* Opened for each flush of 64 KiB, and written in whole events that fit
     * under RLIMIT_FSIZE (async-signal-safe: it runs at exit and on fatal signals). */
    uint64_t fit = 0;
    int fd = iolens_trace_path[0] ? sys_open(iolens_trace_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)
                                    : -1;
    if (fd >= 0) {
        uint64_t lim = iolens_fsize_limit();
        long end = syscall(SYS_lseek, fd, 0L, SEEK_END);
        fit = b->n;
        if (lim != UINT64_MAX && end >= 0) {
            uint64_t room = lim > (uint64_t)end ? (lim - (uint64_t)end) / sizeof b->ev[0] : 0;
            if (room < fit) fit = room;
        }
        struct iolens_xfsz x;
        iolens_xfsz_hold(&x);
        if (fit && iolens_sys_write(fd, b->ev, fit * sizeof b->ev[0]) < 0) fit = 0;
        iolens_xfsz_release(&x);
        sys_close(fd);
    }
    if (fit < b->n) {
        iolens_add(&iolens_g.proc->trace_lost, b->n - fit);
        __atomic_fetch_or(&iolens_g.proc->flags, IOLENS_PF_TRACE_LOST, __ATOMIC_RELAXED);
    }
    b->n = 0;
}

void iolens_trace_drop_all(void)
{
    for (int i = 0; i < ntbufs; i++)
        if (tbufs[i]) tbufs[i]->n = tbufs[i]->run = 0;
}

void iolens_trace_flush_all(void)
{
    int n = __atomic_load_n(&ntbufs, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) tbuf_flush(tbufs[i]);
}

static void trace_event(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size)
{
    struct tbuf *b = t_buf;
    if (UNLIKELY(!b)) {
        b = sys_mmap(0, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) return;
        b->tid = __atomic_fetch_add(&next_tid, 1, __ATOMIC_RELAXED);
        for (int i = 0; i < MAX_TBUFS; i++) {
            struct tbuf *none = 0;
            if (__atomic_compare_exchange_n(&tbufs[i], &none, b, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                int hw = __atomic_load_n(&ntbufs, __ATOMIC_RELAXED);
                while (hw < i + 1 && !__atomic_compare_exchange_n(&ntbufs, &hw, i + 1, 1, __ATOMIC_ACQ_REL,
                                                                  __ATOMIC_RELAXED)) {
                }
                break;
            }
            if (i == MAX_TBUFS - 1) iolens_g.proc->flags |= IOLENS_PF_TRACE_LOST; /* tail not flushed at exit */
        }
        t_buf = b;
    }
    struct iolens_event *e = &b->ev[b->n++];
    e->start_mono = c->t0;
    uint64_t dur = c->t1 - c->t0; /* never below 0: iolens_end_keep */
    e->dur_ns = (uint32_t)(dur > 0xffffffffu ? 0xffffffffu : dur);
    e->dur_ms = dur > 0xffffffffu ? (uint32_t)(dur / 1000000u > 0xffffffffu ? 0xffffffffu : dur / 1000000u) : 0;
    e->op = (uint32_t)c->op;
    e->tid = b->tid;
    e->file = rec ? (uint32_t)rec->index : 0xffffffffu;
    e->offset = off;
    e->size = size;
    e->repeats = 0;
    e->own_ns = (uint32_t)(iolens_tls.own > 0xffffffffu ? 0xffffffffu : iolens_tls.own);
    iolens_tls.own = 0;
    b->run = 0;
    iolens_add(&iolens_g.proc->trace_events, 1);
    if (b->n == TRACE_BUF_EVENTS) { /* system calls, inside the program's call: its errno is kept */
        int e = errno;
        tbuf_flush(b);
        errno = e;
    }
}

void iolens_trace_event(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size)
{
    trace_event(c, rec, off, size);
}

/* An untimed stdio call (c->t0 == c->t1, the thread's last clock reading):
 * added to the thread's last event when it continues that one (EVENT repeats). */
void iolens_trace_untimed(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size)
{
    struct tbuf *b = t_buf;
    if (LIKELY(b && b->run && b->n && rec)) {
        struct iolens_event *e = &b->ev[b->n - 1];
        if (LIKELY(e->op == (uint32_t)c->op && e->file == (uint32_t)rec->index && e->start_mono == c->t0 &&
                   e->offset + e->size == off)) {
            e->size += size;
            e->repeats++;
            return;
        }
    }
    trace_event(c, rec, off, size);
    b = t_buf;
    /* a full buffer was flushed (n is 0): the next call starts an event */
    if (b && b->n && rec) b->run = 1;
}
