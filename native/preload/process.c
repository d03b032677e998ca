/*
 * Process lifetime: the exit status of main, exit and _exit, fatal signals,
 * fork and vfork, the environment (the recorder's variables hidden from the
 * program, passed on at exec, posix_spawn, system and popen), reaping
 * children and thread creation.
 */
#include "core.h"

#include <alloca.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nolibc.h"

IOLENS_START_DATA int iolens_exit_status;

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
IOLENS_COLD void iolens_signals_install(void)
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

/* ---- the environment: the recorder's variables are its own ---- */

/* Set by the launcher (IOLENS, capture/record.py's `recorder_value`) or a
 * pipeline's engine (IOLENS_DIR, ...); taken out of environ at start, so the
 * program (and `env`) sees what it would see unprofiled, and put back only
 * into the environments passed on. */
static const char *const env_keys[] = {"IOLENS",           "IOLENS_DIR",        "IOLENS_TRACE",
                                        "IOLENS_MAX_FILES", "IOLENS_PARENT_PID", "IOLENS_CLOCK"};
#define NKEYS (sizeof env_keys / sizeof env_keys[0])
/* Pointers into the environment's own strings, which stay where they are
 * (only the array shrinks); so the start copies little and touches few pages. */
IOLENS_START_DATA static const char *env_saved[NKEYS]; /* "KEY=value", 0 when unset */
IOLENS_START_DATA static char *preload_full;           /* "LD_PRELOAD=..." as the launcher set it */
static char preload_pool[1100 + 4096];
static char nothing[1];
static char *preload_own = nothing;  /* "LD_PRELOAD=<this library>"; empty: not found */
static char *preload_rest = nothing; /* the program's part of it, as left in environ; empty: none */
IOLENS_START_DATA static const char *own_path;
IOLENS_START_DATA static int env_taken;

IOLENS_COLD static int starts(const char *s, const char *key, size_t kl) { return iolens_strneq(s, key, kl) && s[kl] == '='; }

/* Is [s, s+n) this library?  By its file name (pass 0), else by the path
 * the loader used (pass 1). */
IOLENS_COLD static int is_own(const char *s, size_t n, int pass)
{
    static const char name[] = "libiolens_preload.so";
    size_t nl = sizeof name - 1;
    if (pass == 0) return n >= nl && iolens_memeq(s + n - nl, name, nl) && (n == nl || s[n - nl - 1] == '/');
    if (!own_path) { /* looked up only when needed: dladdr walks every loaded object */
        Dl_info di;
        own_path = dladdr((void *)is_own, &di) && di.dli_fname ? di.dli_fname : "";
    }
    return iolens_strlen(own_path) == n && iolens_memeq(s, own_path, n);
}

/* Where our entry is in an LD_PRELOAD value (space or colon separated).
 * Every entry is tried by name before any by path, so other preloads
 * listed first (a sanitizer's, valgrind's) cost no dladdr. */
IOLENS_COLD static const char *find_own(const char *v, size_t *len)
{
    for (int pass = 0; pass < 2; pass++)
        for (const char *p = v; *p;) {
            while (*p == ' ' || *p == ':') p++;
            const char *e = p;
            while (*e && *e != ' ' && *e != ':') e++;
            if (e > p && is_own(p, (size_t)(e - p), pass)) {
                *len = (size_t)(e - p);
                return p;
            }
            p = e;
        }
    return 0;
}

IOLENS_COLD const char *iolens_env(const char *key)
{
    if (!env_taken) return iolens_getenv_in(environ, key);
    size_t kl = iolens_strlen(key);
    for (size_t k = 0; k < NKEYS; k++)
        if (env_saved[k] && starts(env_saved[k], key, kl)) return env_saved[k] + kl + 1;
    return 0;
}

IOLENS_COLD void iolens_env_take(void)
{
    char **env = environ;
    if (!env) return;
    size_t o = 0;
    for (size_t i = 0; env[i]; i++) {
        char *e = env[i];
        int drop = 0;
        for (size_t k = 0; k < NKEYS && !drop && e[0] == 'I'; k++) {
            size_t kl = iolens_strlen(env_keys[k]);
            if (!starts(e, env_keys[k], kl)) continue;
            env_saved[k] = e;
            drop = 1;
        }
        size_t at_len;
        const char *at;
        if (!drop && e[0] == 'L' && starts(e, "LD_PRELOAD", 10) && iolens_strlen(e) < sizeof preload_pool - 1100 &&
            (at = find_own(e + 11, &at_len)) != 0 && at_len + 12 < 1100) {
            preload_full = e;
            char *own = preload_pool, *rest = own + 11 + at_len + 1;
            iolens_memcpy(own, "LD_PRELOAD=", 11);
            iolens_memcpy(own + 11, at, at_len);
            own[11 + at_len] = 0;
            preload_own = own;
            /* the rest: the value without our entry and one separator beside it */
            size_t head = (size_t)(at - e), tail = head + at_len;
            if (e[tail] == ' ' || e[tail] == ':') tail++;
            else if (head > 11 && (e[head - 1] == ' ' || e[head - 1] == ':')) head--;
            iolens_memcpy(rest, e, head);
            iolens_memcpy(rest + head, e + tail, iolens_strlen(e + tail) + 1);
            /* a value that was only ours was unset before; anything more (even
             * a separator alone: the launcher's "ours " for an empty one) was set */
            if (iolens_strlen(e + 11) > at_len) env[o++] = preload_rest = rest;
            continue;
        }
        if (!drop) env[o++] = e;
    }
    env[o] = 0; /* the array shrinks in place; the strings stay where they are */
    env_taken = 1;
}

/* ---- a program the interposer cannot load in ---- */

extern const ElfW(Ehdr) __ehdr_start; /* this library's own ELF header, placed by the linker */

/* Does the ELF whose first n bytes are in b (read from fd) load the
 * interposer: our class, byte order and machine, and an interpreter
 * (PT_INTERP)?  Not ELF: yes, exec decides. */
IOLENS_COLD static int elf_loads(int fd, unsigned char *b, long n, size_t cap)
{
    const ElfW(Ehdr) *me = &__ehdr_start;
    ElfW(Ehdr) h;
    if (n < (long)sizeof h || !iolens_memeq((const char *)b, ELFMAG, SELFMAG)) return 1;
    iolens_memcpy(&h, b, sizeof h);
    if (h.e_ident[EI_CLASS] != me->e_ident[EI_CLASS] || h.e_ident[EI_DATA] != me->e_ident[EI_DATA] ||
        h.e_machine != me->e_machine)
        return 0;
    long base = 0; /* b holds the file's bytes [base, base + n) */
    for (unsigned i = 0; i < h.e_phnum && h.e_phentsize >= sizeof(ElfW(Phdr)); i++) {
        long at = (long)h.e_phoff + (long)i * h.e_phentsize;
        if (at < base || at + (long)sizeof(ElfW(Phdr)) > base + n) {
            base = at;
            n = syscall(SYS_pread64, fd, b, cap, at);
            if (n < (long)sizeof(ElfW(Phdr))) return 1;
        }
        ElfW(Phdr) ph;
        iolens_memcpy(&ph, b + (at - base), sizeof ph);
        if (ph.p_type == PT_INTERP) return 1;
    }
    return 0;
}

/* Whether the interposer loads in the program at path (or, path 0, open at
 * fd), following "#!" lines as the kernel does (capture/record.py's
 * `interposer_loads` makes the same test for the command itself).  A static
 * program ignores LD_PRELOAD, and one of another class or machine gets the
 * loader's complaint on its stderr: either is given its environment as the
 * caller passed it, as unprofiled, and its children are not followed.  Read
 * only at exec or spawn, with raw system calls; errno is kept. */
IOLENS_COLD static int loads_in(const char *path, int fd)
{
    union {
        unsigned char b[1024];
        ElfW(Ehdr) align_;
    } u;
    char interp[256];
    int r = 1, e = errno;
    for (int depth = 0; depth < 5; depth++) {
        int opened = path ? (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC) : -1;
        if (path && opened < 0) break;
        long n = syscall(SYS_pread64, path ? opened : fd, u.b, sizeof u.b, 0L);
        if (n >= 2 && u.b[0] == '#' && u.b[1] == '!') {
            long i = 2, k = 0, m = n < 256 ? n : 256; /* the kernel reads the line's first 256 bytes */
            while (i < m && (u.b[i] == ' ' || u.b[i] == '\t')) i++;
            while (i < m && u.b[i] && u.b[i] != ' ' && u.b[i] != '\t' && u.b[i] != '\n')
                interp[k++] = (char)u.b[i++];
            interp[k] = 0;
            path = interp;
        } else {
            r = elf_loads(path ? opened : fd, u.b, n, sizeof u.b);
            path = 0;
        }
        if (opened >= 0) syscall(SYS_close, opened);
        if (!path || !*path) break;
    }
    errno = e;
    return r;
}

/* The same for the file execvp or posix_spawnp runs: file itself with a
 * '/', else the first executable one of that name on PATH (glibc's default
 * when unset).  A non-executable namesake earlier on PATH, which those would
 * skip after trying, is not one this looks at either. */
IOLENS_COLD static int loads_in_search(const char *file)
{
    if (!file || !*file || iolens_strchr(file, '/')) return loads_in(file, -1);
    const char *dirs = iolens_getenv_in(environ, "PATH");
    size_t fl = iolens_strlen(file);
    char full[PATH_MAX];
    int e = errno, r = 1;
    for (const char *p = dirs ? dirs : "/bin:/usr/bin";;) {
        const char *end = iolens_strchr(p, ':');
        size_t dl = end ? (size_t)(end - p) : iolens_strlen(p);
        if (dl + fl + 2 <= sizeof full) {
            size_t o = 0;
            if (dl) {
                iolens_memcpy(full, p, dl);
                o = dl;
                full[o++] = '/';
            }
            iolens_memcpy(full + o, file, fl + 1);
            if (syscall(SYS_faccessat, AT_FDCWD, full, X_OK) == 0) {
                r = loads_in(full, -1);
                break;
            }
        }
        if (!end) break;
        p = end + 1;
    }
    errno = e;
    return r;
}

/* The environment to pass on at exec or spawn: envp with the recorder's
 * variables put back.  An empty environment stays empty: the caller asked
 * for nothing to be passed on, and that child is not followed.  Nor is a
 * program the interposer cannot load in (`loads_in`; search: look the file
 * up on PATH; fd: fexecve's).  Returns envp itself when nothing is missing
 * (or when it does not fit in out). */
static char *const *fix_env(char *const envp[], char **out, int cap, char *merged, size_t mcap, const char *path,
                            int fd, int search)
{
    int n = 0, o = 0, seen = 0;
    if (!env_taken || !envp || !envp[0]) return envp;
    if (!(search ? loads_in_search(path) : loads_in(path, fd))) return envp;
    while (envp[n]) n++;
    if (n + (int)NKEYS + 2 > cap) return envp;
    for (int i = 0; i < n; i++) {
        char *e = envp[i];
        if (preload_own[0] && starts(e, "LD_PRELOAD", 10)) {
            size_t l;
            seen = 1;
            if (preload_rest[0] && strcmp(e, preload_rest) == 0) {
                e = preload_full; /* the program's own as left: the launcher's order back */
            } else if (!find_own(e + 11, &l)) {
                size_t ol = strlen(preload_own), vl = strlen(e + 11);
                if (ol + 1 + vl + 1 <= mcap) { /* ours first, as the launcher puts it */
                    memcpy(merged, preload_own, ol);
                    merged[ol] = ' ';
                    memcpy(merged + ol + 1, e + 11, vl + 1);
                    e = merged;
                }
            }
        }
        out[o++] = e;
    }
    if (preload_own[0] && !seen) out[o++] = preload_own;
    for (size_t k = 0; k < NKEYS; k++) {
        size_t kl = strlen(env_keys[k]);
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = starts(envp[i], env_keys[k], kl);
        if (!found && env_saved[k]) out[o++] = (char *)env_saved[k];
    }
    out[o] = 0;
    return out;
}

#define ENVCAP 4096
#define MERGECAP 8192
/* The array is sized to the environment (up to ENVCAP entries), so a fork
 * child about to exec writes only stack pages next to the ones it uses
 * (each page it touches first is a copy-on-write fault). */
static int env_cap(char *const envp[])
{
    size_t n = 0;
    while (envp && envp[n]) n++;
    return n + NKEYS + 2 <= ENVCAP ? (int)(n + NKEYS + 2) : 0; /* 0: too many, passed on as they are */
}
#define FIXED_ENV(path, fd, search) \
    int cap_ = env_cap(envp); \
    char **fixed = alloca(sizeof(char *) * (size_t)(cap_ + 1)); \
    char *merged = alloca(MERGECAP); \
    char *const *env = fix_env(envp, fixed, cap_, merged, MERGECAP, path, fd, search);
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
