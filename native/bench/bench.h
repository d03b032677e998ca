/*
 * iolens-bench: the storage benchmark engine.  One definition of the job
 * vocabulary: the X-macro lists below generate the enums, the parser's name
 * tables and `iolens-bench --describe`, which the Python side checks.
 */
#ifndef IOLENS_BENCH_H
#define IOLENS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_JOB_MAJOR 1
#define BENCH_JOB_MINOR 3 /* 1.1: device_stats; 1.2: phases[].start_at, stonewall_s, groups[].segment;
                           1.3: layout strided, groups[].writers, groups[].first */
#define BENCH_RESULT_MAJOR 1
#define BENCH_RESULT_MINOR 2 /* 1.1: phases[].devices; 1.2: phases[].start_lag_s, stonewall_s */
#define BENCH_ENGINE_VERSION "1.0"

/* X(name, kind, io, doc)
 *   kind: seq, rand, small or util (which loop runs it and which fields it needs)
 *   io:   read, write, mixed or none (which data it moves: write and mixed ops take a content pool) */
#define BENCH_OPS(X)                                                                                      \
    X(write, seq, write, "sequential write, file per thread or segments of one shared file")             \
    X(read, seq, read, "sequential read; with files+interleave, round-robin over many files (merge)")    \
    X(randread, rand, read, "random reads of bs at bs-aligned offsets; queue depth = threads")            \
    X(randwrite, rand, write, "random writes of bs at bs-aligned offsets")                                 \
    X(randrw, rand, mixed, "random reads and writes, read_share of them reads")                           \
    X(create, small, write, "create and write small files (size 0: metadata only)")                      \
    X(readfiles, small, read, "open, read whole, close small files")                                       \
    X(stat, small, none, "stat small files")                                                               \
    X(delete, small, none, "unlink small files, then remove their directories")                           \
    X(remove, util, none, "untimed clean-up: remove files or a small-file tree")

/* The values of BENCH_OPS's kind and io columns (an op naming another does not compile: see OP_KIND in job.c) */
#define BENCH_KINDS(X) X(seq) X(rand) X(small) X(util)
#define BENCH_IOS(X) X(read) X(write) X(mixed) X(none)

/* X(name, doc) */
#define BENCH_CONTENTS(X)                                                  \
    X(random, "incompressible pseudo-random bytes")                        \
    X(zeros, "all zero bytes")                                             \
    X(fastq, "FASTQ-like text with binned qualities falling toward 3'")   \
    X(sam, "coordinate-sorted SAM-like text")                              \
    X(template, "the bytes of a given file, repeated")

#define BENCH_SYNCS(X) X(none) X(fsync) X(fdatasync)
/* per_thread: a file each; shared: one file, writer w owns the w-th contiguous segment of size bytes (IOR's
 * segmented layout); strided: one file, writer w owns blocks w, w + writers, w + 2 writers, ... (IOR's strided).
 * A thread's writer index is segment + its thread number. */
#define BENCH_LAYOUTS(X) X(per_thread) X(shared) X(strided)
#define BENCH_ENGINES(X) X(psync) X(null) X(io_uring)

typedef enum {
#define X(n, k, io, d) OP_##n,
    BENCH_OPS(X)
#undef X
        OP__COUNT
} op_kind;

typedef enum {
#define X(n) KIND_##n,
    BENCH_KINDS(X)
#undef X
        KIND__COUNT
} kind_t;

typedef enum {
#define X(n) IO_##n,
    BENCH_IOS(X)
#undef X
        IO__COUNT
} io_kind;

typedef enum {
#define X(n, d) CONTENT_##n,
    BENCH_CONTENTS(X)
#undef X
        CONTENT__COUNT
} content_kind;

typedef enum {
#define X(n) SYNC_##n,
    BENCH_SYNCS(X)
#undef X
        SYNC__COUNT
} sync_kind;

typedef enum {
#define X(n) LAYOUT_##n,
    BENCH_LAYOUTS(X)
#undef X
        LAYOUT__COUNT
} layout_kind;

typedef enum {
#define X(n) ENGINE_##n,
    BENCH_ENGINES(X)
#undef X
        ENGINE__COUNT
} engine_kind;

typedef struct {
    uint64_t s[4];
} rng_t;

uint64_t rng_next(rng_t *r);
void rng_seed(rng_t *r, uint64_t seed);

/* The names of BENCH_CONTENTS, for the bench's jobs and results and the replayer's (content.c) */
extern const char *const CONTENT_NAMES[CONTENT__COUNT];

/* Content pool of n bytes, 4096-aligned; 0 on success, else -1 with err set. */
int content_pool(content_kind kind, const char *tmpl, size_t n, uint64_t seed, unsigned char **out, char *err,
                 size_t errlen);

#endif
