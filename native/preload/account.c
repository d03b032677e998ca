/*
 * The files and the calls on them: the file table (each path's FILE
 * record), the accounting of each recorded call into PROC, its FILE and the
 * timeline (the general paths of iolens_data_quick and iolens_stdio_quick,
 * core.h), and the descriptor table (which file each descriptor is open on).
 * The file table is here, beside the calls that look it up, so the lookup is
 * compiled into them.
 */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int iolens_fd_high;

/* Path table: absolute path -> FILE record, private to the process. */
static struct {
    struct iolens_file **slot;
    uint64_t cap, n;
} pt;

static uint64_t hash_path(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int pt_resize(uint64_t cap)
{
    struct iolens_file **slot =
        sys_mmap(0, cap * sizeof *slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slot == MAP_FAILED) return -1;
    for (uint64_t i = 0; i < pt.cap; i++) {
        struct iolens_file *r = pt.slot[i];
        if (!r) continue;
        uint64_t j = hash_path(iolens_rec_path(r)) & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = r;
    }
    if (pt.slot) sys_munmap(pt.slot, pt.cap * sizeof *pt.slot);
    pt.slot = slot;
    pt.cap = cap;
    return 0;
}

static struct iolens_file *new_file(const char *path, size_t len, uint64_t flags)
{
    struct iolens_file *r = iolens_rec_alloc(sizeof *r + len + 1);
    if (!r) return 0;
    r->index = iolens_g.proc->nfiles++;
    r->flags = flags;
    r->path_len = len;
    memcpy(r + 1, path, len + 1);
    iolens_publish(r, IOLENS_KIND_FILE, IOLENS_VER_FILE);
    return r;
}

static struct iolens_file *lookup_locked(const char *path, uint64_t flags)
{
    if (!pt.slot || (pt.n + 1) * 2 > pt.cap)
        if (pt_resize(pt.cap ? pt.cap * 2 : 4096) != 0) return 0;
    uint64_t j = hash_path(path) & (pt.cap - 1);
    for (; pt.slot[j]; j = (j + 1) & (pt.cap - 1))
        if (strcmp(iolens_rec_path(pt.slot[j]), path) == 0) return pt.slot[j];
    struct iolens_file *r = 0;
    size_t len = strlen(path);
    if (iolens_g.proc->nfiles < iolens_g.max_files) r = new_file(path, len, flags);
    if (!r) {
        /* Past the limit (or out of room): aggregate by directory. */
        iolens_g.proc->flags |= IOLENS_PF_OVERFLOW;
        if (flags & IOLENS_FF_AGGREGATE) return 0;
        char agg[PATH_MAX + 4];
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t)(slash - path) : 0;
        memcpy(agg, path, dl);
        memcpy(agg + dl, "/*", 3);
        iolens_g.max_files++; /* room for the one aggregate record */
        r = lookup_locked(agg, IOLENS_FF_AGGREGATE);
        iolens_g.max_files--;
        return r;
    }
    pt.slot[j] = r;
    pt.n++;
    return r;
}

void iolens_files_reset(void)
{
    if (pt.slot) sys_munmap(pt.slot, pt.cap * sizeof *pt.slot);
    pt.slot = 0;
    pt.cap = pt.n = 0;
}

/* Compiled into iolens_pathop, the path calls' (stat, open) way in. */
static inline __attribute__((always_inline)) struct iolens_file *file_for(const char *abspath, uint64_t flags)
{
    /* The guard is up while the lock is held, so a signal handler that
     * interrupts here records nothing instead of spinning on our own lock. */
    int guard = lock_guarded();
    struct iolens_file *r = lookup_locked(abspath, flags);
    if (r) r->flags |= flags;
    unlock_guarded(guard);
    return r;
}

struct iolens_file *iolens_file_for(const char *abspath, uint64_t flags) { return file_for(abspath, flags); }

void iolens_file_stat(struct iolens_file *rec, uint64_t dev, uint64_t ino, uint64_t mode)
{
    /* lstat of a symlink describes the link, not the file opened through it */
    if (!rec || (rec->flags & IOLENS_FF_AGGREGATE) || S_ISLNK(mode)) return;
    rec->dev = dev;
    rec->ino = ino;
    rec->mode = mode;
    if (S_ISDIR(mode)) rec->flags |= IOLENS_FF_DIRECTORY;
    else if (!S_ISREG(mode) && !S_ISBLK(mode)) rec->flags |= IOLENS_FF_NOT_A_FILE;
}

#define hist_bin iolens_hist_bin

#define iolens_add(p, v) add_m(p, v, mt)
#define iolens_max(p, v) max_m(p, v, mt)

/* Process-level part of every call. */
static inline __attribute__((always_inline)) void acct_proc_m(struct iolens_call *c, int cat, uint64_t rb,
                                                              uint64_t wb, int mt)
{
    struct iolens_proc *p = iolens_g.proc;
    iolens_last_t = c->t0;
    uint64_t dt = c->t1 - c->t0;
    iolens_add(&p->op_count[c->op], 1);
    iolens_add(&p->cat_time_ns[cat], dt);
    if (!mt) {
        p->cat_wall_ns[cat] += dt;
        if (cat != IOLENS_CAT_STREAM) p->io_wall_ns += dt; /* storage I/O only */
    }
    tl_add(cat, c->t0, rb, wb, mt);
}
static void acct_proc(struct iolens_call *c, int cat, uint64_t rb, uint64_t wb)
{
    acct_proc_m(c, cat, rb, wb, iolens_g.mt);
}

static inline __attribute__((always_inline)) void touch_m(struct iolens_file *r, int cat, struct iolens_call *c,
                                                          int mt)
{
    iolens_add(&r->cat_time_ns[c->cat == IOLENS_CAT_STREAM ? IOLENS_CAT_STREAM : cat], c->t1 - c->t0);
    if (!r->first_mono) r->first_mono = c->t0;
    iolens_max(&r->last_mono, c->t1);
}

/* File-level part of a data call; off is the absolute offset. */
/* stdio: a library call, sized in stdio_*_hist (its kernel requests are added
 * by iolens_stdio_req); timed: its time was measured (see stdio.c). */
static inline __attribute__((always_inline)) void acct_file_data_x(struct iolens_file *r, int cat, uint64_t off,
                                                                   int64_t n, struct iolens_call *c, int stdio,
                                                                   int timed, int mt)
{
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    if (timed) touch_m(r, cat, c, mt);
    if (cat == IOLENS_CAT_READ) {
        uint64_t prior = r->reads;
        iolens_add(&r->reads, 1);
        if (stdio) iolens_add(&r->stdio_reads, 1);
        if (n < 0) return;
        iolens_add(&r->bytes_read, b);
        iolens_add(stdio ? &r->stdio_read_hist[hist_bin(b)] : &r->read_hist[hist_bin(b)], 1);
        if (off != IOLENS_POS) {
            if (prior) {
                if (off == r->last_read_end) iolens_add(&r->consec_reads, 1);
                if (off >= r->last_read_end) iolens_add(&r->seq_reads, 1);
            }
            r->last_read_end = off + b;
            iolens_max(&r->max_read_end, off + b);
        }
        if (r->last_op == IOLENS_CAT_WRITE + 1) iolens_add(&r->rw_switches, 1);
        r->last_op = IOLENS_CAT_READ + 1;
    } else {
        uint64_t prior = r->writes;
        iolens_add(&r->writes, 1);
        if (stdio) iolens_add(&r->stdio_writes, 1);
        if (n < 0) return;
        iolens_add(&r->bytes_written, b);
        iolens_add(stdio ? &r->stdio_write_hist[hist_bin(b)] : &r->write_hist[hist_bin(b)], 1);
        if (off != IOLENS_POS) {
            if (prior) {
                if (off == r->last_write_end) iolens_add(&r->consec_writes, 1);
                if (off >= r->last_write_end) iolens_add(&r->seq_writes, 1);
            }
            r->last_write_end = off + b;
            iolens_max(&r->max_write_end, off + b);
        }
        if (r->last_op == IOLENS_CAT_READ + 1) iolens_add(&r->rw_switches, 1);
        r->last_op = IOLENS_CAT_WRITE + 1;
    }
}

#undef iolens_add
#undef iolens_max

static void touch(struct iolens_file *r, int cat, struct iolens_call *c) { touch_m(r, cat, c, iolens_g.mt); }

static void acct_file_data(struct iolens_file *r, int cat, uint64_t off, int64_t n, struct iolens_call *c)
{
    acct_file_data_x(r, cat, off, n, c, 0, 1, iolens_g.mt);
}

/* A stdio data call.  Untimed calls (t1 == 0: served from the stream's
 * buffer, so no clock was read) are counted exactly, with no time, and put in
 * the timeline at the thread's last clock reading. */
void iolens_stdio_call(struct iolens_call *c, struct iolens_fdstate *f, int64_t n)
{
    if (iolens_tls.srun_open) iolens_srun_end(); /* its counts first: this call may touch its file */
    int cat = iolens_op_cat[c->op];
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    struct iolens_proc *p = iolens_g.proc;
    uint64_t rb = cat == IOLENS_CAT_READ ? b : 0, wb = cat == IOLENS_CAT_WRITE ? b : 0;
    int timed = c->t1 != 0;
    if (LIKELY(!timed)) {
        uint64_t t = iolens_last_t;
        if (UNLIKELY(!t)) t = iolens_last_t = iolens_now();
        c->t0 = c->t1 = t;
        iolens_add(&p->op_count[c->op], 1);
        tl_add(c->cat, t, rb, wb, iolens_g.mt);
    } else {
        acct_proc(c, c->cat, rb, wb);
    }
    iolens_add(cat == IOLENS_CAT_READ ? &p->bytes_read : &p->bytes_written, b);
    struct iolens_file *r = f ? f->rec : 0;
    uint64_t at = IOLENS_POS;
    if (f) {
        at = f->pos;
        f->pos = at + b;
    }
    if (r) {
        if (timed) acct_file_data_x(r, cat, at, n, c, 1, 1, iolens_g.mt);
        else acct_file_data_x(r, cat, at, n, c, 1, 0, iolens_g.mt);
    } else {
        iolens_add(&p->untracked_ops, 1);
    }
    if (UNLIKELY(iolens_g.trace)) {
        if (timed) iolens_trace_event(c, r, at, b);
        else iolens_trace_untimed(c, r, at, b);
    }
}

/* A request a stream made the kernel do: a buffer fill or flush, or a read
 * or write past the buffer.  Sized beside the direct system calls. */
void iolens_stdio_req(struct iolens_fdstate *f, int cat, uint64_t size, uint64_t bufsize)
{
    struct iolens_file *r = f ? f->rec : 0;
    if (!r) return;
    if (cat == IOLENS_CAT_READ) {
        iolens_add(&r->stdio_fills, 1);
        iolens_add(&r->stdio_fill_bytes, size);
        iolens_add(&r->read_hist[hist_bin(size)], 1);
    } else {
        iolens_add(&r->stdio_flushes, 1);
        iolens_add(&r->stdio_flush_bytes, size);
        iolens_add(&r->write_hist[hist_bin(size)], 1);
    }
    iolens_max(&r->stdio_buf_size, bufsize);
}

static inline __attribute__((always_inline)) void data_m(struct iolens_call *c, struct iolens_fdstate *f,
                                                          uint64_t off, int64_t n, int mt)
{
    int cat = iolens_op_cat[c->op]; /* READ or WRITE: the direction */
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    struct iolens_proc *p = iolens_g.proc;
    acct_proc_m(c, c->cat, cat == IOLENS_CAT_READ ? b : 0, cat == IOLENS_CAT_WRITE ? b : 0, mt);
    add_m(cat == IOLENS_CAT_READ ? &p->bytes_read : &p->bytes_written, b, mt);
    struct iolens_file *r = f ? f->rec : 0;
    uint64_t at = off;
    if (f && off == IOLENS_POS) {
        at = f->pos; /* for O_APPEND descriptors pos starts at the file's size */
        f->pos = at + b;
    }
    if (r) acct_file_data_x(r, cat, at, n, c, 0, 1, mt);
    else add_m(&p->untracked_ops, 1, mt);
    if (UNLIKELY(iolens_g.trace)) iolens_trace_event(c, r, at, b);
}

void iolens_data(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    if (LIKELY(!iolens_g.mt)) data_m(c, f, off, n, 0);
    else data_m(c, f, off, n, 1);
}

void iolens_data_keep(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    int e = errno;
    iolens_data(c, f, off, n);
    errno = e;
}

/* The source side of sendfile and copy_file_range: a read of n bytes, counted
 * (and traced) as an op of its own, COPY_SOURCE, at the call's start and with
 * no time of its own: the call's time is on its destination's op.  So the
 * trace says which file a copy read, and a replay reads it. */
void iolens_xfer_in(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    int mt = iolens_g.mt;
    iolens_add(&iolens_g.proc->bytes_read, b);
    add_m(&iolens_g.proc->op_count[IOLENS_OP_COPY_SOURCE], 1, mt);
    tl_add(IOLENS_CAT_READ, c->t0, b, 0, mt);
    uint64_t at = off;
    if (f && off == IOLENS_POS) {
        at = f->pos;
        f->pos += b;
    }
    if (f && f->rec) acct_file_data(f->rec, IOLENS_CAT_READ, at, n, c);
    if (UNLIKELY(iolens_g.trace)) {
        struct iolens_call src = *c;
        src.op = IOLENS_OP_COPY_SOURCE;
        src.t1 = src.t0;
        iolens_trace_event(&src, f ? f->rec : 0, at, b);
    }
}

static void acct_file_meta(struct iolens_file *r, struct iolens_call *c, int opened)
{
    int cat = iolens_op_cat[c->op];
    touch(r, cat, c);
    switch (c->op) {
    case IOLENS_OP_STAT:
    case IOLENS_OP_FSTAT: iolens_add(&r->stats, 1); break;
    case IOLENS_OP_LSEEK:
    case IOLENS_OP_FSEEK:
    case IOLENS_OP_FTELL: iolens_add(&r->seeks, 1); break;
    case IOLENS_OP_MMAP: iolens_add(&r->mmaps, 1); break;
    case IOLENS_OP_OPEN:
    case IOLENS_OP_FOPEN:
    case IOLENS_OP_MKSTEMP:
    case IOLENS_OP_OPENDIR: iolens_add(opened ? &r->opens : &r->metas, 1); break; /* fdopen: no new open */
    default:
        if (cat == IOLENS_CAT_SYNC) iolens_add(&r->syncs, 1);
        else if (cat == IOLENS_CAT_META) iolens_add(&r->metas, 1);
        /* fflush: write time without a byte count */
    }
}

void iolens_fdop(struct iolens_call *c, struct iolens_fdstate *f)
{
    acct_proc(c, c->cat, 0, 0);
    struct iolens_file *r = f ? f->rec : 0;
    if (r) acct_file_meta(r, c, 0);
    if (UNLIKELY(iolens_g.trace)) iolens_trace_event(c, r, 0, 0);
}

void iolens_dup_over(struct iolens_call *c, struct iolens_fdstate *over, struct iolens_fdstate *src)
{
    struct iolens_call copy = *c;
    c->op = IOLENS_OP_CLOSE;
    c->cat = iolens_op_cat[IOLENS_OP_CLOSE];
    iolens_fdop(c, over);
    copy.t0 = copy.t1; /* the copy itself, after the close it made */
    iolens_fdop(&copy, src);
}

struct iolens_file *iolens_pathop(struct iolens_call *c, int dirfd, const char *path, uint64_t set_flags)
{
    acct_proc(c, c->cat, 0, 0);
    struct iolens_file *r = 0;
    char abs[PATH_MAX];
    if (path && iolens_abspath(dirfd, path, abs, sizeof abs) > 0) r = file_for(abs, set_flags);
    if (r) {
        acct_file_meta(r, c, 1);
        if (set_flags & IOLENS_FF_DELETED) r->deleted_mono = c->t0;
        if (set_flags & IOLENS_FF_CREATED) {
            r->created_mono = c->t0;
            r->flags &= ~(uint64_t)IOLENS_FF_DELETED;
        }
    }
    if (UNLIKELY(iolens_g.trace)) iolens_trace_event(c, r, 0, 0);
    return r;
}

struct iolens_file *iolens_pathmark(int dirfd, const char *path, uint64_t flags)
{
    char abs[PATH_MAX];
    if (!path || iolens_abspath(dirfd, path, abs, sizeof abs) <= 0) return 0;
    return iolens_file_for(abs, flags);
}

static void fd_set_rec(int fd, struct iolens_file *r, uint64_t pos, int append)
{
    if ((unsigned)fd >= IOLENS_FDMAX) return;
    struct iolens_fdstate *f = &iolens_fds[fd];
    f->rec = r;
    f->pos = pos;
    f->append = (uint32_t)append;
    f->state = FD_TRACKED;
    if (fd > iolens_fd_high) iolens_fd_high = fd;
}

struct iolens_fdstate *iolens_fd_slow(int fd)
{
    char link[40], target[PATH_MAX];
    if (!iolens_g.active || iolens_g.pending) return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof target - 1);
    if (n <= 0) return 0;
    target[n] = 0;
    struct stat st;
    uint64_t flags = IOLENS_FF_INHERITED;
    int ok = syscall(SYS_fstat, fd, &st) == 0;
    if (target[0] != '/' || (ok && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISBLK(st.st_mode)))
        flags |= IOLENS_FF_NOT_A_FILE;
    struct iolens_file *r = iolens_file_for(target, flags);
    if (r && ok && !r->dev) iolens_file_stat(r, st.st_dev, st.st_ino, st.st_mode);
    long pos = syscall(SYS_lseek, fd, 0L, SEEK_CUR);
    int fl = (int)syscall(SYS_fcntl, fd, F_GETFL);
    fd_set_rec(fd, r, pos > 0 ? (uint64_t)pos : 0, fl >= 0 && (fl & O_APPEND));
    return &iolens_fds[fd];
}

void iolens_opened(struct iolens_call *c, int dirfd, const char *path, int fd, int oflags, int existed)
{
    if (fd < 0 || !path) {
        acct_proc(c, c->cat, 0, 0);
        return;
    }
    uint64_t fl = 0;
    if ((oflags & O_CREAT) && !existed) fl |= IOLENS_FF_CREATED;
    if (oflags & O_TRUNC) fl |= IOLENS_FF_TRUNCATED;
    if (oflags & O_APPEND) fl |= IOLENS_FF_APPEND;
    struct iolens_file *r = iolens_pathop(c, dirfd, path, fl);
    uint64_t pos = 0;
    if ((r && !r->dev) || (oflags & O_APPEND)) {
        struct stat st;
        if (syscall(SYS_fstat, fd, &st) == 0) {
            if (r && !r->dev) iolens_file_stat(r, st.st_dev, st.st_ino, st.st_mode);
            if (oflags & O_APPEND) pos = (uint64_t)st.st_size;
        }
    }
    fd_set_rec(fd, r, pos, (oflags & O_APPEND) != 0);
}

void iolens_closed(int fd)
{
    iolens_forget_dirfds((unsigned)fd, (unsigned)fd);
    if ((unsigned)fd >= IOLENS_FDMAX || iolens_in_vfork) return;
    iolens_fds[fd].state = FD_UNKNOWN;
    iolens_fds[fd].rec = 0;
}

void iolens_dup(int oldfd, int newfd)
{
    iolens_forget_dirfds((unsigned)newfd, (unsigned)newfd);
    if ((unsigned)newfd >= IOLENS_FDMAX || iolens_in_vfork) return;
    /* copy the slot as it is: an unknown descriptor stays unknown (named on first use) */
    if ((unsigned)oldfd < IOLENS_FDMAX && iolens_fds[oldfd].state == FD_TRACKED) {
        struct iolens_fdstate *f = &iolens_fds[oldfd];
        fd_set_rec(newfd, f->rec, f->pos, (int)f->append);
    } else {
        iolens_closed(newfd);
    }
}
