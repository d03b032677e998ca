/*
 * The io_uring engine: a minimal ring over the raw system calls (see uring.h), and its loop for seq and rand
 * ops, which keeps iodepth requests in flight.
 */
#include "uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif

#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

int uring_init(uring *u, unsigned entries)
{
    memset(u, 0, sizeof *u);
    u->fd = -1;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int fd = (int)syscall(__NR_io_uring_setup, entries, &p);
    if (fd < 0)
        return -errno;
    u->fd = fd;
    u->entries = p.sq_entries;
    u->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    u->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    int single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && u->cq_len > u->sq_len)
        u->sq_len = u->cq_len;
    u->sq_ring = mmap(NULL, u->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    if (u->sq_ring == MAP_FAILED)
        goto fail;
    if (single) {
        u->cq_ring = u->sq_ring;
    } else {
        u->cq_ring = mmap(NULL, u->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
        if (u->cq_ring == MAP_FAILED)
            goto fail;
    }
    u->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
    u->sqes_map = mmap(NULL, u->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    if (u->sqes_map == MAP_FAILED)
        goto fail;
    u->sqes = u->sqes_map;
    char *sq = u->sq_ring, *cq = u->cq_ring;
    u->sq_head = (unsigned *)(sq + p.sq_off.head);
    u->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    u->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    u->sq_array = (unsigned *)(sq + p.sq_off.array);
    u->cq_head = (unsigned *)(cq + p.cq_off.head);
    u->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    u->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    u->cqes = cq + p.cq_off.cqes;
    return 0;
fail:;
    int e = errno;
    uring_exit(u);
    return -e;
}

void uring_exit(uring *u)
{
    if (u->sqes_map && u->sqes_map != MAP_FAILED)
        munmap(u->sqes_map, u->sqes_len);
    if (u->cq_ring && u->cq_ring != MAP_FAILED && u->cq_ring != u->sq_ring)
        munmap(u->cq_ring, u->cq_len);
    if (u->sq_ring && u->sq_ring != MAP_FAILED)
        munmap(u->sq_ring, u->sq_len);
    if (u->fd >= 0)
        close(u->fd);
    memset(u, 0, sizeof *u);
    u->fd = -1;
}

int uring_prep(uring *u, int is_read, int fd, void *buf, uint32_t len, uint64_t off, uint64_t user_data)
{
    unsigned tail = *u->sq_tail, head = LOAD_ACQ(u->sq_head);
    if (tail - head >= u->entries)
        return -EBUSY;
    unsigned idx = tail & *u->sq_mask;
    struct io_uring_sqe *sqe = &u->sqes[idx];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = is_read ? IORING_OP_READ : IORING_OP_WRITE;
    sqe->fd = fd;
    sqe->addr = (uint64_t)(uintptr_t)buf;
    sqe->len = len;
    sqe->off = off;
    sqe->user_data = user_data;
    u->sq_array[idx] = idx;
    STORE_REL(u->sq_tail, tail + 1);
    u->pending++;
    return 0;
}

int uring_submit_wait(uring *u, unsigned wait_nr)
{
    unsigned submit = u->pending;
    for (;;) {
        int r = (int)syscall(__NR_io_uring_enter, u->fd, submit, wait_nr, wait_nr ? IORING_ENTER_GETEVENTS : 0,
                             NULL, 0);
        if (r >= 0) {
            u->pending -= (unsigned)r < submit ? (unsigned)r : submit;
            return 0;
        }
        if (errno != EINTR)
            return -errno;
        return -EINTR; /* let the caller look at its stop flag */
    }
}

int uring_reap(uring *u, int32_t *res, uint64_t *user_data)
{
    unsigned head = *u->cq_head;
    if (head == LOAD_ACQ(u->cq_tail))
        return 0;
    struct io_uring_cqe *cqe = &((struct io_uring_cqe *)u->cqes)[head & *u->cq_mask];
    *res = cqe->res;
    *user_data = cqe->user_data;
    STORE_REL(u->cq_head, head + 1);
    return 1;
}

/* The io_uring engine's loop for seq and rand ops: up to iodepth operations in flight per thread.  Latency is
 * submission to completion, as an application with that many requests outstanding sees it. */
static void uring_loop(worker *w, int is_seq)
{
    group *g = w->g;
    int fd = w->nfds ? w->fds[0] : -1;
    unsigned qd = (unsigned)g->iodepth;
    uring u;
    int rc = uring_init(&u, qd);
    if (rc) {
        fail(w, -rc, "io_uring_setup", "(io_uring unavailable: use the psync engine)");
        return;
    }
    unsigned char *bufs = NULL;
    uint64_t *t0s = calloc(qd, sizeof *t0s);
    unsigned *slots = calloc(qd, sizeof *slots), nfree = qd;
    if (posix_memalign((void **)&bufs, 4096, (size_t)qd * g->bs) || !t0s || !slots) {
        fail(w, ENOMEM, "allocate", NULL);
        goto out;
    }
    for (unsigned i = 0; i < qd; i++)
        slots[i] = qd - 1 - i;
    uint64_t blocks = is_seq ? 0 : (g->file_size / g->bs ? g->file_size / g->bs : 1);
    uint64_t limit;
    if (is_seq) {
        uint64_t total = g->size;
        if (!total && g->op == OP_read) {
            struct stat st;
            if (fstat(fd, &st) == 0)
                total = (uint64_t)st.st_size > w->base_off ? (uint64_t)st.st_size - w->base_off : 0;
        }
        limit = total; /* bytes */
    } else {
        limit = g->ops_limit ? g->ops_limit
                             : (g->size ? g->size / g->bs : (g->runtime_s > 0 ? UINT64_MAX : blocks));
    }
    uint64_t pool_off = g->pool ? ((uint64_t)w->tid * (g->pool_len / (uint64_t)g->threads)) & ~4095ull : 0;
    uint64_t read_cut = g->read_share >= 1.0 ? UINT64_MAX : (uint64_t)(g->read_share * 18446744073709551615.0);
    uint64_t issued = 0, inflight = 0;
    int stop_issuing = 0;
    unsigned char is_read_of[4096];
    for (;;) {
        while (!stop_issuing && nfree && issued < limit && !stopping()) {
            uint64_t off, len = g->bs;
            int is_read;
            if (is_seq) {
                off = seq_offset(w, issued);
                if (limit - issued < len)
                    len = limit - issued;
                is_read = g->op == OP_read;
            } else {
                off = (rng_next(&w->rng) % blocks) * g->bs;
                is_read = g->op == OP_randread || (g->op == OP_randrw && rng_next(&w->rng) <= read_cut);
            }
            unsigned s = slots[--nfree];
            void *buf = is_read ? bufs + (size_t)s * g->bs : pool_slice(g, &pool_off, len);
            if (uring_prep(&u, is_read, fd, buf, (uint32_t)len, off, s)) {
                nfree++;
                break;
            }
            is_read_of[s] = (unsigned char)is_read;
            t0s[s] = now_ns();
            issued += is_seq ? len : 1;
            inflight++;
        }
        if (!inflight)
            break;
        rc = uring_submit_wait(&u, 1);
        if (rc && rc != -EINTR) {
            fail(w, -rc, "io_uring_enter", g->file);
            stop_issuing = 1;
            /* nothing new was submitted: what is in flight is still reaped below */
        }
        int32_t res;
        uint64_t ud;
        while (uring_reap(&u, &res, &ud)) {
            uint64_t t1 = now_ns();
            unsigned s = (unsigned)ud;
            inflight--;
            slots[nfree++] = s;
            if (res < 0) {
                fail(w, -res, is_read_of[s] ? "read" : "write", g->file);
                stop_issuing = 1;
                continue;
            }
            if (res == 0 && is_seq) {
                stop_issuing = 1; /* end of file */
                continue;
            }
            record(w, t0s[s], t1, (uint64_t)res);
            if (over_time(g, t1))
                stop_issuing = 1;
        }
        if (stopping())
            stop_issuing = 1;
    }
    if (g->op != OP_randread && g->op != OP_read && g->sync != SYNC_none && !w->err)
        sync_file(w, fd);
out:
    free(bufs);
    free(t0s);
    free(slots);
    uring_exit(&u);
}

static void uring_seq(worker *w) { uring_loop(w, 1); }
static void uring_rand(worker *w) { uring_loop(w, 0); }

/* Lists of files and small files go through psync's operations, one call at a time. */
const ioengine io_uring_engine = {
    .files = 1,
    .sync = psync_sync,
    .run = {[LOOP_seq] = uring_seq, [LOOP_files] = loop_files_psync, [LOOP_rand] = uring_rand,
            [LOOP_small] = loop_small_psync},
};
