/*
 * File-backed memory maps.  Bytes touched through a map are invisible to an
 * interposer; the map itself (count and length) is recorded so the report can
 * say what it cannot see.  Anonymous maps pass straight through.
 */
#include "core.h"

#define MAPS 64
static struct {
    void *addr;
    size_t len;
    int fd;
} maps[MAPS];
static unsigned next_map;

static void *do_mmap(void *a, size_t n, int prot, int fl, int fd, off_t off,
                     void *(*real)(void *, size_t, int, int, int, off_t))
{
    if ((fl & MAP_ANONYMOUS) || fd < 0 || !iolens_on()) return real(a, n, prot, fl, fd, off);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_MMAP);
    void *r = real(a, n, prot, fl, fd, off);
    iolens_end(&c);
    struct iolens_fdstate *f = iolens_fd(fd);
    iolens_fdop(&c, f);
    if (r != MAP_FAILED) {
        if (f && f->rec) iolens_add(&f->rec->mmap_bytes, n);
        unsigned i = __atomic_fetch_add(&next_map, 1, __ATOMIC_RELAXED) % MAPS;
        maps[i].addr = r;
        maps[i].len = n;
        maps[i].fd = fd;
    }
    iolens_ret(&c);
    return r;
}

IOLENS_API void *mmap(void *a, size_t n, int prot, int fl, int fd, off_t off) { return do_mmap(a, n, prot, fl, fd, off, REAL(mmap)); }
IOLENS_API void *mmap64(void *a, size_t n, int prot, int fl, int fd, off_t off) { return do_mmap(a, n, prot, fl, fd, off, REAL(mmap64)); }

static int file_map(void *a)
{
    for (int i = 0; i < MAPS; i++)
        if (maps[i].addr == a) return i;
    return -1;
}

IOLENS_API int munmap(void *a, size_t n)
{
    int i = iolens_on() ? file_map(a) : -1;
    if (i < 0) return REAL(munmap)(a, n);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_MUNMAP);
    int r = REAL(munmap)(a, n);
    iolens_end(&c);
    iolens_fdop(&c, 0);
    maps[i].addr = 0;
    iolens_ret(&c);
    return r;
}

IOLENS_API int msync(void *a, size_t n, int fl)
{
    if (!iolens_on()) return REAL(msync)(a, n, fl);
    struct iolens_call c;
    iolens_begin(&c, IOLENS_OP_MSYNC);
    int r = REAL(msync)(a, n, fl);
    iolens_end(&c);
    iolens_fdop(&c, 0);
    iolens_ret(&c);
    return r;
}
