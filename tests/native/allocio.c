/* A preloadable calloc that does file I/O before allocating, as some
 * allocators do at start-up: dlsym may call it while the interposer is
 * resolving a symbol.  Build: cc -shared -fPIC -o liballocio.so allocio.c */
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

extern void *__libc_calloc(size_t, size_t);

void *calloc(size_t n, size_t size)
{
    char buf[64];
    int fd = open("/proc/self/stat", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, buf, sizeof buf) < 0) buf[0] = 0;
        close(fd);
    }
    return __libc_calloc(n, size);
}

__attribute__((constructor)) static void early(void)
{
    /* I/O from a constructor that may run before the interposer's */
    char buf[16];
    int fd = open("/proc/self/comm", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, buf, sizeof buf) < 0) buf[0] = 0;
        close(fd);
    }
}
