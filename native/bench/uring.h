/*
 * A minimal io_uring ring over the raw system calls (no liburing), for the
 * engine's "io_uring" engine: one ring per worker thread, up to iodepth
 * reads/writes in flight.
 */
#ifndef IOLENS_BENCH_URING_H
#define IOLENS_BENCH_URING_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int fd;
    unsigned entries;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    void *sq_ring, *cq_ring, *sqes_map, *cqes;
    size_t sq_len, cq_len, sqes_len;
    struct io_uring_sqe *sqes;
    unsigned pending; /* prepared, not yet submitted */
} uring;

/* 0, or -errno (ENOSYS/EPERM when io_uring is unavailable or disabled). */
int uring_init(uring *u, unsigned entries);
void uring_exit(uring *u);

/* Queues a read (is_read) or write of len bytes at off; 0, or -EBUSY when the SQ is full. */
int uring_prep(uring *u, int is_read, int fd, void *buf, uint32_t len, uint64_t off, uint64_t user_data);

/* Submits what is queued and waits for at least wait_nr completions; 0 or -errno. */
int uring_submit_wait(uring *u, unsigned wait_nr);

/* Takes one completion if there is one: 1 (res and user_data set) or 0. */
int uring_reap(uring *u, int32_t *res, uint64_t *user_data);

#endif
