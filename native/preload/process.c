/*
 * Process lifetime: the exit status of main, exit and _exit, fatal signals,
 * fork and vfork, exec, posix_spawn, system and popen (with the recorder's
 * variables put back into the environment passed on: env.c), reaping
 * children and thread creation.
 */
#include "core.h"

#include <alloca.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nolibc.h"

#define IOLENS_STR2(x) #x
#define IOLENS_STR(x) IOLENS_STR2(x)

/* ---- main's exit status ---- */

IOLENS_START_DATA static int (*real_main)(int, char **, char **);

IOLENS_COLD static int main_wrapper(int argc, char **argv, char **envp)
{
    int r = real_main(argc, argv, envp);
    iolens_exit_status = r & 0xff;
    return r;
}

IOLENS_COLD IOLENS_API int __libc_start_main(int (*m)(int, char **, char **), int argc, char **argv, void (*init)(void),
                                 void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    real_main = m;
    return REAL(__libc_start_main)(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

IOLENS_COLD IOLENS_API void exit(int status)
{
    iolens_exit_status = status & 0xff;
    REAL(exit)(status);
    __builtin_unreachable();
}

IOLENS_COLD IOLENS_API void _exit(int status)
{
    iolens_finalize(IOLENS_PF_EXITED, (uint64_t)(status & 0xff));
    REAL(_exit)(status);
    __builtin_unreachable();
}

IOLENS_COLD IOLENS_API void _Exit(int status)
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
/* ours[sig]: our handler stands for the default; the fatal signals are all below NOURS */
#define NOURS 32
IOLENS_START_DATA static volatile sig_atomic_t ours[NOURS];

#if defined(__x86_64__)
/*
 * The handlers are set with the system call itself rather than libc's
 * sigaction: every image sets them at its start, and libc's would cost a
 * lookup of the next definition (dlsym) and a page of libc there.  So the
 * restorer is ours: the instructions of libc's __restore_rt, byte for byte,
 * which unwinders recognise at the return address of a signal frame.
 */
struct ksigaction { /* the kernel's struct sigaction on x86_64 */
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};
#define K_SA_RESTORER 0x04000000
__attribute__((visibility("hidden"))) void iolens_restore_rt(void);
__asm__(".text\n"
        ".globl iolens_restore_rt\n"
        ".hidden iolens_restore_rt\n"
        ".type iolens_restore_rt, @function\n"
        "    nop\n"
        "iolens_restore_rt:\n"
        "    mov $" IOLENS_STR(SYS_rt_sigreturn) ", %rax\n"
        "    syscall\n"
        ".size iolens_restore_rt, .-iolens_restore_rt\n");

static int k_sigaction(int sig, const struct ksigaction *act, struct ksigaction *old)
{
    return (int)syscall(SYS_rt_sigaction, sig, act, old, sizeof act->mask);
}
#endif

static void on_fatal(int sig)
{
    iolens_finalize(IOLENS_PF_SIGNALED, 128u + (unsigned)sig);
#if defined(__x86_64__)
    struct ksigaction dfl = {SIG_DFL, K_SA_RESTORER, iolens_restore_rt, 0};
    k_sigaction(sig, &dfl, 0);
#else
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    REAL(sigaction)(sig, &dfl, 0);
#endif
    ours[sig] = 0;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, 0);
    syscall(SYS_tgkill, (long)syscall(SYS_getpid), (long)syscall(SYS_gettid), (long)sig);
}

/* One system call per signal: ours is set and the old disposition comes back
 * with it; where the program already had one (an inherited SIG_IGN, a
 * handler a constructor set), it is put back.  The signals are blocked
 * meanwhile, so none arrives while ours stands in for the program's. */
IOLENS_COLD static void signals_install(void)
{
    /* the kernel's 8-byte mask, set directly: no libc signal-set calls to bind at every start */
    uint64_t all = 0, prev = 0;
    for (int i = 0; i < NFATAL; i++) {
        if (fatal[i] >= NOURS) return; /* cannot happen on Linux; ours[] would not hold it */
        all |= 1ull << (fatal[i] - 1);
    }
    if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &prev, sizeof all) != 0) return;
#if defined(__x86_64__)
    struct ksigaction sa = {on_fatal, SA_RESTART | SA_NODEFER | K_SA_RESTORER, iolens_restore_rt, 0}, old;
    for (int i = 0; i < NFATAL; i++) {
        int sig = fatal[i];
        if (k_sigaction(sig, &sa, &old) != 0) continue;
        if (old.handler != SIG_DFL || (old.flags & SA_SIGINFO)) k_sigaction(sig, &old, 0);
        else ours[sig] = 1;
    }
#else
    struct sigaction sa;
    iolens_memset0(&sa, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESTART | SA_NODEFER; /* sa_mask: empty, from the memset */
    for (int i = 0; i < NFATAL; i++) {
        int sig = fatal[i];
        struct sigaction old;
        if (REAL(sigaction)(sig, &sa, &old) != 0) continue;
        if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) REAL(sigaction)(sig, &old, 0);
        else ours[sig] = 1;
    }
#endif
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &prev, 0, sizeof prev);
}

IOLENS_LAYER(signals, .start = signals_install);

static int is_fatal(int sig)
{
    for (int i = 0; i < NFATAL; i++)
        if (fatal[i] == sig) return 1;
    return 0;
}

/* A program that asks for the default action of a fatal signal gets ours, which stands for it (hidden, as at
 * start).  A handler of the program's own that cleans up, puts the default back and raises the signal again
 * (gzip on SIGPIPE, when `zcat | head` closes the pipe) so still ends the image with its counters and trace. */
static int asks_default(int sig, const struct sigaction *act)
{
    return act && act->sa_handler == SIG_DFL && !(act->sa_flags & SA_SIGINFO) && sig > 0 && sig < NOURS &&
           is_fatal(sig);
}

IOLENS_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (iolens_in_vfork) return REAL(sigaction)(sig, act, old); /* the child's table is its own, ours[] is not */
    int mine = sig > 0 && sig < NOURS && ours[sig];
    struct sigaction stand;
    if (asks_default(sig, act)) {
        stand = *act;
        stand.sa_handler = on_fatal;
        stand.sa_flags = SA_RESTART | SA_NODEFER;
        act = &stand;
    }
    int r = REAL(sigaction)(sig, act, old);
    if (r == 0 && mine && old) {
        memset(old, 0, sizeof *old);
        old->sa_handler = SIG_DFL;
    }
    if (r == 0 && act) ours[sig] = act == &stand;
    return r;
}

IOLENS_API __sighandler_t signal(int sig, __sighandler_t h)
{
    if (iolens_in_vfork) return REAL(signal)(sig, h);
    int mine = sig > 0 && sig < NOURS && ours[sig];
    if (h == SIG_DFL && sig > 0 && sig < NOURS && is_fatal(sig)) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        if (sigaction(sig, &sa, &old) != 0) return SIG_ERR; /* ours, standing for the default */
        return mine ? SIG_DFL : old.sa_handler;
    }
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

/*
 * vfork is served as a real vfork: a fork would copy the page tables of a
 * large or threaded program for a child that only execs (0.9 s -> 5.8 s for
 * a loop of them from a threaded program).  The child borrows the parent's
 * memory and thread, so on that thread the guard is up and iolens_in_vfork
 * set until the parent resumes: every call the child makes (dup2, close,
 * execve, _exit) passes through without touching the recorder's state, the
 * descriptor table included.  exec* still puts the recorder's variables back
 * into the child's environment (it only reads); the new image records.
 *
 * The wrapper has no stack frame across the system call (the child may reuse
 * the stack below its caller before the parent resumes), as libc's own vfork.
 */
__attribute__((used)) int iolens_vfork_enter(void)
{
    int old = iolens_guard;
    /* resolved now: the child must not run the resolver on borrowed memory */
    (void)REAL(execve);
    (void)REAL(execvpe);
    (void)REAL(_exit);
    (void)REAL(dup2);
    (void)REAL(close);
    iolens_guard = 1;
    iolens_in_vfork = 1;
    return old;
}

__attribute__((used)) long iolens_vfork_leave(long r, int old_guard)
{
    iolens_in_vfork = 0;
    iolens_guard = old_guard;
    if (r < 0 && r > -4096) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        "vfork:\n"
        "    sub $8, %rsp\n"
        "    call iolens_vfork_enter\n" /* old guard in eax */
        "    add $8, %rsp\n"
        "    mov %eax, %esi\n"          /* kept in a register across the call */
        "    pop %rdi\n"                /* the return address, likewise */
        "    mov $" IOLENS_STR(SYS_vfork) ", %eax\n"
        "    syscall\n"
        "    push %rdi\n"
        "    test %rax, %rax\n"
        "    jz 1f\n"                   /* the child returns 0 with the guard up */
        "    mov %rax, %rdi\n"
        "    sub $8, %rsp\n"
        "    call iolens_vfork_leave\n"
        "    add $8, %rsp\n"
        "1:  ret\n"
        ".size vfork, .-vfork\n");
#else
/* Elsewhere a fork: the same semantics for any program that uses vfork correctly. */
IOLENS_API pid_t vfork(void) { return fork(); }
#endif

/* ---- exec and spawn: the environment passed on has the recorder's variables back (env.c) ---- */

#define MERGECAP 8192
#define FIXED_ENV(path, fd, search) \
    int cap_ = iolens_env_cap(envp); \
    char **fixed = alloca(sizeof(char *) * (size_t)(cap_ + 1)); \
    char *merged = alloca(MERGECAP); \
    char *const *env = iolens_env_for_child(envp, fixed, cap_, merged, MERGECAP, path, fd, search);
#define EXEC(path, fd, search, call_with_env) \
    FIXED_ENV(path, fd, search) \
    iolens_finalize(IOLENS_PF_EXECED, 0); \
    int r = call_with_env; \
    int e = errno; \
    iolens_unfinalize(); \
    errno = e; \
    return r;

IOLENS_API int execve(const char *p, char *const argv[], char *const envp[])
{
    EXEC(p, -1, 0, REAL(execve)(p, argv, env))
}
IOLENS_API int execvpe(const char *p, char *const argv[], char *const envp[])
{
    EXEC(p, -1, 1, REAL(execvpe)(p, argv, env))
}
IOLENS_API int fexecve(int fd, char *const argv[], char *const envp[]) { EXEC(0, fd, 0, REAL(fexecve)(fd, argv, env)) }
IOLENS_API int execv(const char *p, char *const argv[])
{
    char *const *envp = environ;
    EXEC(p, -1, 0, REAL(execve)(p, argv, env))
}
IOLENS_API int execvp(const char *p, char *const argv[])
{
    char *const *envp = environ;
    EXEC(p, -1, 1, REAL(execvpe)(p, argv, env))
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

#define SPAWN(path, search, call_with_env) \
    FIXED_ENV(path, -1, search) \
    return call_with_env;

IOLENS_API int posix_spawn(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    SPAWN(p, 0, REAL(posix_spawn)(pid, p, fa, at, argv, env))
}
IOLENS_API int posix_spawnp(pid_t *pid, const char *p, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    SPAWN(p, 1, REAL(posix_spawnp)(pid, p, fa, at, argv, env))
}

/* system and popen start their shell through libc's internal spawn with
 * environ itself: for the length of the call environ is the array with the
 * recorder's variables put back (another thread reading environ meanwhile
 * sees them too; one that replaces environ meanwhile keeps its own). */
#define WITH_ENV(type, call) \
    char *const *envp = environ; \
    FIXED_ENV("/bin/sh", -1, 0) \
    if (env == envp) return call; \
    environ = (char **)env; \
    type r = call; \
    int e = errno; \
    if (environ == (char **)env) environ = (char **)envp; \
    errno = e; \
    return r;

IOLENS_API int system(const char *cmd)
{
    if (!cmd) return REAL(system)(cmd);
    WITH_ENV(int, REAL(system)(cmd))
}
IOLENS_API FILE *popen(const char *cmd, const char *mode) { WITH_ENV(FILE *, REAL(popen)(cmd, mode)) }

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
    if (t0) iolens_add(&iolens_g.proc->wait_ns, iolens_since(t0));
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
    if (t0) iolens_add(&iolens_g.proc->wait_ns, iolens_since(t0));
    errno = e;
    return r;
}

IOLENS_API int waitid(idtype_t type, id_t id, siginfo_t *info, int opt)
{
    uint64_t t0 = iolens_on() ? iolens_now() : 0; /* makes a fork child's part */
    int r = REAL(waitid)(type, id, info, opt);
    int e = errno;
    if (t0) iolens_add(&iolens_g.proc->wait_ns, iolens_since(t0));
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
