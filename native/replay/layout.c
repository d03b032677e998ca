/*
 * The untimed set-up of a replay directory: every file's parent directories, the directories and files the step
 * found there (laid out with their content), the step's working directory, and a descriptor table grown while
 * the replayer has one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Grows the descriptor table to hold n descriptors and a margin, while the replayer has one thread.  The kernel grows it
 * (doubling, from 64) when a descriptor number first passes its size, and in a process with several threads each
 * growth waits for an RCU grace period (expand_fdtable), 8-18 ms here, at the 256th, 512th and 1,024th file held
 * open.  The replayed step never paid that: each of its processes had its own table, and one replayer process holds
 * the descriptors of all of them (a shell that created 2,000 files stalled three times per replay). */
void presize_fdtable(size_t n)
{
    struct rlimit rl;
    if (n == 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    size_t top = n + 64;
    if (rl.rlim_cur != RLIM_INFINITY && top >= rl.rlim_cur) top = rl.rlim_cur - 1;
    int fd = fcntl(R.rootfd, F_DUPFD_CLOEXEC, (int)top);
    if (fd >= 0) close(fd);
}


/* Makes every directory of `rel` below the root that is not there: its parents, and with `whole` itself. */
static int make_dirs(const char *rel, int whole, char *err, size_t errlen)
{
    char *p = strdup(rel);
    for (char *s = p;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        if (!c && !whole) break;
        *s = 0;
        if (mkdirat(R.rootfd, p, 0755) && errno != EEXIST) {
            snprintf(err, errlen, "mkdir %s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        *s = c;
        if (!c) break;
    }
    free(p);
    return 0;
}

/* The step's working directory below the root (made if the layout did not), and every file below it named from
 * there (open_file).  Untimed. */
int mirror_cwd(const char *cwd, char *err, size_t errlen)
{
    if (make_dirs(cwd, 1, err, errlen)) return -1;
    R.cwdfd = open_rel(cwd, O_RDONLY | O_DIRECTORY, 0);
    if (R.cwdfd < 0) {
        snprintf(err, errlen, "open %s: %s", cwd, strerror(errno));
        return -1;
    }
    size_t n = strlen(cwd);
    for (size_t i = 0; i < R.nfiles; i++) {
        struct rfile *f = &R.files[i];
        if (!strncmp(f->path, cwd, n) && f->path[n] == '/' && f->path[n + 1]) {
            f->at = R.cwdfd;
            f->name = f->path + n + 1;
        }
    }
    return 0;
}

/* Creates every file's parent directories, directories, and the laid-out files (untimed). */
int layout(int cold, char *err, size_t errlen)
{
    unsigned char *pool[CONTENT__COUNT] = {0};
    for (size_t i = 0; i < R.nfiles; i++) {
        struct rfile *f = &R.files[i];
        if (make_dirs(f->path, 0, err, errlen)) return -1;
        if (f->dir) {
            if (f->layout >= 0 && mkdirat(R.rootfd, f->path, 0755) && errno != EEXIST) {
                snprintf(err, errlen, "mkdir %s: %s", f->path, strerror(errno));
                return -1;
            }
            continue;
        }
        if (f->layout < 0) continue;
        int fd = open_rel(f->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            snprintf(err, errlen, "create %s: %s", f->path, strerror(errno));
            return -1;
        }
        if (!pool[f->content] && content_pool((content_kind)f->content, NULL, IOBUF * 4, 7 + (uint64_t)f->content,
                                              &pool[f->content], err, errlen)) {
            close(fd);
            return -1;
        }
        uint64_t left = (uint64_t)f->layout, off = 0;
        while (left && !stop_signal) {
            size_t n = left > IOBUF * 4 ? IOBUF * 4 : (size_t)left;
            ssize_t r = pwrite(fd, pool[f->content], n, (off_t)off);
            if (r <= 0) {
                snprintf(err, errlen, "write %s: %s", f->path, r < 0 ? strerror(errno) : "short write");
                close(fd);
                return -1;
            }
            left -= (uint64_t)r;
            off += (uint64_t)r;
        }
        if (cold) {
            fdatasync(fd);
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        }
        close(fd);
    }
    for (int k = 0; k < CONTENT__COUNT; k++) free(pool[k]);
    /* The layout's dirty pages would otherwise be written back while the replay is timed, and a warm replay on
     * a disk would pay for the layout; they stay in the page cache. */
    if (!cold) syncfs(R.rootfd);
    return stop_signal ? -1 : 0;
}

void hold_layout(void)
{
    fputc('\n', stdout); /* JSON readers skip it as white space before the result */
    fflush(stdout);
    char c;
    while (read(STDIN_FILENO, &c, 1) < 0 && errno == EINTR && !stop_signal) {
    }
}
