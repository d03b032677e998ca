/*
 * Process lifetime: the exit status of main, exit and _exit, fatal signals,
 * fork, exec (with the profiler kept in the environment), posix_spawn,
 * reaping children and thread creation.
 */
#include "core.h"

#include <alloca.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int iolens_exit_status;

/* ---- main's exit status ---- */

static int (*real_main)(int, char **, char **);

static int main_wrapper(int argc, char **argv, char **envp)
{
    int r = real_main(argc, argv, envp);
    iolens_exit_status = r & 0xff;
    return r;
}

IOLENS_API int __libc_start_main(int (*m)(int, char **, char **), int argc, char **argv, void (*init)(void),
                                 void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    real_main = m;
    return REAL(__libc_start_main)(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

IOLENS_API void exit(int status)
{
    iolens_exit_status = status & 0xff;
    REAL(exit)(status);
    __builtin_unreachable();
}

IOLENS_API void _exit(int status)
{
    iolens_finalize(IOLENS_PF_EXITED, (uint64_t)(status & 0xff));
    REAL(_exit)(status);
    __builtin_unreachable();
}

IOLENS_API void _Exit(int status)
{
    iolens_finalize(IOLENS_PF_EXITED, (uint64_t)(status & 0xff));
    REAL(_Exit)(status);
    __builtin_unreachable();
}

/* ---- fatal signals ----
 * Installed only where the program left the default action, and hidden from
 * it: a program that installs its own handler replaces ours, and one that
 * asks sees SIG_DFL. */

static const int fatal[] = {SIGSEGV, SIGABRT, SIGTERM, SIGINT, SIGBUS, SIGFPE, SIGILL, SIGQUIT, SIGHUP, SIGPIPE, SIGXCPU, SIGXFSZ};
#define NFATAL (int)(sizeof fatal / sizeof fatal[0])
static volatile sig_atomic_t ours[65];

static void on_fatal(int sig)
{
    iolens_finalize(IOLENS_PF_SIGNALED, 128u + (unsigned)sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    REAL(sigaction)(sig, &dfl, 0);
    ours[sig] = 0;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, 0);
    syscall(SYS_tgkill, (long)syscall(SYS_getpid), (long)syscall(SYS_gettid), (long)sig);
}

void iolens_signals_install(void)
{
    for (int i = 0; i < NFATAL; i++) {
        int sig = fatal[i];
        struct sigaction old, sa;
        if (REAL(sigaction)(sig, 0, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_RESTART | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        if (REAL(sigaction)(sig, &sa, 0) == 0) ours[sig] = 1;
    }
}

IOLENS_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int mine = sig > 0 && sig < 65 && ours[sig];
    int r = REAL(sigaction)(sig, act, old);
    if (r == 0 && mine) {
        if (old) {
            memset(old, 0, sizeof *old);
            old->sa_handler = SIG_DFL;
        }
        if (act) ours[sig] = 0;
    }
    return r;
}

IOLENS_API __sighandler_t signal(int sig, __sighandler_t h)
{
    int mine = sig > 0 && sig < 65 && ours[sig];
    __sighandler_t r = REAL(signal)(sig, h);
    if (r != SIG_ERR && mine) {
        ours[sig] = 0;
        return SIG_DFL;
    }
    return r;
}

/* ---- fork ---- */

IOLENS_API pid_t fork(void)
{
    pid_t p = REAL(fork)();
    if (p == 0) iolens_after_fork_child();
    return p;
}

/* A vfork child shares the parent's memory, which the recorder cannot; a
 * fork has the same semantics for any program that uses vfork correctly. */
IOLENS_API pid_t vfork(void) { return fork(); }

/* ---- exec: end this image, keep the profiler in the new one ---- */

/* Ensure LD_PRELOAD and the IOLENS_* settings survive an exec with a custom
 * environment.  Returns envp itself when nothing is missing. */
static char *const *fix_env(char *const envp[], char **out, int cap)
{
    static const char *keys[] = {"LD_PRELOAD", "IOLENS_DIR", "IOLENS_TRACE", "IOLENS_MAX_FILES", "IOLENS_PARENT_PID"};
    int n = 0, o;
    if (!iolens_g.active || !envp) return envp;
    while (envp[n]) n++;
    if (n + 6 > cap) return envp;
    for (o = 0; o < n; o++) out[o] = envp[o];
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t kl = strlen(keys[k]);
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = strncmp(envp[i], keys[k], kl) == 0 && envp[i][kl] == '=';
        const char *v = getenv(keys[k]);
        if (!found && v) out[o++] = (char *)(v - kl - 1); /* our own "KEY=value" entry */
    }
    if (o == n) return envp;
    out[o] = 0;
    return out;
}

#define ENVCAP 4096
#define EXEC(call_with_env) \
    char **fixed = alloca(sizeof(char *) * (ENVCAP + 8)); \
    char *const *env = fix_env(envp, fixed, ENVCAP); \
    iolens_finalize(IOLENS_PF_EXECED, 0); \
    int r = call_with_env; \
    int e = errno; \
    iolens_unfinalize(); \
    errno = e; \
    return r;

IOLENS_API int execve(const char *p, char *const argv[], char *const envp[]) { EXEC(REAL(execve)(p, argv, env)) }
IOLENS_API int execvpe(const char *p, char *const argv[], char *const envp[]) { EXEC(REAL(execvpe)(p, argv, env)) }
IOLENS_API int fexecve(int fd, char *const argv[], char *const envp[]) { EXEC(REAL(fexecve)(fd, argv, env)) }
IOLENS_API int execv(const char *p, char *const argv[])
{
    char *const *envp = environ;
    EXEC(REAL(execve)(p, argv, env))
}
IOLENS_API int execvp(const char *p, char *const argv[])
{
    char *const *envp = environ;
    EXEC(REAL(execvpe)(p, argv, env))
}

/* execl*: gather the variadic argv, then the vector form above. */
#define GATHER_ARGV(arg0, last) \
    va_list ap; \
    int n_ = 1; \
    va_start(ap, arg0); \
    while (va_arg(ap, char *)) n_++; \
    va_end(ap); \
    char **argv = alloca(sizeof(char *) * (size_t)(n_ + 1)); \
    argv[0] = (char *)(arg0); \
    va_start(ap, arg0); \
    for (int i_ = 1; i_ <= n_; i_++) argv[i_] = va_arg(ap, char *); \
    last; \
    va_end(ap);

IOLENS_API int execl(const char *p, const char *a0, ...)
{
    GATHER_ARGV(a0, (void)0)
    return execv(p, argv);
}
IOLENS_API int execlp(const char *p, const char *a0, ...)
{
    GATHER_ARGV(a0, (void)0)
    return execvp(p, argv);
}
IOLENS_API int execle(const char *p, const char *a0, ...)
{
    char *const *envp;
    GATHER_ARGV(a0, envp = va_arg(ap, char *const *))
    return execve(p, argv, envp);
}

#define SPAWN(call_with_env) \
    char **fixed = alloca(sizeof(char *) * (ENVCAP + 8)); \
    char *const *env = fix_env(envp, fixed, ENVCAP); \
    return call_with_env;

IOLENS_API int posix_spawn(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    SPAWN(REAL(posix_spawn)(pid, p, fa, at, argv, env))
}
IOLENS_API int posix_spawnp(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    SPAWN(REAL(posix_spawnp)(pid, p, fa, at, argv, env))
}

/* ---- reaping: each child's status and time, for the process tree ---- */

static void reaped(pid_t r, int *status, struct rusage *ru)
{
    if (r > 0 && status && (WIFEXITED(*status) || WIFSIGNALED(*status))) iolens_child_reaped(r, *status, ru);
}

IOLENS_API pid_t wait4(pid_t pid, int *st, int opt, struct rusage *ru)
{
    int s = 0;
    struct rusage mine;
    uint64_t t0 = iolens_on() ? iolens_now() : 0; /* makes a fork child's part */
    pid_t r = REAL(wait4)(pid, st ? st : &s, opt, ru ? ru : &mine);
    if (t0) iolens_add(&iolens_g.proc->wait_ns, iolens_now() - t0);
    if (r > 0) {
        int e = errno;
        reaped(r, st ? st : &s, ru ? ru : &mine);
        errno = e;
    }
    return r;
}
IOLENS_API pid_t waitpid(pid_t pid, int *st, int opt) { return wait4(pid, st, opt, 0); }
IOLENS_API pid_t wait3(int *st, int opt, struct rusage *ru) { return wait4(-1, st, opt, ru); } /* dash */
/* dash sleeps in sigsuspend until SIGCHLD, then reaps with wait3(WNOHANG):
 * that sleep is waiting for children too, not work. */
IOLENS_API int sigsuspend(const sigset_t *mask)
{
    uint64_t t0 = iolens_on() ? iolens_now() : 0; /* makes a fork child's part */
    int r = REAL(sigsuspend)(mask);
    int e = errno;
    if (t0) iolens_add(&iolens_g.proc->wait_ns, iolens_now() - t0);
    errno = e;
    return r;
}

IOLENS_API int waitid(idtype_t type, id_t id, siginfo_t *info, int opt)
{
    uint64_t t0 = iolens_on() ? iolens_now() : 0; /* makes a fork child's part */
    int r = REAL(waitid)(type, id, info, opt);
    int e = errno;
    if (t0) iolens_add(&iolens_g.proc->wait_ns, iolens_now() - t0);
    if (r == 0 && info && info->si_pid > 0 && !(opt & WNOWAIT) &&
        (info->si_code == CLD_EXITED || info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)) {
        int status = info->si_code == CLD_EXITED ? (info->si_status & 0xff) << 8 : info->si_status & 0x7f;
        iolens_child_reaped(info->si_pid, status, 0);
    }
    errno = e;
    return r;
}
IOLENS_API pid_t wait(int *st) { return wait4(-1, st, 0, 0); }

/* ---- threads: counters switch to atomics once a second thread exists ---- */

IOLENS_API int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    if (iolens_on()) {
        iolens_g.mt = 1;
        iolens_g.proc->flags |= IOLENS_PF_MULTITHREADED;
        __atomic_fetch_add(&iolens_g.proc->nthreads, 1, __ATOMIC_RELAXED);
    }
    return REAL(pthread_create)(t, a, fn, arg);
}
