/*
 * The paths of calls: a relative name made absolute from the working
 * directory or, for the *at calls, a directory descriptor; both are cached.
 */
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/*
 * The path of the last directory descriptor named through /proc/self/fd, for
 * the *at calls that follow with it: `rm -r`, `find` and the like unlink or
 * stat every entry of a directory through one descriptor, and a readlink of
 * /proc for each cost more than the call itself.  It is forgotten when that
 * descriptor is closed or replaced (iolens_forget_dirfds), and a vfork child, which
 * shares this memory but not the descriptor table, neither reads nor fills it.
 * Under the lock: threads share it.
 */
static struct {
    uint32_t len;
    char path[PATH_MAX];
} dirfd_cache; /* holds the path of descriptor iolens_g.dirfd_cached - 1 */

static long dirfd_path(int dirfd, char *out)
{
    char link[40];
    long r = -1;
    int cacheable = !iolens_in_vfork;
    if (cacheable) {
        int g = lock_guarded();
        if (iolens_g.dirfd_cached == dirfd + 1) {
            r = dirfd_cache.len;
            memcpy(out, dirfd_cache.path, (size_t)r);
        }
        unlock_guarded(g);
        if (r > 0) return r;
    }
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    r = syscall(SYS_readlinkat, AT_FDCWD, link, out, PATH_MAX - 1);
    if (r > 0 && cacheable && out[0] == '/') {
        int g = lock_guarded();
        iolens_g.dirfd_cached = dirfd + 1;
        dirfd_cache.len = (uint32_t)r;
        memcpy(dirfd_cache.path, out, (size_t)r);
        unlock_guarded(g);
    }
    return r;
}

/*
 * The working directory, for the relative paths of AT_FDCWD calls: a shell's
 * `echo x > dir/f` or a tool's relative temporary files would otherwise cost a
 * getcwd each.  It changes only through chdir and fchdir, which forget it
 * (meta.c); a raw syscall(SYS_chdir) would leave it stale.  A generation
 * count keeps a getcwd that raced a chdir from being cached.  A vfork child
 * (its own working directory, this memory) neither reads nor fills it.
 */
static struct {
    uint32_t len;
    uint32_t gen;
    int valid;
    char path[PATH_MAX];
} cwd_cache;

void iolens_cwd_changed(void)
{
    if (iolens_in_vfork) return;
    int g = lock_guarded();
    cwd_cache.valid = 0;
    cwd_cache.gen++;
    unlock_guarded(g);
}

static long cwd_path(char *out)
{
    int cacheable = !iolens_in_vfork;
    uint32_t gen = 0;
    long r = -1;
    if (cacheable) {
        int g = lock_guarded();
        if (cwd_cache.valid) {
            r = cwd_cache.len;
            memcpy(out, cwd_cache.path, (size_t)r + 1);
        }
        gen = cwd_cache.gen;
        unlock_guarded(g);
        if (r > 0) return r;
    }
    if (syscall(SYS_getcwd, out, PATH_MAX) <= 0) return -1;
    r = (long)strlen(out);
    if (cacheable && out[0] == '/') {
        int g = lock_guarded();
        if (cwd_cache.gen == gen) {
            cwd_cache.len = (uint32_t)r;
            memcpy(cwd_cache.path, out, (size_t)r + 1);
            cwd_cache.valid = 1;
        }
        unlock_guarded(g);
    }
    return r;
}

int iolens_abspath(int dirfd, const char *path, char *out, size_t cap)
{
    char tmp[PATH_MAX * 2];
    size_t n = 0;
    if (!path) return -1;
    if (path[0] != '/') {
        long r;
        if (dirfd == AT_FDCWD) {
            r = cwd_path(tmp);
            if (r <= 0) return -1;
            n = (size_t)r;
        } else {
            r = dirfd_path(dirfd, tmp);
            if (r <= 0) return -1;
            n = (size_t)r;
        }
        tmp[n++] = '/';
    }
    size_t pl = strlen(path);
    if (n + pl + 1 > sizeof tmp) return -1;
    memcpy(tmp + n, path, pl + 1);
    /* lexical normalisation: //, /./ and /../ */
    size_t o = 0;
    const char *s = tmp;
    while (*s) {
        while (*s == '/') s++;
        const char *e = s;
        while (*e && *e != '/') e++;
        size_t l = (size_t)(e - s);
        if (l == 0) break;
        if (l == 1 && s[0] == '.') {
        } else if (l == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else {
            if (o + l + 2 > cap) return -1;
            out[o++] = '/';
            memcpy(out + o, s, l);
            o += l;
        }
        s = e;
    }
    if (o == 0) out[o++] = '/';
    out[o] = 0;
    return (int)o;
}

/* Descriptors lo..hi are closed or replaced: the directory path cache forgets them. */
void iolens_forget_dirfds(unsigned lo, unsigned hi)
{
    unsigned c = (unsigned)__atomic_load_n(&iolens_g.dirfd_cached, __ATOMIC_RELAXED);
    if (c == 0 || iolens_in_vfork || c - 1 < lo || c - 1 > hi) return;
    int g = lock_guarded();
    c = (unsigned)iolens_g.dirfd_cached;
    if (c && c - 1 >= lo && c - 1 <= hi) iolens_g.dirfd_cached = 0;
    unlock_guarded(g);
}
