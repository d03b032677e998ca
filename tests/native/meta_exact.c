/* Metadata calls with known counts: mkdir, create, stat family, access,
 * readdir, mmap, ftruncate, rename, unlink, rmdir. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char sub[4096], f[4096], g[4096];
    snprintf(sub, sizeof sub, "%s/sub", argv[1]);
    snprintf(f, sizeof f, "%s/f", sub);
    snprintf(g, sizeof g, "%s/g", sub);
    struct stat st;
    struct statx sx;
    if (mkdir(sub, 0755)) return 1;
    int fd = open(f, O_CREAT | O_WRONLY | O_EXCL, 0644);
    if (write(fd, "0123456789", 10) != 10) return 2;
    close(fd);
    if (stat(f, &st) || lstat(f, &st) || access(f, R_OK)) return 3;
    if (statx(AT_FDCWD, f, 0, STATX_SIZE, &sx)) return 3;
    if (stat("/nonexistent/iolens", &st) == 0) return 3; /* a failed probe: counted, no record */
    fd = open(f, O_RDWR);
    if (fstat(fd, &st)) return 4;
    void *m = mmap(0, 10, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return 5;
    munmap(m, 10);
    if (ftruncate(fd, 100)) return 6;
    close(fd);
    DIR *d = opendir(sub);
    int entries = 0;
    while (readdir(d)) entries++;
    closedir(d);
    if (entries != 3) return 7;
    if (rename(f, g) || unlink(g) || rmdir(sub)) return 8;
    return 0;
}
