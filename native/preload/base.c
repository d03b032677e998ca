/*
 * The floor of the interposer: the state every room shares (iolens_g, the
 * thread-local block, the descriptor table, the real-symbol pointers), the
 * resolver of the real symbols, and the raw system calls the recorder's own
 * I/O is made with, so it never re-enters the hooks.
 */
#include "internal.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>

#define IOLENS_X_DEF(ret, name, params) IOLENS_START_DATA iolens_real_##name##_t iolens_real_##name;
IOLENS_HOOKS(IOLENS_X_DEF)
#undef IOLENS_X_DEF

/* Aligned: the fields every hooked call reads (active ... tsc) share one cache line. */
IOLENS_START_DATA struct iolens_state iolens_g __attribute__((aligned(64)));
IOLENS_TLS struct iolens_tls iolens_tls;
struct iolens_fdstate iolens_fds[IOLENS_FDMAX];

/* The layers registered (IOLENS_LAYER, core.h), by their constructors: before the core's own.  Kept here, on
 * the floor, so a layer the core itself uses (the clock) registers without using the core. */
IOLENS_START_DATA const struct iolens_layer *iolens_layers[IOLENS_MAX_LAYERS];
IOLENS_START_DATA int iolens_nlayers;

IOLENS_COLD void iolens_layer_add(const struct iolens_layer *l)
{
    if (iolens_nlayers < IOLENS_MAX_LAYERS) iolens_layers[iolens_nlayers++] = l;
}

const uint8_t iolens_op_cat[IOLENS_NOPS] = {
#define IOLENS_X_OP(name, cat) IOLENS_CAT_##cat,
    IOLENS_OPS(IOLENS_X_OP)
#undef IOLENS_X_OP
};

/* glibc's first symbol version on this architecture: where its compat-only symbols live */
#if defined(__x86_64__)
#define IOLENS_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define IOLENS_GLIBC_BASE "GLIBC_2.17"
#else
#error "the first glibc symbol version of this architecture (IOLENS_GLIBC_BASE) is not known"
#endif

IOLENS_COLD void *iolens_resolve(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) p = dlvsym(RTLD_NEXT, name, IOLENS_GLIBC_BASE); /* compat-only symbols (__xstat) */
    return p;
}

/* Raw-syscall stand-ins for calls made while a real symbol is being resolved. */
static int fb_openat(int d, const char *p, int fl, ...)
{
    va_list ap;
    va_start(ap, fl);
    int mode = va_arg(ap, int);
    va_end(ap);
    return (int)syscall(SYS_openat, d, p, fl, mode);
}
static int fb_open(const char *p, int fl, ...)
{
    va_list ap;
    va_start(ap, fl);
    int mode = va_arg(ap, int);
    va_end(ap);
    return (int)syscall(SYS_openat, AT_FDCWD, p, fl, mode);
}
static ssize_t fb_read(int fd, void *b, size_t n) { return syscall(SYS_read, fd, b, n); }
static ssize_t fb_write(int fd, const void *b, size_t n) { return syscall(SYS_write, fd, b, n); }
static ssize_t fb_pread(int fd, void *b, size_t n, off_t o) { return syscall(SYS_pread64, fd, b, n, o); }
static int fb_close(int fd) { return (int)syscall(SYS_close, fd); }
static off_t fb_lseek(int fd, off_t o, int w) { return syscall(SYS_lseek, fd, o, w); }
static int fb_fstat(int fd, struct stat *st) { return (int)syscall(SYS_fstat, fd, st); }
static void *fb_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off) { return (void *)syscall(SYS_mmap, a, n, prot, fl, fd, off); }
static int fb_munmap(void *a, size_t n) { return (int)syscall(SYS_munmap, a, n); }

IOLENS_COLD void *iolens_fallback(const char *name)
{
    static const struct {
        const char *name;
        void *fn;
    } table[] = {{"openat", (void *)fb_openat}, {"openat64", (void *)fb_openat}, {"open", (void *)fb_open},
                 {"open64", (void *)fb_open}, {"read", (void *)fb_read}, {"write", (void *)fb_write},
                 {"pread", (void *)fb_pread}, {"pread64", (void *)fb_pread}, {"close", (void *)fb_close},
                 {"lseek", (void *)fb_lseek}, {"lseek64", (void *)fb_lseek}, {"fstat", (void *)fb_fstat},
                 {"fstat64", (void *)fb_fstat}, {"mmap", (void *)fb_mmap}, {"mmap64", (void *)fb_mmap},
                 {"munmap", (void *)fb_munmap}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, name) == 0) return table[i].fn;
    /* anything else: resolve it anyway (dlsym nests safely for most symbols) */
    return iolens_resolve(name);
}

#if defined(__x86_64__)
/* libc's __libc_single_threaded if p, the next definition of read or write,
 * is libc's own, else 0.  Then, while libc runs one thread, the hook may make
 * the system call itself (posix.c): libc's read and write do exactly that
 * then.  Another interposer after ours keeps being called. */
IOLENS_COLD static const volatile char *direct_ok(void *p)
{
    const volatile char *single = iolens_resolve("__libc_single_threaded");
    Dl_info a, b;
    if (p && single && dladdr(p, &a) && dladdr((void *)single, &b) && a.dli_fbase == b.dli_fbase) return single;
    return 0;
}
#endif

IOLENS_COLD void *iolens_resolve_slot(void **slot, const char *name)
{
    if (iolens_resolving) return iolens_fallback(name);
    int g = iolens_guard;
    iolens_resolving = iolens_guard = 1;
    void *p = iolens_resolve(name);
#if defined(__x86_64__)
    if (slot == (void **)&iolens_real_write) __atomic_store_n(&iolens_g.write_single, direct_ok(p), __ATOMIC_RELAXED);
    if (slot == (void **)&iolens_real_read) __atomic_store_n(&iolens_g.read_single, direct_ok(p), __ATOMIC_RELAXED);
#endif
    iolens_resolving = 0;
    iolens_guard = g;
    *slot = p;
    return p;
}

#if defined(__x86_64__)
/* libc's syscall(), instruction for instruction: the sixth argument is read
 * from the caller's stack whether it was passed or not, as libc does (in
 * assembly, so the sanitizer sees no read past the caller's arguments). */
__attribute__((used)) long iolens_syscall_error(long r)
{
    errno = (int)-r;
    return -1;
}
/* The call's number and six arguments moved into the kernel's registers, and
 * the system call. */
#define SYSCALL_SHUFFLED \
    "    mov %rdi, %rax\n" \
    "    mov %rsi, %rdi\n" \
    "    mov %rdx, %rsi\n" \
    "    mov %rcx, %rdx\n" \
    "    mov %r8, %r10\n" \
    "    mov %r9, %r8\n" \
    "    mov 8(%rsp), %r9\n" \
    "    syscall\n"
__asm__(".text\n"
        ".globl iolens_syscall\n"
        ".hidden iolens_syscall\n"
        ".type iolens_syscall, @function\n"
        "iolens_syscall:\n"
        SYSCALL_SHUFFLED
        "    cmp $-4095, %rax\n"
        "    jae 1f\n"
        "    ret\n"
        "1:  mov %rax, %rdi\n"
        "    jmp iolens_syscall_error\n"
        ".size iolens_syscall, .-iolens_syscall\n");
/* The same without the error branch: the kernel's result as it is. */
__asm__(".text\n"
        ".globl iolens_sysraw\n"
        ".hidden iolens_sysraw\n"
        ".type iolens_sysraw, @function\n"
        "iolens_sysraw:\n"
        SYSCALL_SHUFFLED
        "    ret\n"
        ".size iolens_sysraw, .-iolens_sysraw\n");
#endif

long iolens_sys_write(int fd, const void *buf, unsigned long n)
{
    const char *p = buf;
    unsigned long done = 0;
    while (done < n) {
        long r = syscall(SYS_write, fd, p + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        done += (unsigned long)r;
    }
    return (long)done;
}

/* The kernel's signal set is 8 bytes on every Linux ABI we build for. */
#define KSIGSET 8
#define XFSZ_BIT (1ull << (SIGXFSZ - 1))

void iolens_xfsz_hold(struct iolens_xfsz *x)
{
    uint64_t block = XFSZ_BIT, pending = 0;
    int e = errno;
    x->old_mask = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, &x->old_mask, KSIGSET);
    syscall(SYS_rt_sigpending, &pending, KSIGSET);
    x->was_pending = (pending & XFSZ_BIT) != 0; /* the program's own, left alone */
    errno = e;
}

void iolens_xfsz_release(struct iolens_xfsz *x)
{
    uint64_t pending = 0;
    int e = errno;
    if (!x->was_pending && syscall(SYS_rt_sigpending, &pending, KSIGSET) == 0 && (pending & XFSZ_BIT)) {
        uint64_t want = XFSZ_BIT;
        struct timespec zero = {0, 0};
        syscall(SYS_rt_sigtimedwait, &want, 0, &zero, KSIGSET); /* the one our call raised */
    }
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &x->old_mask, 0, KSIGSET);
    errno = e;
}
