/*
 * The part file of an image: one MAP_SHARED file per process image, whose
 * counters survive a SIGKILL.  Its records are reserved under the lock and
 * published with their kind last; it grows by reopening the file by name
 * (no descriptor is held between calls), under the program's RLIMIT_FSIZE.
 */
#include "internal.h"

#include <string.h>

#include "iolens_schema.h"
#include "nolibc.h"

/* Set when RLIMIT_FSIZE, the program's own limit, kept the part from growing. */
#define PART_CHUNK (64u << 10)
#define RESERVE_DEFAULT (1ull << 30)

int iolens_fsize_short;
char iolens_trace_path[620];

/* RLIMIT_FSIZE now, in bytes; the recorder sizes its files under it.  The
 * start-up and exit paths ask the kernel directly (here, getrusage, uname and
 * the signal mask): each libc function first called costs a lazy symbol
 * binding, about 800 instructions, in every process. */
IOLENS_COLD uint64_t iolens_fsize_limit(void)
{
    struct rlimit rl;
    if (iolens_sysraw(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    return (uint64_t)rl.rlim_cur;
}

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
    uint64_t lim = iolens_fsize_limit() & ~(page - 1);
    if (want > lim) {
        want = lim;
        iolens_fsize_short = 1;
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

/* Reserve a record; the caller fills it and calls iolens_publish().  Lock held. */
void *iolens_rec_alloc(uint32_t size)
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

void iolens_add_string(uint32_t what, const char *s, uint32_t len)
{
    struct iolens_string *r = iolens_rec_alloc(sizeof *r + len + 1);
    if (!r) return;
    r->what = what;
    r->len = len;
    memcpy(r + 1, s, len);
    iolens_publish(r, IOLENS_KIND_STRING, IOLENS_VER_STRING);
}

IOLENS_COLD static char *put_str(char *o, const char *end, const char *s)
{
    while (*s && o < end) *o++ = *s++;
    return *s ? 0 : o;
}

/* DIR/PID-START.part, the start on CLOCK_MONOTONIC (the merge orders parts by it).
 * Formatted by hand: it may run on a fatal signal. Returns its length or -1. */
IOLENS_COLD int iolens_part_name(uint64_t t_mono)
{
    struct iolens_state *g = &iolens_g;
    char *o = g->part_path, *end = g->part_path + sizeof g->part_path - 1;
    if ((o = put_str(o, end, g->dir)) && (o = put_str(o, end, "/")) && (o = iolens_put_u64(o, end, (uint64_t)g->pid)) &&
        (o = put_str(o, end, "-")) && (o = iolens_put_u64(o, end, t_mono)) && (o = put_str(o, end, ".part"))) {
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
int iolens_start_part(const struct iolens_proc *init)
{
    struct iolens_state *g = &iolens_g;
    int pl = iolens_part_name(init->start_mono);
    if (pl < 0) return -1;
    iolens_trace_path[0] = 0;
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
    uint64_t lim = iolens_fsize_limit(), first = lim & ~(uint64_t)4095;
    if (first >= PART_CHUNK) first = PART_CHUNK;
    else iolens_fsize_short = 1;
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
    void *schema = iolens_rec_alloc((uint32_t)ss);
    if (!schema) return part_failed();
    iolens_schema_write(schema);
    iolens_publish(schema, IOLENS_KIND_SCHEMA, IOLENS_VER_SCHEMA);

    struct iolens_proc *p = iolens_rec_alloc(sizeof *p);
    struct iolens_timeline *tl = iolens_rec_alloc(sizeof *tl);
    if (!p || !tl) return part_failed();
    g->proc = p;
    g->tl = tl;
    *p = *init;
    tl->t0_mono = init->start_mono;
    tl->shift = IOLENS_TIMELINE_SHIFT0;
    tl->nbins = IOLENS_TIMELINE_BINS;
    iolens_publish(p, IOLENS_KIND_PROC, IOLENS_VER_PROC);
    iolens_publish(tl, IOLENS_KIND_TIMELINE, IOLENS_VER_TIMELINE);

    if (g->trace) {
        /* the trace file is made by its first flush: an image with no events has none */
        int tn = snprintf(iolens_trace_path, sizeof iolens_trace_path, "%.*s.trace", pl - 5, g->part_path);
        if (tn <= 0 || (size_t)tn >= sizeof iolens_trace_path) iolens_trace_path[0] = 0; /* flushes count events lost */
    }
    return 0;
}
