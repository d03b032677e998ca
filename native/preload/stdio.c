/*
 * stdio streams.  A stdio call is a library call: it is counted, with the
 * bytes the program asked for, as a read or write of its file (and in the
 * stdio_* counters), but what reaches storage is what it made the kernel do.
 * Around each call the stream's buffer pointers (glibc's FILE, a stable ABI)
 * show whether the buffer was filled or flushed; those requests, with their
 * sizes as glibc makes them, go into the file's read/write size histograms
 * beside the direct system calls (FILE version 2, iolens_format.h).
 *
 * The hot path: a call the buffer serves without the kernel (a putc into a
 * buffer with room, an fread of bytes already buffered) is decided from the
 * pointers before the call and is counted exactly but not timed: no clock is
 * read.  Calls that may fill or flush are timed, as every call was before.
 * With threads, the stream's own (recursive) lock is held around the call
 * and the pointer reads, so requests on a shared stream are exact.
 * Inline getc/putc macros reach libc only through __uflow and __overflow,
 * which are counted by the buffer they fill or drain.  Template: see core.h.
 */
#include "core.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc may define these as macros when optimising */
#undef getc
#undef putc
#undef getc_unlocked
#undef putc_unlocked
#undef fgetc_unlocked
#undef fputc_unlocked
#undef getchar
#undef putchar
#undef fread_unlocked
#undef fwrite_unlocked
#undef feof_unlocked

static inline int fp_fd(FILE *fp) { return fp ? fp->_fileno : -1; }

/* glibc's list of open streams (exported; walked under its own lock) */
extern FILE *_IO_list_all;
extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);

/* glibc's FILE flags (libio.h) */
#define IO_UNBUFFERED 0x0002
#define IO_EOF_SEEN 0x0010
#define IO_LINE_BUF 0x0200
#define IO_CURRENTLY_PUTTING 0x0800

static inline uint64_t avail_in(const FILE *fp)
{
    return fp->_IO_read_ptr && fp->_IO_read_end > fp->_IO_read_ptr ? (uint64_t)(fp->_IO_read_end - fp->_IO_read_ptr) : 0;
}
static inline uint64_t pending_out(const FILE *fp)
{
    return (fp->_flags & IO_CURRENTLY_PUTTING) && fp->_IO_write_ptr > fp->_IO_write_base
               ? (uint64_t)(fp->_IO_write_ptr - fp->_IO_write_base)
               : 0;
}
static inline uint64_t buf_size(const FILE *fp)
{
    return fp->_IO_buf_end > fp->_IO_buf_base ? (uint64_t)(fp->_IO_buf_end - fp->_IO_buf_base) : 0;
}

/* Will writing n bytes (the last byte nl when it is a newline) only copy into the buffer? */
static inline int w_fits(const FILE *fp, uint64_t n, const void *data)
{
    int fl = fp->_flags;
    if ((fl & (IO_UNBUFFERED | IO_CURRENTLY_PUTTING)) != IO_CURRENTLY_PUTTING || !fp->_IO_write_base) return 0;
    if (fl & IO_LINE_BUF)
        return fp->_IO_buf_end > fp->_IO_write_ptr && (uint64_t)(fp->_IO_buf_end - fp->_IO_write_ptr) > n &&
               (!n || !memchr(data, '\n', n));
    return fp->_IO_write_end >= fp->_IO_write_ptr && (uint64_t)(fp->_IO_write_end - fp->_IO_write_ptr) >= n;
}
static inline int c_fits(const FILE *fp, int ch)
{
    int fl = fp->_flags;
    if ((fl & (IO_UNBUFFERED | IO_CURRENTLY_PUTTING)) != IO_CURRENTLY_PUTTING || !fp->_IO_write_base) return 0;
    if (fl & IO_LINE_BUF) return ch != '\n' && ch != EOF && fp->_IO_write_ptr < fp->_IO_buf_end;
    return fp->_IO_write_ptr < fp->_IO_write_end;
}
/* Will reading n bytes be served from the buffer? */
static inline int r_fits(const FILE *fp, uint64_t n) { return n && avail_in(fp) >= n; }
/* ... up to and including delim (or max bytes)? */
static inline int line_fits(const FILE *fp, int delim, uint64_t max)
{
    uint64_t a = avail_in(fp);
    return a && (a >= max || memchr(fp->_IO_read_ptr, delim, a));
}

/* The stream before a timed call. */
struct snap {
    char *rbase, *rptr, *rend;
    uint64_t avail, pending, space;
    int flags;
};
static inline void snap_take(const FILE *fp, struct snap *s)
{
    s->rbase = fp->_IO_read_base;
    s->rptr = fp->_IO_read_ptr;
    s->rend = fp->_IO_read_end;
    s->avail = avail_in(fp);
    s->pending = pending_out(fp);
    s->flags = fp->_flags;
    s->space = 0;
    if ((s->flags & (IO_UNBUFFERED | IO_CURRENTLY_PUTTING)) == IO_CURRENTLY_PUTTING && fp->_IO_write_ptr)
        s->space = (uint64_t)(((s->flags & IO_LINE_BUF) ? fp->_IO_buf_end : fp->_IO_write_end) - fp->_IO_write_ptr);
}

/* Bytes that left the write buffer: the system calls glibc makes for them.
 * A flush is one write; data past a full buffer is flushed with it and the
 * rest written directly (a second write); an unbuffered stream writes once. */
static void flushed(struct iolens_fdstate *f, const FILE *fp, const struct snap *s, uint64_t took)
{
    int64_t d = (int64_t)(s->pending + took) - (int64_t)pending_out(fp);
    if (d <= 0) return;
    uint64_t bs = buf_size(fp), first = s->pending + s->space;
    if (!(s->flags & IO_UNBUFFERED) && s->space && (uint64_t)d > first && first) {
        iolens_stdio_req(f, IOLENS_CAT_WRITE, first, bs);
        iolens_stdio_req(f, IOLENS_CAT_WRITE, (uint64_t)d - first, bs);
    } else {
        iolens_stdio_req(f, IOLENS_CAT_WRITE, (uint64_t)d, bs);
    }
}

/* Bytes that came into the read buffer (or past it): one read per fill of
 * the buffer; fread reads what is wider than the buffer directly, in one
 * call, before the last fill.  Reaching end of file is one read of 0 bytes. */
static void filled(struct iolens_fdstate *f, const FILE *fp, const struct snap *s, int64_t took, int op)
{
    uint64_t bs = buf_size(fp);
    int64_t k;
    if (took < 0) /* fscanf: bytes unknown; a refill shows as a moved or new buffer */
        k = (fp->_IO_read_end != s->rend || fp->_IO_read_base != s->rbase || fp->_IO_read_ptr < s->rptr)
                ? fp->_IO_read_end - fp->_IO_read_base
                : 0;
    else
        k = took + (int64_t)avail_in(fp) - (int64_t)s->avail;
    if (k > 0) {
        uint64_t K = (uint64_t)k, in_buf = (uint64_t)(fp->_IO_read_end - fp->_IO_read_base);
        if (K <= bs || !bs) {
            iolens_stdio_req(f, IOLENS_CAT_READ, K, bs);
        } else if (op == IOLENS_OP_FREAD) {
            uint64_t last = in_buf <= K ? in_buf : 0;
            if (K - last) iolens_stdio_req(f, IOLENS_CAT_READ, K - last, bs);
            if (last) iolens_stdio_req(f, IOLENS_CAT_READ, last, bs);
        } else {
            for (; K > bs; K -= bs) iolens_stdio_req(f, IOLENS_CAT_READ, bs, bs);
            iolens_stdio_req(f, IOLENS_CAT_READ, K, bs);
        }
    }
    if (!(s->flags & IO_EOF_SEEN) && (fp->_flags & IO_EOF_SEEN)) iolens_stdio_req(f, IOLENS_CAT_READ, 0, bs);
}

/* What a timed call made the kernel do.  A read on a stream that was writing
 * flushes it first. */
static void kernel_check(struct iolens_fdstate *f, const FILE *fp, const struct snap *s, int op, int64_t moved)
{
    if (!f || !f->rec) return;
    if (iolens_op_cat[op] == IOLENS_CAT_WRITE) {
        flushed(f, fp, s, moved > 0 ? (uint64_t)moved : 0);
    } else {
        if (s->pending) flushed(f, fp, s, 0);
        filled(f, fp, s, moved, op);
    }
}

/* A data call on a stream.  fits: decided before the call, true when the
 * buffer alone serves it (no clock is read then). */
#define SDATA_K(op_, fp, type, call, nbytes, kbytes, fits) \
    if (!iolens_on() || !(fp)) return call; \
    struct iolens_fdstate *fs_ = iolens_fd(fp_fd(fp)); \
    int mt_ = iolens_g.mt && (fp)->_lock; \
    if (UNLIKELY(mt_)) flockfile(fp); \
    type r; \
    struct iolens_call c; \
    if (LIKELY(fits)) { \
        iolens_guard = 1; \
        c.op = op_; \
        c.cat = iolens_cat_of(op_); \
        if (UNLIKELY(fs_ && fs_->rec && (fs_->rec->flags & IOLENS_FF_NOT_A_FILE))) c.cat = IOLENS_CAT_STREAM; \
        c.t1 = 0; \
        r = call; \
        iolens_stdio_quick(&c, iolens_cat_of(op_), fs_, nbytes); \
        iolens_guard = 0; \
    } else { \
        struct snap s0_; \
        snap_take(fp, &s0_); \
        iolens_begin_data(&c, op_, fs_); \
        r = call; \
        iolens_end(&c); \
        iolens_stdio_call(&c, fs_, nbytes); \
        kernel_check(fs_, fp, &s0_, op_, kbytes); \
        iolens_ret(&c); \
    } \
    if (UNLIKELY(mt_)) funlockfile(fp); \
    return r;
#define SDATA_FITS(op, fp, type, call, nbytes, fits) SDATA_K(op, fp, type, call, nbytes, nbytes, fits)
#define SDATA(op, fp, type, call, nbytes) SDATA_K(op, fp, type, call, nbytes, nbytes, 0)

#define SMETA(op, fp, type, call) \
    if (!iolens_on() || !(fp)) return call; \
    struct iolens_call c; \
    iolens_begin(&c, op); \
    type r = call; \
    iolens_end(&c); \
    iolens_fdop(&c, iolens_fd(fp_fd(fp))); \
    iolens_ret(&c); \
    return r;

/* ---- opens and closes ---- */

static int mode_flags(const char *m)
{
    int fl = 0;
    if (!m) return 0;
    if (m[0] == 'w') fl = O_CREAT | O_TRUNC;
    if (m[0] == 'a') fl = O_CREAT | O_APPEND;
    if (strchr(m, 'x')) fl |= O_EXCL;
    return fl;
}

/* Did the file exist before a creating fopen?  errno is left as it was. */
static int existed_before(const char *p, int fl)
{
    if (!p || !(fl & O_CREAT) || (fl & O_EXCL)) return 0;
    int e = errno;
    int r = syscall(SYS_faccessat, AT_FDCWD, p, F_OK, 0) == 0;
    errno = e;
    return r;
}

static FILE *do_fopen(const char *p, const char *m, FILE *(*real)(const char *, const char *))
{
    if (!iolens_on()) return real(p, m);
    int fl = mode_flags(m);
    int existed = existed_before(p, fl);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_FOPEN);
    FILE *fp = real(p, m);
    iolens_end(&c);
    iolens_opened(&c, AT_FDCWD, fp ? p : 0, fp_fd(fp), fl, existed);
    iolens_ret(&c);
    return fp;
}
IOLENS_API FILE *fopen(const char *p, const char *m) { return do_fopen(p, m, REAL(fopen)); }
IOLENS_API FILE *fopen64(const char *p, const char *m) { return do_fopen(p, m, REAL(fopen64)); }
IOLENS_API FILE *fdopen(int fd, const char *m)
{
    if (!iolens_on()) return REAL(fdopen)(fd, m);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_FOPEN);
    FILE *fp = REAL(fdopen)(fd, m);
    iolens_end(&c);
    iolens_fdop(&c, iolens_fd(fd));
    iolens_ret(&c);
    return fp;
}
static FILE *do_freopen(const char *p, const char *m, FILE *old, FILE *(*real)(const char *, const char *, FILE *))
{
    int oldfd = fp_fd(old);
    if (!iolens_on()) {
        FILE *r = real(p, m, old);
        iolens_closed(oldfd);
        return r;
    }
    int fl = mode_flags(m);
    int existed = existed_before(p, fl);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_FOPEN);
    FILE *fp = real(p, m, old);
    iolens_end(&c);
    iolens_closed(oldfd);
    if (p) iolens_opened(&c, AT_FDCWD, fp ? p : 0, fp_fd(fp), fl, existed);
    else iolens_fdop(&c, iolens_fd(fp_fd(fp)));
    iolens_ret(&c);
    return fp;
}
IOLENS_API FILE *freopen(const char *p, const char *m, FILE *fp) { return do_freopen(p, m, fp, REAL(freopen)); }
IOLENS_API FILE *freopen64(const char *p, const char *m, FILE *fp) { return do_freopen(p, m, fp, REAL(freopen64)); }

/* tmpfile's file has no name: it is picked up from /proc on first use. */
IOLENS_API FILE *tmpfile(void)
{
    FILE *fp = REAL(tmpfile)();
    if (fp) iolens_closed(fp_fd(fp));
    return fp;
}
IOLENS_API FILE *tmpfile64(void)
{
    FILE *fp = REAL(tmpfile64)();
    if (fp) iolens_closed(fp_fd(fp));
    return fp;
}

IOLENS_API int fclose(FILE *fp)
{
    int fd = fp_fd(fp);
    if (!iolens_on() || !fp) {
        int r = REAL(fclose)(fp);
        iolens_closed(fd);
        return r;
    }
    /* the buffer's last flush: the stream is gone after the call */
    uint64_t pend = pending_out(fp), bs = buf_size(fp);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_FCLOSE);
    int r = REAL(fclose)(fp);
    iolens_end(&c);
    struct iolens_fdstate *f = iolens_fd(fd);
    iolens_fdop(&c, f);
    if (pend && r == 0) iolens_stdio_req(f, IOLENS_CAT_WRITE, pend, bs);
    iolens_closed(fd);
    iolens_ret(&c);
    return r;
}

/* ---- data ---- */

#define ITEMS(r, size) ((int64_t)((r) * (size)))
static inline uint64_t total(size_t s, size_t n)
{
    size_t t;
    return __builtin_mul_overflow(s, n, &t) ? UINT64_MAX : (uint64_t)t;
}
#define FREAD(real, b, s, n, fp) SDATA_FITS(IOLENS_OP_FREAD, fp, size_t, real, ITEMS(r, s), r_fits(fp, total(s, n)))
#define FWRITE(real, b, s, n, fp) \
    SDATA_FITS(IOLENS_OP_FWRITE, fp, size_t, real, ITEMS(r, s), w_fits(fp, total(s, n), b))
IOLENS_API size_t fread(void *b, size_t s, size_t n, FILE *fp) { FREAD(REAL(fread)(b, s, n, fp), b, s, n, fp) }
IOLENS_API size_t fread_unlocked(void *b, size_t s, size_t n, FILE *fp) { FREAD(REAL(fread_unlocked)(b, s, n, fp), b, s, n, fp) }
IOLENS_API size_t __fread_chk(void *b, size_t bl, size_t s, size_t n, FILE *fp) { FREAD(REAL(__fread_chk)(b, bl, s, n, fp), b, s, n, fp) }
IOLENS_API size_t fwrite(const void *b, size_t s, size_t n, FILE *fp) { FWRITE(REAL(fwrite)(b, s, n, fp), b, s, n, fp) }
IOLENS_API size_t fwrite_unlocked(const void *b, size_t s, size_t n, FILE *fp) { FWRITE(REAL(fwrite_unlocked)(b, s, n, fp), b, s, n, fp) }

#define SLEN(r) ((r) ? (int64_t)strlen(r) : 0)
#define FGETS(real, n, fp) SDATA_FITS(IOLENS_OP_FGETS, fp, char *, real, SLEN(r), (n) <= 1 || line_fits(fp, '\n', (uint64_t)(n) - 1))
IOLENS_API char *fgets(char *b, int n, FILE *fp) { FGETS(REAL(fgets)(b, n, fp), n, fp) }
IOLENS_API char *fgets_unlocked(char *b, int n, FILE *fp) { FGETS(REAL(fgets_unlocked)(b, n, fp), n, fp) }
IOLENS_API char *__fgets_chk(char *b, size_t bl, int n, FILE *fp) { FGETS(REAL(__fgets_chk)(b, bl, n, fp), n, fp) }

/* the length is taken before the call: the string is the program's, unchanged by it */
#define PUTS_BYTES(r, len) ((r) >= 0 ? (int64_t)(len) : -1)
#define FPUTS(real, s, fp) \
    size_t len_ = (fp) ? strlen(s) : 0; \
    SDATA_FITS(IOLENS_OP_FPUTS, fp, int, real, PUTS_BYTES(r, len_), w_fits(fp, len_, s))
IOLENS_API int fputs(const char *s, FILE *fp) { FPUTS(REAL(fputs)(s, fp), s, fp) }
IOLENS_API int fputs_unlocked(const char *s, FILE *fp) { FPUTS(REAL(fputs_unlocked)(s, fp), s, fp) }
IOLENS_API int puts(const char *s)
{
    FILE *fp = stdout;
    size_t len_ = fp ? strlen(s) : 0;
    SDATA_FITS(IOLENS_OP_FPUTS, fp, int, REAL(puts)(s), (r >= 0 ? (int64_t)len_ + 1 : -1),
               c_fits(fp, '\n') && w_fits(fp, len_ + 1, s))
}

#define CH(r) ((r) == EOF ? 0 : 1)
#define CHW(r) ((r) == EOF ? -1 : 1)
#define GETC(real, fp) SDATA_FITS(IOLENS_OP_FGETC, fp, int, real, CH(r), r_fits(fp, 1))
#define PUTC(real, ch, fp) SDATA_FITS(IOLENS_OP_FPUTC, fp, int, real, CHW(r), c_fits(fp, ch))
IOLENS_API int fgetc(FILE *fp) { GETC(REAL(fgetc)(fp), fp) }
IOLENS_API int getc(FILE *fp) { GETC(REAL(getc)(fp), fp) }
IOLENS_API int _IO_getc(FILE *fp) { GETC(REAL(_IO_getc)(fp), fp) }
IOLENS_API int getchar(void) { FILE *fp = stdin; GETC(REAL(getchar)(), fp) }
IOLENS_API int fgetc_unlocked(FILE *fp) { GETC(REAL(fgetc_unlocked)(fp), fp) }
IOLENS_API int getc_unlocked(FILE *fp) { GETC(REAL(getc_unlocked)(fp), fp) }
IOLENS_API int fputc(int ch, FILE *fp) { PUTC(REAL(fputc)(ch, fp), ch, fp) }
IOLENS_API int putc(int ch, FILE *fp) { PUTC(REAL(putc)(ch, fp), ch, fp) }
IOLENS_API int _IO_putc(int ch, FILE *fp) { PUTC(REAL(_IO_putc)(ch, fp), ch, fp) }
IOLENS_API int putchar(int ch) { FILE *fp = stdout; PUTC(REAL(putchar)(ch), ch, fp) }
IOLENS_API int fputc_unlocked(int ch, FILE *fp) { PUTC(REAL(fputc_unlocked)(ch, fp), ch, fp) }
IOLENS_API int putc_unlocked(int ch, FILE *fp) { PUTC(REAL(putc_unlocked)(ch, fp), ch, fp) }

/* Reached from inline getc/putc macros when the buffer is empty or full (or,
 * line-buffered, for every character).  The fill is counted as its bytes. */
IOLENS_API int __uflow(FILE *fp)
{
    SDATA_K(IOLENS_OP_STDIO_FILL, fp, int, REAL(__uflow)(fp),
            r == EOF ? 0 : (int64_t)(fp->_IO_read_end - fp->_IO_read_base), r == EOF ? 0 : 1, 0)
}
/* Bytes that left the buffer: what was pending, plus ch, minus what is pending
 * afterwards (a line-buffered stream calls this for every character). */
IOLENS_API int __overflow(FILE *fp, int ch)
{
    int64_t before = fp ? (int64_t)(fp->_IO_write_ptr - fp->_IO_write_base) : 0;
    SDATA_K(IOLENS_OP_STDIO_DRAIN, fp, int, REAL(__overflow)(fp, ch),
            r == EOF ? -1 : before + (ch != EOF) - (int64_t)(fp->_IO_write_ptr - fp->_IO_write_base),
            (r != EOF && ch != EOF) ? 1 : 0, c_fits(fp, ch))
}

#define LINE(r) ((r) > 0 ? (int64_t)(r) : 0)
#define GETDELIM(real, d, fp) SDATA_FITS(IOLENS_OP_GETDELIM, fp, ssize_t, real, LINE(r), line_fits(fp, d, UINT64_MAX))
IOLENS_API ssize_t getline(char **l, size_t *n, FILE *fp) { GETDELIM(REAL(getline)(l, n, fp), '\n', fp) }
IOLENS_API ssize_t getdelim(char **l, size_t *n, int d, FILE *fp) { GETDELIM(REAL(getdelim)(l, n, d, fp), d, fp) }
IOLENS_API ssize_t __getdelim(char **l, size_t *n, int d, FILE *fp) { GETDELIM(REAL(__getdelim)(l, n, d, fp), d, fp) }

/* ---- formatted ---- */

#define FMT(r) ((r) >= 0 ? (int64_t)(r) : -1)
IOLENS_API int vfprintf(FILE *fp, const char *f, va_list ap) { SDATA(IOLENS_OP_FPRINTF, fp, int, REAL(vfprintf)(fp, f, ap), FMT(r)) }
IOLENS_API int __vfprintf_chk(FILE *fp, int fl, const char *f, va_list ap) { SDATA(IOLENS_OP_FPRINTF, fp, int, REAL(__vfprintf_chk)(fp, fl, f, ap), FMT(r)) }
IOLENS_API int vprintf(const char *f, va_list ap) { SDATA(IOLENS_OP_FPRINTF, stdout, int, REAL(vprintf)(f, ap), FMT(r)) }
IOLENS_API int __vprintf_chk(int fl, const char *f, va_list ap) { SDATA(IOLENS_OP_FPRINTF, stdout, int, REAL(__vprintf_chk)(fl, f, ap), FMT(r)) }

#define VARIADIC(call) \
    va_list ap; \
    va_start(ap, f); \
    int r_ = call; \
    va_end(ap); \
    return r_;
IOLENS_API int fprintf(FILE *fp, const char *f, ...) { VARIADIC(vfprintf(fp, f, ap)) }
IOLENS_API int __fprintf_chk(FILE *fp, int fl, const char *f, ...) { VARIADIC(__vfprintf_chk(fp, fl, f, ap)) }
IOLENS_API int printf(const char *f, ...) { VARIADIC(vprintf(f, ap)) }
IOLENS_API int __printf_chk(int fl, const char *f, ...) { VARIADIC(__vprintf_chk(fl, f, ap)) }

/* fscanf: the call is counted, but the bytes it consumed are not known. */
/* glibc's headers rename fscanf to __isoc99_fscanf; define both symbols. */
IOLENS_API int iolens_vfscanf(FILE *fp, const char *f, va_list ap) __asm__("vfscanf");
IOLENS_API int iolens_fscanf(FILE *fp, const char *f, ...) __asm__("fscanf");
IOLENS_API int iolens_vfscanf(FILE *fp, const char *f, va_list ap) { SDATA_K(IOLENS_OP_FSCANF, fp, int, REAL(vfscanf)(fp, f, ap), 0, -1, 0) }
IOLENS_API int __isoc99_vfscanf(FILE *fp, const char *f, va_list ap) { SDATA_K(IOLENS_OP_FSCANF, fp, int, REAL(__isoc99_vfscanf)(fp, f, ap), 0, -1, 0) }
IOLENS_API int iolens_fscanf(FILE *fp, const char *f, ...) { VARIADIC(iolens_vfscanf(fp, f, ap)) }
IOLENS_API int __isoc99_fscanf(FILE *fp, const char *f, ...) { VARIADIC(__isoc99_vfscanf(fp, f, ap)) }

/* ---- positioning and flushing ---- */

/* Every stream's waiting bytes, as the flushes they are about to become. */
static void flush_all_pending(void)
{
    _IO_list_lock();
    for (FILE *fp = (FILE *)_IO_list_all; fp; fp = fp->_chain) {
        uint64_t pend = pending_out(fp);
        if (pend) iolens_stdio_req(iolens_fd(fp_fd(fp)), IOLENS_CAT_WRITE, pend, buf_size(fp));
    }
    _IO_list_unlock();
}

IOLENS_API int fflush(FILE *fp)
{
    if (!iolens_on()) return REAL(fflush)(fp);
    struct iolens_call c;
    if (!fp) {
        iolens_begin(&c, IOLENS_OP_FFLUSH);
        flush_all_pending();
        int r = REAL(fflush)(fp);
        iolens_end(&c);
        iolens_fdop(&c, 0);
        iolens_ret(&c);
        return r;
    }
    struct snap s0;
    snap_take(fp, &s0);
    struct iolens_fdstate *f = iolens_fd(fp_fd(fp));
    iolens_begin(&c, IOLENS_OP_FFLUSH);
    int r = REAL(fflush)(fp);
    iolens_end(&c);
    iolens_fdop(&c, f);
    if (f && f->rec) flushed(f, fp, &s0, 0);
    iolens_ret(&c);
    return r;
}

/* Does any stream hold bytes waiting to be written?  Asked at exit by an image with no part yet, which so
 * created no thread (pthread_create makes the part): no other thread changes the list, and libc's lock is
 * left alone (its lock and unlock were two lazy bindings at the end of every such image). */
IOLENS_COLD static int stdio_waiting(void)
{
    int any = 0, mt = iolens_g.mt;
    if (mt) _IO_list_lock();
    for (FILE *fp = (FILE *)_IO_list_all; fp && !any; fp = fp->_chain) any = pending_out(fp) != 0;
    if (mt) _IO_list_unlock();
    return any;
}

/* Bytes waiting in write buffers become kernel writes now: exit flushes them after the destructors.  Called by
 * the end of the image at exit, which has checked it is ours. */
IOLENS_COLD static void stdio_exit(void)
{
    iolens_guard = 1;
    flush_all_pending();
    iolens_guard = 0;
}

IOLENS_LAYER(stdio, .waiting = stdio_waiting, .exit = stdio_exit);

/* A seek flushes what waits to be written, and a seek outside the read
 * buffer refills it (glibc reads the block it lands in). */
static void seek_check(FILE *fp, const struct snap *s)
{
    struct iolens_fdstate *f = iolens_fd(fp_fd(fp));
    if (!f || !f->rec) return;
    if (s->pending) flushed(f, fp, s, 0);
    if ((fp->_IO_read_base != s->rbase || fp->_IO_read_end != s->rend) && fp->_IO_read_end > fp->_IO_read_base)
        iolens_stdio_req(f, IOLENS_CAT_READ, (uint64_t)(fp->_IO_read_end - fp->_IO_read_base), buf_size(fp));
}

static void seeked(FILE *fp, int r)
{
    struct iolens_fdstate *f = iolens_fd(fp_fd(fp));
    if (f && r == 0) {
        off_t pos = REAL(ftello)(fp);
        if (pos >= 0) f->pos = (uint64_t)pos;
    }
}
#define FSEEK(call) \
    if (!iolens_on() || !fp) return call; \
    struct iolens_call c; \
    struct snap s0; \
    snap_take(fp, &s0); \
    iolens_begin(&c, IOLENS_OP_FSEEK); \
    int r = call; \
    iolens_end(&c); \
    iolens_fdop(&c, iolens_fd(fp_fd(fp))); \
    seek_check(fp, &s0); \
    seeked(fp, r); \
    iolens_ret(&c); \
    return r;
IOLENS_API int fseek(FILE *fp, long o, int w) { FSEEK(REAL(fseek)(fp, o, w)) }
IOLENS_API int fseeko(FILE *fp, off_t o, int w) { FSEEK(REAL(fseeko)(fp, o, w)) }
IOLENS_API int fseeko64(FILE *fp, off_t o, int w) { FSEEK(REAL(fseeko64)(fp, o, w)) }
IOLENS_API void rewind(FILE *fp)
{
    if (!iolens_on() || !fp) {
        REAL(rewind)(fp);
        return;
    }
    struct iolens_call c;
    struct snap s0;
    snap_take(fp, &s0);
    iolens_begin(&c, IOLENS_OP_FSEEK);
    REAL(rewind)(fp);
    iolens_end(&c);
    iolens_fdop(&c, iolens_fd(fp_fd(fp)));
    seek_check(fp, &s0);
    seeked(fp, 0);
    iolens_ret(&c);
}
IOLENS_API long ftell(FILE *fp) { SMETA(IOLENS_OP_FTELL, fp, long, REAL(ftell)(fp)) }
IOLENS_API off_t ftello(FILE *fp) { SMETA(IOLENS_OP_FTELL, fp, off_t, REAL(ftello)(fp)) }
IOLENS_API off_t ftello64(FILE *fp) { SMETA(IOLENS_OP_FTELL, fp, off_t, REAL(ftello64)(fp)) }
