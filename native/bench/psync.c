/*
 * The psync engine: every operation one synchronous system call (pread, pwrite; open, write, read, close,
 * fstatat and unlinkat for small files; fsync or fdatasync).  The io_uring engine uses these for what it does
 * not queue: lists of files and small files.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "loops.h"

static inline ssize_t psync_rw(int fd, int is_read, void *buf, size_t n, off_t off)
{
    return is_read ? pread(fd, buf, n, off) : pwrite(fd, buf, n, off);
}

int psync_sync(const group *g, int fd)
{
    if (g->sync == SYNC_fsync)
        return fsync(fd);
    if (g->sync == SYNC_fdatasync)
        return fdatasync(fd);
    return 0;
}

static inline int small_create(worker *w, int dfd, const char *name, uint64_t size, uint64_t *pool_off, uint64_t *moved,
                               const char **what)
{
    group *g = w->g;
    int rc = 0;
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        *what = "create";
        return -1;
    }
    while (*moved < size) {
        uint64_t n = size - *moved < g->bs ? size - *moved : g->bs;
        ssize_t r = write(fd, pool_slice(g, pool_off, n), n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            *what = "write";
            break;
        }
        *moved += (uint64_t)r;
    }
    if (!rc && g->fsync_files && fsync(fd)) {
        rc = -1;
        *what = "fsync";
    }
    int saved = errno;
    if (close(fd) && !rc) {
        rc = -1;
        *what = "close";
    } else {
        errno = saved;
    }
    return rc;
}

static inline int small_read(worker *w, int dfd, const char *name, uint64_t *moved, const char **what)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        *what = "open";
        return -1;
    }
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, w->buf, w->g->bs);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            *what = "read";
            break;
        }
        if (r == 0)
            break;
        *moved += (uint64_t)r;
    }
    close(fd);
    return rc;
}

static inline int psync_small(worker *w, int dfd, const char *name, uint64_t size, uint64_t *pool_off,
                              uint64_t *moved, const char **what)
{
    struct stat st;
    switch (w->g->op) {
    case OP_create: return small_create(w, dfd, name, size, pool_off, moved, what);
    case OP_readfiles: return small_read(w, dfd, name, moved, what);
    case OP_stat: return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW);
    case OP_delete: return unlinkat(dfd, name, 0);
    default: return 0;
    }
}

ENGINE_LOOPS(psync, 1)

const ioengine psync_engine = {
    .files = 1,
    .sync = psync_sync,
    .run = ENGINE_RUN(psync),
};
