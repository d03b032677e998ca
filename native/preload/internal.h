/*
 * What the recorder core's rooms share among themselves; the interface files
 * (posix.c, stdio.c, ...) include core.h alone.  Each room uses only rooms
 * listed before it, and none uses an interface file (the layers register with
 * the core instead: struct iolens_layer, core.h):
 *
 *   base.c      the shared state, the real-symbol resolver, raw system calls
 *   env.c       the recorder's variables: out of environ, back for children
 *   clock.c     the call clock
 *   part.c      the part file: its records, its growth under RLIMIT_FSIZE
 *   paths.c     the paths of calls (directory descriptors, the working directory)
 *   trace.c     --trace events, buffered per thread
 *   timeline.c  timeline coarsening, wall time with threads
 *   srun.c      runs of untimed stdio calls with threads
 *   account.c   the file table, each call's counts, the descriptor table
 *   built.c     what an image notes at its start; the part written whole at its end
 *   core.c      an image's lifetime: start, end, fork, the part made lazily
 *
 * Everything declared here is hidden (the library is built with
 * -fvisibility=hidden; the declarations say so too, so calls and loads are
 * direct).  The helpers a hot path uses stay static inline here, so they are
 * compiled into the caller as they were when the core was one file.
 */
#ifndef IOLENS_INTERNAL_H
#define IOLENS_INTERNAL_H

#include "core.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

/* Our own mappings and files go straight to the kernel, not through the hooks. */
static inline void *sys_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, a, n, prot, fl, fd, off);
}
static inline int sys_munmap(void *a, size_t n) { return (int)syscall(SYS_munmap, a, n); }
static inline int sys_open(const char *path, int flags, int mode)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
static inline long sys_read(int fd, void *buf, unsigned long n) { return syscall(SYS_read, fd, buf, n); }
static inline int sys_close(int fd) { return (int)syscall(SYS_close, fd); }

/* the spin-wait hint: pause on x86, yield on Arm, nothing elsewhere */
static inline void iolens_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* The spinlock of the rare paths (new records, growth, coarsening, the path caches). */
static inline void lock(void)
{
    while (__atomic_exchange_n(&iolens_g.lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&iolens_g.lock, __ATOMIC_RELAXED)) iolens_cpu_relax();
}
static inline void unlock(void) { __atomic_store_n(&iolens_g.lock, 0, __ATOMIC_RELEASE); }

/* The lock with the guard up: a signal handler that interrupts the holder
 * records nothing instead of spinning on its own thread's lock. */
static inline int lock_guarded(void)
{
    int guard = iolens_guard;
    iolens_guard = 1;
    lock();
    return guard;
}
static inline void unlock_guarded(int guard)
{
    unlock();
    iolens_guard = guard;
}

/* CLOCK_REALTIME or CLOCK_MONOTONIC in ns, by the system call: for an image's start and end only.  The vDSO's
 * first read faults in its data page and libc's clock_gettime, 5-10 us in a process that reads no clock itself
 * (a /bin/true); the system call is under 1 us, and the same clock as the hot path's (iolens_now). */
static inline uint64_t iolens_sys_clock(int clk)
{
    struct timespec ts = {0, 0};
    iolens_sysraw(SYS_clock_gettime, clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tv_ns(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

/* ---- base.c ---- */
/* The layers registered (IOLENS_LAYER, core.h): there are three.  Few slots: the table is in .data, which
 * has to stay on one page (see IOLENS_START_DATA); a layer past them would not run its hooks. */
#define IOLENS_MAX_LAYERS 4
extern const struct iolens_layer *iolens_layers[IOLENS_MAX_LAYERS];
extern int iolens_nlayers;

/* ---- env.c ---- */
/* The absolute path p (len bytes, in a buffer of PATH_MAX) with its links resolved and "." and ".." taken out,
 * into out (PATH_MAX); its length, or -1. */
IOLENS_COLD long iolens_resolve_path(char *p, size_t len, char *out);

/* ---- part.c ---- */
/* Set when RLIMIT_FSIZE, the program's own limit, kept the part from growing. */
extern int iolens_fsize_short;
/* The --trace file beside the part; empty when not tracing.  In .bss, not in iolens_g: only a traced image
 * touches it, and .data has to stay on the pages the loader writes anyway (IOLENS_START_DATA). */
extern char iolens_trace_path[620];
/* RLIMIT_FSIZE now, in bytes (UINT64_MAX: none). */
IOLENS_COLD uint64_t iolens_fsize_limit(void);
/* Reserve a record of size bytes; the caller fills it and publishes it.  Lock held.  0: the part is full. */
void *iolens_rec_alloc(uint32_t size);
static inline void iolens_publish(void *payload, uint16_t kind, uint16_t version)
{
    struct iolens_rec_hdr *h = (struct iolens_rec_hdr *)payload - 1;
    h->version = version;
    __atomic_store_n(&h->kind, kind, __ATOMIC_RELEASE);
}
void iolens_add_string(uint32_t what, const char *s, uint32_t len);
/* iolens_g.part_path for an image started at t_mono; its length, or -1. */
IOLENS_COLD int iolens_part_name(uint64_t t_mono);
/* Create this image's part file and map it, its PROC starting as init.  0 on success. */
int iolens_start_part(const struct iolens_proc *init);

/* ---- trace.c ---- */
/* A fork child: the parent's unflushed events are the parent's. */
void iolens_trace_drop_all(void);

/* ---- timeline.c ---- */
/* The timeline bin of rel (ns since its start), halving the resolution until it fits. */
uint64_t iolens_tl_coarsen(uint64_t rel);

/* The hot-path accounting takes mt (threads exist) as a parameter, read once
 * per call: each add would otherwise reload it (the counters could alias it,
 * as far as the compiler knows). */
static inline __attribute__((always_inline)) void add_m(uint64_t *p, uint64_t v, int mt)
{
    if (mt) __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    else *p += v;
}
static inline __attribute__((always_inline)) void max_m(uint64_t *p, uint64_t v, int mt)
{
    if (!mt) {
        if (v > *p) *p = v;
        return;
    }
    uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

static inline __attribute__((always_inline)) void tl_add(int cat, uint64_t t, uint64_t rbytes, uint64_t wbytes,
                                                         int mt)
{
    struct iolens_timeline *tl = iolens_g.tl;
    uint64_t rel = t > tl->t0_mono ? t - tl->t0_mono : 0;
    uint64_t idx = rel >> tl->shift;
    if (UNLIKELY(idx >= IOLENS_TIMELINE_BINS)) idx = iolens_tl_coarsen(rel);
    add_m(&tl->count[idx * IOLENS_NCAT + (uint64_t)cat], 1, mt);
    if (rbytes) add_m(&tl->bytes_read[idx], rbytes, mt);
    if (wbytes) add_m(&tl->bytes_written[idx], wbytes, mt);
}

/* ---- account.c ---- */
static inline const char *iolens_rec_path(const struct iolens_file *r) { return (const char *)(r + 1); }
/* The file table starts empty (a new part: its FILE records are made again). */
void iolens_files_reset(void);
/* The highest descriptor seen: bounds the scan of the table when a part is made. */
extern int iolens_fd_high;

/* ---- built.c ---- */
/* The PROC record noted at start: its start fields from the constructor on, its end fields once written. */
struct iolens_proc *iolens_built_proc(void);
/* What a part says of the moment its image (or fork child) started; the kernel's I/O counters apart, read
 * when the part is made. */
IOLENS_COLD void iolens_take_start(struct iolens_proc *p);
IOLENS_COLD void iolens_take_kernel_start(struct iolens_proc *p);
/* At start, before the environment is taken: whether the path exec was given (AT_EXECFN, in the auxiliary vector
 * after envp) names the executable. */
IOLENS_COLD void iolens_note_exec(int argc, char **argv, char **envp);
/* At start: the working directory, the redacted argv and the environment worth keeping. */
IOLENS_COLD void iolens_note_strings(int argc, char **argv, char **envp);
/* The image's strings, into a part made before its end. */
IOLENS_COLD void iolens_add_start_strings(void);
/* The end fields of p: time, rusage and (kernel_io) the kernel's I/O counters, else flag NO_KERNEL_IO. */
IOLENS_COLD void iolens_fill_end(struct iolens_proc *p, int kernel_io);
/* The part of an image that never made one, written whole at its end.  0 on success, else -errno (errno
 * itself untouched). */
IOLENS_COLD int iolens_write_built(uint64_t flags, uint64_t status);

#pragma GCC visibility pop

#endif
