/*
 * Every symbol the interposer defines, in one place: X(ret, name, params).
 * Each gets a lazily resolved pointer to the next definition (libc's),
 * declared here and defined in base.c.  The wrappers live in one file per
 * interface: posix.c, stdio.c, meta.c, mmap.c, process.c.
 */
#ifndef IOLENS_HOOKS_H
#define IOLENS_HOOKS_H

#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>

struct statx;
struct iolens_srun;

#pragma GCC visibility push(hidden) /* the real-symbol pointers, the thread-local block: see core.h */

#define IOLENS_HOOKS(X) \
    /* posix.c: opens, closes, data, seeks, descriptor copies, sync */ \
    X(int, open, (const char *, int, ...)) X(int, open64, (const char *, int, ...)) \
    X(int, openat, (int, const char *, int, ...)) X(int, openat64, (int, const char *, int, ...)) \
    X(int, __open_2, (const char *, int)) X(int, __open64_2, (const char *, int)) \
    X(int, __openat_2, (int, const char *, int)) X(int, __openat64_2, (int, const char *, int)) \
    X(int, creat, (const char *, mode_t)) X(int, creat64, (const char *, mode_t)) \
    X(int, mkstemp, (char *)) X(int, mkstemp64, (char *)) X(int, mkostemp, (char *, int)) \
    X(int, mkostemp64, (char *, int)) X(int, mkstemps, (char *, int)) X(int, mkostemps, (char *, int, int)) \
    X(int, close, (int)) X(int, close_range, (unsigned, unsigned, int)) X(void, closefrom, (int)) \
    X(ssize_t, read, (int, void *, size_t)) X(ssize_t, __read_chk, (int, void *, size_t, size_t)) \
    X(ssize_t, write, (int, const void *, size_t)) \
    X(ssize_t, pread, (int, void *, size_t, off_t)) X(ssize_t, pread64, (int, void *, size_t, off_t)) \
    X(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t)) \
    X(ssize_t, __pread64_chk, (int, void *, size_t, off_t, size_t)) \
    X(ssize_t, pwrite, (int, const void *, size_t, off_t)) X(ssize_t, pwrite64, (int, const void *, size_t, off_t)) \
    X(ssize_t, readv, (int, const struct iovec *, int)) X(ssize_t, writev, (int, const struct iovec *, int)) \
    X(ssize_t, preadv, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, preadv64, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, pwritev, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, pwritev64, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, preadv64v2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, pwritev64v2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, sendfile, (int, int, off_t *, size_t)) X(ssize_t, sendfile64, (int, int, off_t *, size_t)) \
    X(ssize_t, copy_file_range, (int, off_t *, int, off_t *, size_t, unsigned)) \
    X(off_t, lseek, (int, off_t, int)) X(off_t, lseek64, (int, off_t, int)) \
    X(int, dup, (int)) X(int, dup2, (int, int)) X(int, dup3, (int, int, int)) \
    X(int, fcntl, (int, int, ...)) X(int, fcntl64, (int, int, ...)) \
    X(int, fsync, (int)) X(int, fdatasync, (int)) X(int, syncfs, (int)) X(void, sync, (void)) \
    X(int, sync_file_range, (int, off_t, off_t, unsigned)) \
    /* meta.c: stat family, access, namespace, directories, size */ \
    X(int, stat, (const char *, struct stat *)) X(int, stat64, (const char *, struct stat64 *)) \
    X(int, lstat, (const char *, struct stat *)) X(int, lstat64, (const char *, struct stat64 *)) \
    X(int, fstat, (int, struct stat *)) X(int, fstat64, (int, struct stat64 *)) \
    X(int, fstatat, (int, const char *, struct stat *, int)) \
    X(int, fstatat64, (int, const char *, struct stat64 *, int)) \
    X(int, __xstat, (int, const char *, struct stat *)) X(int, __xstat64, (int, const char *, struct stat64 *)) \
    X(int, __lxstat, (int, const char *, struct stat *)) X(int, __lxstat64, (int, const char *, struct stat64 *)) \
    X(int, __fxstat, (int, int, struct stat *)) X(int, __fxstat64, (int, int, struct stat64 *)) \
    X(int, __fxstatat, (int, int, const char *, struct stat *, int)) \
    X(int, __fxstatat64, (int, int, const char *, struct stat64 *, int)) \
    X(int, statx, (int, const char *, int, unsigned, struct statx *)) \
    X(int, access, (const char *, int)) X(int, faccessat, (int, const char *, int, int)) \
    X(int, unlink, (const char *)) X(int, unlinkat, (int, const char *, int)) \
    X(int, rename, (const char *, const char *)) X(int, renameat, (int, const char *, int, const char *)) \
    X(int, renameat2, (int, const char *, int, const char *, unsigned)) \
    X(int, mkdir, (const char *, mode_t)) X(int, mkdirat, (int, const char *, mode_t)) \
    X(int, rmdir, (const char *)) \
    X(DIR *, opendir, (const char *)) X(DIR *, fdopendir, (int)) X(int, closedir, (DIR *)) \
    X(struct dirent *, readdir, (DIR *)) X(struct dirent64 *, readdir64, (DIR *)) \
    X(ssize_t, getdents64, (int, void *, size_t)) X(int, chdir, (const char *)) X(int, fchdir, (int)) \
    X(int, truncate, (const char *, off_t)) X(int, truncate64, (const char *, off_t)) \
    X(int, ftruncate, (int, off_t)) X(int, ftruncate64, (int, off_t)) \
    X(int, fallocate, (int, int, off_t, off_t)) X(int, fallocate64, (int, int, off_t, off_t)) \
    X(int, posix_fallocate, (int, off_t, off_t)) X(int, posix_fallocate64, (int, off_t, off_t)) \
    /* mmap.c */ \
    X(void *, mmap, (void *, size_t, int, int, int, off_t)) \
    X(void *, mmap64, (void *, size_t, int, int, int, off_t)) X(int, munmap, (void *, size_t)) \
    X(int, msync, (void *, size_t, int)) \
    /* stdio.c */ \
    X(FILE *, fopen, (const char *, const char *)) X(FILE *, fopen64, (const char *, const char *)) \
    X(FILE *, fdopen, (int, const char *)) \
    X(FILE *, freopen, (const char *, const char *, FILE *)) \
    X(FILE *, freopen64, (const char *, const char *, FILE *)) \
    X(FILE *, tmpfile, (void)) X(FILE *, tmpfile64, (void)) X(int, fclose, (FILE *)) \
    X(size_t, fread, (void *, size_t, size_t, FILE *)) X(size_t, fread_unlocked, (void *, size_t, size_t, FILE *)) \
    X(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *)) \
    X(size_t, fwrite, (const void *, size_t, size_t, FILE *)) \
    X(size_t, fwrite_unlocked, (const void *, size_t, size_t, FILE *)) \
    X(char *, fgets, (char *, int, FILE *)) X(char *, fgets_unlocked, (char *, int, FILE *)) \
    X(char *, __fgets_chk, (char *, size_t, int, FILE *)) \
    X(int, fputs, (const char *, FILE *)) X(int, fputs_unlocked, (const char *, FILE *)) \
    X(int, puts, (const char *)) \
    X(int, fgetc, (FILE *)) X(int, getc, (FILE *)) X(int, _IO_getc, (FILE *)) X(int, getchar, (void)) \
    X(int, fputc, (int, FILE *)) X(int, putc, (int, FILE *)) X(int, _IO_putc, (int, FILE *)) \
    X(int, putchar, (int)) X(int, fputc_unlocked, (int, FILE *)) X(int, putc_unlocked, (int, FILE *)) \
    X(int, fgetc_unlocked, (FILE *)) X(int, getc_unlocked, (FILE *)) \
    X(int, __uflow, (FILE *)) X(int, __overflow, (FILE *, int)) \
    X(ssize_t, getline, (char **, size_t *, FILE *)) X(ssize_t, getdelim, (char **, size_t *, int, FILE *)) \
    X(ssize_t, __getdelim, (char **, size_t *, int, FILE *)) \
    X(int, vfprintf, (FILE *, const char *, va_list)) X(int, __vfprintf_chk, (FILE *, int, const char *, va_list)) \
    X(int, vprintf, (const char *, va_list)) X(int, __vprintf_chk, (int, const char *, va_list)) \
    X(int, vfscanf, (FILE *, const char *, va_list)) X(int, __isoc99_vfscanf, (FILE *, const char *, va_list)) \
    X(int, fflush, (FILE *)) X(int, fseek, (FILE *, long, int)) X(int, fseeko, (FILE *, off_t, int)) \
    X(int, fseeko64, (FILE *, off_t, int)) X(long, ftell, (FILE *)) X(off_t, ftello, (FILE *)) \
    X(off_t, ftello64, (FILE *)) X(void, rewind, (FILE *)) \
    /* process.c: lifetime, children, signals */ \
    X(int, __libc_start_main, (int (*)(int, char **, char **), int, char **, void (*)(void), \
                               void (*)(void), void (*)(void), void *)) \
    X(pid_t, fork, (void)) X(pid_t, vfork, (void)) \
    X(int, execve, (const char *, char *const[], char *const[])) \
    X(int, execv, (const char *, char *const[])) X(int, execvp, (const char *, char *const[])) \
    X(int, execvpe, (const char *, char *const[], char *const[])) \
    X(int, fexecve, (int, char *const[], char *const[])) \
    X(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
                         const posix_spawnattr_t *, char *const[], char *const[])) \
    X(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
                          const posix_spawnattr_t *, char *const[], char *const[])) \
    X(int, system, (const char *)) X(FILE *, popen, (const char *, const char *)) \
    X(void, exit, (int)) X(void, _exit, (int)) X(void, _Exit, (int)) \
    X(pid_t, wait, (int *)) X(pid_t, waitpid, (pid_t, int *, int)) \
    X(pid_t, wait4, (pid_t, int *, int, struct rusage *)) X(pid_t, wait3, (int *, int, struct rusage *)) \
    X(int, waitid, (idtype_t, id_t, siginfo_t *, int)) X(int, sigsuspend, (const sigset_t *)) \
    X(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)) \
    X(int, sigaction, (int, const struct sigaction *, struct sigaction *)) \
    X(__sighandler_t, signal, (int, __sighandler_t))

/* Defined too, but implemented through a hook above rather than a pointer of
 * their own: fprintf, __fprintf_chk, printf, __printf_chk, fscanf,
 * __isoc99_fscanf (via vfprintf/vprintf/vfscanf); execl, execlp, execle
 * (via execve/execvp). */

#define IOLENS_X_DECL(ret, name, params) \
    typedef ret(*iolens_real_##name##_t) params; \
    extern iolens_real_##name##_t iolens_real_##name;
IOLENS_HOOKS(IOLENS_X_DECL)
#undef IOLENS_X_DECL

void *iolens_resolve(const char *name);

/* The next definition of a hooked symbol, resolved on first use.  While one
 * is being resolved (dlsym may allocate, and an allocator may do I/O), nested
 * calls get a raw-syscall stand-in for the basic calls instead of recursing. */
/* The recorder's thread-local state, one block: a hooked call reaches all of
 * it through one GOT entry (one cache line) rather than one per variable. */
struct iolens_tls {
    int guard;     /* the recorder's own code is running on this thread: calls pass through */
    int in_vfork;  /* see iolens_in_vfork (core.h) */
    int resolving; /* a real symbol is being resolved */
    int srun_open; /* this thread's run of untimed stdio calls is open (iolens_srun, core.h) */
    uint64_t last_t; /* see iolens_last_t (core.h) */
    struct iolens_srun *srun; /* this thread's run, once it had one */
    uint64_t own;  /* --trace: the recorder's time after its calls since this thread's last event (EVENT own_ns) */
};
extern __thread struct iolens_tls iolens_tls __attribute__((tls_model("initial-exec")));
#define iolens_resolving (iolens_tls.resolving)
#define iolens_guard (iolens_tls.guard)
void *iolens_fallback(const char *name);
/* The slow path of every getter below, shared and out of line (base.c): it
 * runs once per symbol, mostly at start-up, where it stays with the rest of
 * the start-up code rather than in the hooks' text. */
void *iolens_resolve_slot(void **slot, const char *name);
#define IOLENS_X_GET(ret, name, params) \
    static inline iolens_real_##name##_t iolens_get_##name(void) \
    { \
        iolens_real_##name##_t p = iolens_real_##name; \
        if (__builtin_expect(!p, 0)) \
            p = (iolens_real_##name##_t)iolens_resolve_slot((void **)&iolens_real_##name, #name); \
        return p; \
    }
IOLENS_HOOKS(IOLENS_X_GET)
#undef IOLENS_X_GET
#define REAL(name) iolens_get_##name()

#pragma GCC visibility pop

#endif
