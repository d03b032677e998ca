/*
 * The engines (job field "engine"), as fio's ioengines: each is one table of operations, `NAME_engine` in its
 * own file, listed in ENGINES by BENCH_ENGINES (bench.h; an engine without its table does not link).  A group's
 * engine is chosen when the job is parsed, and with it the timed loop of its op (group.run); nothing on the
 * timed path compares names or tests which engine it is.
 *
 * An engine's table:
 *   files  1 when it works on files below the job's dirs.  0 (the null engine): nothing is opened, laid out,
 *          evicted or removed, and its operations move no data (they return what they were asked to move).
 *   sync   the group's sync mode on fd (fsync, fdatasync, none): 0 or -1 (errno); NULL: nothing to sync.
 *   run    the timed loop of each kind of loop.
 * An engine of synchronous calls gets its loops from loops.h: it defines, static inline in its file,
 *   NAME_rw     one read (into buf) or write (from buf) of n bytes at off: bytes moved, or -1 (errno)
 *   NAME_small  one small-file op of the group (create, readfiles, stat, delete) on `name` in directory dfd, the
 *               file's size `size`: 0, or -1 with errno and *what (the call that failed); *moved: bytes moved
 * and then ENGINE_LOOPS(NAME, files), which compiles the loops with them (psync.c; the null engine in
 * engines.c).  Another engine brings loops of its own for what it does differently (io_uring keeps iodepth
 * requests in flight for seq and rand: uring.c) and takes psync's for the rest.
 */
#ifndef IOLENS_BENCH_IOENGINE_H
#define IOLENS_BENCH_IOENGINE_H

/* The timed loops: seq of one file (per thread or shared), seq over a list of files (files), rand, small. */
#define BENCH_LOOPS(X) X(seq) X(files) X(rand) X(small)

typedef enum {
#define X(n) LOOP_##n,
    BENCH_LOOPS(X)
#undef X
        LOOP__COUNT
} loop_kind;

typedef struct ioengine {
    int files;
    int (*sync)(const group *g, int fd);
    void (*run[LOOP__COUNT])(worker *w);
} ioengine;

#define X(n) extern const ioengine n##_engine;
BENCH_ENGINES(X)
#undef X
extern const ioengine *const ENGINES[ENGINE__COUNT];

/* ---- psync.c: its loops, which the io_uring engine takes for lists of files and small files ------------ */

void loop_files_psync(worker *w);
void loop_small_psync(worker *w);
int psync_sync(const group *g, int fd);

#endif
