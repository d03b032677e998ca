/*
 * Untimed phase set-up: content pools (shared per content and template,
 * made once per job), files laid out before they are read or rewritten, and
 * the directories of small-file groups.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int needs_pool(const group *g)
{
    return g->eng->files && (OP_IO[g->op] == IO_write || OP_IO[g->op] == IO_mixed || g->prepare);
}

/* Content pools are shared per (content, template), made once per job. */
typedef struct {
    content_kind kind;
    const char *tmpl;
    unsigned char *p;
    size_t n;
} pool_entry;
static pool_entry g_pools[16];
static int g_npools;

int get_pool(group *g, uint64_t seed, char *err, size_t errlen)
{
    size_t need = g_ctx->pool_bytes ? g_ctx->pool_bytes : MIN_POOL;
    if (2 * g->bs > need)
        need = (size_t)(2 * g->bs);
    need = (need + 4095) & ~(size_t)4095;
    for (int i = 0; i < g_npools; i++) {
        pool_entry *e = &g_pools[i];
        if (e->kind == g->content && ((!e->tmpl && !g->tmpl) || (e->tmpl && g->tmpl && !strcmp(e->tmpl, g->tmpl))) &&
            e->n >= need) {
            g->pool = e->p;
            g->pool_len = e->n;
            return 0;
        }
    }
    unsigned char *p;
    if (content_pool(g->content, g->tmpl, need, seed, &p, err, errlen))
        return -1;
    if (g_npools < 16)
        g_pools[g_npools++] = (pool_entry){g->content, g->tmpl, p, need};
    g->pool = p;
    g->pool_len = need;
    return 0;
}

/* Lays out a file for random I/O or reads (untimed) when it is missing or short. */
int prepare_file(group *g, const char *name, uint64_t size, char *err, size_t errlen)
{
    int fd = open_beneath(g->dirfd, name, O_WRONLY | O_CREAT, 0644, 1);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", name, strerror(errno));
        return -errno;
    }
    struct stat st;
    fstat(fd, &st);
    uint64_t off = (uint64_t)st.st_size < size ? 0 : size, step = 1 << 20, pool_off = 0;
    while (off < size) {
        uint64_t n = size - off < step ? size - off : step;
        ssize_t r = pwrite(fd, pool_slice(g, &pool_off, n), n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            snprintf(err, errlen, "cannot lay out %s: %s", name, strerror(e));
            close(fd);
            return -e;
        }
        off += (uint64_t)r;
        if (bench_stop_signal)
            break;
    }
    int rc = fsync(fd) ? -errno : 0;
    close(fd);
    if (rc)
        snprintf(err, errlen, "cannot sync %s: %s", name, strerror(-rc));
    return rc;
}

int open_subdirs(group *g, int create, char *err, size_t errlen)
{
    if (!g->eng->files)
        return 0;
    if (create) {
        if (mkdirat(g->dirfd, g->prefix, 0755) && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", g->prefix, strerror(errno));
            return -errno;
        }
    }
    int pfd = openat(g->dirfd, g->prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", g->prefix, strerror(errno));
        return -errno;
    }
    g->subfds = calloc(g->fanout, sizeof(int));
    for (uint64_t d = 0; d < g->fanout; d++) {
        char name[32];
        snprintf(name, sizeof name, "d%04" PRIu64, d);
        if (create) {
            if (mkdirat(pfd, name, 0755) == 0)
                g->dirs_made++;
            else if (errno != EEXIST) {
                snprintf(err, errlen, "cannot create %s/%s: %s", g->prefix, name, strerror(errno));
                int e = errno;
                close(pfd);
                return -e;
            }
        }
        g->subfds[d] = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (g->subfds[d] < 0) {
            int e = errno == ENOTDIR ? ELOOP : errno;
            snprintf(err, errlen, "cannot open %s/%s: %s", g->prefix, name, strerror(e));
            close(pfd);
            return -e;
        }
    }
    close(pfd);
    return 0;
}

void close_subdirs(group *g, int remove)
{
    if (!g->subfds)
        return;
    for (uint64_t d = 0; d < g->fanout; d++)
        if (g->subfds[d] >= 0)
            close(g->subfds[d]);
    free(g->subfds);
    g->subfds = NULL;
    if (remove) {
        int pfd = openat(g->dirfd, g->prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pfd >= 0) {
            for (uint64_t d = 0; d < g->fanout; d++) {
                char name[32];
                snprintf(name, sizeof name, "d%04" PRIu64, d);
                if (unlinkat(pfd, name, AT_REMOVEDIR) == 0)
                    g->dirs_removed++;
            }
            close(pfd);
            if (unlinkat(g->dirfd, g->prefix, AT_REMOVEDIR) == 0)
                g->dirs_removed++;
        }
    }
}

void free_pools(void)
{
    for (int i = 0; i < g_npools; i++)
        free(g_pools[i].p);
    g_npools = 0;
}
