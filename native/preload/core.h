/*
 * The recorder: state shared by the interface files and the hot-path helpers
 * they call.  Counters live in a MAP_SHARED part file, so they survive a
 * SIGKILL; the hot path takes no lock and allocates nothing.
 *
 * An interface file (posix.c, stdio.c, ...) follows one template:
 *
 *     ssize_t read(int fd, void *buf, size_t n)
 *     {
 *         if (!iolens_on()) return REAL(read)(fd, buf, n);     // off or nested
 *         struct iolens_call c; iolens_begin(&c, IOLENS_OP_READ);
 *         ssize_t r = REAL(read)(fd, buf, n);
 *         iolens_end(&c);                                      // saves errno
 *         iolens_data(&c, iolens_fd(fd), IOLENS_POS, r);
 *         return iolens_ret(&c), r;                            // restores errno
 *     }
 */
#ifndef IOLENS_CORE_H
#define IOLENS_CORE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include "iolens_format.h"
#include "hooks.h"

/* Everything the rooms share is hidden (the library is built with -fvisibility=hidden; declared so here,
 * a room reaches another's state and functions directly, not through the GOT).  The hooks say IOLENS_API. */
#pragma GCC visibility push(hidden)

#define IOLENS_API __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define IOLENS_TLS __thread __attribute__((tls_model("initial-exec")))
/* Code an image runs once, at its start or its end: kept together (in
 * .text.unlikely, with what only it calls), so a process that does no file
 * I/O faults in one stretch of the library rather than one per file. */
#define IOLENS_COLD __attribute__((cold))
/* Variables every image writes at its start: kept in .data, on the page the
 * loader writes anyway (beside the GOT), rather than on pages of .bss. */
#define IOLENS_START_DATA __attribute__((section(".data.iolens_start")))

#define IOLENS_FDMAX 65536
#define IOLENS_POS ((uint64_t)-1) /* "at the descriptor's current position" */

enum { FD_UNKNOWN = 0, FD_TRACKED = 1 };

/* 24 bytes, not padded to 32 to keep each on one cache line: the table would
 * grow by 512 KiB of .bss, and that costs every process a page fault more. */
struct iolens_fdstate {
    struct iolens_file *rec;
    uint64_t pos;
    uint32_t state;
    uint32_t append;
};

struct iolens_state {
    volatile int active;  /* recording */
    volatile int pending; /* no part yet: it is made on the first recorded call (IOLENS_PENDING_*, below) */
    int mt;               /* threads exist: counters use atomics */
    int trace;            /* --trace */
    int pid;
    struct iolens_proc *proc;
    struct iolens_timeline *tl;
    /* the TSC scale in use (clock.c), or 0 while the vDSO is used; published
     * whole (never torn).  Here, on the line every hooked call reads anyway. */
    const struct iolens_tsc *tsc;
    /* libc's __libc_single_threaded, once the next definition of read (of
     * write) is found to be libc's own, else 0: while it is set, the hook makes
     * the system call itself (posix.c).  Found by dlsym then, so no relocation
     * costs every image a lookup at its start. */
    const volatile char *read_single, *write_single;
    /* part file mapping; no descriptor is held between calls (see part.c) */
    char *base;
    uint64_t used, mapped, reserve;
    uint64_t max_files;
    int lock; /* spinlock for the rare paths: new records, growth, coarsening */
    int dirfd_cached; /* 1 + the descriptor whose path paths.c's dirfd_cache holds; 0: none */
    /* in-flight counters for honest wall time with threads */
    int inflight[IOLENS_NCAT + 1];
    uint64_t wall_start[IOLENS_NCAT + 1];
    char dir[512];
    char part_path[600];
};

/* Why an active image has no part mapped (iolens_state.pending). */
enum {
    IOLENS_PENDING_FORK = 1,  /* a fork child: made on its first recorded call, or never */
    IOLENS_PENDING_START = 2, /* a new image: made on its first recorded call, or written whole at its end */
    IOLENS_PENDING_DONE = 3,  /* written at its end (exit, exec, fatal signal); made again if a call follows */
};

extern struct iolens_state iolens_g;
/* Set on the thread that called vfork while its child borrows the memory:
 * the child's calls pass through and change none of the recorder's state. */
#define iolens_in_vfork (iolens_tls.in_vfork)
extern struct iolens_fdstate iolens_fds[IOLENS_FDMAX];
extern const uint8_t iolens_op_cat[IOLENS_NOPS];
/* The same as iolens_op_cat[op], folded by the compiler when op is a constant. */
static inline __attribute__((always_inline)) int iolens_cat_of(int op)
{
    switch (op) {
#define IOLENS_X_OP(name, cat) case IOLENS_OP_##name: return IOLENS_CAT_##cat;
        IOLENS_OPS(IOLENS_X_OP)
#undef IOLENS_X_OP
    }
    return IOLENS_CAT_META;
}

struct iolens_call {
    uint64_t t0, t1;
    int op, cat, err;
    int mt; /* iolens_g.mt when the call began: its wall-time enter and leave pair up */
};

/* CLOCK_MONOTONIC through the vDSO. */
static inline uint64_t iolens_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The call clock (clock.c): CLOCK_MONOTONIC nanoseconds.  Where the kernel
 * itself keeps time with an invariant TSC, the TSC is read directly and
 * scaled (calibrated against CLOCK_MONOTONIC after a few milliseconds and
 * refined on the rare paths); elsewhere, until calibrated, and with
 * IOLENS_CLOCK=vdso, the vDSO's clock_gettime.
 */
struct iolens_tsc {
    uint64_t mult; /* ns per tick << 32 */
    uint64_t tsc0, mono0;
};
extern int iolens_clock_state;
#define IOLENS_CLOCK_VDSO 1
uint64_t iolens_now_calibrating(void);
void iolens_clock_refine(void);

static inline uint64_t iolens_now(void)
{
#if defined(__x86_64__)
    const struct iolens_tsc *k = __atomic_load_n(&iolens_g.tsc, __ATOMIC_ACQUIRE);
    if (LIKELY(k != 0)) {
        uint64_t d = __builtin_ia32_rdtsc() - k->tsc0;
        return k->mono0 + (uint64_t)(((unsigned __int128)d * k->mult) >> 32);
    }
#endif
    if (LIKELY(iolens_clock_state == IOLENS_CLOCK_VDSO)) return iolens_mono();
    return iolens_now_calibrating();
}

/* The time since t, never below 0: a rescale of the call clock (clock.c) or two CPUs' TSCs may put a later reading a
 * few nanoseconds before an earlier one, and an unsigned difference would then be 584 years (a saturated 4.3 s in an
 * EVENT's u32 fields). */
static inline uint64_t iolens_since(uint64_t t)
{
    uint64_t n = iolens_now();
    return n > t ? n - t : 0;
}

void iolens_materialize(void);

/* True when this call should be recorded; false when off or nested.  In a
 * fork child that has not recorded anything yet, this first makes its part. */
static inline int iolens_on(void)
{
    if (UNLIKELY(iolens_g.pending) && !iolens_guard) iolens_materialize();
    return LIKELY(iolens_g.active) && !iolens_guard;
}

static inline void iolens_add(uint64_t *p, uint64_t v)
{
    if (iolens_g.mt)
        __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    else
        *p += v;
}

static inline void iolens_max(uint64_t *p, uint64_t v)
{
    if (!iolens_g.mt) {
        if (v > *p) *p = v;
        return;
    }
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void iolens_wall_enter(int cat, uint64_t t0);
void iolens_wall_leave(int cat, uint64_t t1);

/* A run of untimed stdio calls that one thread made on one file while other
 * threads exist (see iolens_stdio_quick): counted in this thread's own memory
 * and added to the shared counters, with atomics, once, when it ends: at the
 * thread's next recorded call of any other kind, or at the image's end.  Each
 * of its calls took the stream's lock and would otherwise cost ten atomic
 * additions (about 50 ns). */
struct iolens_srun {
    struct iolens_file *r; /* 0: none open */
    uint32_t op, cat, dir, bin;
    uint64_t t;   /* iolens_last_t of its calls: one timeline bin */
    uint64_t end; /* where the next call of the run starts */
    uint64_t calls, bytes;
};
/* This thread's run ends (its counts go to the shared counters). */
void iolens_srun_end(void);
/* Every thread's run ends (the image's end); a fork child drops its parent's. */
void iolens_srun_end_all(void);
void iolens_srun_drop_all(void);
/* A run starts with this call; 0 when it cannot (the caller takes the general path). */
int iolens_srun_start(struct iolens_call *c, int dir, struct iolens_fdstate *f, uint64_t b, int bin);

static inline void iolens_begin_cat(struct iolens_call *c, int op, int cat)
{
    if (UNLIKELY(iolens_tls.srun_open)) iolens_srun_end();
    iolens_guard = 1;
    c->op = op;
    c->cat = cat;
    c->mt = iolens_g.mt;
    c->t0 = iolens_now();
    if (UNLIKELY(c->mt)) iolens_wall_enter(cat, c->t0);
}
static inline void iolens_begin(struct iolens_call *c, int op) { iolens_begin_cat(c, op, iolens_op_cat[op]); }

/* The end of the real call, errno untouched (the clock never changes it). */
static inline void iolens_end_keep(struct iolens_call *c)
{
    c->t1 = c->t0 + iolens_since(c->t0);
    if (UNLIKELY(c->mt)) iolens_wall_leave(c->cat, c->t1);
}

static inline void iolens_end(struct iolens_call *c)
{
    c->err = errno;
    iolens_end_keep(c);
}

static inline void iolens_ret(struct iolens_call *c)
{
    if (UNLIKELY(iolens_g.trace)) iolens_tls.own += iolens_since(c->t1); /* after the real call: the recorder's */
    iolens_guard = 0;
    errno = c->err;
}

/* Descriptor state; resolves descriptors we did not see opened on first use. */
struct iolens_fdstate *iolens_fd_slow(int fd);
static inline struct iolens_fdstate *iolens_fd(int fd)
{
    if (UNLIKELY((unsigned)fd >= IOLENS_FDMAX)) return 0;
    struct iolens_fdstate *f = &iolens_fds[fd];
    if (LIKELY(f->state == FD_TRACKED)) return f;
    return iolens_fd_slow(fd);
}

/* Start a data call on descriptor state f: reads and writes on pipes,
 * sockets and terminals are STREAM time, not storage time. */
static inline void iolens_begin_data(struct iolens_call *c, int op, struct iolens_fdstate *f)
{
    int cat = iolens_cat_of(op);
    if (f && f->rec && (f->rec->flags & IOLENS_FF_NOT_A_FILE)) cat = IOLENS_CAT_STREAM;
    iolens_begin_cat(c, op, cat);
}

/* Account a finished call.  data: bytes moved (r < 0 means failed). */
void iolens_data(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t r);
/* The same, keeping errno: for a call ended with iolens_end_keep (DATA in posix.c). */
void iolens_data_keep(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t r);
/* A stdio data call (a library call; untimed when c->t1 == 0), and a request
 * it made the kernel do (cat READ: a fill, WRITE: a flush). */
void iolens_stdio_call(struct iolens_call *c, struct iolens_fdstate *f, int64_t n);
void iolens_stdio_req(struct iolens_fdstate *f, int cat, uint64_t size, uint64_t bufsize);
/* The start of this thread's last timed call (0: none yet). */
#define iolens_last_t (iolens_tls.last_t)
/* One --trace event of this thread (buffered; flushed 64 KiB at a time). */
void iolens_trace_event(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size);
/* The same for an untimed stdio call: a continuing one joins the thread's last event (EVENT repeats). */
void iolens_trace_untimed(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size);

/* The access-size histogram bin of n bytes.  The first bin is tested apart
 * and expected: the calls whose cost is mostly the hook's are the small ones,
 * and for them the other compares are laid out of the straight line (fewer
 * code lines to fetch again after the kernel returns). */
static inline int iolens_hist_bin(uint64_t n)
{
#define IOLENS_X_EDGE_V(v) (uint64_t)(v),
    static const uint64_t edge[] = {IOLENS_HIST_EDGES(IOLENS_X_EDGE_V)};
#undef IOLENS_X_EDGE_V
    if (LIKELY(n <= edge[0])) return 0;
    int i = 0;
#define IOLENS_X_EDGE(v) \
    if (n <= (uint64_t)(v)) return i; \
    i++;
    IOLENS_HIST_EDGES(IOLENS_X_EDGE)
#undef IOLENS_X_EDGE
    return i;
}

/* What n consecutive, sequential stdio calls of b bytes in all, the last ending
 * at end, add to their file, process and timeline bin idx, in one direction:
 * (written, writes, write) or (read, reads, read).  ADD and MAX are the
 * caller's: plain with one thread, atomic with threads. */
#define IOLENS_STDIO_RUN(ADD, MAX, r, p, tl, idx, n, b, bin, end, BYTES, OPS, OP) \
    do { \
        ADD(&(r)->OPS, n); \
        ADD(&(r)->stdio_##OPS, n); \
        ADD(&(r)->bytes_##BYTES, b); \
        ADD(&(r)->stdio_##OP##_hist[bin], n); \
        ADD(&(r)->seq_##OPS, n); \
        ADD(&(r)->consec_##OPS, n); \
        (r)->last_##OP##_end = (end); \
        MAX(&(r)->max_##OP##_end, end); \
        ADD(&(p)->bytes_##BYTES, b); \
        ADD(&(tl)->bytes_##BYTES[idx], b); \
    } while (0)
#define IOLENS_PLAIN_ADD(ptr, v) (*(ptr) += (v))
#define IOLENS_PLAIN_MAX(ptr, v) \
    do { \
        if ((v) > *(ptr)) *(ptr) = (v); \
    } while (0)

/* The untimed stdio call in its common case, inline: a known file, continuing
 * where the last call of the same direction ended (so it is consecutive and
 * sequential).  With one thread it is counted at once; with threads, into the
 * thread's run (iolens_srun).  Anything else takes iolens_stdio_call.  Keeps
 * exactly the counts iolens_stdio_call keeps. */
static inline __attribute__((always_inline)) void iolens_stdio_quick(struct iolens_call *c, int dir,
                                                                    struct iolens_fdstate *f, int64_t n)
{
    struct iolens_file *r = f ? f->rec : 0;
    struct iolens_timeline *tl = iolens_g.tl;
    uint64_t b = (uint64_t)n;
    if (UNLIKELY(!r) || UNLIKELY(n < 0)) {
        iolens_stdio_call(c, f, n);
        return;
    }
    /* before the first timed call (iolens_last_t 0) the index is out of range too */
    uint64_t idx = (iolens_last_t - tl->t0_mono) >> tl->shift, at = f->pos, end = at + b;
    if (UNLIKELY(idx >= IOLENS_TIMELINE_BINS)) {
        iolens_stdio_call(c, f, n);
        return;
    }
    int bin = iolens_hist_bin(b);
    if (UNLIKELY(iolens_g.mt)) {
        struct iolens_srun *s = iolens_tls.srun;
        if (LIKELY(s && s->r == r && s->end == at && s->op == (uint32_t)c->op && s->cat == (uint32_t)c->cat &&
                   s->bin == (uint32_t)bin && s->t == iolens_last_t)) {
            s->calls++;
            s->bytes += b;
            s->end = end;
            f->pos = end;
        } else if (!iolens_srun_start(c, dir, f, b, bin)) {
            iolens_stdio_call(c, f, n);
            return;
        }
    } else {
        struct iolens_proc *p = iolens_g.proc;
        if (dir == IOLENS_CAT_WRITE) {
            if (UNLIKELY(r->last_op != IOLENS_CAT_WRITE + 1 || at != r->last_write_end || !r->writes)) {
                iolens_stdio_call(c, f, n);
                return;
            }
            IOLENS_STDIO_RUN(IOLENS_PLAIN_ADD, IOLENS_PLAIN_MAX, r, p, tl, idx, 1, b, bin, end, written, writes, write);
        } else {
            if (UNLIKELY(r->last_op != IOLENS_CAT_READ + 1 || at != r->last_read_end || !r->reads)) {
                iolens_stdio_call(c, f, n);
                return;
            }
            IOLENS_STDIO_RUN(IOLENS_PLAIN_ADD, IOLENS_PLAIN_MAX, r, p, tl, idx, 1, b, bin, end, read, reads, read);
        }
        f->pos = end;
        p->op_count[c->op]++;
        tl->count[idx * IOLENS_NCAT + (uint64_t)c->cat]++;
    }
    if (UNLIKELY(iolens_g.trace)) { /* the event iolens_stdio_call makes: at the last clock reading, no time */
        c->t0 = c->t1 = iolens_last_t;
        iolens_trace_untimed(c, r, at, b);
    }
}

/* The general path of iolens_data_quick: the call is copied here, so that
 * only this copy has its address taken and the quick path's stays in
 * registers rather than on the stack. */
static inline void iolens_data_slow(struct iolens_call c, struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    iolens_data_keep(&c, f, off, n);
    if (UNLIKELY(iolens_g.trace)) iolens_tls.own += iolens_since(c.t1); /* as iolens_ret does */
}

/* A timed data call (dir READ or WRITE) in its common case, inline: one
 * thread, a known file, continuing where the last call of the same
 * direction ended (so it is consecutive and sequential), in the timeline's
 * current span.  Anything else takes iolens_data.  Keeps exactly the counts
 * iolens_data keeps, with none of its branches for the other cases.  The call
 * ended with iolens_end_keep: this path leaves errno alone, the others keep it.
 * c is taken by value: the caller's copy is never addressed on this path. */
static inline __attribute__((always_inline)) void iolens_data_quick(struct iolens_call c, int dir,
                                                                   struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    struct iolens_file *r = f ? f->rec : 0;
    struct iolens_timeline *tl = iolens_g.tl;
    if (UNLIKELY(c.mt) || UNLIKELY(!r) || UNLIKELY(n < 0)) {
        iolens_data_slow(c, f, off, n);
        return;
    }
    uint64_t b = (uint64_t)n, at = off == IOLENS_POS ? f->pos : off, end = at + b;
    uint64_t idx = (c.t0 - tl->t0_mono) >> tl->shift; /* out of range too if t0 < t0_mono */
    if (UNLIKELY(idx >= IOLENS_TIMELINE_BINS)) {
        iolens_data_slow(c, f, off, n);
        return;
    }
    struct iolens_proc *p = iolens_g.proc;
    if (dir == IOLENS_CAT_WRITE) {
        if (UNLIKELY(r->last_op != IOLENS_CAT_WRITE + 1 || at != r->last_write_end || !r->writes)) {
            iolens_data_slow(c, f, off, n);
            return;
        }
        r->writes++;
        r->bytes_written += b;
        r->write_hist[iolens_hist_bin(b)]++;
        r->seq_writes++;
        r->consec_writes++;
        r->last_write_end = end;
        if (end > r->max_write_end) r->max_write_end = end;
        p->bytes_written += b;
        tl->bytes_written[idx] += b;
    } else {
        if (UNLIKELY(r->last_op != IOLENS_CAT_READ + 1 || at != r->last_read_end || !r->reads)) {
            iolens_data_slow(c, f, off, n);
            return;
        }
        r->reads++;
        r->bytes_read += b;
        r->read_hist[iolens_hist_bin(b)]++;
        r->seq_reads++;
        r->consec_reads++;
        r->last_read_end = end;
        if (end > r->max_read_end) r->max_read_end = end;
        p->bytes_read += b;
        tl->bytes_read[idx] += b;
    }
    if (off == IOLENS_POS) f->pos = end;
    uint64_t dt = c.t1 - c.t0;
    int cat = c.cat; /* dir, or STREAM for a pipe, socket or terminal */
    r->cat_time_ns[cat] += dt;
    if (!r->first_mono) r->first_mono = c.t0;
    if (c.t1 > r->last_mono) r->last_mono = c.t1;
    iolens_last_t = c.t0;
    p->op_count[c.op]++;
    p->cat_time_ns[cat] += dt;
    p->cat_wall_ns[cat] += dt; /* one thread: wall time is call time */
    if (cat != IOLENS_CAT_STREAM) p->io_wall_ns += dt;
    tl->count[idx * IOLENS_NCAT + (uint64_t)cat]++;
    if (UNLIKELY(iolens_g.trace)) { /* keeps errno */
        struct iolens_call e = c;
        iolens_trace_event(&e, r, at, b);
        iolens_tls.own += iolens_since(c.t1); /* as iolens_ret does */
    }
}

/* Account a non-data call on a descriptor (or no file when f is 0). */
void iolens_fdop(struct iolens_call *c, struct iolens_fdstate *f);
/* Account a dup2/dup3 that covered a descriptor open on a file (`over`, its state before the call): the call as
 * the close of that file, then the copy of `src` as a DUP of no time.  Leaves c as the close. */
void iolens_dup_over(struct iolens_call *c, struct iolens_fdstate *over, struct iolens_fdstate *src);
/* Account a call on a path (resolved against dirfd when relative). */
struct iolens_file *iolens_pathop(struct iolens_call *c, int dirfd, const char *path, uint64_t set_flags);

/* Mark a path's record with flags, without counting a call (rename target). */
struct iolens_file *iolens_pathmark(int dirfd, const char *path, uint64_t flags);

/* The source side of sendfile and copy_file_range: a read of n bytes. */
void iolens_xfer_in(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t n);

/* Descriptor lifetime. */
void iolens_opened(struct iolens_call *c, int dirfd, const char *path, int fd, int oflags, int existed);
void iolens_forget_dirfds(unsigned lo, unsigned hi);
void iolens_closed(int fd);
void iolens_dup(int oldfd, int newfd);

/* Record a path-named file (rare path, takes the lock). */
struct iolens_file *iolens_file_for(const char *abspath, uint64_t flags);
/* The working directory changed (chdir, fchdir): relative paths are resolved anew. */
void iolens_cwd_changed(void);
/* Absolute, lexically normalised path into out (PATH_MAX). Returns length or -1. */
int iolens_abspath(int dirfd, const char *path, char *out, size_t cap);

void iolens_file_stat(struct iolens_file *rec, uint64_t dev, uint64_t ino, uint64_t mode);

/*
 * A layer (an interface file) with work at an image's start or at its exit
 * registers it once, with IOLENS_LAYER(id, .start = ..., ...): a
 * constructor that runs before the core's own.  The core (core.c) runs every
 * registered hook and names no layer, so no layer's file is needed to build
 * the core's.  A hook left out is 0.  Hooks of one kind run in the order the
 * layers registered, which no layer may rely on.
 */
struct iolens_layer { /* no name: each pointer is a relocation the loader makes in every image */
    /* at the image's start: the recorder's variables are read and the start noted; nothing is recorded yet */
    void (*start)(void);
    /* at exit, in an image with no part yet: does the layer hold counts that need one? */
    int (*waiting)(void);
    /* at exit (not at exec or a fatal signal), before the end fields: the counts the layer still holds */
    void (*exit)(void);
};
void iolens_layer_add(const struct iolens_layer *l);
#define IOLENS_LAYER(id, ...) \
    static const struct iolens_layer iolens_layer_##id = {__VA_ARGS__}; \
    IOLENS_COLD __attribute__((constructor(101))) static void iolens_layer_add_##id(void) \
    { \
        iolens_layer_add(&iolens_layer_##id); \
    }

/* The recorder's variables (env.c): taken out of environ at start, keeping copies. */
void iolens_env_take(void);
int iolens_env_packed(const char *v);
/* A variable the recorder took out of environ, or 0. */
const char *iolens_env(const char *key);
/* The environment to pass on at exec or spawn: envp with the recorder's variables put back into out (cap
 * entries; merged, mcap bytes, for a merged LD_PRELOAD), or envp itself when nothing is missing, it does not fit,
 * or the program (path; fd for fexecve; search: looked up on PATH) does not load the interposer. */
char *const *iolens_env_for_child(char *const envp[], char **out, int cap, char *merged, size_t mcap,
                                  const char *path, int fd, int search);
/* The entries out needs for envp (0: too many; it is passed on as it is). */
int iolens_env_cap(char *const envp[]);

/* Process lifetime (core.c). */
extern int iolens_exit_status; /* main's return or exit's argument */
void iolens_finalize(uint64_t flags, uint64_t status);
void iolens_unfinalize(void);
void iolens_after_fork_child(void);
void iolens_child_reaped(int pid, int status, const struct rusage *ru);
void iolens_trace_flush_all(void);

/* Raw syscalls that never re-enter the hooks. */
long iolens_sys_write(int fd, const void *buf, unsigned long n);

#if defined(__x86_64__)
/* libc's syscall(), the same instructions inline in the library (base.c):
 * every image calls it at its start and end, and libc's would cost a lazy
 * binding there.  Same contract: -1 with errno set on failure. */
long iolens_syscall(long n, ...);
#define syscall iolens_syscall
/* A system call with the kernel's own result, -errno on failure, and errno untouched: the end of an image with
 * no part (built.c) so reads and writes no errno, whose first use costs a lazy binding of libc's
 * __errno_location in every such process. */
long iolens_sysraw(long n, ...);
#else
/* Elsewhere libc's syscall, errno kept as it was (the same contract, not the same cost). */
#define iolens_sysraw(...) \
    ({ \
        int e_ = errno; \
        long r_ = syscall(__VA_ARGS__); \
        if (r_ == -1) r_ = -errno; \
        errno = e_; \
        r_; \
    })
#endif

/* Around the recorder's own calls that may grow a file (fallocate, write):
 * SIGXFSZ from RLIMIT_FSIZE is held back and, if the call raised it, taken
 * again, so the limit shows as EFBIG to the recorder and never to the program. */
struct iolens_xfsz {
    uint64_t old_mask;
    int was_pending;
};
void iolens_xfsz_hold(struct iolens_xfsz *x);
void iolens_xfsz_release(struct iolens_xfsz *x);

/* A call on a descriptor that moves no data (sync, fstat, truncate, ...). */
#define FDCALL(op, type, call) \
    if (!iolens_on()) return call; \
    struct iolens_call c; \
    iolens_begin(&c, op); \
    type r = call; \
    iolens_end(&c); \
    iolens_fdop(&c, iolens_fd(fd)); \
    iolens_ret(&c); \
    return r;

#pragma GCC visibility pop

#endif
