/* Relative paths across changes of the working directory.  Run in an empty
 * directory holding X and Y: creates f there, 50 files n0..n49 (relative opens
 * in one directory), X/f after chdir, Y/f after fchdir, and g after chdir back
 * up; a chdir that fails changes nothing.  Exits 0 when every call worked. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static int touch(const char *p)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    return fd < 0 ? -1 : close(fd);
}

int main(void)
{
    char name[16];
    if (touch("f")) return 10;
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "n%d", i);
        if (touch(name)) return 11;
    }
    if (chdir("X") || touch("f")) return 12;
    int y = open("../Y", O_RDONLY | O_DIRECTORY);
    if (y < 0 || fchdir(y) || touch("f")) return 13;
    close(y);
    if (chdir("no-such-dir") == 0) return 14;
    if (chdir("..") || touch("g")) return 15;
    return 0;
}
