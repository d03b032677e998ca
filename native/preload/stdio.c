/*
 * stdio streams.  Bytes are counted as the program asks for them (fread,
 * fputs, ...); libc's own buffer refills happen inside libc and are not seen
 * twice.  Inline getc/putc macros reach libc only through __uflow and
 * __overflow, which are counted by the buffer they fill or drain.
 * Template: see core.h.
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

#define SDATA(op, fp, type, call, nbytes) \
    if (!iolens_on() || !(fp)) return call; \
    struct iolens_call c; \
    struct iolens_fdstate *fs_ = iolens_fd(fp_fd(fp)); \
    iolens_begin_data(&c, op, fs_); \
    type r = call; \
    iolens_end(&c); \
    iolens_data(&c, fs_, IOLENS_POS, nbytes); \
    iolens_ret(&c); \
    return r;

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
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_FCLOSE);
    int r = REAL(fclose)(fp);
    iolens_end(&c);
    iolens_fdop(&c, iolens_fd(fd));
    iolens_closed(fd);
    iolens_ret(&c);
    return r;
}

/* ---- data ---- */

#define ITEMS(r, size) ((int64_t)((r) * (size)))
IOLENS_API size_t fread(void *b, size_t s, size_t n, FILE *fp) { SDATA(IOLENS_OP_FREAD, fp, size_t, REAL(fread)(b, s, n, fp), ITEMS(r, s)) }
IOLENS_API size_t fread_unlocked(void *b, size_t s, size_t n, FILE *fp) { SDATA(IOLENS_OP_FREAD, fp, size_t, REAL(fread_unlocked)(b, s, n, fp), ITEMS(r, s)) }
IOLENS_API size_t __fread_chk(void *b, size_t bl, size_t s, size_t n, FILE *fp) { SDATA(IOLENS_OP_FREAD, fp, size_t, REAL(__fread_chk)(b, bl, s, n, fp), ITEMS(r, s)) }
IOLENS_API size_t fwrite(const void *b, size_t s, size_t n, FILE *fp) { SDATA(IOLENS_OP_FWRITE, fp, size_t, REAL(fwrite)(b, s, n, fp), ITEMS(r, s)) }
IOLENS_API size_t fwrite_unlocked(const void *b, size_t s, size_t n, FILE *fp) { SDATA(IOLENS_OP_FWRITE, fp, size_t, REAL(fwrite_unlocked)(b, s, n, fp), ITEMS(r, s)) }

#define SLEN(r) ((r) ? (int64_t)strlen(r) : 0)
IOLENS_API char *fgets(char *b, int n, FILE *fp) { SDATA(IOLENS_OP_FGETS, fp, char *, REAL(fgets)(b, n, fp), SLEN(r)) }
IOLENS_API char *fgets_unlocked(char *b, int n, FILE *fp) { SDATA(IOLENS_OP_FGETS, fp, char *, REAL(fgets_unlocked)(b, n, fp), SLEN(r)) }
IOLENS_API char *__fgets_chk(char *b, size_t bl, int n, FILE *fp) { SDATA(IOLENS_OP_FGETS, fp, char *, REAL(__fgets_chk)(b, bl, n, fp), SLEN(r)) }

#define PUTS_BYTES(r, s) ((r) >= 0 ? (int64_t)strlen(s) : -1)
IOLENS_API int fputs(const char *s, FILE *fp) { SDATA(IOLENS_OP_FPUTS, fp, int, REAL(fputs)(s, fp), PUTS_BYTES(r, s)) }
IOLENS_API int fputs_unlocked(const char *s, FILE *fp) { SDATA(IOLENS_OP_FPUTS, fp, int, REAL(fputs_unlocked)(s, fp), PUTS_BYTES(r, s)) }
IOLENS_API int puts(const char *s) { SDATA(IOLENS_OP_FPUTS, stdout, int, REAL(puts)(s), (r >= 0 ? (int64_t)strlen(s) + 1 : -1)) }

#define CH(r) ((r) == EOF ? 0 : 1)
#define CHW(r) ((r) == EOF ? -1 : 1)
IOLENS_API int fgetc(FILE *fp) { SDATA(IOLENS_OP_FGETC, fp, int, REAL(fgetc)(fp), CH(r)) }
IOLENS_API int getc(FILE *fp) { SDATA(IOLENS_OP_FGETC, fp, int, REAL(getc)(fp), CH(r)) }
IOLENS_API int _IO_getc(FILE *fp) { SDATA(IOLENS_OP_FGETC, fp, int, REAL(_IO_getc)(fp), CH(r)) }
IOLENS_API int getchar(void) { SDATA(IOLENS_OP_FGETC, stdin, int, REAL(getchar)(), CH(r)) }
IOLENS_API int fgetc_unlocked(FILE *fp) { SDATA(IOLENS_OP_FGETC, fp, int, REAL(fgetc_unlocked)(fp), CH(r)) }
IOLENS_API int getc_unlocked(FILE *fp) { SDATA(IOLENS_OP_FGETC, fp, int, REAL(getc_unlocked)(fp), CH(r)) }
IOLENS_API int fputc(int ch, FILE *fp) { SDATA(IOLENS_OP_FPUTC, fp, int, REAL(fputc)(ch, fp), CHW(r)) }
IOLENS_API int putc(int ch, FILE *fp) { SDATA(IOLENS_OP_FPUTC, fp, int, REAL(putc)(ch, fp), CHW(r)) }
IOLENS_API int _IO_putc(int ch, FILE *fp) { SDATA(IOLENS_OP_FPUTC, fp, int, REAL(_IO_putc)(ch, fp), CHW(r)) }
IOLENS_API int putchar(int ch) { SDATA(IOLENS_OP_FPUTC, stdout, int, REAL(putchar)(ch), CHW(r)) }
IOLENS_API int fputc_unlocked(int ch, FILE *fp) { SDATA(IOLENS_OP_FPUTC, fp, int, REAL(fputc_unlocked)(ch, fp), CHW(r)) }
IOLENS_API int putc_unlocked(int ch, FILE *fp) { SDATA(IOLENS_OP_FPUTC, fp, int, REAL(putc_unlocked)(ch, fp), CHW(r)) }

/* Reached from inline getc/putc macros when the buffer is empty or full. */
IOLENS_API int __uflow(FILE *fp)
{
    SDATA(IOLENS_OP_STDIO_FILL, fp, int, REAL(__uflow)(fp),
          r == EOF ? 0 : (int64_t)(fp->_IO_read_end - fp->_IO_read_base))
}
/* Bytes that left the buffer: what was pending, plus ch, minus what is pending
 * afterwards (a line-buffered stream calls this for every character). */
IOLENS_API int __overflow(FILE *fp, int ch)
{
    int64_t before = fp ? (int64_t)(fp->_IO_write_ptr - fp->_IO_write_base) : 0;
    SDATA(IOLENS_OP_STDIO_DRAIN, fp, int, REAL(__overflow)(fp, ch),
          r == EOF ? -1 : before + (ch != EOF) - (int64_t)(fp->_IO_write_ptr - fp->_IO_write_base))
}

#define LINE(r) ((r) > 0 ? (int64_t)(r) : 0)
IOLENS_API ssize_t getline(char **l, size_t *n, FILE *fp) { SDATA(IOLENS_OP_GETDELIM, fp, ssize_t, REAL(getline)(l, n, fp), LINE(r)) }
IOLENS_API ssize_t getdelim(char **l, size_t *n, int d, FILE *fp) { SDATA(IOLENS_OP_GETDELIM, fp, ssize_t, REAL(getdelim)(l, n, d, fp), LINE(r)) }
IOLENS_API ssize_t __getdelim(char **l, size_t *n, int d, FILE *fp) { SDATA(IOLENS_OP_GETDELIM, fp, ssize_t, REAL(__getdelim)(l, n, d, fp), LINE(r)) }

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
IOLENS_API int iolens_vfscanf(FILE *fp, const char *f, va_list ap) { SDATA(IOLENS_OP_FSCANF, fp, int, REAL(vfscanf)(fp, f, ap), 0) }
IOLENS_API int __isoc99_vfscanf(FILE *fp, const char *f, va_list ap) { SDATA(IOLENS_OP_FSCANF, fp, int, REAL(__isoc99_vfscanf)(fp, f, ap), 0) }
IOLENS_API int iolens_fscanf(FILE *fp, const char *f, ...) { VARIADIC(iolens_vfscanf(fp, f, ap)) }
IOLENS_API int __isoc99_fscanf(FILE *fp, const char *f, ...) { VARIADIC(__isoc99_vfscanf(fp, f, ap)) }

/* ---- positioning and flushing ---- */

IOLENS_API int fflush(FILE *fp) { SMETA(IOLENS_OP_FFLUSH, fp, int, REAL(fflush)(fp)) }

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
    iolens_begin(&c, IOLENS_OP_FSEEK); \
    int r = call; \
    iolens_end(&c); \
    iolens_fdop(&c, iolens_fd(fp_fd(fp))); \
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
    iolens_begin(&c, IOLENS_OP_FSEEK);
    REAL(rewind)(fp);
    iolens_end(&c);
    iolens_fdop(&c, iolens_fd(fp_fd(fp)));
    seeked(fp, 0);
    iolens_ret(&c);
}
IOLENS_API long ftell(FILE *fp) { SMETA(IOLENS_OP_FTELL, fp, long, REAL(ftell)(fp)) }
IOLENS_API off_t ftello(FILE *fp) { SMETA(IOLENS_OP_FTELL, fp, off_t, REAL(ftello)(fp)) }
IOLENS_API off_t ftello64(FILE *fp) { SMETA(IOLENS_OP_FTELL, fp, off_t, REAL(ftello64)(fp)) }
