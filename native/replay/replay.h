/*
 * iolens-replay: the replay operation list, defined once.
 *
 * A replay job is a JSON header (files, handles, threads, processes, pipes;
 * see docs/whatif.md) plus a binary file of `struct rp_op`, grouped by thread
 * and in each thread's recorded order.  The Python converter learns the op
 * codes, classes and struct sizes from `iolens-replay --describe`, which is
 * generated from the lists below, so nothing is copied by hand.
 *
 * Timing: `gap` is the recorded time between the end of the thread's previous
 * operation (or, for START, the start of its process) and the start of this
 * one: compute time, replayed with --speed recorded (its thread's `cpu_share` of
 * it burnt on the CPU, the rest waited out) and skipped with --speed max.  `dur` is the recorded duration (reported, never replayed).
 */
#ifndef IOLENS_REPLAY_H
#define IOLENS_REPLAY_H

#include <stdint.h>

#define RP_SCHEMA_MAJOR 1
#define RP_SCHEMA_MINOR 9

/* The compute burn is blocks of RP_BURN_BLOCK dependent multiply-adds; RP_BURN_LOOP names this loop (a probe
 * of another loop is not comparable).  `iolens-replay --probe` prints what one block costs this CPU now; a
 * capture keeps that cost from while it was taken, and a job that gives it (`cpu_ns_per_block`) has its compute
 * burnt as that many blocks: work, not time, so a CPU that runs slower or faster than while recording (another
 * guest on the host's core, a changed clock) makes the compute take longer or shorter, as it makes the step's.
 * (1.9) */
#define RP_BURN_BLOCK 256
#define RP_BURN_LOOP 1

/* report classes, as in the capture's categories */
#define RP_CLASSES(X) X(NONE) X(READ) X(WRITE) X(META) X(SYNC) X(STREAM)

/* X(NAME, CLASS, doc) -- `handle` is the op's `obj` unless said otherwise */
#define RP_OPS(X) \
    X(START, NONE, "first op of a thread: waits for its process to be started (obj: process; size: a root's start-up CPU in ns, burnt in the gap; the rest of its gap, a thread's creation after its process's start, waited out)") \
    X(EXIT, NONE, "last op of a thread: only its gap (the compute before the process ended)") \
    X(SPAWN, NONE, "starts a process: fork+exec or exec (obj: process; size: ns of CPU its start-up took, burnt in the gap)") \
    X(WAIT, NONE, "waits for a process and its threads to finish (obj: process)") \
    X(AFTER, NONE, "waits until thread obj has done the op at index `offset` of the op list (a thread created or joined by another), then waits out its gap whole") \
    X(OPEN, META, "open or create (obj: handle)") \
    X(CLOSE, META, "close one of the handle's descriptors: a copy made by DUP while there is one, else its own when its last open is closed") \
    X(READ, READ, "pread size bytes at offset") \
    X(WRITE, WRITE, "pwrite size bytes at offset") \
    X(SREAD, READ, "a stdio read: served from a 4 KiB stream buffer, refilled by pread") \
    X(SWRITE, WRITE, "a stdio write: collected in a 4 KiB stream buffer, drained by pwrite") \
    X(SFLUSH, WRITE, "drain the stream buffer (fflush)") \
    X(FSYNC, SYNC, "fsync") \
    X(FDATASYNC, SYNC, "fdatasync") \
    X(SYNCFS, SYNC, "syncfs on the replay directory") \
    X(STAT, META, "fstatat (obj: file)") \
    X(UNLINK, META, "unlink, or rmdir for a directory (obj: file)") \
    X(RENAME, META, "rename (obj: file, size: the destination file + 1, or 0 when unknown)") \
    X(MKDIR, META, "mkdir (obj: file)") \
    X(READDIR, META, "list the handle's directory with getdents64 (once per open)") \
    X(PIPE_READ, STREAM, "waits until the pipe's writers wrote `offset` bytes (obj: pipe)") \
    X(PIPE_WRITE, STREAM, "waits until the pipe's readers read `offset` bytes (obj: pipe)") \
    X(COPY_FROM, READ, "the source of its thread's next COPY: the handle, from `offset` (no call of its own)") \
    X(COPY, WRITE, "copy_file_range `size` bytes from the thread's last COPY_FROM to the handle at `offset` (pread and pwrite where the kernel cannot)") \
    X(FSTAT, META, "fstat the handle's descriptor (a stat the step made through a descriptor: no lookup)") \
    X(DUP, META, "another descriptor of the handle's file (a dup, opening the file first when the handle has none), counted as an open")

enum rp_class {
#define RP_X_CLASS(n) RP_CLASS_##n,
    RP_CLASSES(RP_X_CLASS)
#undef RP_X_CLASS
    RP_NCLASS
};

enum rp_opcode {
#define RP_X_OP(n, c, d) RP_OP_##n,
    RP_OPS(RP_X_OP)
#undef RP_X_OP
    RP_NOPS
};

/* one operation: 48 bytes, no padding */
#define RP_LAYOUT_OP(S) \
    S(uint64_t, gap) S(uint64_t, dur) S(uint64_t, offset) S(uint64_t, size) \
    S(uint32_t, op) S(uint32_t, thread) S(uint32_t, obj) S(uint32_t, flags)

/* one entry of the optional per-op log (--log): times since the replay started */
#define RP_LAYOUT_LOG(S) \
    S(uint64_t, start) S(uint64_t, end) S(uint32_t, op) S(uint32_t, thread)

#define RP_DECL(type, name) type name;
struct rp_op { RP_LAYOUT_OP(RP_DECL) };
struct rp_log { RP_LAYOUT_LOG(RP_DECL) };
#undef RP_DECL

_Static_assert(sizeof(struct rp_op) == 48, "rp_op is 48 bytes");
_Static_assert(sizeof(struct rp_log) == 24, "rp_log is 24 bytes");

#define RP_STREAM_BUF 4096  /* glibc's stdio buffer on most filesystems (st_blksize) */
#define RP_DUPS 4           /* copies of one descriptor a handle keeps open (more are counted, not made) */
#define RP_PIPE_BUF 65536   /* Linux pipe capacity: a writer cannot run further ahead */

#endif
