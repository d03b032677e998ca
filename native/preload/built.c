/*
 * What an image knows before it makes its part: PROC's start fields and the
 * STRING records noted at start, kept in private memory; and, when the image
 * ends with no part, the whole part written with one write.  The start-up and
 * exit code here is marked cold (core.h, IOLENS_COLD) and uses no libc
 * function it would have to bind.
 */
#include "internal.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <sys/uio.h>
#include <sys/utsname.h>

#include "nolibc.h"
#include "redact.h"

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
struct iolens_proc *iolens_built_proc(void)
{
    return (struct iolens_proc *)(built + sizeof(struct iolens_rec_hdr));
}

/* What a part says of the moment its image (or fork child) started. */
IOLENS_COLD void iolens_take_start(struct iolens_proc *p)
{
    p->pid = (uint64_t)iolens_g.pid;
    p->start_real = iolens_sys_clock(CLOCK_REALTIME);
    p->start_mono = iolens_sys_clock(CLOCK_MONOTONIC);
    p->ppid = (uint64_t)syscall(SYS_getppid);
    struct rusage ru;
    if (syscall(SYS_getrusage, RUSAGE_SELF, &ru) == 0) {
        p->utime_start_ns = tv_ns(ru.ru_utime);
        p->stime_start_ns = tv_ns(ru.ru_stime);
    }
}

/* The kernel's I/O counters at the start of p: read when the image makes its part (its first recorded call),
 * not in the constructor.  An image that never makes one reads none (iolens_write_built): /proc/self/io is the
 * costliest thing a process with no file I/O did (a lookup of /proc/PID, 20-30 us), and such an image's kernel
 * counts would be the loader's reads. */
IOLENS_COLD void iolens_take_kernel_start(struct iolens_proc *p)
{
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
IOLENS_COLD void iolens_note_strings(int argc, char **argv, char **envp)
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

/* The path exec was given (AT_EXECFN) when it names the image's own executable: the kernel ran that file itself,
 * not as the script or binfmt_misc file of an interpreter; else 0 (/proc/self/exe is read at the end). */
IOLENS_START_DATA static const char *execfn;

/* At start, with the argv and envp the kernel laid out (before anything drops entries from envp).  AT_EXECFN is
 * read from the auxiliary vector after envp: libc's getauxval would cost every image a lazy binding at its end.
 * An interpreter the kernel started for a script (#!) or a binfmt_misc file gets that file's path, the same
 * string as AT_EXECFN, as one of its first arguments (after its own and at most one option, nested up to 4 deep;
 * binfmt_misc's P flag puts argv[0] before it): so the path is taken as the executable only when no such argument
 * is that path, and when no AT_EXECFD (binfmt_misc's O flag) says an interpreter was given the file.  An ELF run
 * with its own path as an argument (`file /usr/bin/file`) is only looked up by /proc/self/exe, as before.  This
 * replaces an open and a read of the file's ELF header at the end of every image with no part. */
IOLENS_COLD void iolens_note_exec(int argc, char **argv, char **envp)
{
    if (!envp) return;
    char **e = envp;
    while (*e) e++;
    const ElfW(auxv_t) *a = (const ElfW(auxv_t) *)(e + 1);
    const char *fn = 0;
    int pagesz = 0, execfd = 0;
    for (int i = 0; i < 64 && a[i].a_type != AT_NULL; i++) {
        if (a[i].a_type == AT_EXECFN) fn = (const char *)a[i].a_un.a_val;
        if (a[i].a_type == AT_PAGESZ) pagesz = a[i].a_un.a_val != 0;
        if (a[i].a_type == AT_EXECFD) execfd = 1;
    }
    /* every Linux kernel gives AT_PAGESZ: without it this was not the vector */
    if (!pagesz || !fn || fn[0] != '/' || execfd) return;
    for (int i = 1; i < argc && i <= 10 && argv[i]; i++)
        if (iolens_streq(argv[i], fn)) return;
    execfn = fn;
}

/* The executable without /proc/self/exe, whose lookup of /proc/PID costs a new process 15-20 us: the path the
 * kernel was given, when it ran that file itself (iolens_note_exec), with its links resolved.  Its length, or -1. */
IOLENS_COLD static long exe_from_execfn(char *out)
{
    char path[PATH_MAX];
    size_t len = execfn ? iolens_strlen(execfn) : 0;
    if (!len || len >= sizeof path) return -1;
    iolens_memcpy(path, execfn, len);
    return iolens_resolve_path(path, len, out);
}

/* The executable as the image that started this one resolved it (IOLENS_EXE=<pid>:<length>:<path><resolved>,
 * env.c `exe_var`): taken when that image's pid is this one's (an exec in place) or its parent's (a fork, vfork
 * or spawn child), and the path is this image's own (AT_EXECFN, iolens_note_exec).  Its length, or -1. */
IOLENS_COLD static long exe_from_parent(char *out)
{
    const char *v = iolens_env("IOLENS_EXE");
    if (!v || !execfn) return -1;
    uint64_t pid = iolens_digits(&v);
    if (*v++ != ':' || !pid || (pid != (uint64_t)iolens_g.pid && pid != iolens_built_proc()->ppid)) return -1;
    uint64_t pl = iolens_digits(&v);
    if (*v++ != ':' || pl != iolens_strlen(execfn) || !iolens_memeq(v, execfn, pl)) return -1;
    size_t n = iolens_strlen(v + pl);
    if (n == 0 || n >= PATH_MAX || v[pl] != '/') return -1;
    iolens_memcpy(out, v + pl, n);
    return (long)n;
}

/* The executable and the host are the image's for its whole life: read when its part is made, or at its end
 * (compact: the executable found without /proc when it can be; the parent's answer first, in either). */
IOLENS_COLD static uint64_t built_late_strings(uint64_t at, int compact)
{
    long n = exe_from_parent(built_text(at));
    if (n < 0 && compact) n = exe_from_execfn(built_text(at));
    if (n < 0) n = iolens_sysraw(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", built_text(at), PATH_MAX - 1);
    if (n > 0) at = built_string(at, IOLENS_STR_EXE, (uint32_t)n);
    struct utsname u;
    if (iolens_sysraw(SYS_uname, &u) == 0) {
        size_t l = iolens_strlen(u.nodename);
        iolens_memcpy(built_text(at), u.nodename, l);
        at = built_string(at, IOLENS_STR_HOST, (uint32_t)l);
    }
    return at;
}

/* The image's strings, into a part made before its end. */
IOLENS_COLD void iolens_add_start_strings(void)
{
    uint64_t end = built_late_strings(built_strings_end, 0);
    for (uint64_t off = built_strings; off < end;) {
        struct iolens_rec_hdr *h = (struct iolens_rec_hdr *)(built + off);
        struct iolens_string *s = (struct iolens_string *)(h + 1);
        iolens_add_string(s->what, (const char *)(s + 1), s->len);
        off += sizeof *h + h->size;
    }
}

IOLENS_COLD void iolens_fill_end(struct iolens_proc *p, int kernel_io)
{
    p->end_mono = iolens_sys_clock(CLOCK_MONOTONIC); /* on the same clock as start_mono */
    struct rusage ru;
    if (iolens_sysraw(SYS_getrusage, RUSAGE_SELF, &ru) == 0) {
        p->utime_ns = tv_ns(ru.ru_utime);
        p->stime_ns = tv_ns(ru.ru_stime);
        p->maxrss_kb = (uint64_t)ru.ru_maxrss;
        p->majflt = (uint64_t)ru.ru_majflt;
        p->minflt = (uint64_t)ru.ru_minflt;
        p->nvcsw = (uint64_t)ru.ru_nvcsw;
        p->nivcsw = (uint64_t)ru.ru_nivcsw;
    }
    if (!kernel_io) {
        p->flags |= IOLENS_PF_NO_KERNEL_IO;
        return;
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

/* The end of an image that never made its part: the part is written with one
 * write, compact: the file header, PROC and the STRING records, nothing else.
 * The SCHEMA of this build and the empty TIMELINE a mapped part carries are
 * the merge's to add (capture/merge.py, `part_records`): written here they were
 * 20 KiB, two pages of the staging tmpfs and a truncate in every process with
 * no file I/O.  Raw system calls and no formatting by libc: it runs on fatal
 * signals too.  errno is untouched (iolens_sysraw); 0, or -errno on failure. */
IOLENS_COLD int iolens_write_built(uint64_t flags, uint64_t status)
{
    struct iolens_state *g = &iolens_g;
    struct iolens_proc *p = iolens_built_proc();
    if (iolens_part_name(p->start_mono) < 0) return -ENAMETOOLONG;
    struct iolens_rec_hdr *r = (struct iolens_rec_hdr *)built;
    r->size = sizeof *p;
    r->version = IOLENS_VER_PROC;
    r->kind = IOLENS_KIND_PROC;
    p->flags = IOLENS_PF_FINALIZED | flags;
    iolens_fill_end(p, 0);
    p->exit_status = status;
    uint64_t at = built_late_strings(built_strings_end, 1);
    struct iolens_file_hdr h;
    iolens_memcpy(h.magic, IOLENS_MAGIC, IOLENS_MAGIC_LEN);
    h.major = IOLENS_CONTAINER_MAJOR;
    h.minor = IOLENS_CONTAINER_MINOR;
    h.hdr_size = sizeof h;
    struct iovec iov[2] = {{&h, sizeof h}, {built, at}};
    uint64_t len = sizeof h + at;
    uint64_t lim = iolens_fsize_limit();
    if (len > lim) {
        iolens_fsize_short = 1;
        return -EFBIG;
    }
    int fd = (int)iolens_sysraw(SYS_openat, AT_FDCWD, g->part_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return fd;
    struct iolens_xfsz x;
    if (lim != UINT64_MAX) iolens_xfsz_hold(&x);
    long w;
    do w = iolens_sysraw(SYS_writev, fd, iov, 2);
    while (w == -EINTR);
    if (lim != UINT64_MAX) iolens_xfsz_release(&x);
    iolens_sysraw(SYS_close, fd);
    if (w != (long)len) {
        iolens_sysraw(SYS_unlinkat, AT_FDCWD, g->part_path, 0);
        return w < 0 ? (int)w : -ENOSPC;
    }
    return 0;
}
