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
    return 0;
}
