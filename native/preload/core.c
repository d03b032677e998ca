/*
 * The recorder core: the part file, its records, the descriptor and path
 * tables, and the accounting that every interface file calls.
 */
#include "core.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "iolens_schema.h"
#include "nolibc.h"
#include "redact.h"

/* Our own mappings go straight to the kernel, not through the mmap hooks. */
static void *sys_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, a, n, prot, fl, fd, off);
}
static int sys_munmap(void *a, size_t n) { return (int)syscall(SYS_munmap, a, n); }

#define IOLENS_X_DEF(ret, name, params) IOLENS_START_DATA iolens_real_##name##_t iolens_real_##name;
IOLENS_HOOKS(IOLENS_X_DEF)
#undef IOLENS_X_DEF

/* Aligned: the fields every hooked call reads (active ... tsc) share one cache line. */
IOLENS_START_DATA struct iolens_state iolens_g __attribute__((aligned(64)));
IOLENS_TLS struct iolens_tls iolens_tls;
struct iolens_fdstate iolens_fds[IOLENS_FDMAX];
static int fd_high; /* highest descriptor seen, bounds the scans after fork */

const uint8_t iolens_op_cat[IOLENS_NOPS] = {
#define IOLENS_X_OP(name, cat) IOLENS_CAT_##cat,
    IOLENS_OPS(IOLENS_X_OP)
#undef IOLENS_X_OP
};

#define PART_CHUNK (64u << 10)
#define RESERVE_DEFAULT (1ull << 30)
#define TRACE_BUF_EVENTS 1638 /* 64 KiB of events per thread */

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

/* ---- raw syscalls: the recorder's own I/O never re-enters the hooks ------ */

#if defined(__x86_64__)
/* libc's syscall(), instruction for instruction: the sixth argument is read
 * from the caller's stack whether it was passed or not, as libc does (in
 * assembly, so the sanitizer sees no read past the caller's arguments). */
__attribute__((used)) long iolens_syscall_error(long r)
{
    errno = (int)-r;
    return -1;
}
__asm__(".text\n"
        ".globl iolens_syscall\n"
        ".hidden iolens_syscall\n"
        ".type iolens_syscall, @function\n"
        "iolens_syscall:\n"
        "    mov %rdi, %rax\n"
        "    mov %rsi, %rdi\n"
        "    mov %rdx, %rsi\n"
        "    mov %rcx, %rdx\n"
        "    mov %r8, %r10\n"
        "    mov %r9, %r8\n"
        "    mov 8(%rsp), %r9\n"
        "    syscall\n"
        "    cmp $-4095, %rax\n"
        "    jae 1f\n"
        "    ret\n"
        "1:  mov %rax, %rdi\n"
        "    jmp iolens_syscall_error\n"
        ".size iolens_syscall, .-iolens_syscall\n");
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

static int sys_open(const char *path, int flags, int mode) { return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode); }
static long sys_read(int fd, void *buf, unsigned long n) { return syscall(SYS_read, fd, buf, n); }
static int sys_close(int fd) { return (int)syscall(SYS_close, fd); }

/* the spin-wait hint: pause on x86, yield on Arm, nothing elsewhere */
static inline void iolens_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static void lock(void)
{
    while (__atomic_exchange_n(&iolens_g.lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&iolens_g.lock, __ATOMIC_RELAXED)) iolens_cpu_relax();
}
static void unlock(void) { __atomic_store_n(&iolens_g.lock, 0, __ATOMIC_RELEASE); }

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

/* Set when RLIMIT_FSIZE, the program's own limit, kept the part from growing. */
static int fsize_short;

/* RLIMIT_FSIZE now, in bytes; the recorder sizes its files under it.  The
 * start-up and exit paths ask the kernel directly (here, getrusage, uname and
 * the signal mask): each libc function first called costs a lazy symbol
 * binding, about 800 instructions, in every process. */
IOLENS_COLD static uint64_t fsize_limit(void)
{
    struct rlimit rl;
    if (syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    return (uint64_t)rl.rlim_cur;
}

/* ---- the part file ----------------------------------------------------------- */

/* Reserve real space for [from, to) of the part file.  A sparse file on a
 * full tmpfs would turn a later store into SIGBUS in the profiled program;
 * fallocate fails cleanly instead, and the recorder stops adding records. */
static int reserve_space(int fd, uint64_t from, uint64_t to, int hold)
{
    struct iolens_xfsz x;
    if (hold) iolens_xfsz_hold(&x);
    int r = (int)syscall(SYS_fallocate, fd, 0, (long)from, (long)(to - from));
    if (r != 0 && errno == EOPNOTSUPP) r = (int)syscall(SYS_ftruncate, fd, (long)to);
    if (hold) iolens_xfsz_release(&x);
    return r == 0 ? 0 : -1;
}

/* Extend the mapping of the part file to hold need more bytes.  The part is
 * reopened by name for this rare step and closed again: between calls the
 * recorder holds no descriptor at all, so the program's descriptor numbers,
 * limits and /proc/self/fd listings are its own.  Growth stays under
 * RLIMIT_FSIZE; past it (or with no descriptor to spare) the part is full. */
static int grow(uint64_t need)
{
    struct iolens_state *g = &iolens_g;
    uint64_t want = g->mapped, page = 4096;
    while (g->used + need + sizeof(struct iolens_rec_hdr) > want) want += want < (8u << 20) ? want : (8u << 20);
    if (want > g->reserve) return -1;
    uint64_t lim = fsize_limit() & ~(page - 1);
    if (want > lim) {
        want = lim;
        fsize_short = 1;
    }
    if (want <= g->mapped || g->used + need + sizeof(struct iolens_rec_hdr) > want) return -1;
    int fd = sys_open(g->part_path, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) return -1;
    int ok = reserve_space(fd, g->mapped, want, 1) == 0 &&
             sys_mmap(g->base + g->mapped, want - g->mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                      (off_t)g->mapped) != MAP_FAILED;
    sys_close(fd);
    if (!ok) return -1;
    g->mapped = want;
    return 0;
}

/* Reserve a record; the caller fills it and calls publish().  Lock held. */
static void *rec_alloc(uint32_t size)
{
    struct iolens_state *g = &iolens_g;
    size = (size + 7u) & ~7u;
    uint64_t need = sizeof(struct iolens_rec_hdr) + size;
    if (g->used + need + sizeof(struct iolens_rec_hdr) > g->mapped && grow(need) != 0) {
        if (g->proc) __atomic_fetch_or(&g->proc->flags, IOLENS_PF_OVERFLOW, __ATOMIC_RELAXED); /* records lost */
        return 0;
    }
    struct iolens_rec_hdr *h = (struct iolens_rec_hdr *)(g->base + g->used);
    h->size = size;
    g->used += need;
    return h + 1;
}

static void publish(void *payload, uint16_t kind, uint16_t version)
{
    struct iolens_rec_hdr *h = (struct iolens_rec_hdr *)payload - 1;
    h->version = version;
    __atomic_store_n(&h->kind, kind, __ATOMIC_RELEASE);
}

static void add_string(uint32_t what, const char *s, uint32_t len)
{
    struct iolens_string *r = rec_alloc(sizeof *r + len + 1);
    if (!r) return;
    r->what = what;
    r->len = len;
    memcpy(r + 1, s, len);
    publish(r, IOLENS_KIND_STRING, IOLENS_VER_STRING);
}

/* The kernel's I/O counters of this process, in the order of its lines.
 * Parsed by hand: the start of every image reads this, and libc's number
 * parsing would cost it pages of code it otherwise never touches. */
IOLENS_COLD static void read_proc_io(uint64_t v[7])
{
    static const char keys[7][24] = {"rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes",
                                     "cancelled_write_bytes"};
    char buf[512];
    for (int k = 0; k < 7; k++) v[k] = 0;
    int fd = sys_open("/proc/self/io", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return;
    long n = sys_read(fd, buf, sizeof buf - 1);
    sys_close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    int line_no = 0;
    for (const char *line = buf; *line; line_no++) {
        const char *colon = line;
        while (*colon && *colon != ':' && *colon != '\n') colon++;
        if (*colon != ':') break;
        size_t kl = (size_t)(colon - line);
        const char *d = colon + 1;
        while (*d == ' ') d++;
        uint64_t x = 0;
        for (; *d >= '0' && *d <= '9'; d++) x = x * 10 + (uint64_t)(*d - '0');
        /* the kernel's order first, then any line where it is */
        for (int i = 0; i < 7; i++) {
            int k = (line_no + i) % 7;
            if (kl < sizeof keys[0] && keys[k][kl] == 0 && iolens_memeq(line, keys[k], kl)) {
                v[k] = x;
                break;
            }
        }
        while (*d && *d != '\n') d++;
        line = *d ? d + 1 : d;
    }
}

static uint64_t tv_ns(struct timeval tv) { return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull; }

/* Path table: absolute path -> FILE record, private to the process. */
static struct {
    struct iolens_file **slot;
    uint64_t cap, n;
} pt;

static uint64_t hash_path(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static const char *rec_path(const struct iolens_file *r) { return (const char *)(r + 1); }

static int pt_resize(uint64_t cap)
{
    struct iolens_file **slot =
        sys_mmap(0, cap * sizeof *slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slot == MAP_FAILED) return -1;
    for (uint64_t i = 0; i < pt.cap; i++) {
        struct iolens_file *r = pt.slot[i];
        if (!r) continue;
        uint64_t j = hash_path(rec_path(r)) & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = r;
    }
    if (pt.slot) sys_munmap(pt.slot, pt.cap * sizeof *pt.slot);
    pt.slot = slot;
    pt.cap = cap;
    return 0;
}

static struct iolens_file *new_file(const char *path, size_t len, uint64_t flags)
{
    struct iolens_file *r = rec_alloc(sizeof *r + len + 1);
    if (!r) return 0;
    r->index = iolens_g.proc->nfiles++;
    r->flags = flags;
    r->path_len = len;
    memcpy(r + 1, path, len + 1);
    publish(r, IOLENS_KIND_FILE, IOLENS_VER_FILE);
    return r;
}

static struct iolens_file *lookup_locked(const char *path, uint64_t flags)
{
    if (!pt.slot || (pt.n + 1) * 2 > pt.cap)
        if (pt_resize(pt.cap ? pt.cap * 2 : 4096) != 0) return 0;
    uint64_t j = hash_path(path) & (pt.cap - 1);
    for (; pt.slot[j]; j = (j + 1) & (pt.cap - 1))
        if (strcmp(rec_path(pt.slot[j]), path) == 0) return pt.slot[j];
    struct iolens_file *r = 0;
    size_t len = strlen(path);
    if (iolens_g.proc->nfiles < iolens_g.max_files) r = new_file(path, len, flags);
    if (!r) {
        /* Past the limit (or out of room): aggregate by directory. */
        iolens_g.proc->flags |= IOLENS_PF_OVERFLOW;
        if (flags & IOLENS_FF_AGGREGATE) return 0;
        char agg[PATH_MAX + 4];
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t)(slash - path) : 0;
        memcpy(agg, path, dl);
        memcpy(agg + dl, "/*", 3);
        iolens_g.max_files++; /* room for the one aggregate record */
        r = lookup_locked(agg, IOLENS_FF_AGGREGATE);
        iolens_g.max_files--;
        return r;
    }
    pt.slot[j] = r;
    pt.n++;
    return r;
}

struct iolens_file *iolens_file_for(const char *abspath, uint64_t flags)
{
    /* The guard is up while the lock is held, so a signal handler that
     * interrupts here records nothing instead of spinning on our own lock. */
    int guard = iolens_guard;
    iolens_guard = 1;
    lock();
    struct iolens_file *r = lookup_locked(abspath, flags);
    if (r) r->flags |= flags;
    unlock();
    iolens_guard = guard;
    return r;
}

void iolens_file_stat(struct iolens_file *rec, uint64_t dev, uint64_t ino, uint64_t mode)
{
    /* lstat of a symlink describes the link, not the file opened through it */
    if (!rec || (rec->flags & IOLENS_FF_AGGREGATE) || S_ISLNK(mode)) return;
    rec->dev = dev;
    rec->ino = ino;
    rec->mode = mode;
    if (S_ISDIR(mode)) rec->flags |= IOLENS_FF_DIRECTORY;
    else if (!S_ISREG(mode) && !S_ISBLK(mode)) rec->flags |= IOLENS_FF_NOT_A_FILE;
}

/* ---- paths ------------------------------------------------------------------- */

/*
 * The path of the last directory descriptor named through /proc/self/fd, for
 * the *at calls that follow with it: `rm -r`, `find` and the like unlink or
 * stat every entry of a directory through one descriptor, and a readlink of
 * /proc for each cost more than the call itself.  It is forgotten when that
 * descriptor is closed or replaced (iolens_forget_dirfds), and a vfork child, which
 * shares this memory but not the descriptor table, neither reads nor fills it.
 * Under the lock: threads share it.
 */
static struct {
    uint32_t len;
    char path[PATH_MAX];
} dirfd_cache; /* holds the path of descriptor iolens_g.dirfd_cached - 1 */

/* The lock with the guard up (see iolens_file_for). */
static int lock_guarded(void)
{
    int guard = iolens_guard;
    iolens_guard = 1;
    lock();
    return guard;
}

static void unlock_guarded(int guard)
{
    unlock();
    iolens_guard = guard;
}

static long dirfd_path(int dirfd, char *out)
{
    char link[40];
    long r = -1;
    int cacheable = !iolens_in_vfork;
    if (cacheable) {
        int g = lock_guarded();
        if (iolens_g.dirfd_cached == dirfd + 1) {
            r = dirfd_cache.len;
            memcpy(out, dirfd_cache.path, (size_t)r);
        }
        unlock_guarded(g);
        if (r > 0) return r;
    }
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    r = syscall(SYS_readlinkat, AT_FDCWD, link, out, PATH_MAX - 1);
    if (r > 0 && cacheable && out[0] == '/') {
        int g = lock_guarded();
        iolens_g.dirfd_cached = dirfd + 1;
        dirfd_cache.len = (uint32_t)r;
        memcpy(dirfd_cache.path, out, (size_t)r);
        unlock_guarded(g);
    }
    return r;
}

/*
 * The working directory, for the relative paths of AT_FDCWD calls: a shell's
 * `echo x > dir/f` or a tool's relative temporary files would otherwise cost a
 * getcwd each.  It changes only through chdir and fchdir, which forget it
 * (meta.c); a raw syscall(SYS_chdir) would leave it stale.  A generation
 * count keeps a getcwd that raced a chdir from being cached.  A vfork child
 * (its own working directory, this memory) neither reads nor fills it.
 */
static struct {
    uint32_t len;
    uint32_t gen;
    int valid;
    char path[PATH_MAX];
} cwd_cache;

void iolens_cwd_changed(void)
{
    if (iolens_in_vfork) return;
    int g = lock_guarded();
    cwd_cache.valid = 0;
    cwd_cache.gen++;
    unlock_guarded(g);
}

static long cwd_path(char *out)
{
    int cacheable = !iolens_in_vfork;
    uint32_t gen = 0;
    long r = -1;
    if (cacheable) {
        int g = lock_guarded();
        if (cwd_cache.valid) {
            r = cwd_cache.len;
            memcpy(out, cwd_cache.path, (size_t)r + 1);
        }
        gen = cwd_cache.gen;
        unlock_guarded(g);
        if (r > 0) return r;
    }
    if (syscall(SYS_getcwd, out, PATH_MAX) <= 0) return -1;
    r = (long)strlen(out);
    if (cacheable && out[0] == '/') {
        int g = lock_guarded();
        if (cwd_cache.gen == gen) {
            cwd_cache.len = (uint32_t)r;
            memcpy(cwd_cache.path, out, (size_t)r + 1);
            cwd_cache.valid = 1;
        }
        unlock_guarded(g);
    }
    return r;
}

int iolens_abspath(int dirfd, const char *path, char *out, size_t cap)
{
    char tmp[PATH_MAX * 2];
    size_t n = 0;
    if (!path) return -1;
    if (path[0] != '/') {
        long r;
        if (dirfd == AT_FDCWD) {
            r = cwd_path(tmp);
            if (r <= 0) return -1;
            n = (size_t)r;
        } else {
            r = dirfd_path(dirfd, tmp);
            if (r <= 0) return -1;
            n = (size_t)r;
        }
        tmp[n++] = '/';
    }
    size_t pl = strlen(path);
    if (n + pl + 1 > sizeof tmp) return -1;
    memcpy(tmp + n, path, pl + 1);
    /* lexical normalisation: //, /./ and /../ */
    size_t o = 0;
    const char *s = tmp;
    while (*s) {
        while (*s == '/') s++;
        const char *e = s;
        while (*e && *e != '/') e++;
        size_t l = (size_t)(e - s);
        if (l == 0) break;
        if (l == 1 && s[0] == '.') {
        } else if (l == 2 && s[0] == '.' && s[1] == '.') {
            while (o > 0 && out[o - 1] != '/') o--;
            if (o > 0) o--;
        } else {
            if (o + l + 2 > cap) return -1;
            out[o++] = '/';
            memcpy(out + o, s, l);
            o += l;
        }
        s = e;
    }
    if (o == 0) out[o++] = '/';
    out[o] = 0;
    return (int)o;
}

/* ---- timeline ---------------------------------------------------------------- */

static uint64_t tl_coarsen(uint64_t rel)
{
    struct iolens_timeline *tl = iolens_g.tl;
    iolens_clock_refine(); /* rare, and at doubling times: when the call clock's scale is refined */
    lock();
    while ((rel >> tl->shift) >= IOLENS_TIMELINE_BINS) {
        for (int i = 0; i < IOLENS_TIMELINE_BINS / 2; i++) {
            for (int c = 0; c < IOLENS_NCAT; c++)
                tl->count[i * IOLENS_NCAT + c] =
                    tl->count[2 * i * IOLENS_NCAT + c] + tl->count[(2 * i + 1) * IOLENS_NCAT + c];
            tl->bytes_read[i] = tl->bytes_read[2 * i] + tl->bytes_read[2 * i + 1];
            tl->bytes_written[i] = tl->bytes_written[2 * i] + tl->bytes_written[2 * i + 1];
        }
        for (int i = IOLENS_TIMELINE_BINS / 2; i < IOLENS_TIMELINE_BINS; i++) {
            for (int c = 0; c < IOLENS_NCAT; c++) tl->count[i * IOLENS_NCAT + c] = 0;
            tl->bytes_read[i] = tl->bytes_written[i] = 0;
        }
        tl->shift++;
    }
    unlock();
    return rel >> tl->shift;
}

/* The hot-path accounting below takes mt (threads exist) as a parameter,
 * read once per call: each add would otherwise reload it (the counters could
 * alias it, as far as the compiler knows). */
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
#define iolens_add(p, v) add_m(p, v, mt)
#define iolens_max(p, v) max_m(p, v, mt)

static inline __attribute__((always_inline)) void tl_add(int cat, uint64_t t, uint64_t rbytes, uint64_t wbytes,
                                                         int mt)
{
    struct iolens_timeline *tl = iolens_g.tl;
    uint64_t rel = t > tl->t0_mono ? t - tl->t0_mono : 0;
    uint64_t idx = rel >> tl->shift;
    if (UNLIKELY(idx >= IOLENS_TIMELINE_BINS)) idx = tl_coarsen(rel);
    iolens_add(&tl->count[idx * IOLENS_NCAT + (uint64_t)cat], 1);
    if (rbytes) iolens_add(&tl->bytes_read[idx], rbytes);
    if (wbytes) iolens_add(&tl->bytes_written[idx], wbytes);
}

#undef iolens_add
#undef iolens_max

/* ---- trace ------------------------------------------------------------------- */

struct tbuf {
    uint32_t n, tid;
    uint32_t run; /* the last event is an untimed stdio call that the next may continue (EVENT repeats) */
    struct iolens_event ev[TRACE_BUF_EVENTS];
};
static IOLENS_TLS struct tbuf *t_buf;
static uint32_t next_tid;
#define MAX_TBUFS 4096
static struct tbuf *tbufs[MAX_TBUFS];
static int ntbufs; /* high-water mark of tbufs in use */

static void tbuf_flush(struct tbuf *b)
{
    if (!b || !b->n) return;
    /* Opened for each flush of 64 KiB, and written in whole events that fit
     * under RLIMIT_FSIZE (async-signal-safe: it runs at exit and on fatal signals). */
    uint64_t fit = 0;
    int fd = iolens_g.trace_path[0] ? sys_open(iolens_g.trace_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)
                                    : -1;
    if (fd >= 0) {
        uint64_t lim = fsize_limit();
        long end = syscall(SYS_lseek, fd, 0L, SEEK_END);
        fit = b->n;
        if (lim != UINT64_MAX && end >= 0) {
            uint64_t room = lim > (uint64_t)end ? (lim - (uint64_t)end) / sizeof b->ev[0] : 0;
            if (room < fit) fit = room;
        }
        struct iolens_xfsz x;
        iolens_xfsz_hold(&x);
        if (fit && iolens_sys_write(fd, b->ev, fit * sizeof b->ev[0]) < 0) fit = 0;
        iolens_xfsz_release(&x);
        sys_close(fd);
    }
    if (fit < b->n) {
        iolens_add(&iolens_g.proc->trace_lost, b->n - fit);
        __atomic_fetch_or(&iolens_g.proc->flags, IOLENS_PF_TRACE_LOST, __ATOMIC_RELAXED);
    }
    b->n = 0;
}

void iolens_trace_flush_all(void)
{
    int n = __atomic_load_n(&ntbufs, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) tbuf_flush(tbufs[i]);
}

static void trace_event(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size)
{
    struct tbuf *b = t_buf;
    if (UNLIKELY(!b)) {
        b = sys_mmap(0, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) return;
        b->tid = __atomic_fetch_add(&next_tid, 1, __ATOMIC_RELAXED);
        for (int i = 0; i < MAX_TBUFS; i++) {
            struct tbuf *none = 0;
            if (__atomic_compare_exchange_n(&tbufs[i], &none, b, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                int hw = __atomic_load_n(&ntbufs, __ATOMIC_RELAXED);
                while (hw < i + 1 && !__atomic_compare_exchange_n(&ntbufs, &hw, i + 1, 1, __ATOMIC_ACQ_REL,
                                                                  __ATOMIC_RELAXED)) {
                }
                break;
            }
            if (i == MAX_TBUFS - 1) iolens_g.proc->flags |= IOLENS_PF_TRACE_LOST; /* tail not flushed at exit */
        }
        t_buf = b;
    }
    struct iolens_event *e = &b->ev[b->n++];
    e->start_mono = c->t0;
    uint64_t dur = c->t1 - c->t0; /* never below 0: iolens_end_keep */
    e->dur_ns = (uint32_t)(dur > 0xffffffffu ? 0xffffffffu : dur);
    e->dur_ms = dur > 0xffffffffu ? (uint32_t)(dur / 1000000u > 0xffffffffu ? 0xffffffffu : dur / 1000000u) : 0;
    e->op = (uint32_t)c->op;
    e->tid = b->tid;
    e->file = rec ? (uint32_t)rec->index : 0xffffffffu;
    e->offset = off;
    e->size = size;
    e->repeats = 0;
    e->own_ns = (uint32_t)(iolens_tls.own > 0xffffffffu ? 0xffffffffu : iolens_tls.own);
    iolens_tls.own = 0;
    b->run = 0;
    iolens_add(&iolens_g.proc->trace_events, 1);
    if (b->n == TRACE_BUF_EVENTS) { /* system calls, inside the program's call: its errno is kept */
        int e = errno;
        tbuf_flush(b);
        errno = e;
    }
}

void iolens_trace_event(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size)
{
    trace_event(c, rec, off, size);
}

/* An untimed stdio call (c->t0 == c->t1, the thread's last clock reading):
 * added to the thread's last event when it continues that one (EVENT repeats). */
void iolens_trace_untimed(struct iolens_call *c, struct iolens_file *rec, uint64_t off, uint64_t size)
{
    struct tbuf *b = t_buf;
    if (LIKELY(b && b->run && b->n && rec)) {
        struct iolens_event *e = &b->ev[b->n - 1];
        if (LIKELY(e->op == (uint32_t)c->op && e->file == (uint32_t)rec->index && e->start_mono == c->t0 &&
                   e->offset + e->size == off)) {
            e->size += size;
            e->repeats++;
            return;
        }
    }
    trace_event(c, rec, off, size);
    b = t_buf;
    /* a full buffer was flushed (n is 0): the next call starts an event */
    if (b && b->n && rec) b->run = 1;
}

/* ---- accounting -------------------------------------------------------------- */

void iolens_wall_enter(int cat, uint64_t t0)
{
    struct iolens_state *g = &iolens_g;
    if (__atomic_fetch_add(&g->inflight[cat], 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_store_n(&g->wall_start[cat], t0, __ATOMIC_RELEASE);
    if (cat == IOLENS_CAT_STREAM) return; /* io_wall_ns is storage I/O only */
    if (__atomic_fetch_add(&g->inflight[IOLENS_NCAT], 1, __ATOMIC_ACQ_REL) == 0)
        __atomic_store_n(&g->wall_start[IOLENS_NCAT], t0, __ATOMIC_RELEASE);
}

void iolens_wall_leave(int cat, uint64_t t1)
{
    struct iolens_state *g = &iolens_g;
    if (__atomic_sub_fetch(&g->inflight[cat], 1, __ATOMIC_ACQ_REL) == 0) {
        uint64_t s = __atomic_load_n(&g->wall_start[cat], __ATOMIC_ACQUIRE);
        if (t1 > s) __atomic_fetch_add(&g->proc->cat_wall_ns[cat], t1 - s, __ATOMIC_RELAXED);
    }
    if (cat == IOLENS_CAT_STREAM) return;
    if (__atomic_sub_fetch(&g->inflight[IOLENS_NCAT], 1, __ATOMIC_ACQ_REL) == 0) {
        uint64_t s = __atomic_load_n(&g->wall_start[IOLENS_NCAT], __ATOMIC_ACQUIRE);
        if (t1 > s) __atomic_fetch_add(&g->proc->io_wall_ns, t1 - s, __ATOMIC_RELAXED);
    }
}

#define hist_bin iolens_hist_bin

#define iolens_add(p, v) add_m(p, v, mt)
#define iolens_max(p, v) max_m(p, v, mt)

/* Process-level part of every call. */
static inline __attribute__((always_inline)) void acct_proc_m(struct iolens_call *c, int cat, uint64_t rb,
                                                              uint64_t wb, int mt)
{
    struct iolens_proc *p = iolens_g.proc;
    iolens_last_t = c->t0;
    uint64_t dt = c->t1 - c->t0;
    iolens_add(&p->op_count[c->op], 1);
    iolens_add(&p->cat_time_ns[cat], dt);
    if (!mt) {
        p->cat_wall_ns[cat] += dt;
        if (cat != IOLENS_CAT_STREAM) p->io_wall_ns += dt; /* storage I/O only */
    }
    tl_add(cat, c->t0, rb, wb, mt);
}
static void acct_proc(struct iolens_call *c, int cat, uint64_t rb, uint64_t wb)
{
    acct_proc_m(c, cat, rb, wb, iolens_g.mt);
}

static inline __attribute__((always_inline)) void touch_m(struct iolens_file *r, int cat, struct iolens_call *c,
                                                          int mt)
{
    iolens_add(&r->cat_time_ns[c->cat == IOLENS_CAT_STREAM ? IOLENS_CAT_STREAM : cat], c->t1 - c->t0);
    if (!r->first_mono) r->first_mono = c->t0;
    iolens_max(&r->last_mono, c->t1);
}

/* File-level part of a data call; off is the absolute offset. */
/* stdio: a library call, sized in stdio_*_hist (its kernel requests are added
 * by iolens_stdio_req); timed: its time was measured (see stdio.c). */
static inline __attribute__((always_inline)) void acct_file_data_x(struct iolens_file *r, int cat, uint64_t off,
                                                                   int64_t n, struct iolens_call *c, int stdio,
                                                                   int timed, int mt)
{
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    if (timed) touch_m(r, cat, c, mt);
    if (cat == IOLENS_CAT_READ) {
        uint64_t prior = r->reads;
        iolens_add(&r->reads, 1);
        if (stdio) iolens_add(&r->stdio_reads, 1);
        if (n < 0) return;
        iolens_add(&r->bytes_read, b);
        iolens_add(stdio ? &r->stdio_read_hist[hist_bin(b)] : &r->read_hist[hist_bin(b)], 1);
        if (off != IOLENS_POS) {
            if (prior) {
                if (off == r->last_read_end) iolens_add(&r->consec_reads, 1);
                if (off >= r->last_read_end) iolens_add(&r->seq_reads, 1);
            }
            r->last_read_end = off + b;
            iolens_max(&r->max_read_end, off + b);
        }
        if (r->last_op == IOLENS_CAT_WRITE + 1) iolens_add(&r->rw_switches, 1);
        r->last_op = IOLENS_CAT_READ + 1;
    } else {
        uint64_t prior = r->writes;
        iolens_add(&r->writes, 1);
        if (stdio) iolens_add(&r->stdio_writes, 1);
        if (n < 0) return;
        iolens_add(&r->bytes_written, b);
        iolens_add(stdio ? &r->stdio_write_hist[hist_bin(b)] : &r->write_hist[hist_bin(b)], 1);
        if (off != IOLENS_POS) {
            if (prior) {
                if (off == r->last_write_end) iolens_add(&r->consec_writes, 1);
                if (off >= r->last_write_end) iolens_add(&r->seq_writes, 1);
            }
            r->last_write_end = off + b;
            iolens_max(&r->max_write_end, off + b);
        }
        if (r->last_op == IOLENS_CAT_READ + 1) iolens_add(&r->rw_switches, 1);
        r->last_op = IOLENS_CAT_WRITE + 1;
    }
}

#undef iolens_add
#undef iolens_max

static void touch(struct iolens_file *r, int cat, struct iolens_call *c) { touch_m(r, cat, c, iolens_g.mt); }

static void acct_file_data(struct iolens_file *r, int cat, uint64_t off, int64_t n, struct iolens_call *c)
{
    acct_file_data_x(r, cat, off, n, c, 0, 1, iolens_g.mt);
}

/* A stdio data call.  Untimed calls (t1 == 0: served from the stream's
 * buffer, so no clock was read) are counted exactly, with no time, and put in
 * the timeline at the thread's last clock reading. */
void iolens_stdio_call(struct iolens_call *c, struct iolens_fdstate *f, int64_t n)
{
    if (iolens_tls.srun_open) iolens_srun_end(); /* its counts first: this call may touch its file */
    int cat = iolens_op_cat[c->op];
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    struct iolens_proc *p = iolens_g.proc;
    uint64_t rb = cat == IOLENS_CAT_READ ? b : 0, wb = cat == IOLENS_CAT_WRITE ? b : 0;
    int timed = c->t1 != 0;
    if (LIKELY(!timed)) {
        uint64_t t = iolens_last_t;
        if (UNLIKELY(!t)) t = iolens_last_t = iolens_now();
        c->t0 = c->t1 = t;
        iolens_add(&p->op_count[c->op], 1);
        tl_add(c->cat, t, rb, wb, iolens_g.mt);
    } else {
        acct_proc(c, c->cat, rb, wb);
    }
    iolens_add(cat == IOLENS_CAT_READ ? &p->bytes_read : &p->bytes_written, b);
    struct iolens_file *r = f ? f->rec : 0;
    uint64_t at = IOLENS_POS;
    if (f) {
        at = f->pos;
        f->pos = at + b;
    }
    if (r) {
        if (timed) acct_file_data_x(r, cat, at, n, c, 1, 1, iolens_g.mt);
        else acct_file_data_x(r, cat, at, n, c, 1, 0, iolens_g.mt);
    } else {
        iolens_add(&p->untracked_ops, 1);
    }
    if (UNLIKELY(iolens_g.trace)) {
        if (timed) trace_event(c, r, at, b);
        else iolens_trace_untimed(c, r, at, b);
    }
}

/* ---- runs of untimed stdio calls with threads (struct iolens_srun, core.h) ---- */

/* One run a thread, in memory that outlives the thread (a run is ended by the
 * image's end after its thread has gone).  A thread beyond the pool has none
 * and takes the general path. */
#define SRUN_POOL 4096
static struct iolens_srun srun_pool[SRUN_POOL];
static int nsruns; /* slots handed out */

#define ATOMIC_ADD(ptr, v) add_m(ptr, v, 1)
#define ATOMIC_MAX(ptr, v) max_m(ptr, v, 1)
static void srun_flush(struct iolens_srun *s)
{
    struct iolens_file *r = s->r;
    if (!r) return;
    s->r = 0;
    uint64_t n = s->calls, b = s->bytes;
    struct iolens_proc *p = iolens_g.proc;
    struct iolens_timeline *tl = iolens_g.tl;
    add_m(&p->op_count[s->op], n, 1);
    uint64_t rel = s->t > tl->t0_mono ? s->t - tl->t0_mono : 0, idx = rel >> tl->shift;
    if (idx >= IOLENS_TIMELINE_BINS) idx = tl_coarsen(rel);
    add_m(&tl->count[idx * IOLENS_NCAT + s->cat], n, 1);
    if (s->dir == IOLENS_CAT_WRITE)
        IOLENS_STDIO_RUN(ATOMIC_ADD, ATOMIC_MAX, r, p, tl, idx, n, b, s->bin, s->end, written, writes, write);
    else
        IOLENS_STDIO_RUN(ATOMIC_ADD, ATOMIC_MAX, r, p, tl, idx, n, b, s->bin, s->end, read, reads, read);
}
#undef ATOMIC_ADD
#undef ATOMIC_MAX

void iolens_srun_end(void)
{
    int guard = iolens_guard;
    iolens_guard = 1; /* tl_coarsen may take the lock */
    iolens_tls.srun_open = 0;
    if (iolens_tls.srun) srun_flush(iolens_tls.srun);
    iolens_guard = guard;
}

void iolens_srun_end_all(void)
{
    int n = __atomic_load_n(&nsruns, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n && i < SRUN_POOL; i++) srun_flush(&srun_pool[i]);
    iolens_tls.srun_open = 0;
}

void iolens_srun_drop_all(void)
{
    int n = nsruns < SRUN_POOL ? nsruns : SRUN_POOL;
    for (int i = 0; i < n; i++) srun_pool[i].r = 0;
    iolens_tls.srun_open = 0;
}

int iolens_srun_start(struct iolens_call *c, int dir, struct iolens_fdstate *f, uint64_t b, int bin)
{
    struct iolens_srun *s = iolens_tls.srun;
    if (s && s->r) iolens_srun_end();
    struct iolens_file *r = f->rec;
    uint64_t at = f->pos;
    /* what the one-thread path asks of the file: the run's calls are consecutive from its last call */
    if (dir == IOLENS_CAT_WRITE ? r->last_op != IOLENS_CAT_WRITE + 1 || at != r->last_write_end || !r->writes
                                : r->last_op != IOLENS_CAT_READ + 1 || at != r->last_read_end || !r->reads)
        return 0;
    if (!s) {
        int i = __atomic_fetch_add(&nsruns, 1, __ATOMIC_ACQ_REL);
        if (i >= SRUN_POOL) return 0;
        s = iolens_tls.srun = &srun_pool[i];
    }
    s->op = (uint32_t)c->op;
    s->cat = (uint32_t)c->cat;
    s->dir = (uint32_t)dir;
    s->bin = (uint32_t)bin;
    s->t = iolens_last_t;
    s->end = at + b;
    s->calls = 1;
    s->bytes = b;
    s->r = r;
    iolens_tls.srun_open = 1;
    f->pos = at + b;
    return 1;
}

/* A request a stream made the kernel do: a buffer fill or flush, or a read
 * or write past the buffer.  Sized beside the direct system calls. */
void iolens_stdio_req(struct iolens_fdstate *f, int cat, uint64_t size, uint64_t bufsize)
{
    struct iolens_file *r = f ? f->rec : 0;
    if (!r) return;
    if (cat == IOLENS_CAT_READ) {
        iolens_add(&r->stdio_fills, 1);
        iolens_add(&r->stdio_fill_bytes, size);
        iolens_add(&r->read_hist[hist_bin(size)], 1);
    } else {
        iolens_add(&r->stdio_flushes, 1);
        iolens_add(&r->stdio_flush_bytes, size);
        iolens_add(&r->write_hist[hist_bin(size)], 1);
    }
    iolens_max(&r->stdio_buf_size, bufsize);
}

static inline __attribute__((always_inline)) void data_m(struct iolens_call *c, struct iolens_fdstate *f,
                                                          uint64_t off, int64_t n, int mt)
{
    int cat = iolens_op_cat[c->op]; /* READ or WRITE: the direction */
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    struct iolens_proc *p = iolens_g.proc;
    acct_proc_m(c, c->cat, cat == IOLENS_CAT_READ ? b : 0, cat == IOLENS_CAT_WRITE ? b : 0, mt);
    add_m(cat == IOLENS_CAT_READ ? &p->bytes_read : &p->bytes_written, b, mt);
    struct iolens_file *r = f ? f->rec : 0;
    uint64_t at = off;
    if (f && off == IOLENS_POS) {
        at = f->pos; /* for O_APPEND descriptors pos starts at the file's size */
        f->pos = at + b;
    }
    if (r) acct_file_data_x(r, cat, at, n, c, 0, 1, mt);
    else add_m(&p->untracked_ops, 1, mt);
    if (UNLIKELY(iolens_g.trace)) trace_event(c, r, at, b);
}

void iolens_data(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    if (LIKELY(!iolens_g.mt)) data_m(c, f, off, n, 0);
    else data_m(c, f, off, n, 1);
}

void iolens_data_keep(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    int e = errno;
    iolens_data(c, f, off, n);
    errno = e;
}

/* The source side of sendfile and copy_file_range: a read of n bytes, counted
 * (and traced) as an op of its own, COPY_SOURCE, at the call's start and with
 * no time of its own: the call's time is on its destination's op.  So the
 * trace says which file a copy read, and a replay reads it. */
void iolens_xfer_in(struct iolens_call *c, struct iolens_fdstate *f, uint64_t off, int64_t n)
{
    uint64_t b = n > 0 ? (uint64_t)n : 0;
    int mt = iolens_g.mt;
    iolens_add(&iolens_g.proc->bytes_read, b);
    add_m(&iolens_g.proc->op_count[IOLENS_OP_COPY_SOURCE], 1, mt);
    tl_add(IOLENS_CAT_READ, c->t0, b, 0, mt);
    uint64_t at = off;
    if (f && off == IOLENS_POS) {
        at = f->pos;
        f->pos += b;
    }
    if (f && f->rec) acct_file_data(f->rec, IOLENS_CAT_READ, at, n, c);
    if (UNLIKELY(iolens_g.trace)) {
        struct iolens_call src = *c;
        src.op = IOLENS_OP_COPY_SOURCE;
        src.t1 = src.t0;
        trace_event(&src, f ? f->rec : 0, at, b);
    }
}

static void acct_file_meta(struct iolens_file *r, struct iolens_call *c, int opened)
{
    int cat = iolens_op_cat[c->op];
    touch(r, cat, c);
    switch (c->op) {
    case IOLENS_OP_STAT:
    case IOLENS_OP_FSTAT: iolens_add(&r->stats, 1); break;
    case IOLENS_OP_LSEEK:
    case IOLENS_OP_FSEEK:
    case IOLENS_OP_FTELL: iolens_add(&r->seeks, 1); break;
    case IOLENS_OP_MMAP: iolens_add(&r->mmaps, 1); break;
    case IOLENS_OP_OPEN:
    case IOLENS_OP_FOPEN:
    case IOLENS_OP_MKSTEMP:
    case IOLENS_OP_OPENDIR: iolens_add(opened ? &r->opens : &r->metas, 1); break; /* fdopen: no new open */
    default:
        if (cat == IOLENS_CAT_SYNC) iolens_add(&r->syncs, 1);
        else if (cat == IOLENS_CAT_META) iolens_add(&r->metas, 1);
        /* fflush: write time without a byte count */
    }
}

void iolens_fdop(struct iolens_call *c, struct iolens_fdstate *f)
{
    acct_proc(c, c->cat, 0, 0);
    struct iolens_file *r = f ? f->rec : 0;
    if (r) acct_file_meta(r, c, 0);
    if (UNLIKELY(iolens_g.trace)) trace_event(c, r, 0, 0);
}

void iolens_dup_over(struct iolens_call *c, struct iolens_fdstate *over, struct iolens_fdstate *src)
{
    struct iolens_call copy = *c;
    c->op = IOLENS_OP_CLOSE;
    c->cat = iolens_op_cat[IOLENS_OP_CLOSE];
    iolens_fdop(c, over);
    copy.t0 = copy.t1; /* the copy itself, after the close it made */
    iolens_fdop(&copy, src);
}

struct iolens_file *iolens_pathop(struct iolens_call *c, int dirfd, const char *path, uint64_t set_flags)
{
    acct_proc(c, c->cat, 0, 0);
    struct iolens_file *r = 0;
    char abs[PATH_MAX];
    if (path && iolens_abspath(dirfd, path, abs, sizeof abs) > 0) r = iolens_file_for(abs, set_flags);
    if (r) {
        acct_file_meta(r, c, 1);
        if (set_flags & IOLENS_FF_DELETED) r->deleted_mono = c->t0;
        if (set_flags & IOLENS_FF_CREATED) {
            r->created_mono = c->t0;
            r->flags &= ~(uint64_t)IOLENS_FF_DELETED;
        }
    }
    if (UNLIKELY(iolens_g.trace)) trace_event(c, r, 0, 0);
    return r;
}

struct iolens_file *iolens_pathmark(int dirfd, const char *path, uint64_t flags)
{
    char abs[PATH_MAX];
    if (!path || iolens_abspath(dirfd, path, abs, sizeof abs) <= 0) return 0;
    return iolens_file_for(abs, flags);
}

/* ---- descriptors ------------------------------------------------------------- */

static void fd_set_rec(int fd, struct iolens_file *r, uint64_t pos, int append)
{
    if ((unsigned)fd >= IOLENS_FDMAX) return;
    struct iolens_fdstate *f = &iolens_fds[fd];
    f->rec = r;
    f->pos = pos;
    f->append = (uint32_t)append;
    f->state = FD_TRACKED;
    if (fd > fd_high) fd_high = fd;
}

struct iolens_fdstate *iolens_fd_slow(int fd)
{
    char link[40], target[PATH_MAX];
    if (!iolens_g.active || iolens_g.pending) return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof target - 1);
    if (n <= 0) return 0;
    target[n] = 0;
    struct stat st;
    uint64_t flags = IOLENS_FF_INHERITED;
    int ok = syscall(SYS_fstat, fd, &st) == 0;
    if (target[0] != '/' || (ok && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISBLK(st.st_mode)))
        flags |= IOLENS_FF_NOT_A_FILE;
    struct iolens_file *r = iolens_file_for(target, flags);
    if (r && ok && !r->dev) iolens_file_stat(r, st.st_dev, st.st_ino, st.st_mode);
    long pos = syscall(SYS_lseek, fd, 0L, SEEK_CUR);
    int fl = (int)syscall(SYS_fcntl, fd, F_GETFL);
    fd_set_rec(fd, r, pos > 0 ? (uint64_t)pos : 0, fl >= 0 && (fl & O_APPEND));
    return &iolens_fds[fd];
}

void iolens_opened(struct iolens_call *c, int dirfd, const char *path, int fd, int oflags, int existed)
{
    if (fd < 0 || !path) {
        acct_proc(c, c->cat, 0, 0);
        return;
    }
    uint64_t fl = 0;
    if ((oflags & O_CREAT) && !existed) fl |= IOLENS_FF_CREATED;
    if (oflags & O_TRUNC) fl |= IOLENS_FF_TRUNCATED;
    if (oflags & O_APPEND) fl |= IOLENS_FF_APPEND;
    struct iolens_file *r = iolens_pathop(c, dirfd, path, fl);
    uint64_t pos = 0;
    if ((r && !r->dev) || (oflags & O_APPEND)) {
        struct stat st;
        if (syscall(SYS_fstat, fd, &st) == 0) {
            if (r && !r->dev) iolens_file_stat(r, st.st_dev, st.st_ino, st.st_mode);
            if (oflags & O_APPEND) pos = (uint64_t)st.st_size;
        }
    }
    fd_set_rec(fd, r, pos, (oflags & O_APPEND) != 0);
}

/* Descriptors lo..hi are closed or replaced: the directory path cache forgets them. */
void iolens_forget_dirfds(unsigned lo, unsigned hi)
{
    unsigned c = (unsigned)__atomic_load_n(&iolens_g.dirfd_cached, __ATOMIC_RELAXED);
    if (c == 0 || iolens_in_vfork || c - 1 < lo || c - 1 > hi) return;
    int g = lock_guarded();
    c = (unsigned)iolens_g.dirfd_cached;
    if (c && c - 1 >= lo && c - 1 <= hi) iolens_g.dirfd_cached = 0;
    unlock_guarded(g);
}

void iolens_closed(int fd)
{
    iolens_forget_dirfds((unsigned)fd, (unsigned)fd);
    if ((unsigned)fd >= IOLENS_FDMAX || iolens_in_vfork) return;
    iolens_fds[fd].state = FD_UNKNOWN;
    iolens_fds[fd].rec = 0;
}

void iolens_dup(int oldfd, int newfd)
{
    iolens_forget_dirfds((unsigned)newfd, (unsigned)newfd);
    if ((unsigned)newfd >= IOLENS_FDMAX || iolens_in_vfork) return;
    /* copy the slot as it is: an unknown descriptor stays unknown (named on first use) */
    if ((unsigned)oldfd < IOLENS_FDMAX && iolens_fds[oldfd].state == FD_TRACKED) {
        struct iolens_fdstate *f = &iolens_fds[oldfd];
        fd_set_rec(newfd, f->rec, f->pos, (int)f->append);
    } else {
        iolens_closed(newfd);
    }
}

/* ---- process lifetime -------------------------------------------------------- */

/*
 * An image makes its part lazily: on its first call that records (iolens_on)
 * or that must write (wait, thread creation), or at its end.  At start it
 * only notes what the part must say of that moment (below), with no file, no
 * mapping and no space reserved.  A process that does no file I/O (a `true`,
 * an `env` that execs, a `test` in a shell loop) so costs one file written
 * with one write at its end (write_built), and a fork child that execs
 * without recording anything costs nothing (iolens_after_fork_child).
 */

/*
 * The records of an image's part that it knows before it makes one: PROC
 * (its start fields from the constructor on), the STRING records noted at
 * start (cwd, argv, environment: the program may change them later), and
 * when the image ends with no part, the rest of them, so that the part is
 * written with one write (write_built).  A part made earlier copies them.
 */
#define BUILT_CAP (2 * 65536 + 3 * PATH_MAX + 16384)
/* page-aligned: what an image notes at its start (PROC, then its strings) is on one page */
static uint64_t built_mem[BUILT_CAP / 8] __attribute__((aligned(4096)));
static char *const built = (char *)built_mem;
static const uint64_t built_strings = sizeof(struct iolens_rec_hdr) + sizeof(struct iolens_proc);
IOLENS_START_DATA static uint64_t built_strings_end; /* the noted STRING records: [built_strings, built_strings_end) */

/* The PROC record: its start fields from the constructor on, its end fields once written. */
static struct iolens_proc *built_proc(void)
{
    return (struct iolens_proc *)(built + sizeof(struct iolens_rec_hdr));
}

/* What a part says of the moment its image (or fork child) started. */
IOLENS_COLD static void take_start(struct iolens_proc *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    p->pid = (uint64_t)iolens_g.pid;
    p->start_real = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    p->start_mono = iolens_mono();
    p->ppid = (uint64_t)syscall(SYS_getppid);
    struct rusage ru;
    if (syscall(SYS_getrusage, RUSAGE_SELF, &ru) == 0) {
        p->utime_start_ns = tv_ns(ru.ru_utime);
        p->stime_start_ns = tv_ns(ru.ru_stime);
    }
    uint64_t io[7];
    read_proc_io(io);
    p->k_rchar_start = io[0];
    p->k_wchar_start = io[1];
    p->k_syscr_start = io[2];
    p->k_syscw_start = io[3];
    p->k_read_bytes_start = io[4];
    p->k_write_bytes_start = io[5];
}

static char *built_text(uint64_t at)
{
    return built + at + sizeof(struct iolens_rec_hdr) + sizeof(struct iolens_string);
}

/* Close the STRING record at `at` whose len bytes of text are in place; returns the offset after it. */
IOLENS_COLD static uint64_t built_string(uint64_t at, uint32_t what, uint32_t len)
{
    struct iolens_rec_hdr *h = (struct iolens_rec_hdr *)(built + at);
    struct iolens_string *s = (struct iolens_string *)(h + 1);
    uint32_t size = (uint32_t)((sizeof *s + len + 1 + 7) & ~(size_t)7);
    s->what = what;
    s->len = len;
    iolens_memset0(built_text(at) + len, size - sizeof *s - len);
    h->size = size;
    h->version = IOLENS_VER_STRING;
    h->kind = IOLENS_KIND_STRING;
    return at + sizeof *h + size;
}

/* At start: the working directory, the redacted argv and the environment worth keeping. */
IOLENS_COLD static void note_strings(int argc, char **argv, char **envp)
{
    uint64_t at = built_strings;
    if (syscall(SYS_getcwd, built_text(at), PATH_MAX) > 0)
        at = built_string(at, IOLENS_STR_CWD, (uint32_t)iolens_strlen(built_text(at)));
    size_t len = iolens_redact_argv(argc, argv, built_text(at), 65536);
    at = built_string(at, IOLENS_STR_ARGV, (uint32_t)len);
    len = iolens_capture_env(envp, built_text(at), 65536);
    if (len) at = built_string(at, IOLENS_STR_ENV, (uint32_t)len);
    built_strings_end = at;
}

/* The executable and the host are the image's for its whole life: read when its part is made. */
IOLENS_COLD static uint64_t built_late_strings(uint64_t at)
{
    long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", built_text(at), PATH_MAX - 1);
    if (n > 0) at = built_string(at, IOLENS_STR_EXE, (uint32_t)n);
    struct utsname u;
    if (syscall(SYS_uname, &u) == 0) {
        size_t l = iolens_strlen(u.nodename);
        iolens_memcpy(built_text(at), u.nodename, l);
        at = built_string(at, IOLENS_STR_HOST, (uint32_t)l);
    }
    return at;
}

/* The image's strings, into a part made before its end. */
IOLENS_COLD static void add_start_strings(void)
{
    uint64_t end = built_late_strings(built_strings_end);
    for (uint64_t off = built_strings; off < end;) {
        struct iolens_rec_hdr *h = (struct iolens_rec_hdr *)(built + off);
        struct iolens_string *s = (struct iolens_string *)(h + 1);
        add_string(s->what, (const char *)(s + 1), s->len);
        off += sizeof *h + h->size;
    }
}

IOLENS_COLD static char *put_str(char *o, const char *end, const char *s)
{
    while (*s && o < end) *o++ = *s++;
    return *s ? 0 : o;
}

IOLENS_COLD static char *put_u64(char *o, const char *end, uint64_t v)
{
    char d[20];
    int n = 0;
    do d[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n && o < end) *o++ = d[--n];
    return n ? 0 : o;
}

/* DIR/PID-START.part, the start on CLOCK_MONOTONIC (the merge orders parts by it).
 * Formatted by hand: it may run on a fatal signal. Returns its length or -1. */
IOLENS_COLD static int part_name(uint64_t t_mono)
{
    struct iolens_state *g = &iolens_g;
    char *o = g->part_path, *end = g->part_path + sizeof g->part_path - 1;
    if ((o = put_str(o, end, g->dir)) && (o = put_str(o, end, "/")) && (o = put_u64(o, end, (uint64_t)g->pid)) &&
        (o = put_str(o, end, "-")) && (o = put_u64(o, end, t_mono)) && (o = put_str(o, end, ".part"))) {
        *o = 0;
        return (int)(o - g->part_path);
    }
    g->part_path[0] = 0;
    return -1;
}

/* A part that could not be set up is removed, so no half-written part is merged. */
static int part_failed(void)
{
    syscall(SYS_unlinkat, AT_FDCWD, iolens_g.part_path, 0);
    iolens_g.proc = 0;
    return -1;
}

/* Create this image's part file and map it, its PROC starting as init.  Returns 0 on success. */
static int start_part(const struct iolens_proc *init)
{
    struct iolens_state *g = &iolens_g;
    int pl = part_name(init->start_mono);
    if (pl < 0) return -1;
    g->trace_path[0] = 0;
    if (!g->base) {
        g->reserve = RESERVE_DEFAULT;
        g->base = sys_mmap(0, g->reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (g->base == MAP_FAILED) {
            g->base = 0;
            return -1;
        }
    }
    g->used = g->mapped = 0;
    g->proc = 0;
    /* the first chunk, as much of it as RLIMIT_FSIZE allows; records that do not fit grow it (or are lost) */
    uint64_t lim = fsize_limit(), first = lim & ~(uint64_t)4095;
    if (first >= PART_CHUNK) first = PART_CHUNK;
    else fsize_short = 1;
    if (first == 0) return -1;
    int fd = sys_open(g->part_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    /* A part starts on one thread (the first call of an image, or a fork
     * child before it makes threads), so with no RLIMIT_FSIZE the limit
     * cannot appear under this call: SIGXFSZ needs holding only when a limit is set. */
    int ok = reserve_space(fd, 0, first, lim != UINT64_MAX) == 0 &&
             sys_mmap(g->base, first, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
    sys_close(fd);
    if (!ok) return part_failed();
    g->mapped = first;

    struct iolens_file_hdr *h = (struct iolens_file_hdr *)g->base;
    memcpy(h->magic, IOLENS_MAGIC, IOLENS_MAGIC_LEN);
    h->major = IOLENS_CONTAINER_MAJOR;
    h->minor = IOLENS_CONTAINER_MINOR;
    h->hdr_size = sizeof *h;
    g->used = sizeof *h;

    size_t ss = iolens_schema_size();
    void *schema = rec_alloc((uint32_t)ss);
    if (!schema) return part_failed();
    iolens_schema_write(schema);
    publish(schema, IOLENS_KIND_SCHEMA, IOLENS_VER_SCHEMA);

    struct iolens_proc *p = rec_alloc(sizeof *p);
    struct iolens_timeline *tl = rec_alloc(sizeof *tl);
    if (!p || !tl) return part_failed();
    g->proc = p;
    g->tl = tl;
    *p = *init;
    tl->t0_mono = init->start_mono;
    tl->shift = IOLENS_TIMELINE_SHIFT0;
    tl->nbins = IOLENS_TIMELINE_BINS;
    publish(p, IOLENS_KIND_PROC, IOLENS_VER_PROC);
    publish(tl, IOLENS_KIND_TIMELINE, IOLENS_VER_TIMELINE);

    if (g->trace) {
        /* the trace file is made by its first flush: an image with no events has none */
        int tn = snprintf(g->trace_path, sizeof g->trace_path, "%.*s.trace", pl - 5, g->part_path);
        if (tn <= 0 || (size_t)tn >= sizeof g->trace_path) g->trace_path[0] = 0; /* flushes count events lost */
    }
    return 0;
}

IOLENS_START_DATA static int launcher_pid; /* the top process's parent; 0: not known */

IOLENS_COLD static void warn_once(const char *what)
{
    /* A part that does not fit under the program's own RLIMIT_FSIZE is not a
     * set-up error to report on the program's stderr: the image is missing
     * from the capture, and its parent's record of it says so. */
    if (fsize_short) return;
    /* Only the top process warns, so a pipeline of thousands says it once. */
    const char *parent = iolens_env("IOLENS_PARENT_PID");
    int want = launcher_pid ? launcher_pid : parent ? atoi(parent) : 0;
    if (want && want != (int)syscall(SYS_getppid)) return;
    char msg[900];
    int n = snprintf(msg, sizeof msg, "iolens: warning: %s in %s (%s); the program runs unprofiled\n", what,
                     iolens_g.dir, strerror(errno));
    if (n > 0) iolens_sys_write(2, msg, (unsigned long)n);
}

IOLENS_COLD static uint64_t digits(const char **s)
{
    uint64_t v = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++) v = v * 10 + (uint64_t)(**s - '0');
    return v;
}

IOLENS_COLD __attribute__((constructor(101))) static void iolens_init(int argc, char **argv, char **envp)
{
    struct iolens_state *g = &iolens_g;
    /* the launcher's one variable, IOLENS=<its pid>[t][m<max files>]<directory>
     * (capture/record.py, `recorder_value`); else a pipeline's IOLENS_DIR and friends */
    const char *packed = iolens_getenv_in(environ, "IOLENS"), *dir = packed;
    int trace = 0, pid = 0;
    uint64_t max_files = 0;
    if (packed) {
        pid = (int)digits(&dir);
        while (*dir && *dir != '/') {
            if (*dir == 't') trace = 1;
            if (*dir++ == 'm') max_files = digits(&dir);
        }
    } else {
        dir = iolens_getenv_in(environ, "IOLENS_DIR");
    }
    if (!dir || !*dir || iolens_strlen(dir) >= sizeof g->dir) return;
    iolens_guard = 1;
    iolens_memcpy(g->dir, dir, iolens_strlen(dir) + 1);
    iolens_env_take(); /* the program sees the environment it would see unprofiled */
    iolens_clock_init();
    if (!packed) {
        const char *t = iolens_env("IOLENS_TRACE"), *mf = iolens_env("IOLENS_MAX_FILES");
        trace = t && *t == '1';
        max_files = mf ? digits(&mf) : 0;
    }
    launcher_pid = pid;
    g->trace = trace;
    g->max_files = max_files ? max_files : 1000000;
    g->pid = (int)syscall(SYS_getpid);
    take_start(built_proc());
    note_strings(argc, argv, envp);
    iolens_signals_install();
    g->pending = IOLENS_PENDING_START; /* the part is made when first needed */
    g->active = 1;
    iolens_guard = 0;
}

IOLENS_COLD static void fill_end(struct iolens_proc *p)
{
    p->end_mono = iolens_mono(); /* on the same clock as start_mono */
    struct rusage ru;
    if (syscall(SYS_getrusage, RUSAGE_SELF, &ru) == 0) {
        p->utime_ns = tv_ns(ru.ru_utime);
        p->stime_ns = tv_ns(ru.ru_stime);
        p->maxrss_kb = (uint64_t)ru.ru_maxrss;
        p->majflt = (uint64_t)ru.ru_majflt;
        p->minflt = (uint64_t)ru.ru_minflt;
        p->nvcsw = (uint64_t)ru.ru_nvcsw;
        p->nivcsw = (uint64_t)ru.ru_nivcsw;
    }
    uint64_t io[7];
    read_proc_io(io);
    p->k_rchar = io[0];
    p->k_wchar = io[1];
    p->k_syscr = io[2];
    p->k_syscw = io[3];
    p->k_read_bytes = io[4];
    p->k_write_bytes = io[5];
    p->k_cancelled_write_bytes = io[6];
}

/* The SCHEMA payload as a constant: the bytes iolens_schema_write makes (a
 * test compares them), with no code run and no page written at the end of
 * an image that writes its part whole. */
#define SCHEMA_FS(type, name) {#name, IOLENS_T_##type, 1, (uint32_t)offsetof(SCHEMA_CUR, name), 0},
#define SCHEMA_FA(type, name, n) {#name, IOLENS_T_##type, n, (uint32_t)offsetof(SCHEMA_CUR, name), 0},
#define SCHEMA_N(name) (uint32_t)(sizeof iolens_fields_##name / sizeof iolens_fields_##name[0])
#define SCHEMA_MEMBER(name, layout) \
    struct iolens_schema_kind k_##name; \
    struct iolens_schema_field f_##name[SCHEMA_N(name)];
#define SCHEMA_INIT(name, layout) \
    {IOLENS_KIND_##name, IOLENS_VER_##name, sizeof(SCHEMA_CUR), SCHEMA_N(name)}, {layout(SCHEMA_FS, SCHEMA_FA)},
static const struct {
    IOLENS_LAYOUTS(SCHEMA_MEMBER)
} schema_blob = {
#define SCHEMA_CUR struct iolens_proc
    SCHEMA_INIT(PROC, IOLENS_LAYOUT_PROC)
#undef SCHEMA_CUR
#define SCHEMA_CUR struct iolens_string
    SCHEMA_INIT(STRING, IOLENS_LAYOUT_STRING)
#undef SCHEMA_CUR
#define SCHEMA_CUR struct iolens_file
    SCHEMA_INIT(FILE, IOLENS_LAYOUT_FILE)
#undef SCHEMA_CUR
#define SCHEMA_CUR struct iolens_timeline
    SCHEMA_INIT(TIMELINE, IOLENS_LAYOUT_TIMELINE)
#undef SCHEMA_CUR
#define SCHEMA_CUR struct iolens_child
    SCHEMA_INIT(CHILD, IOLENS_LAYOUT_CHILD)
#undef SCHEMA_CUR
#define SCHEMA_CUR struct iolens_event
    SCHEMA_INIT(EVENT, IOLENS_LAYOUT_EVENT)
#undef SCHEMA_CUR
};
#define SCHEMA_KIND_NAME(name, layout) IOLENS_KIND_##name,
static const uint32_t schema_kinds[] = {IOLENS_LAYOUTS(SCHEMA_KIND_NAME)};
_Static_assert(sizeof schema_kinds / sizeof schema_kinds[0] == 6, "a new layout is added to schema_blob too");

/* The end of an image that never made its part: the part is written with one
 * write (file header and SCHEMA, then the records in built), then extended
 * over the timeline's empty bins, which stay a hole.  Raw system calls and
 * no formatting by libc: it runs on fatal signals too. */
IOLENS_COLD static int write_built(uint64_t flags, uint64_t status)
{
    struct iolens_state *g = &iolens_g;
    struct iolens_proc *p = built_proc();
    if (part_name(p->start_mono) < 0) return -1;
    struct iolens_rec_hdr *r = (struct iolens_rec_hdr *)built;
    r->size = sizeof *p;
    r->version = IOLENS_VER_PROC;
    r->kind = IOLENS_KIND_PROC;
    p->flags = IOLENS_PF_FINALIZED | flags;
    fill_end(p);
    p->exit_status = status;
    uint64_t at = built_late_strings(built_strings_end);
    r = (struct iolens_rec_hdr *)(built + at);
    r->size = sizeof(struct iolens_timeline);
    r->version = IOLENS_VER_TIMELINE;
    r->kind = IOLENS_KIND_TIMELINE;
    struct iolens_timeline *tl = (struct iolens_timeline *)(r + 1);
    tl->t0_mono = p->start_mono;
    tl->shift = IOLENS_TIMELINE_SHIFT0;
    tl->nbins = IOLENS_TIMELINE_BINS;
    at += sizeof *r;
    struct {
        struct iolens_file_hdr h;
        struct iolens_rec_hdr schema;
    } head;
    iolens_memcpy(head.h.magic, IOLENS_MAGIC, IOLENS_MAGIC_LEN);
    head.h.major = IOLENS_CONTAINER_MAJOR;
    head.h.minor = IOLENS_CONTAINER_MINOR;
    head.h.hdr_size = sizeof head.h;
    head.schema.kind = IOLENS_KIND_SCHEMA;
    head.schema.version = IOLENS_VER_SCHEMA;
    head.schema.size = sizeof schema_blob;
    struct iovec iov[3] = {{&head, sizeof head},
                           {(void *)&schema_blob, sizeof schema_blob},
                           {built, at + offsetof(struct iolens_timeline, count)}};
    uint64_t len = iov[0].iov_len + iov[1].iov_len + iov[2].iov_len;
    uint64_t total = sizeof head + sizeof schema_blob + at + sizeof *tl;
    uint64_t lim = fsize_limit();
    if (total > lim) {
        fsize_short = 1;
        return -1;
    }
    int fd = sys_open(g->part_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    struct iolens_xfsz x;
    if (lim != UINT64_MAX) iolens_xfsz_hold(&x);
    long w;
    do w = syscall(SYS_writev, fd, iov, 3);
    while (w < 0 && errno == EINTR);
    int ok = w == (long)len && syscall(SYS_ftruncate, fd, (long)total) == 0;
    if (lim != UINT64_MAX) iolens_xfsz_release(&x);
    sys_close(fd);
    if (!ok) {
        syscall(SYS_unlinkat, AT_FDCWD, g->part_path, 0);
        return -1;
    }
    return 0;
}

/* Async-signal-safe: end fields are plain stores into the shared mapping.
 * at_exit: the streams' waiting bytes are counted first (exit flushes them
 * after the destructors). */
IOLENS_COLD static void finalize(uint64_t flags, uint64_t status, int at_exit)
{
    struct iolens_state *g = &iolens_g;
    if (!g->active || iolens_in_vfork || g->pid != (int)syscall(SYS_getpid)) return;
    int pending = g->pending;
    if (pending == IOLENS_PENDING_FORK || pending == IOLENS_PENDING_DONE) return;
    if (pending == IOLENS_PENDING_START) {
        /* Bytes a stream holds that no recorded call put there (libc's own
         * messages) become flushes of a file at exit: that needs the part. */
        if (at_exit && !iolens_guard && iolens_stdio_waiting()) {
            iolens_materialize();
            if (!g->active) return;
        } else {
            int saved = errno;
            int guard = iolens_guard;
            iolens_guard = 1;
            if (write_built(flags, status) == 0) {
                g->pending = IOLENS_PENDING_DONE;
            } else {
                warn_once("cannot write the capture");
                g->active = 0;
                g->pending = 0;
            }
            iolens_guard = guard;
            errno = saved;
            return;
        }
    }
    if (g->proc->flags & IOLENS_PF_FINALIZED) return;
    if (at_exit && !iolens_guard) iolens_stdio_exit();
    int saved = errno;
    int guard = iolens_guard;
    iolens_guard = 1;
    iolens_srun_end_all();
    iolens_clock_refine();
    fill_end(g->proc);
    g->proc->exit_status = status;
    iolens_trace_flush_all();
    __atomic_fetch_or(&g->proc->flags, IOLENS_PF_FINALIZED | flags, __ATOMIC_RELEASE);
    iolens_guard = guard;
    errno = saved;
}

/* exec failed: the image goes on. */
void iolens_unfinalize(void)
{
    struct iolens_state *g = &iolens_g;
    if (!g->active || iolens_in_vfork) return; /* a vfork child's failed exec: not ours */
    if (g->pending == IOLENS_PENDING_DONE) {
        /* the part written for the exec goes: the image writes (or makes) its part again later */
        syscall(SYS_unlinkat, AT_FDCWD, g->part_path, 0);
        built_proc()->flags = 0;
        built_proc()->end_mono = 0;
        g->pending = IOLENS_PENDING_START;
        return;
    }
    if (g->pending) return;
    g->proc->flags &= ~(uint64_t)(IOLENS_PF_FINALIZED | IOLENS_PF_EXECED);
    g->proc->end_mono = 0;
}

void iolens_finalize(uint64_t flags, uint64_t status) { finalize(flags, status, 0); }

IOLENS_COLD __attribute__((destructor(101))) static void iolens_fini(void)
{
    finalize(IOLENS_PF_EXITED, (uint64_t)iolens_exit_status, 1);
}

void iolens_child_reaped(int pid, int status, const struct rusage *ru)
{
    /* Every locked section runs with the guard set, so a SIGCHLD handler that
     * interrupted one (and reaps here) sees iolens_on() false and records
     * nothing rather than spinning on a lock its own thread holds. */
    if (!iolens_on() || pid <= 0) return;
    iolens_guard = 1;
    lock();
    struct iolens_child *c = rec_alloc(sizeof *c);
    if (c) {
        c->pid = (uint64_t)pid;
        c->status = WIFSIGNALED(status) ? 128u + (uint64_t)WTERMSIG(status) : (uint64_t)WEXITSTATUS(status);
        c->end_mono = iolens_now();
        if (ru) {
            c->utime_ns = tv_ns(ru->ru_utime);
            c->stime_ns = tv_ns(ru->ru_stime);
            c->maxrss_kb = (uint64_t)ru->ru_maxrss;
        }
        publish(c, IOLENS_KIND_CHILD, IOLENS_VER_CHILD);
    }
    unlock();
    iolens_guard = 0;
}

/*
 * In a fork child the parent's part (if it has one yet) is still mapped, and
 * it is shared memory: nothing may be written to it.  Most fork children of
 * shells exec at once, so the child's own part is made lazily, by the first
 * call that records (iolens_on) or that must write (wait, thread creation).
 * A child that execs or exits without recording anything costs no part at
 * all; the exec'd image has its own.
 */
void iolens_after_fork_child(void)
{
    struct iolens_state *g = &iolens_g;
    if (!g->active) return;
    g->lock = 0;
    g->mt = 0;
    memset(g->inflight, 0, sizeof g->inflight);
    for (int i = 0; i < ntbufs; i++)
        if (tbufs[i]) tbufs[i]->n = tbufs[i]->run = 0; /* the parent's unflushed events are the parent's */
    iolens_srun_drop_all(); /* and so are its runs' counts */
    iolens_tls.own = 0;     /* and its recorder's time */
    g->pending = IOLENS_PENDING_FORK;
}

/* Make the part now: the first call that records in an image (its start as
 * noted by the constructor), in a fork child (its start is now), or after
 * the image's end was written (it is made again from what was written). */
void iolens_materialize(void)
{
    struct iolens_state *g = &iolens_g;
    int kind = g->pending;
    if (!kind) return;
    /* Making the part (a file, its mapping, the start's records) is the recorder's time in the gap before the
     * thread's first event: it joins that event's own_ns (0.08-0.14 ms an image on a 2-CPU VM). */
    uint64_t m0 = g->trace ? iolens_now() : 0;
    int guard = iolens_guard;
    iolens_guard = 1;
    g->pending = 0;
    g->active = 0;
    char *old_base = g->base; /* a fork child's: the parent's part, if it had one */
    g->base = 0;              /* a new address-space reservation; the old one stays mapped until copied */
    if (pt.slot) sys_munmap(pt.slot, pt.cap * sizeof *pt.slot);
    pt.slot = 0;
    pt.cap = pt.n = 0;
    struct iolens_proc now;
    if (kind == IOLENS_PENDING_FORK) {
        memset(&now, 0, sizeof now);
        g->pid = (int)syscall(SYS_getpid);
        take_start(&now);
        now.flags = IOLENS_PF_FORKED;
    }
    /* an image's: its start as noted, or, once written, its end as written
     * too (the calls after it are then recorded as a mapped part records them) */
    if (start_part(kind == IOLENS_PENDING_FORK ? &now : built_proc()) != 0) {
        if (old_base) sys_munmap(old_base, g->reserve);
        memset(iolens_fds, 0, sizeof iolens_fds);
        if (kind != IOLENS_PENDING_FORK) warn_once("cannot write the capture");
        iolens_guard = guard;
        return;
    }
    add_start_strings();
    /* the open descriptors' files, as records of this process */
    for (int fd = 0; fd <= fd_high && fd < IOLENS_FDMAX; fd++) {
        struct iolens_fdstate *f = &iolens_fds[fd];
        if (f->state != FD_TRACKED || !f->rec) continue;
        struct iolens_file *o = f->rec;
        struct iolens_file *rec = iolens_file_for(rec_path(o), o->flags & (IOLENS_FF_DIRECTORY | IOLENS_FF_NOT_A_FILE |
                                                                       IOLENS_FF_AGGREGATE));
        if (rec) {
            rec->flags |= IOLENS_FF_INHERITED;
            rec->dev = o->dev;
            rec->ino = o->ino;
            rec->mode = o->mode;
        }
        f->rec = rec;
    }
    if (old_base) sys_munmap(old_base, g->reserve);
    g->active = 1;
    if (g->trace) iolens_tls.own += iolens_since(m0);
    iolens_guard = guard;
}
