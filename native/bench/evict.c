/*
 * Before a phase: evict the files it will touch from the page cache (and
 * drop all caches when asked and allowed), measuring what stays resident.
 * Around its timed part: the block-layer counters of each directory's device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Residency (bytes in the page cache) of an open file, via mincore; -1 if unknown. */
static int64_t resident_bytes(int fd, uint64_t size)
{
    if (!size)
        return 0;
    long pg = sysconf(_SC_PAGESIZE);
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return -1;
    size_t pages = (size + (uint64_t)pg - 1) / (uint64_t)pg;
    unsigned char *vec = malloc(pages);
    int64_t res = -1;
    if (vec && mincore(m, size, vec) == 0) {
        res = 0;
        for (size_t i = 0; i < pages; i++)
            if (vec[i] & 1)
                res += pg;
        if ((uint64_t)res > size)
            res = (int64_t)size;
    }
    free(vec);
    munmap(m, size);
    return res;
}

/* Evicts one file: flush, drop its pages, measure what is left (sampled: measure=0 skips). */
static void evict_file(phase *ph, int fd, int measure)
{
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ph->evicted_files++;
    if (measure) {
        int64_t r = resident_bytes(fd, (uint64_t)st.st_size);
        if (r >= 0) {
            ph->residency_known = 1;
            ph->checked_bytes += (uint64_t)st.st_size;
            ph->resident_bytes += (uint64_t)r;
        }
    }
}

void evict_phase(phase *ph, job_ctx *ctx)
{
    for (int d = 0; d < ctx->ndirs; d++)
        syncfs(ctx->dirfds[d]);
    if (ctx->drop_caches) {
        sync();
        int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && write(fd, "3\n", 2) == 2)
            ph->dropped = 1;
        else
            ph->drop_errno = errno ? errno : EIO;
        if (fd >= 0)
            close(fd);
    }
    for (size_t i = 0; i < ph->ngroups; i++) {
        group *g = &ph->groups[i];
        /* every file the phase's groups will touch that exists now: a write to an
         * evicted page is a cold write, as fio's invalidate=1 makes it */
        if (!g->eng->files)
            continue;
        if (OP_KIND[g->op] == KIND_small) {
            /* evict every file, measure a sample of at most 2000 */
            uint64_t step = g->count > 2000 ? g->count / 2000 : 1;
            char name[64];
            for (uint64_t k = 0; k < g->count && !bench_stop_signal; k++) {
                small_name(g->first + k, name, sizeof name);
                int fd = openat(g->subfds[(g->first + k) % g->fanout], name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                    continue;
                evict_file(ph, fd, k % step == 0);
                close(fd);
            }
        } else if (g->files) {
            for (size_t k = 0; k < json_len(g->files); k++) {
                int fd = open_beneath(g->dirfd, json_at(g->files, k)->str, O_RDONLY, 0, 0);
                if (fd >= 0) {
                    evict_file(ph, fd, 1);
                    close(fd);
                }
            }
        } else {
            int n = one_file(g) ? 1 : g->threads;
            for (int t = 0; t < n; t++) {
                char name[512];
                seq_name(g, t, name, sizeof name);
                int fd = open_beneath(g->dirfd, name, O_RDONLY, 0, 0);
                if (fd >= 0) {
                    evict_file(ph, fd, 1);
                    close(fd);
                }
            }
        }
    }
    ph->evicted = 1;
}

static int read_devstat(const char *path, devstat *out)
{
    if (!path)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    uint64_t f[7];
    char *p = buf;
    for (int i = 0; i < 7; i++) {
        char *end;
        errno = 0;
        f[i] = strtoull(p, &end, 10);
        if (end == p || errno)
            return 0;
        p = end;
    }
    *out = (devstat){f[0], f[2], f[4], f[6]};
    return 1;
}

void devstats_sample(job_ctx *ctx, devstat *into, int *ok)
{
    for (int d = 0; d < ctx->ndirs; d++)
        ok[d] = read_devstat(ctx->devstat_path[d], &into[d]) && ok[d];
}
