/*
 * A worker thread: opens what it works on (untimed), waits for the phase to
 * start, runs its group's timed loop (chosen with its engine when the job was
 * parsed), closes its files (timed: network filesystems flush on close).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Opens the file with O_DIRECT when asked, falling back to buffered I/O when the filesystem refuses it. */
static int open_data(worker *w, const char *rel, int flags, mode_t mode)
{
    group *g = w->g;
    int fd;
    if (g->direct) {
        fd = open_beneath(g->dirfd, rel, flags | O_DIRECT, mode, 1);
        if (fd >= 0) {
            w->direct_used = 1;
            return fd;
        }
        if (errno != EINVAL)
            return -1;
        w->direct_refused = 1;
    }
    return open_beneath(g->dirfd, rel, flags, mode, 1);
}

/* Worker setup (untimed): open what this thread works on. */
static void worker_setup(worker *w)
{
    group *g = w->g;
    if (!g->eng->files || OP_KIND[g->op] == KIND_small)
        return;
    char name[512];
    if (g->files) {
        size_t n = json_len(g->files), mine = 0;
        w->fds = calloc(n ? n : 1, sizeof(int));
        for (size_t k = (size_t)w->tid; k < n; k += (size_t)g->threads) {
            const char *f = json_at(g->files, k)->str;
            int fd = open_data(w, f, O_RDONLY, 0);
            if (fd < 0) {
                fail(w, errno, "open", f);
                return;
            }
            w->fds[mine++] = fd;
        }
        w->nfds = mine;
        return;
    }
    seq_name(g, w->tid, name, sizeof name);
    int flags;
    switch (g->op) {
    case OP_write: flags = O_WRONLY | O_CREAT | (g->layout == LAYOUT_per_thread ? O_TRUNC : 0); break;
    case OP_read:
    case OP_randread: flags = O_RDONLY; break;
    default: flags = O_RDWR; break;
    }
    int fd = open_data(w, name, flags, 0644);
    if (fd < 0) {
        fail(w, errno, "open", name);
        return;
    }
    w->fds = malloc(sizeof(int));
    w->fds[0] = fd;
    w->nfds = 1;
    if (g->layout == LAYOUT_shared && OP_KIND[g->op] == KIND_seq)
        w->base_off = (g->segment + (uint64_t)w->tid) * g->size; /* segment: this process's first (multi-client) */
}

void *worker_main(void *arg)
{
    worker *w = arg;
    group *g = w->g;
    if (!g->direct || posix_memalign((void **)&w->buf, 4096, g->bs ? g->bs : 4096))
        w->buf = NULL;
    if (!w->buf && posix_memalign((void **)&w->buf, 4096, g->bs ? g->bs : 4096))
        fail(w, ENOMEM, "allocate", NULL);
    if (w->buf)
        memset(w->buf, 0, g->bs ? g->bs : 4096);
    worker_setup(w);
    pthread_mutex_lock(&g_ctx->gate);
    g_ctx->ready++;
    pthread_cond_broadcast(&g_ctx->cond);
    while (!g_ctx->go)
        pthread_cond_wait(&g_ctx->cond, &g_ctx->gate);
    pthread_mutex_unlock(&g_ctx->gate);
    w->t_start = now_ns() - g_phase_t0;
    double c0 = thread_cpu_s();
    if (!w->err && !stopping() && g->run)
        g->run(w);
    /* closing is timed: network filesystems flush on close */
    for (size_t k = 0; k < w->nfds; k++)
        if (close(w->fds[k]) && !w->err && errno != EINTR)
            fail(w, errno, "close", g->file);
    w->nfds = 0;
    w->t_end = now_ns() - g_phase_t0;
    w->cpu_s = thread_cpu_s() - c0;
    pthread_mutex_lock(&g_ctx->gate);
    g_ctx->finished++;
    pthread_cond_broadcast(&g_ctx->cond);
    pthread_mutex_unlock(&g_ctx->gate);
    return NULL;
}
