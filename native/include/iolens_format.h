/*
 * iolens capture format: the one definition.
 *
 * Included by the C writer (the preload interposer) and by the generator
 * (native/tools/gen_format.c) that emits src/iolens/_format.py for the Python
 * reader.  Nothing here is copied by hand anywhere else.
 *
 * Layout of a capture (see docs/capture-format.md):
 *
 *   file header   struct iolens_file_hdr
 *   records       struct iolens_rec_hdr + payload, repeated
 *
 * A merged capture (container 2.x) is sealed: a CHECK record follows the file
 * header, and another closes every block of records after it (each part's
 * records, split every IOLENS_CHECK_BLOCK bytes).  A CHECK holds the CRC-32C
 * of every byte since the end of the previous CHECK, up to its own crc field,
 * and running counts of the records before it; the last one (flag FINAL) is
 * the trailer and ends the file.  So a cut, an insertion or a changed byte is
 * found, with its offset, and every block before it stays readable.  The parts
 * the interposer writes are not sealed: a record of kind 0 ends them (and
 * captures of container 1.x, which end at the end of the file).  A SCHEMA
 * record describes the fixed layout of every kind that follows it, so a
 * reader decodes fields by name and upgrades older captures by filling fields
 * they lack with zero.  PROC opens one process image; STRING, FILE, TIMELINE,
 * CHILD and TRACE records after it belong to that image.
 *
 * Rules for changing this file:
 *   - add fields only at the end of a kind and bump that kind's version (or
 *     give a padding field, always written 0, a meaning whose 0 is what an
 *     older capture means, and bump the version);
 *   - add ops, flags and string kinds only at the end of their lists;
 *   - anything else is a new container major version, which older readers
 *     refuse with a clear message.
 */
#ifndef IOLENS_FORMAT_H
#define IOLENS_FORMAT_H

#include <stdint.h>

#define IOLENS_MAGIC "IOLENS\0\1"
#define IOLENS_MAGIC_LEN 8
/* 1.0: records only.  2.0: sealed by CHECK records (older captures still read). */
#define IOLENS_CONTAINER_MAJOR 2
#define IOLENS_CONTAINER_MINOR 0

/* A CHECK closes a block once it holds this many bytes (and at the end of each part). */
#define IOLENS_CHECK_BLOCK (1u << 20)
/* Raw EVENT bytes in one TRACE record, at most: a reader decompresses no more than this. */
#define IOLENS_TRACE_RECORD_MAX (32u << 20)

/* Darshan's ten access-size bins, upper bounds inclusive, so results compare. */
#define IOLENS_HIST_BINS 10
#define IOLENS_HIST_EDGES(X) \
    X(100) X(1024) X(10240) X(102400) X(1048576) X(4194304) \
    X(10485760) X(104857600) X(1073741824)

/* Timeline: fixed number of bins; width = 2^shift ns, doubled when needed. */
#define IOLENS_TIMELINE_BINS 256
#define IOLENS_TIMELINE_SHIFT0 23 /* 8.4 ms */

/* ---- record kinds: X(id, NAME, version, doc) ---------------------------- */
#define IOLENS_RECORD_KINDS(X) \
    X(1, SCHEMA, 1, "fixed layout of each record kind that follows") \
    X(2, META, 1, "JSON text written by iolens profile: command, mounts, host") \
    X(3, PROC, 1, "one process image: identity, times, rusage, kernel I/O counters") \
    X(4, STRING, 1, "text of the current PROC: exe, argv, cwd, host, env") \
    X(5, FILE, 2, "per-file counters of the current PROC, followed by the path") /* 2: stdio_* */ \
    X(6, TIMELINE, 1, "time-binned op counts and bytes of the current PROC") \
    X(7, CHILD, 1, "a child process reaped by the current PROC") \
    X(8, TRACE, 1, "zstd-compressed EVENT array of the current PROC") \
    X(9, EVENT, 4, "one traced operation (inside TRACE payloads)") \
    X(10, CHECK, 1, "CRC-32C and running counts of the block before it; the last is the trailer")

enum iolens_kind {
    IOLENS_KIND_END = 0,
#define IOLENS_X_KIND(id, name, ver, doc) IOLENS_KIND_##name = id,
    IOLENS_RECORD_KINDS(IOLENS_X_KIND)
#undef IOLENS_X_KIND
};
enum iolens_kind_version {
#define IOLENS_X_KVER(id, name, ver, doc) IOLENS_VER_##name = ver,
    IOLENS_RECORD_KINDS(IOLENS_X_KVER)
#undef IOLENS_X_KVER
};

/* ---- time categories: X(NAME, doc) --------------------------------------- */
#define IOLENS_CATEGORIES(X) \
    X(READ, "data read calls") \
    X(WRITE, "data write calls") \
    X(META, "open, close, stat, seek, directory, unlink, rename, truncate, mmap") \
    X(SYNC, "fsync, fdatasync, sync_file_range, syncfs, sync, msync") \
    X(STREAM, "reads and writes on pipes, sockets and terminals (waiting for a peer, not storage)")

enum iolens_cat {
#define IOLENS_X_CAT(name, doc) IOLENS_CAT_##name,
    IOLENS_CATEGORIES(IOLENS_X_CAT)
#undef IOLENS_X_CAT
    IOLENS_NCAT
};

/* ---- operations: X(NAME, CATEGORY) --------------------------------------- */
/* Every intercepted symbol maps to one of these (variants share an op).  STAT names a path (stat, lstat,
 * fstatat, statx); FSTAT is a stat through a descriptor (fstat, and fstatat or statx with AT_EMPTY_PATH): it
 * looks nothing up, and costs the profiler and a replay what a read costs them, not what a path costs. */
#define IOLENS_OPS(X) \
    X(OPEN, META) X(CLOSE, META) X(READ, READ) X(WRITE, WRITE) \
    X(PREAD, READ) X(PWRITE, WRITE) X(READV, READ) X(WRITEV, WRITE) \
    X(PREADV, READ) X(PWRITEV, WRITE) X(SENDFILE, WRITE) \
    X(COPY_FILE_RANGE, WRITE) X(LSEEK, META) X(DUP, META) \
    X(FSYNC, SYNC) X(FDATASYNC, SYNC) X(SYNC_FILE_RANGE, SYNC) \
    X(SYNCFS, SYNC) X(SYNC, SYNC) X(STAT, META) X(ACCESS, META) \
    X(UNLINK, META) X(RENAME, META) X(MKDIR, META) X(RMDIR, META) \
    X(OPENDIR, META) X(READDIR, META) X(CLOSEDIR, META) \
    X(TRUNCATE, META) X(FALLOCATE, META) X(MMAP, META) X(MUNMAP, META) \
    X(FOPEN, META) X(FCLOSE, META) X(FREAD, READ) X(FWRITE, WRITE) \
    X(FGETS, READ) X(FPUTS, WRITE) X(FGETC, READ) X(FPUTC, WRITE) \
    X(GETDELIM, READ) X(FPRINTF, WRITE) X(FSCANF, READ) X(FFLUSH, WRITE) \
    X(FSEEK, META) X(FTELL, META) X(MSYNC, SYNC) X(STDIO_FILL, READ) \
    X(STDIO_DRAIN, WRITE) X(MKSTEMP, META) X(GETDENTS, META) \
    X(COPY_SOURCE, READ) X(FSTAT, META)

enum iolens_op {
#define IOLENS_X_OP(name, cat) IOLENS_OP_##name,
    IOLENS_OPS(IOLENS_X_OP)
#undef IOLENS_X_OP
    IOLENS_NOPS
};
#define IOLENS_MAX_OPS 64 /* room in PROC.op_count; IOLENS_NOPS must stay below */

/* ---- flags ---------------------------------------------------------------- */
#define IOLENS_PROC_FLAGS(X) \
    X(FINALIZED, 0, "end fields were written (exit, exec or fatal signal)") \
    X(EXITED, 1, "ended by exit or return from main") \
    X(EXECED, 2, "image replaced by exec; the next PROC with this pid continues it") \
    X(SIGNALED, 3, "ended by a fatal signal; exit_status is 128+signal") \
    X(FORKED, 4, "started by fork in a profiled parent") \
    X(OVERFLOW, 5, "file records past the limit were aggregated per directory") \
    X(TRACE_LOST, 6, "some trace events could not be written") \
    X(MULTITHREADED, 7, "created threads") \
    X(NO_KERNEL_IO, 8, "made no recorded call: the kernel I/O counters (k_*) were not read and are 0")

#define IOLENS_FILE_FLAGS(X) \
    X(CREATED, 0, "created by this process (O_CREAT of a new file, mkdir, mkstemp)") \
    X(DELETED, 1, "deleted by this process (unlink, rmdir, rename away)") \
    X(DIRECTORY, 2, "a directory") \
    X(AGGREGATE, 3, "aggregate of files past the per-process limit, by directory") \
    X(NOT_A_FILE, 4, "pipe, socket, terminal or other non-file descriptor") \
    X(RENAMED_FROM, 5, "renamed to another path") \
    X(RENAMED_TO, 6, "another path was renamed to this one") \
    X(INHERITED, 7, "first seen as an already-open descriptor") \
    X(TRUNCATED, 8, "opened with O_TRUNC or truncated") \
    X(APPEND, 9, "opened for append")

enum {
#define IOLENS_X_FLAG(name, bit, doc) IOLENS_PF_##name = 1u << bit,
    IOLENS_PROC_FLAGS(IOLENS_X_FLAG)
#undef IOLENS_X_FLAG
};
enum {
#define IOLENS_X_FLAG(name, bit, doc) IOLENS_FF_##name = 1u << bit,
    IOLENS_FILE_FLAGS(IOLENS_X_FLAG)
#undef IOLENS_X_FLAG
};

#define IOLENS_STRING_KINDS(X) \
    X(EXE, 1) X(ARGV, 2) X(CWD, 3) X(HOST, 4) X(ENV, 5)
enum iolens_string_kind {
#define IOLENS_X_SK(name, id) IOLENS_STR_##name = id,
    IOLENS_STRING_KINDS(IOLENS_X_SK)
#undef IOLENS_X_SK
};

/* ---- fixed layouts: S(type, name) scalar, A(type, name, count) array ------ */
/* Only u64/u32 are used and every struct is a multiple of 8 bytes, so the
 * layout has no hidden padding.  Times are nanoseconds; *_mono on
 * CLOCK_MONOTONIC, *_real since the Unix epoch. */

#define IOLENS_LAYOUT_PROC(S, A) \
    S(u64, pid) S(u64, ppid) S(u64, flags) S(u64, exit_status) \
    S(u64, start_real) S(u64, start_mono) S(u64, end_mono) \
    S(u64, utime_ns) S(u64, stime_ns) S(u64, utime_start_ns) S(u64, stime_start_ns) \
    S(u64, maxrss_kb) S(u64, majflt) S(u64, minflt) S(u64, nvcsw) S(u64, nivcsw) \
    S(u64, k_rchar) S(u64, k_wchar) S(u64, k_syscr) S(u64, k_syscw) \
    S(u64, k_read_bytes) S(u64, k_write_bytes) S(u64, k_cancelled_write_bytes) \
    S(u64, k_rchar_start) S(u64, k_wchar_start) S(u64, k_syscr_start) S(u64, k_syscw_start) \
    S(u64, k_read_bytes_start) S(u64, k_write_bytes_start) \
    S(u64, bytes_read) S(u64, bytes_written) \
    A(u64, cat_time_ns, IOLENS_NCAT) A(u64, cat_wall_ns, IOLENS_NCAT) S(u64, io_wall_ns) \
    A(u64, op_count, IOLENS_MAX_OPS) S(u64, nfiles) S(u64, nthreads) \
    S(u64, untracked_ops) S(u64, trace_events) S(u64, trace_lost) S(u64, wait_ns)

#define IOLENS_LAYOUT_FILE(S, A) \
    S(u64, index) S(u64, flags) S(u64, dev) S(u64, ino) S(u64, mode) \
    S(u64, opens) S(u64, reads) S(u64, writes) S(u64, bytes_read) S(u64, bytes_written) \
    A(u64, read_hist, IOLENS_HIST_BINS) A(u64, write_hist, IOLENS_HIST_BINS) \
    S(u64, seq_reads) S(u64, seq_writes) S(u64, consec_reads) S(u64, consec_writes) \
    S(u64, rw_switches) S(u64, max_read_end) S(u64, max_write_end) \
    S(u64, stats) S(u64, seeks) S(u64, syncs) S(u64, mmaps) S(u64, mmap_bytes) S(u64, metas) \
    A(u64, cat_time_ns, IOLENS_NCAT) \
    S(u64, first_mono) S(u64, last_mono) S(u64, created_mono) S(u64, deleted_mono) \
    S(u64, last_read_end) S(u64, last_write_end) S(u64, last_op) S(u64, path_len) \
    IOLENS_LAYOUT_FILE_STDIO(S, A)

/* FILE version 2: buffered stdio.  A stdio call is a library call: it is
 * counted in reads/writes and bytes_* as before, and sized in
 * stdio_read_hist/stdio_write_hist.  What it made the kernel do (the
 * buffer's fills and flushes, and reads/writes past the buffer) is counted in
 * stdio_fills/stdio_flushes and sized in read_hist/write_hist, beside the
 * system calls made directly, so those histograms describe the requests
 * that reach storage.  In version 1 captures read_hist/write_hist sized the
 * stdio calls themselves (the stdio_* fields read as zero). */
#define IOLENS_LAYOUT_FILE_STDIO(S, A) \
    S(u64, stdio_reads) S(u64, stdio_writes) \
    A(u64, stdio_read_hist, IOLENS_HIST_BINS) A(u64, stdio_write_hist, IOLENS_HIST_BINS) \
    S(u64, stdio_fills) S(u64, stdio_flushes) S(u64, stdio_fill_bytes) S(u64, stdio_flush_bytes) \
    S(u64, stdio_buf_size)

#define IOLENS_LAYOUT_STRING(S, A) S(u32, what) S(u32, len)

#define IOLENS_LAYOUT_TIMELINE(S, A) \
    S(u64, t0_mono) S(u64, shift) S(u64, nbins) \
    A(u64, count, IOLENS_TIMELINE_BINS * IOLENS_NCAT) \
    A(u64, bytes_read, IOLENS_TIMELINE_BINS) A(u64, bytes_written, IOLENS_TIMELINE_BINS)

#define IOLENS_LAYOUT_CHILD(S, A) \
    S(u64, pid) S(u64, status) S(u64, end_mono) S(u64, utime_ns) S(u64, stime_ns) \
    S(u64, maxrss_kb)

/* EVENT version 2: repeats.  A buffered stdio call its stream's buffer served
 * (no clock read: dur_ns 0, start_mono the thread's last clock reading) that
 * continues the thread's previous such call (same op and file, at the same
 * time, at the offset where it ended) is added to that event: size is the
 * bytes of all of them, repeats the calls beyond the first.  The calls' time
 * is in the gap to the next event either way; counts stay exact in PROC and
 * FILE.  Version 1 captures hold one event a call (repeats reads as 0).
 * EVENT version 3: own_ns, the recorder's own time on this thread since the
 * previous event ended, outside the calls: what the hooked calls since then
 * spent after their real call returned (bookkeeping, their events, a flush of
 * the event buffer), the part of the gap before this event that is the
 * profiler's; a thread's first event also carries the making of its image's
 * part, when that call made it.  What a hook spends before the real call
 * starts is not in it otherwise.  Earlier versions read as 0.
 * EVENT version 4: dur_ms, the call's duration in whole milliseconds when it
 * does not fit dur_ns (4.29 s and longer: a read of a pipe whose writer is
 * still loading, an fsync on a slow disk), dur_ns then holding its top value;
 * 0 otherwise.  It was the layout's padding, always 0, so earlier captures
 * read as "fits" and earlier readers still see the saturated dur_ns. */
#define IOLENS_LAYOUT_EVENT(S, A) \
    S(u64, start_mono) S(u32, dur_ns) S(u32, op) S(u32, tid) S(u32, file) \
    S(u64, offset) S(u64, size) S(u64, repeats) S(u32, own_ns) S(u32, dur_ms)

/* Fixed parts of the SCHEMA record itself (bootstrap; never changes within a
 * container major version). */
#define IOLENS_LAYOUT_SCHEMA_KIND(S, A) \
    S(u32, kind) S(u32, version) S(u32, size) S(u32, nfields)
#define IOLENS_SCHEMA_NAME_LEN 40
#define IOLENS_LAYOUT_SCHEMA_FIELD(S, A) \
    A(u8, name, IOLENS_SCHEMA_NAME_LEN) S(u32, type) S(u32, count) S(u32, offset) S(u32, pad)

/* Which kinds carry a fixed layout in the SCHEMA record: X(NAME, layout) */
#define IOLENS_LAYOUTS(X) \
    X(PROC, IOLENS_LAYOUT_PROC) X(STRING, IOLENS_LAYOUT_STRING) \
    X(FILE, IOLENS_LAYOUT_FILE) X(TIMELINE, IOLENS_LAYOUT_TIMELINE) \
    X(CHILD, IOLENS_LAYOUT_CHILD) X(EVENT, IOLENS_LAYOUT_EVENT)

/* field type codes used in SCHEMA */
enum { IOLENS_T_u8 = 1, IOLENS_T_u32 = 2, IOLENS_T_u64 = 3 };
typedef uint8_t iolens_u8;
typedef uint32_t iolens_u32;
typedef uint64_t iolens_u64;

#define IOLENS_DECL_S(type, name) iolens_##type name;
#define IOLENS_DECL_A(type, name, n) iolens_##type name[n];

struct iolens_file_hdr {
    char magic[IOLENS_MAGIC_LEN];
    uint16_t major;
    uint16_t minor;
    uint32_t hdr_size; /* bytes up to the first record */
};

struct iolens_rec_hdr {
    uint16_t kind;
    uint16_t version;
    uint32_t size; /* payload bytes after this header, a multiple of 8 */
};

/* Payload of a CHECK record (container 2.x).  crc is the CRC-32C (Castagnoli) of
 * the bytes from `start` up to the crc field itself: the block's records, this
 * record's header and the fields above.  The counts run from the start of the
 * capture and leave CHECK records out. */
#define IOLENS_CHECK_FLAGS(X) X(FINAL, 0, "the trailer: nothing follows it")
enum {
#define IOLENS_X_FLAG(name, bit, doc) IOLENS_CF_##name = 1u << bit,
    IOLENS_CHECK_FLAGS(IOLENS_X_FLAG)
#undef IOLENS_X_FLAG
};
struct iolens_check {
    uint64_t seq;     /* 0 for the CHECK right after the file header, then 1, 2, ... */
    uint64_t start;   /* byte offset of the block: the end of the previous CHECK (0 for the first) */
    uint64_t records; /* records before this CHECK */
    uint64_t procs;   /* PROC records before this CHECK */
    uint64_t parts;   /* parts merged before this CHECK */
    uint32_t flags;   /* IOLENS_CF_* */
    uint32_t crc;
};

struct iolens_proc { IOLENS_LAYOUT_PROC(IOLENS_DECL_S, IOLENS_DECL_A) };
struct iolens_string { IOLENS_LAYOUT_STRING(IOLENS_DECL_S, IOLENS_DECL_A) };
struct iolens_file { IOLENS_LAYOUT_FILE(IOLENS_DECL_S, IOLENS_DECL_A) };
struct iolens_timeline { IOLENS_LAYOUT_TIMELINE(IOLENS_DECL_S, IOLENS_DECL_A) };
struct iolens_child { IOLENS_LAYOUT_CHILD(IOLENS_DECL_S, IOLENS_DECL_A) };
struct iolens_event { IOLENS_LAYOUT_EVENT(IOLENS_DECL_S, IOLENS_DECL_A) };
struct iolens_schema_kind { IOLENS_LAYOUT_SCHEMA_KIND(IOLENS_DECL_S, IOLENS_DECL_A) };
struct iolens_schema_field { IOLENS_LAYOUT_SCHEMA_FIELD(IOLENS_DECL_S, IOLENS_DECL_A) };

_Static_assert(sizeof(struct iolens_file_hdr) == 16, "file header is 16 bytes");
_Static_assert(sizeof(struct iolens_rec_hdr) == 8, "record header is 8 bytes");
_Static_assert(sizeof(struct iolens_check) == 48, "CHECK is 48 bytes");
_Static_assert(sizeof(struct iolens_proc) % 8 == 0, "PROC is 8-aligned");
_Static_assert(sizeof(struct iolens_file) % 8 == 0, "FILE is 8-aligned");
_Static_assert(sizeof(struct iolens_event) == 56, "EVENT is 56 bytes");
_Static_assert(IOLENS_NOPS <= IOLENS_MAX_OPS, "op_count has room for every op");

#endif
