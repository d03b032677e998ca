/* Minimal io_uring over raw system calls; see uring.h. */
#include "uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

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
