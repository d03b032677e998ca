/*
 * POSIX descriptor I/O: opens, closes, data calls, seeks, descriptor copies
 * and sync calls.  Template: see core.h.
 */
#include "core.h"

#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- opens ---- */

/*
 * Whether an O_CREAT open made its file is asked of the open itself: it is
 * first made with O_EXCL, which, where the name is free, creates the file
 * exactly as the open asked would have, and costs no call more; only where
 * the name is taken (EEXIST) is the open made again as asked, and the file
 * existed: that second open is the one timed, the probe falls in the gap
 * before it (as a separate existence check would).  A dangling symlink is the
 * one name this counts as existing although the open creates its target.
 */
static int do_open(int dirfd, const char *path, int flags, mode_t mode, int op,
                   int (*real)(int, const char *, int, ...))
{
    if (!iolens_on()) return real(dirfd, path, flags, mode);
    struct iolens_call c;
    int probe = (flags & O_CREAT) && !(flags & O_EXCL), existed = 0, e0 = errno;
    iolens_begin(&c, op);
    int fd = real(dirfd, path, probe ? flags | O_EXCL : flags, mode);
    if (probe && fd < 0 && errno == EEXIST) {
        /* the open as asked, timed alone and with errno as the program left it */
        existed = 1;
        iolens_end_keep(&c);
        errno = e0;
        iolens_begin(&c, op);
        fd = real(dirfd, path, flags, mode);
    }
    iolens_end(&c);
    iolens_opened(&c, dirfd, path, fd, flags, existed);
    iolens_ret(&c);
    return fd;
}

static int need_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

#define OPEN_MODE(flags, mode) \
    mode_t mode = 0; \
    if (need_mode(flags)) { \
        va_list ap; \
        va_start(ap, flags); \
        mode = (mode_t)va_arg(ap, int); \
        va_end(ap); \
    }

IOLENS_API int openat(int dirfd, const char *path, int flags, ...)
{
    OPEN_MODE(flags, mode);
    return do_open(dirfd, path, flags, mode, IOLENS_OP_OPEN, REAL(openat));
}
IOLENS_API int openat64(int dirfd, const char *path, int flags, ...)
{
    OPEN_MODE(flags, mode);
    return do_open(dirfd, path, flags, mode, IOLENS_OP_OPEN, REAL(openat64));
}
IOLENS_API int open(const char *path, int flags, ...)
{
    OPEN_MODE(flags, mode);
    return do_open(AT_FDCWD, path, flags, mode, IOLENS_OP_OPEN, REAL(openat));
}
IOLENS_API int open64(const char *path, int flags, ...)
{
    OPEN_MODE(flags, mode);
    return do_open(AT_FDCWD, path, flags, mode, IOLENS_OP_OPEN, REAL(openat64));
}
IOLENS_API int __open_2(const char *path, int flags) { return do_open(AT_FDCWD, path, flags, 0, IOLENS_OP_OPEN, REAL(openat)); }
IOLENS_API int __open64_2(const char *path, int flags) { return do_open(AT_FDCWD, path, flags, 0, IOLENS_OP_OPEN, REAL(openat64)); }
IOLENS_API int __openat_2(int d, const char *path, int flags) { return do_open(d, path, flags, 0, IOLENS_OP_OPEN, REAL(openat)); }
IOLENS_API int __openat64_2(int d, const char *path, int flags) { return do_open(d, path, flags, 0, IOLENS_OP_OPEN, REAL(openat64)); }
IOLENS_API int creat(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, IOLENS_OP_OPEN, REAL(openat));
}
IOLENS_API int creat64(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, IOLENS_OP_OPEN, REAL(openat64));
}

/* mkstemp and friends open internally, so the created file is seen here. */
#define MKSTEMP(call, tmpl, flags) \
    if (!iolens_on()) return call; \
    struct iolens_call c; \
    iolens_begin(&c, IOLENS_OP_MKSTEMP); \
    int fd = call; \
    iolens_end(&c); \
    iolens_opened(&c, AT_FDCWD, fd >= 0 ? tmpl : 0, fd, O_CREAT | O_EXCL | (flags), 0); \
    iolens_ret(&c); \
    return fd;

IOLENS_API int mkstemp(char *t) { MKSTEMP(REAL(mkstemp)(t), t, 0) }
IOLENS_API int mkstemp64(char *t) { MKSTEMP(REAL(mkstemp64)(t), t, 0) }
IOLENS_API int mkostemp(char *t, int fl) { MKSTEMP(REAL(mkostemp)(t, fl), t, fl) }
IOLENS_API int mkostemp64(char *t, int fl) { MKSTEMP(REAL(mkostemp64)(t, fl), t, fl) }
IOLENS_API int mkstemps(char *t, int sl) { MKSTEMP(REAL(mkstemps)(t, sl), t, 0) }
IOLENS_API int mkostemps(char *t, int sl, int fl) { MKSTEMP(REAL(mkostemps)(t, sl, fl), t, fl) }

/* ---- closes ---- */

IOLENS_API int close(int fd)
{
    /* a fork child shuffling descriptors before exec: keep the table, record nothing */
    if (iolens_g.pending == IOLENS_PENDING_FORK || !iolens_on()) {
        iolens_closed(fd);
        return REAL(close)(fd);
    }
    struct iolens_call c;
    struct iolens_fdstate *f = (unsigned)fd < IOLENS_FDMAX && iolens_fds[fd].state == FD_TRACKED ? &iolens_fds[fd] : 0;
    iolens_begin(&c, IOLENS_OP_CLOSE);
    int r = REAL(close)(fd);
    iolens_end(&c);
    iolens_fdop(&c, f);
    iolens_closed(fd);
    iolens_ret(&c);
    return r;
}

IOLENS_API int close_range(unsigned lo, unsigned hi, int flags)
{
    int r = REAL(close_range)(lo, hi, flags);
    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
        iolens_forget_dirfds(lo, hi); /* also past IOLENS_FDMAX, where the loop below stops */
        for (unsigned fd = lo; fd <= hi && fd < IOLENS_FDMAX; fd++) iolens_closed((int)fd);
    }
    return r;
}

/* closefrom closes through libc's internal close_range, which the hook above
 * would not see: route it there so the descriptor table forgets them too. */
IOLENS_API void closefrom(int lo)
{
    if (lo < 0) lo = 0;
    if (close_range((unsigned)lo, ~0u, 0) != 0) REAL(closefrom)(lo);
}

/* ---- data ---- */

/*
 * read and write forward to libc's definition, which, while libc runs one
 * thread, is the system call and nothing else (no cancellation point then).
 * So in that case the hook makes the system call itself: no indirect call
 * through the resolved pointer, no second function to return from after the
 * kernel returns.  Only when the next definition is libc's (direct_ok in
 * base.c checks); another interposer after ours is called as before.
 */
#if defined(__x86_64__)
static inline __attribute__((always_inline)) long direct3(long nr, long a, long b, long c)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    if (UNLIKELY((unsigned long)r > -4096ul)) {
        errno = (int)-r;
        return -1;
    }
    return r;
}
static inline __attribute__((always_inline)) int direct(const volatile char *const *single)
{
    const volatile char *s = __atomic_load_n(single, __ATOMIC_RELAXED); /* read once: 0, or libc's flag */
    return LIKELY(s != 0) && LIKELY(*s);
}
#define DIRECT(which, nr, a, b, c) \
    (direct(&iolens_g.which##_single) ? direct3(nr, (long)(a), (long)(b), (long)(c)) : REAL(which)(a, b, c))
#else
#define DIRECT(which, nr, a, b, c) REAL(which)(a, b, c)
#endif

#define DATA(op, off, call) \
    if (!iolens_on()) return call; \
    struct iolens_call c; \
    c.err = 0; /* unused: errno is never saved on this path */ \
    struct iolens_fdstate *f = iolens_fd(fd); \
    iolens_begin_data(&c, op, f); \
    ssize_t r = call; \
    iolens_end_keep(&c); /* errno: the real call's, untouched by the quick path */ \
    iolens_data_quick(c, iolens_cat_of(op), f, off, r); \
    iolens_guard = 0; \
    return r;

IOLENS_API ssize_t read(int fd, void *b, size_t n) { DATA(IOLENS_OP_READ, IOLENS_POS, DIRECT(read, SYS_read, fd, b, n)) }
IOLENS_API ssize_t __read_chk(int fd, void *b, size_t n, size_t bl) { DATA(IOLENS_OP_READ, IOLENS_POS, REAL(__read_chk)(fd, b, n, bl)) }
IOLENS_API ssize_t write(int fd, const void *b, size_t n) { DATA(IOLENS_OP_WRITE, IOLENS_POS, DIRECT(write, SYS_write, fd, b, n)) }
IOLENS_API ssize_t pread(int fd, void *b, size_t n, off_t o) { DATA(IOLENS_OP_PREAD, (uint64_t)o, REAL(pread)(fd, b, n, o)) }
IOLENS_API ssize_t pread64(int fd, void *b, size_t n, off_t o) { DATA(IOLENS_OP_PREAD, (uint64_t)o, REAL(pread64)(fd, b, n, o)) }
IOLENS_API ssize_t __pread_chk(int fd, void *b, size_t n, off_t o, size_t bl) { DATA(IOLENS_OP_PREAD, (uint64_t)o, REAL(__pread_chk)(fd, b, n, o, bl)) }
IOLENS_API ssize_t __pread64_chk(int fd, void *b, size_t n, off_t o, size_t bl) { DATA(IOLENS_OP_PREAD, (uint64_t)o, REAL(__pread64_chk)(fd, b, n, o, bl)) }
IOLENS_API ssize_t pwrite(int fd, const void *b, size_t n, off_t o) { DATA(IOLENS_OP_PWRITE, (uint64_t)o, REAL(pwrite)(fd, b, n, o)) }
IOLENS_API ssize_t pwrite64(int fd, const void *b, size_t n, off_t o) { DATA(IOLENS_OP_PWRITE, (uint64_t)o, REAL(pwrite64)(fd, b, n, o)) }
IOLENS_API ssize_t readv(int fd, const struct iovec *v, int n) { DATA(IOLENS_OP_READV, IOLENS_POS, REAL(readv)(fd, v, n)) }
IOLENS_API ssize_t writev(int fd, const struct iovec *v, int n) { DATA(IOLENS_OP_WRITEV, IOLENS_POS, REAL(writev)(fd, v, n)) }
IOLENS_API ssize_t preadv(int fd, const struct iovec *v, int n, off_t o) { DATA(IOLENS_OP_PREADV, (uint64_t)o, REAL(preadv)(fd, v, n, o)) }
IOLENS_API ssize_t preadv64(int fd, const struct iovec *v, int n, off_t o) { DATA(IOLENS_OP_PREADV, (uint64_t)o, REAL(preadv64)(fd, v, n, o)) }
IOLENS_API ssize_t pwritev(int fd, const struct iovec *v, int n, off_t o) { DATA(IOLENS_OP_PWRITEV, (uint64_t)o, REAL(pwritev)(fd, v, n, o)) }
IOLENS_API ssize_t pwritev64(int fd, const struct iovec *v, int n, off_t o) { DATA(IOLENS_OP_PWRITEV, (uint64_t)o, REAL(pwritev64)(fd, v, n, o)) }
/* offset -1 in the v2 forms means "current position" */
#define V2OFF(o) ((o) == -1 ? IOLENS_POS : (uint64_t)(o))
IOLENS_API ssize_t preadv2(int fd, const struct iovec *v, int n, off_t o, int fl) { DATA(IOLENS_OP_PREADV, V2OFF(o), REAL(preadv2)(fd, v, n, o, fl)) }
IOLENS_API ssize_t preadv64v2(int fd, const struct iovec *v, int n, off_t o, int fl) { DATA(IOLENS_OP_PREADV, V2OFF(o), REAL(preadv64v2)(fd, v, n, o, fl)) }
IOLENS_API ssize_t pwritev2(int fd, const struct iovec *v, int n, off_t o, int fl) { DATA(IOLENS_OP_PWRITEV, V2OFF(o), REAL(pwritev2)(fd, v, n, o, fl)) }
IOLENS_API ssize_t pwritev64v2(int fd, const struct iovec *v, int n, off_t o, int fl) { DATA(IOLENS_OP_PWRITEV, V2OFF(o), REAL(pwritev64v2)(fd, v, n, o, fl)) }

/* Transfers: a write on the destination and a read on the source. */
#define XFER(op, in, inoff, out, outoff, call) \
    if (!iolens_on()) return call; \
    struct iolens_call c; \
    uint64_t io_ = (inoff) ? (uint64_t) * (inoff) : IOLENS_POS; \
    uint64_t oo_ = (outoff) ? (uint64_t) * (outoff) : IOLENS_POS; \
    struct iolens_fdstate *fo = iolens_fd(out); \
    iolens_begin_data(&c, op, fo); \
    ssize_t r = call; \
    iolens_end(&c); \
    iolens_xfer_in(&c, iolens_fd(in), io_, r); \
    iolens_data(&c, fo, oo_, r); \
    iolens_ret(&c); \
    return r;

IOLENS_API ssize_t sendfile(int out, int in, off_t *off, size_t n) { off_t *no = 0; XFER(IOLENS_OP_SENDFILE, in, off, out, no, REAL(sendfile)(out, in, off, n)) }
IOLENS_API ssize_t sendfile64(int out, int in, off_t *off, size_t n) { off_t *no = 0; XFER(IOLENS_OP_SENDFILE, in, off, out, no, REAL(sendfile64)(out, in, off, n)) }
IOLENS_API ssize_t copy_file_range(int in, off_t *ino, int out, off_t *outo, size_t n, unsigned fl)
{
    XFER(IOLENS_OP_COPY_FILE_RANGE, in, ino, out, outo, REAL(copy_file_range)(in, ino, out, outo, n, fl))
}

/* ---- seeks ---- */

static off_t do_lseek(int fd, off_t off, int whence, off_t (*real)(int, off_t, int))
{
    if (!iolens_on()) return real(fd, off, whence);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_LSEEK);
    off_t r = real(fd, off, whence);
    iolens_end(&c);
    struct iolens_fdstate *f = iolens_fd(fd);
    iolens_fdop(&c, f);
    if (f && r >= 0) f->pos = (uint64_t)r;
    iolens_ret(&c);
    return r;
}
IOLENS_API off_t lseek(int fd, off_t off, int whence) { return do_lseek(fd, off, whence, REAL(lseek)); }
IOLENS_API off_t lseek64(int fd, off_t off, int whence) { return do_lseek(fd, off, whence, REAL(lseek64)); }

/* ---- descriptor copies ---- */

/* dup2 and dup3 onto a descriptor open on a file close that file first: a flush on FUSE and NFS, and for its last
 * descriptor the release, where s3fs uploads what was written.  A shell's `echo x > f` closes f so when it puts
 * its stdout back, and that is the close that costs on such a mount.  The call is then recorded as the close of
 * the file it covered, with the call's time, followed by the copy as a DUP of no time (iolens_dup_over). */
#define DUPCALL(oldfd, nfd, call) \
    if (iolens_g.pending == IOLENS_PENDING_FORK || !iolens_on()) { \
        int r_ = call; \
        if (r_ >= 0) iolens_dup(oldfd, r_); \
        return r_; \
    } \
    struct iolens_fdstate over = {0}; \
    int covers = (nfd) != (oldfd) && (unsigned)(nfd) < IOLENS_FDMAX && iolens_fds[nfd].state == FD_TRACKED; \
    if (covers) over = iolens_fds[nfd]; \
    struct iolens_call c; \
    iolens_begin(&c, IOLENS_OP_DUP); \
    int r = call; \
    iolens_end(&c); \
    if (covers && r >= 0) \
        iolens_dup_over(&c, &over, iolens_fd(oldfd)); \
    else \
        iolens_fdop(&c, iolens_fd(oldfd)); \
    if (r >= 0) iolens_dup(oldfd, r); \
    iolens_ret(&c); \
    return r;

IOLENS_API int dup(int fd) { DUPCALL(fd, -1, REAL(dup)(fd)) }
IOLENS_API int dup2(int fd, int nfd) { DUPCALL(fd, nfd, REAL(dup2)(fd, nfd)) }
IOLENS_API int dup3(int fd, int nfd, int fl) { DUPCALL(fd, nfd, REAL(dup3)(fd, nfd, fl)) }

static int do_fcntl(int fd, int cmd, long arg, int (*real)(int, int, ...))
{
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return real(fd, cmd, arg);
    DUPCALL(fd, -1, real(fd, cmd, arg))
}
IOLENS_API int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    return do_fcntl(fd, cmd, arg, REAL(fcntl));
}
IOLENS_API int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    return do_fcntl(fd, cmd, arg, REAL(fcntl64) ? REAL(fcntl64) : REAL(fcntl));
}

/* ---- sync ---- */

IOLENS_API int fsync(int fd) { FDCALL(IOLENS_OP_FSYNC, int, REAL(fsync)(fd)) }
IOLENS_API int fdatasync(int fd) { FDCALL(IOLENS_OP_FDATASYNC, int, REAL(fdatasync)(fd)) }
IOLENS_API int syncfs(int fd) { FDCALL(IOLENS_OP_SYNCFS, int, REAL(syncfs)(fd)) }
IOLENS_API int sync_file_range(int fd, off_t o, off_t n, unsigned fl) { FDCALL(IOLENS_OP_SYNC_FILE_RANGE, int, REAL(sync_file_range)(fd, o, n, fl)) }
IOLENS_API void sync(void)
{
    if (!iolens_on()) {
        REAL(sync)();
        return;
    }
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_SYNC);
    REAL(sync)();
    iolens_end(&c);
    iolens_fdop(&c, 0);
    iolens_ret(&c);
}
