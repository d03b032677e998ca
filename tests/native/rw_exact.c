/* N writes of S bytes, fsync, then N reads (+1 at EOF), a seek and 4 preads. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *path = argv[1];
    int n = atoi(argv[2]), s = atoi(argv[3]);
    char *buf = malloc((size_t)s);
    memset(buf, 'x', (size_t)s);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < n; i++)
        if (write(fd, buf, (size_t)s) != s) return 1;
    fsync(fd);
    close(fd);
    fd = open(path, O_RDONLY);
    for (int i = 0; i < n; i++)
        if (read(fd, buf, (size_t)s) != s) return 2;
    if (read(fd, buf, (size_t)s) != 0) return 3;
    lseek(fd, 0, SEEK_SET);
    for (int k = 0; k < 4; k++)
        if (pread(fd, buf, (size_t)s, (off_t)k * s) != s) return 4;
    close(fd);
    return 0;
}
