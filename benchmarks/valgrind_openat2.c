/* For benchmarks/native_ab.py --callgrind only: valgrind (3.19) does not know openat2, with which the replayer
 * opens every file; preloaded, this turns it into openat (the same calls for both builds measured). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <sys/syscall.h>
long syscall(long n, ...)
{
    va_list ap;
    va_start(ap, n);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    if (n == SYS_openat2) {
        struct open_how *h = (struct open_how *)a[2];
        return openat((int)a[0], (const char *)a[1], (int)h->flags, (mode_t)h->mode);
    }
    long ret;
    register long r10 __asm__("r10") = a[3], r8 __asm__("r8") = a[4], r9 __asm__("r9") = a[5];
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if (ret < 0 && ret > -4096) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}
