/*
 * Safe paths: every path is relative to a job directory whose name starts with
 * "iolens-bench-", and is walked one component at a time with O_NOFOLLOW, so
 * a symlink anywhere below it is refused (ELOOP) instead of followed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int valid_component(const char *c, size_t n)
{
    return n > 0 && !(n == 1 && c[0] == '.') && !(n == 2 && c[0] == '.' && c[1] == '.');
}

/* Opens rel (a/b/c) below rootfd without following any symlink.  Intermediate
 * directories are created when mkdirs is set.  Returns fd or -1 with errno. */
int open_beneath(int rootfd, const char *rel, int flags, mode_t mode, int mkdirs)
{
    if (!rel || !*rel || rel[0] == '/') {
        errno = EINVAL;
        return -1;
    }
    int cur = rootfd;
    const char *p = rel;
    char comp[256];
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (!valid_component(p, n) || n >= sizeof comp) {
            if (cur != rootfd)
                close(cur);
            errno = EINVAL;
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = 0;
        int fd;
        if (slash) {
            fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0 && errno == ENOENT && mkdirs) {
                if (mkdirat(cur, comp, 0755) == 0 || errno == EEXIST)
                    fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            }
            if (fd < 0 && errno == ENOTDIR)
                errno = ELOOP; /* a symlink (or a file) where a directory should be */
        } else {
            fd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
        }
        int saved = errno;
        if (cur != rootfd)
            close(cur);
        errno = saved;
        if (fd < 0 || !slash)
            return fd;
        cur = fd;
        p = slash + 1;
    }
}

/* Removes rel (file or tree) below rootfd; symlinks are removed, never followed. */
static int remove_at(int dirfd, const char *name)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && remove_at(fd, e->d_name))
            rc = -1;
    closedir(d);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) && errno != ENOENT)
        rc = -1;
    return rc;
}

int remove_beneath(int rootfd, const char *rel)
{
    const char *slash = strrchr(rel, '/');
    if (!slash)
        return valid_component(rel, strlen(rel)) ? remove_at(rootfd, rel) : (errno = EINVAL, -1);
    char parent[4096];
    size_t n = (size_t)(slash - rel);
    if (n >= sizeof parent) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(parent, rel, n);
    parent[n] = 0;
    int pfd = open_beneath(rootfd, parent, O_RDONLY | O_DIRECTORY, 0, 0);
    if (pfd < 0)
        return errno == ENOENT ? 0 : -1;
    int rc = valid_component(slash + 1, strlen(slash + 1)) ? remove_at(pfd, slash + 1) : (errno = EINVAL, -1);
    int saved = errno;
    close(pfd);
    errno = saved;
    return rc;
}
