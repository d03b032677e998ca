/* *at calls through directory descriptors that are closed, reused and replaced,
 * and O_CREAT opens of new and existing files.  Run in an empty directory
 * holding `old` (4 bytes); exits 0 when every call behaved as without the
 * interposer (the test reads the capture for the paths and flags). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int touch(const char *p)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
    return fd < 0 ? -1 : close(fd);
}

int main(void)
{
    if (mkdir("A", 0755) || mkdir("B", 0755) || mkdir("C", 0755)) return 10;
    if (touch("A/a1") || touch("A/a2") || touch("B/b1") || touch("C/c1")) return 11;

    int a = open("A", O_RDONLY | O_DIRECTORY);
    struct stat st;
    if (a < 0 || unlinkat(a, "a1", 0) || fstatat(a, "a2", &st, 0)) return 12;
    close(a);
    int b = open("B", O_RDONLY | O_DIRECTORY); /* the lowest free number: A's */
    if (b != a) return 13;
    if (unlinkat(b, "b1", 0)) return 14;
    int c = open("C", O_RDONLY | O_DIRECTORY);
    if (c < 0 || dup2(c, b) != b) return 15; /* b now names C */
    if (unlinkat(b, "c1", 0)) return 16;
    close(b);
    close(c);

    /* a new file: created; an existing one: opened as it is, errno untouched by a successful open */
    int fd = open("new", O_WRONLY | O_CREAT, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1) return 17;
    close(fd);
    errno = EINTR;
    fd = open("old", O_RDWR | O_CREAT, 0600);
    if (fd < 0) return 18;
    if (errno != EINTR) return 19;
    char buf[8];
    if (read(fd, buf, sizeof buf) != 4) return 20; /* no O_TRUNC: the content is kept */
    close(fd);
    if (stat("old", &st) || (st.st_mode & 0777) != 0644) return 21; /* the mode asked is not applied */
    /* O_CREAT on an existing directory fails as it would without the interposer */
    errno = 0;
    if (open("A", O_RDONLY | O_CREAT, 0644) >= 0 || errno != EISDIR) return 22;
    return 0;
}
