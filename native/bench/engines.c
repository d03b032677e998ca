/*
 * The engines' table, one entry per name in BENCH_ENGINES (an engine without its NAME_engine does not link),
 * and the null engine: the loops of psync with operations that move nothing, for measuring the engine itself.
 */
#include "internal.h"
#include "loops.h"

static inline ssize_t null_rw(int fd, int is_read, void *buf, size_t n, off_t off)
{
    (void)fd, (void)is_read, (void)buf, (void)off;
    return (ssize_t)n;
}

static inline int null_small(worker *w, int dfd, const char *name, uint64_t size, uint64_t *pool_off,
                             uint64_t *moved, const char **what)
{
    (void)dfd, (void)name, (void)pool_off, (void)what;
    if (w->g->op == OP_create || w->g->op == OP_readfiles)
        *moved = size;
    return 0;
}

ENGINE_LOOPS(null, 0)

const ioengine null_engine = {
    .files = 0,
    .sync = NULL,
    .run = ENGINE_RUN(null),
};

const ioengine *const ENGINES[ENGINE__COUNT] = {
#define X(n) [ENGINE_##n] = &n##_engine,
    BENCH_ENGINES(X)
#undef X
};
