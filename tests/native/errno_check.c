/* Return values and errno must be exactly what libc gives, profiled or not.
 * Prints one line per check; the test compares profiled and plain output. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHOW(expr) do { errno = 0; long r_ = (long)(expr); printf("%-40s r=%ld errno=%d\n", #expr, r_, errno); } while (0)

int main(void)
{
    struct stat st;
    char buf[8];
    SHOW(open("/nonexistent/x", O_RDONLY));
    SHOW(read(-1, buf, 8));
    SHOW(write(9999, buf, 8));
    SHOW(close(9999));
    SHOW(stat("/nonexistent/x", &st));
    SHOW(access("/nonexistent/x", F_OK));
    SHOW(unlink("/nonexistent/x"));
    SHOW(mkdir("/proc/x", 0700));
    SHOW(rename("/nonexistent/a", "/nonexistent/b"));
    SHOW(lseek(9999, 0, SEEK_SET));
    SHOW(fsync(9999));
    SHOW(dup(9999));
    SHOW(fopen("/nonexistent/x", "r") == NULL);
    SHOW(opendir("/nonexistent") == NULL);
    SHOW(ftruncate(9999, 0));
    int fd = open("/dev/null", O_RDONLY);
    SHOW(read(fd, buf, 8));
    SHOW(write(fd, buf, 8));
    /* A call that succeeds leaves errno as the program set it, on a recorded
     * file too: the first call, then the continuing ones (the quick path). */
#define KEEP(expr) do { errno = ERANGE; long r_ = (long)(expr); printf("%-40s r=%ld errno=%d\n", #expr, r_, errno); } while (0)
    int wfd = open("errno_check.tmp", O_CREAT | O_RDWR | O_TRUNC, 0600);
    for (int i = 0; i < 3; i++) KEEP(write(wfd, "abc", 3));
    for (int i = 0; i < 2; i++) KEEP(pwrite(wfd, "de", 2, 9 + 2 * i));
    KEEP(lseek(wfd, 0, SEEK_SET));
    for (int i = 0; i < 3; i++) KEEP(read(wfd, buf, 2));
    for (int i = 0; i < 2; i++) KEEP(pread(wfd, buf, 2, 1 + 2 * i));
    close(wfd);
    unlink("errno_check.tmp");
    return 0;
}
