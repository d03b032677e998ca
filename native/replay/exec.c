/*
 * Execution: one recorded operation run on the replay directory, below R.rootfd.  Paths are opened with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, so nothing outside it is touched.  A handle is one of the step's open
 * files: its descriptor, the copies DUP made, and the 4 KiB buffer of a stdio stream, replayed as glibc's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static int open_at(int at, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW), .mode = (flags & O_CREAT) ? mode : 0,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, at, rel, &how, sizeof how);
    return (int)fd;
}

int open_rel(const char *rel, int flags, mode_t mode) { return open_at(R.rootfd, rel, flags, mode); }

/* A file as the step's timed ops name it: a name below the working directory is looked up from there, as a step
 * given relative names looks it up, not component by component from the replay root (a shell's 2,000 creates of
 * sf/fN from a name three directories deeper cost the replay 1.3 us more each, 15% of the step). */
static int open_file(const struct rfile *f, int flags, mode_t mode) { return open_at(f->at, f->name, flags, mode); }

/* Opens the handle's file as the step did: a directory to list, a file it only read read-only (made when it is
 * not there yet, as a replay whose order is inferred may need), else read-write and created when missing. */
static int open_handle(const struct handle *h, const struct rfile *f, int trunc)
{
    if (f->dir) return open_file(f, O_RDONLY | O_DIRECTORY, 0);
    if (h->read_only) {
        int fd = open_file(f, O_RDONLY, 0);
        if (fd >= 0 || errno != ENOENT) return fd;
    }
    int fd = open_file(f, O_RDWR | O_CREAT | (trunc ? O_TRUNC : 0), 0644);
    return fd < 0 && errno == EISDIR ? open_file(f, O_RDONLY | O_DIRECTORY, 0) : fd;
}

static int handle_fd(struct handle *h, int trunc)
{
    if (h->fd >= 0) return h->fd;
    struct rfile *f = &R.files[h->file];
    h->fd = open_handle(h, f, trunc);
    h->rlo = h->rhi = 0;
    h->listed = 0;
    return h->fd;
}

static int do_pread(int fd, unsigned char *buf, uint64_t size, uint64_t off)
{
    while (size) {
        size_t n = size > IOBUF ? IOBUF : (size_t)size;
        ssize_t r = pread(fd, buf, n, (off_t)off);
        if (r < 0) return -1;
        if (r == 0) return 0; /* past the end: the recorded file was larger than its layout */
        size -= (uint64_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static int do_pwrite(int fd, uint64_t size, uint64_t off)
{
    while (size) {
        size_t n = size > IOBUF ? IOBUF : (size_t)size;
        ssize_t r = pwrite(fd, R.wpool, n, (off_t)off);
        if (r <= 0) return -1;
        size -= (uint64_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* A copy between two files, as copy_file_range does it (on btrfs or NFS that is not a read and a write: clones,
 * server-side copies); pread and pwrite where the kernel cannot copy between these two files. */
static int do_copy(int in, uint64_t ioff, int out, uint64_t ooff, uint64_t size, unsigned char *buf)
{
    if (size == 0) { /* the call that found the end of the source */
        int64_t i = (int64_t)ioff, o = (int64_t)ooff;
        return syscall(SYS_copy_file_range, in, &i, out, &o, 0, 0) < 0 && errno != EXDEV && errno != EINVAL ? -1 : 0;
    }
    while (size) {
        int64_t i = (int64_t)ioff, o = (int64_t)ooff;
        long r = syscall(SYS_copy_file_range, in, &i, out, &o, (size_t)size, 0);
        if (r == 0) return 0; /* past the end: the recorded source was larger than its layout */
        if (r < 0) {
            if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return -1;
            while (size) {
                size_t n = size > IOBUF ? IOBUF : (size_t)size;
                ssize_t got = pread(in, buf, n, (off_t)ioff);
                if (got <= 0) return got < 0 ? -1 : 0;
                if (pwrite(out, buf, (size_t)got, (off_t)ooff) != got) return -1;
                size -= (uint64_t)got;
                ioff += (uint64_t)got;
                ooff += (uint64_t)got;
            }
            return 0;
        }
        size -= (uint64_t)r;
        ioff += (uint64_t)r;
        ooff += (uint64_t)r;
    }
    return 0;
}

static int drain(struct handle *h)
{
    int rc = 0;
    if (h->wlen && h->fd >= 0) rc = do_pwrite(h->fd, h->wlen, h->woff);
    h->wlen = 0;
    return rc;
}

/* Runs one file operation; returns 0 or -1 (errno set).  The handle lock is held by the caller. */
static int file_op(const struct rp_op *o, struct handle *h, unsigned char *buf)
{
    int fd;
    switch (o->op) {
    case RP_OP_OPEN: {
        if (h->fd >= 0) { /* opened again: pay for the open, keep one descriptor */
            struct rfile *f = &R.files[h->file];
            int fd2 = open_handle(h, f, 0);
            if (fd2 >= 0) close(fd2);
            h->listed = 0;
            h->refs++;
            return fd2 < 0 ? -1 : 0;
        }
        h->refs++;
        return handle_fd(h, (int)(o->flags & 1)) < 0 ? -1 : 0;
    }
    case RP_OP_CLOSE: /* a close of a copy is a close too: a flush on FUSE and NFS */
        if (h->fd < 0) return 0;
        if (--h->refs > 0) {
            if (h->ndup) close(h->dups[--h->ndup]);
            return 0;
        }
        drain(h);
        while (h->ndup) close(h->dups[--h->ndup]);
        close(h->fd);
        h->fd = -1;
        h->refs = 0;
        return 0;
    case RP_OP_DUP:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        h->refs++;
        if (h->ndup < RP_DUPS) {
            int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
            if (d < 0) return -1;
            h->dups[h->ndup++] = d;
        }
        return 0;
    case RP_OP_READ:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        return do_pread(fd, buf, o->size, o->offset);
    case RP_OP_FSTAT: {
        struct stat st;
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        return fstat(fd, &st);
    }
    case RP_OP_WRITE:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        return do_pwrite(fd, o->size, o->offset);
    case RP_OP_SREAD:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        if (o->offset >= h->rlo && o->offset + o->size <= h->rhi) return 0;
        if (o->size >= RP_STREAM_BUF) {
            h->rlo = h->rhi = 0;
            return do_pread(fd, buf, o->size, o->offset);
        }
        {
            uint64_t from = o->offset >= h->rlo && o->offset < h->rhi ? h->rhi : o->offset;
            uint64_t need = o->offset + o->size - from;
            uint64_t n = need > RP_STREAM_BUF ? need : RP_STREAM_BUF;
            h->rlo = from;
            h->rhi = from + n;
            return do_pread(fd, buf, n, from);
        }
    case RP_OP_SWRITE:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        if (h->wlen && o->offset != h->woff + h->wlen && drain(h)) return -1;
        if (!h->wlen) h->woff = o->offset;
        h->wlen += o->size;
        if (h->wlen >= RP_STREAM_BUF) {
            uint64_t whole = h->wlen - h->wlen % RP_STREAM_BUF;
            if (do_pwrite(fd, whole, h->woff)) return -1;
            h->woff += whole;
            h->wlen -= whole;
        }
        return 0;
    case RP_OP_SFLUSH:
        return h->fd >= 0 ? drain(h) : 0;
    case RP_OP_FSYNC:
    case RP_OP_FDATASYNC:
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        drain(h);
        return o->op == RP_OP_FSYNC ? fsync(fd) : fdatasync(fd);
    case RP_OP_READDIR: {
        if (h->listed) return 0;
        if ((fd = handle_fd(h, 0)) < 0) return -1;
        h->listed = 1;
        lseek(fd, 0, SEEK_SET);
        long r;
        while ((r = syscall(SYS_getdents64, fd, buf, IOBUF)) > 0) {
        }
        return r < 0 ? -1 : 0;
    }
    default: return 0;
    }
}

static int path_op(const struct rp_op *o)
{
    struct rfile *f = &R.files[o->obj];
    struct stat st;
    switch (o->op) {
    case RP_OP_STAT: return fstatat(f->at, f->name, &st, AT_SYMLINK_NOFOLLOW);
    case RP_OP_UNLINK:
        if (unlinkat(f->at, f->name, 0) == 0) return 0;
        return (errno == EISDIR || errno == EPERM) ? unlinkat(f->at, f->name, AT_REMOVEDIR) : -1;
    case RP_OP_MKDIR: return mkdirat(f->at, f->name, 0755) == 0 || errno == EEXIST ? 0 : -1;
    case RP_OP_RENAME: {
        const struct rfile *to = o->size && o->size - 1 < R.nfiles ? &R.files[o->size - 1] : f;
        return renameat(f->at, f->name, to->at, to->name);
    }
    case RP_OP_SYNCFS: return syncfs(R.rootfd);
    default: return 0;
    }
}

int exec_op(struct rthread *t, const struct rp_op *o, uint64_t a, unsigned char *buf)
{
    int rc = 0;
    switch (o->op) {
    case RP_OP_START:
    case RP_OP_AFTER:
    case RP_OP_EXIT: break;
    case RP_OP_SPAWN:
    case RP_OP_WAIT:
    case RP_OP_PIPE_READ:
    case RP_OP_PIPE_WRITE: dep_op(t, o, a); break;
    case RP_OP_STAT:
    case RP_OP_UNLINK:
    case RP_OP_MKDIR:
    case RP_OP_RENAME:
    case RP_OP_SYNCFS: rc = path_op(o); break;
    case RP_OP_COPY_FROM: {
        struct handle *h = &R.handles[o->obj];
        pthread_mutex_lock(&h->mu);
        t->copy_fd = handle_fd(h, 0);
        pthread_mutex_unlock(&h->mu);
        t->copy_off = o->offset;
        rc = t->copy_fd < 0 ? -1 : 0;
        break;
    }
    case RP_OP_COPY: {
        struct handle *h = &R.handles[o->obj];
        pthread_mutex_lock(&h->mu);
        int fd = handle_fd(h, 0);
        rc = fd < 0 || t->copy_fd < 0 ? -1 : do_copy(t->copy_fd, t->copy_off, fd, o->offset, o->size, buf);
        pthread_mutex_unlock(&h->mu);
        t->copy_fd = -1;
        break;
    }
    default: {
        struct handle *h = &R.handles[o->obj];
        pthread_mutex_lock(&h->mu);
        rc = file_op(o, h, buf);
        pthread_mutex_unlock(&h->mu);
    }
    }
    return rc;
}
