/* The worst cases for an interposer: N tiny calls of one kind.
 * Usage: hotloop write|fputc|fread|stat|openclose N PATH
 *   write      N one-byte write() calls to PATH
 *   fputc      N fputc() calls to PATH (buffered: one flush per 4 KiB)
 *   fread      N one-byte fread() calls from PATH (which must hold N bytes)
 *   stat       N stat() calls of PATH
 *   openclose  N open()+close() of PATH */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) return 2;
    long n = atol(argv[2]);
    const char *mode = argv[1], *path = argv[3];
    if (!strcmp(mode, "write")) {
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        for (long i = 0; i < n; i++)
            if (write(fd, "x", 1) != 1) return 1;
        close(fd);
    } else if (!strcmp(mode, "fputc")) {
        FILE *fp = fopen(path, "w");
        for (long i = 0; i < n; i++) fputc('x', fp);
        fclose(fp);
    } else if (!strcmp(mode, "fread")) {
        FILE *fp = fopen(path, "r");
        char c;
        for (long i = 0; i < n; i++)
            if (fread(&c, 1, 1, fp) != 1) return 1;
        fclose(fp);
    } else if (!strcmp(mode, "stat")) {
        struct stat st;
        for (long i = 0; i < n; i++)
            if (stat(path, &st) != 0) return 1;
    } else if (!strcmp(mode, "openclose")) {
        for (long i = 0; i < n; i++) {
            int fd = open(path, O_RDONLY);
            if (fd < 0) return 1;
            close(fd);
        }
    } else {
        return 2;
    }
    return 0;
}
