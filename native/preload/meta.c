/*
 * Metadata: the whole stat family (glibc >= 2.33 direct symbols, the older
 * __xstat ABI and statx), access, unlink, rename, mkdir, rmdir, directories
 * and size changes, and chdir and fchdir, which make the interposer forget
 * the working directory it caches.  Template: see core.h.
 */
#include "core.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A call on a path: the file gets a record only when the call succeeds, so
 * probing for missing files counts as calls but does not add records. */
#define PATHCALL(op, dirfd, path, flags, call, after) \
    if (!iolens_on()) return call; \
    struct iolens_call c; \
    iolens_begin(&c, op); \
    int r = call; \
    iolens_end(&c); \
    struct iolens_file *rec = iolens_pathop(&c, dirfd, r == 0 ? (path) : 0, flags); \
    if (rec && r == 0) { after; } \
    iolens_ret(&c); \
    return r;

#define STATBUF(buf) iolens_file_stat(rec, (buf)->st_dev, (buf)->st_ino, (buf)->st_mode)

static int fd_stat(int fd, int r, struct iolens_call *c, uint64_t dev, uint64_t ino, uint64_t mode)
{
    struct iolens_fdstate *f = iolens_fd(fd);
    iolens_fdop(c, f);
    if (r == 0 && f && f->rec && !f->rec->dev) iolens_file_stat(f->rec, dev, ino, mode);
    return r;
}

/* a stat through a descriptor: FSTAT, no path resolved or recorded */
#define FSTATCALL(call, buf) \
    if (!iolens_on()) return call; \
    struct iolens_call c; \
    iolens_begin(&c, IOLENS_OP_FSTAT); \
    int r = call; \
    iolens_end(&c); \
    fd_stat(fd, r, &c, (buf)->st_dev, (buf)->st_ino, (buf)->st_mode); \
    iolens_ret(&c); \
    return r;

IOLENS_API int stat(const char *p, struct stat *b) { PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, REAL(stat)(p, b), STATBUF(b)) }
IOLENS_API int stat64(const char *p, struct stat64 *b) { PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, REAL(stat64)(p, b), STATBUF(b)) }
IOLENS_API int lstat(const char *p, struct stat *b) { PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, REAL(lstat)(p, b), STATBUF(b)) }
IOLENS_API int lstat64(const char *p, struct stat64 *b) { PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, REAL(lstat64)(p, b), STATBUF(b)) }
IOLENS_API int fstat(int fd, struct stat *b) { FSTATCALL(REAL(fstat)(fd, b), b) }
IOLENS_API int fstat64(int fd, struct stat64 *b) { FSTATCALL(REAL(fstat64)(fd, b), b) }

static int at_fd(const char *p, int fl) { return p && !*p && (fl & AT_EMPTY_PATH); }

IOLENS_API int fstatat(int d, const char *p, struct stat *b, int fl)
{
    if (at_fd(p, fl)) {
        int fd = d;
        FSTATCALL(REAL(fstatat)(d, p, b, fl), b)
    }
    PATHCALL(IOLENS_OP_STAT, d, p, 0, REAL(fstatat)(d, p, b, fl), STATBUF(b))
}
IOLENS_API int fstatat64(int d, const char *p, struct stat64 *b, int fl)
{
    if (at_fd(p, fl)) {
        int fd = d;
        FSTATCALL(REAL(fstatat64)(d, p, b, fl), b)
    }
    PATHCALL(IOLENS_OP_STAT, d, p, 0, REAL(fstatat64)(d, p, b, fl), STATBUF(b))
}

/* The pre-2.33 ABI; on newer glibc these exist only as compat symbols. */
#define XSTAT(name, fallback, call_fallback, ...) \
    (REAL(name) ? REAL(name)(__VA_ARGS__) : call_fallback)
IOLENS_API int __xstat(int v, const char *p, struct stat *b)
{
    PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, XSTAT(__xstat, stat, REAL(stat)(p, b), v, p, b), STATBUF(b))
}
IOLENS_API int __xstat64(int v, const char *p, struct stat64 *b)
{
    PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, XSTAT(__xstat64, stat64, REAL(stat64)(p, b), v, p, b), STATBUF(b))
}
IOLENS_API int __lxstat(int v, const char *p, struct stat *b)
{
    PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, XSTAT(__lxstat, lstat, REAL(lstat)(p, b), v, p, b), STATBUF(b))
}
IOLENS_API int __lxstat64(int v, const char *p, struct stat64 *b)
{
    PATHCALL(IOLENS_OP_STAT, AT_FDCWD, p, 0, XSTAT(__lxstat64, lstat64, REAL(lstat64)(p, b), v, p, b), STATBUF(b))
}
IOLENS_API int __fxstat(int v, int fd, struct stat *b) { FSTATCALL(XSTAT(__fxstat, fstat, REAL(fstat)(fd, b), v, fd, b), b) }
IOLENS_API int __fxstat64(int v, int fd, struct stat64 *b) { FSTATCALL(XSTAT(__fxstat64, fstat64, REAL(fstat64)(fd, b), v, fd, b), b) }
IOLENS_API int __fxstatat(int v, int d, const char *p, struct stat *b, int fl)
{
    PATHCALL(IOLENS_OP_STAT, d, p, 0, XSTAT(__fxstatat, fstatat, REAL(fstatat)(d, p, b, fl), v, d, p, b, fl), STATBUF(b))
}
IOLENS_API int __fxstatat64(int v, int d, const char *p, struct stat64 *b, int fl)
{
    PATHCALL(IOLENS_OP_STAT, d, p, 0, XSTAT(__fxstatat64, fstatat64, REAL(fstatat64)(d, p, b, fl), v, d, p, b, fl), STATBUF(b))
}

IOLENS_API int statx(int d, const char *p, int fl, unsigned mask, struct statx *b)
{
    if (at_fd(p, fl)) {
        if (!iolens_on()) return REAL(statx)(d, p, fl, mask, b);
        struct iolens_call c;
        iolens_begin(&c, IOLENS_OP_FSTAT);
        int r = REAL(statx)(d, p, fl, mask, b);
        iolens_end(&c);
        fd_stat(d, r, &c, makedev(b->stx_dev_major, b->stx_dev_minor), b->stx_ino, b->stx_mode);
        iolens_ret(&c);
        return r;
    }
    PATHCALL(IOLENS_OP_STAT, d, p, 0, REAL(statx)(d, p, fl, mask, b),
             iolens_file_stat(rec, makedev(b->stx_dev_major, b->stx_dev_minor), b->stx_ino, b->stx_mode))
}

/* ---- access, namespace ---- */

IOLENS_API int access(const char *p, int m) { PATHCALL(IOLENS_OP_ACCESS, AT_FDCWD, p, 0, REAL(access)(p, m), (void)0) }
IOLENS_API int faccessat(int d, const char *p, int m, int fl) { PATHCALL(IOLENS_OP_ACCESS, d, p, 0, REAL(faccessat)(d, p, m, fl), (void)0) }
IOLENS_API int unlink(const char *p) { PATHCALL(IOLENS_OP_UNLINK, AT_FDCWD, p, IOLENS_FF_DELETED, REAL(unlink)(p), (void)0) }
IOLENS_API int unlinkat(int d, const char *p, int fl)
{
    if (fl & AT_REMOVEDIR) {
        PATHCALL(IOLENS_OP_RMDIR, d, p, IOLENS_FF_DELETED | IOLENS_FF_DIRECTORY, REAL(unlinkat)(d, p, fl), (void)0)
    }
    PATHCALL(IOLENS_OP_UNLINK, d, p, IOLENS_FF_DELETED, REAL(unlinkat)(d, p, fl), (void)0)
}
IOLENS_API int rmdir(const char *p) { PATHCALL(IOLENS_OP_RMDIR, AT_FDCWD, p, IOLENS_FF_DELETED | IOLENS_FF_DIRECTORY, REAL(rmdir)(p), (void)0) }
IOLENS_API int mkdir(const char *p, mode_t m) { PATHCALL(IOLENS_OP_MKDIR, AT_FDCWD, p, IOLENS_FF_CREATED | IOLENS_FF_DIRECTORY, REAL(mkdir)(p, m), (void)0) }
IOLENS_API int mkdirat(int d, const char *p, mode_t m) { PATHCALL(IOLENS_OP_MKDIR, d, p, IOLENS_FF_CREATED | IOLENS_FF_DIRECTORY, REAL(mkdirat)(d, p, m), (void)0) }

#define RENAMED(nd, np) iolens_pathmark(nd, np, IOLENS_FF_RENAMED_TO)
IOLENS_API int rename(const char *a, const char *b)
{
    PATHCALL(IOLENS_OP_RENAME, AT_FDCWD, a, IOLENS_FF_RENAMED_FROM | IOLENS_FF_DELETED, REAL(rename)(a, b), RENAMED(AT_FDCWD, b))
}
IOLENS_API int renameat(int da, const char *a, int db, const char *b)
{
    PATHCALL(IOLENS_OP_RENAME, da, a, IOLENS_FF_RENAMED_FROM | IOLENS_FF_DELETED, REAL(renameat)(da, a, db, b), RENAMED(db, b))
}
IOLENS_API int renameat2(int da, const char *a, int db, const char *b, unsigned fl)
{
    PATHCALL(IOLENS_OP_RENAME, da, a, IOLENS_FF_RENAMED_FROM | IOLENS_FF_DELETED, REAL(renameat2)(da, a, db, b, fl), RENAMED(db, b))
}

/* ---- directories ---- */

IOLENS_API DIR *opendir(const char *p)
{
    if (!iolens_on()) return REAL(opendir)(p);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_OPENDIR);
    DIR *d = REAL(opendir)(p);
    iolens_end(&c);
    iolens_opened(&c, AT_FDCWD, d ? p : 0, d ? dirfd(d) : -1, O_DIRECTORY, 1);
    iolens_ret(&c);
    return d;
}
IOLENS_API DIR *fdopendir(int fd)
{
    if (!iolens_on()) return REAL(fdopendir)(fd);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_OPENDIR);
    DIR *d = REAL(fdopendir)(fd);
    iolens_end(&c);
    iolens_fdop(&c, iolens_fd(fd));
    iolens_ret(&c);
    return d;
}
IOLENS_API int closedir(DIR *d)
{
    /* glibc declares d nonnull, so the compiler would drop a plain check; libc
     * itself answers NULL with EINVAL, and so must we */
    __asm__("" : "+r"(d));
    if (!d) return REAL(closedir)(d);
    if (!iolens_on()) {
        iolens_closed(dirfd(d));
        return REAL(closedir)(d);
    }
    int fd = dirfd(d);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_CLOSEDIR);
    int r = REAL(closedir)(d);
    iolens_end(&c);
    iolens_fdop(&c, iolens_fd(fd));
    iolens_closed(fd);
    iolens_ret(&c);
    return r;
}

#define READDIR(type, call) \
    if (!iolens_on()) return call; \
    int fd = dirfd(d); \
    FDCALL(IOLENS_OP_READDIR, type, call)

IOLENS_API struct dirent *readdir(DIR *d) { READDIR(struct dirent *, REAL(readdir)(d)) }
IOLENS_API struct dirent64 *readdir64(DIR *d) { READDIR(struct dirent64 *, REAL(readdir64)(d)) }
IOLENS_API ssize_t getdents64(int fd, void *b, size_t n) { FDCALL(IOLENS_OP_GETDENTS, ssize_t, REAL(getdents64)(fd, b, n)) }

/* ---- the working directory (not an I/O call: not counted) ---- */

IOLENS_API int chdir(const char *p)
{
    int r = REAL(chdir)(p), e = errno;
    iolens_cwd_changed();
    errno = e;
    return r;
}
IOLENS_API int fchdir(int fd)
{
    int r = REAL(fchdir)(fd), e = errno;
    iolens_cwd_changed();
    errno = e;
    return r;
}

/* ---- sizes ---- */

IOLENS_API int truncate(const char *p, off_t n) { PATHCALL(IOLENS_OP_TRUNCATE, AT_FDCWD, p, IOLENS_FF_TRUNCATED, REAL(truncate)(p, n), (void)0) }
IOLENS_API int truncate64(const char *p, off_t n) { PATHCALL(IOLENS_OP_TRUNCATE, AT_FDCWD, p, IOLENS_FF_TRUNCATED, REAL(truncate64)(p, n), (void)0) }
IOLENS_API int ftruncate(int fd, off_t n) { FDCALL(IOLENS_OP_TRUNCATE, int, REAL(ftruncate)(fd, n)) }
IOLENS_API int ftruncate64(int fd, off_t n) { FDCALL(IOLENS_OP_TRUNCATE, int, REAL(ftruncate64)(fd, n)) }
IOLENS_API int fallocate(int fd, int m, off_t o, off_t n) { FDCALL(IOLENS_OP_FALLOCATE, int, REAL(fallocate)(fd, m, o, n)) }
IOLENS_API int fallocate64(int fd, int m, off_t o, off_t n) { FDCALL(IOLENS_OP_FALLOCATE, int, REAL(fallocate64)(fd, m, o, n)) }
IOLENS_API int posix_fallocate(int fd, off_t o, off_t n) { FDCALL(IOLENS_OP_FALLOCATE, int, REAL(posix_fallocate)(fd, o, n)) }
IOLENS_API int posix_fallocate64(int fd, off_t o, off_t n) { FDCALL(IOLENS_OP_FALLOCATE, int, REAL(posix_fallocate64)(fd, o, n)) }
