/* The worst case for an interposer: N one-byte write() or fputc() calls.
 * Usage: hotloop write|fputc N PATH */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = atol(argv[2]);
    if (!strcmp(argv[1], "write")) {
        int fd = open(argv[3], O_CREAT | O_WRONLY | O_TRUNC, 0644);
        for (long i = 0; i < n; i++)
            if (write(fd, "x", 1) != 1) return 1;
        close(fd);
    } else {
        FILE *fp = fopen(argv[3], "w");
        for (long i = 0; i < n; i++) fputc('x', fp);
        fclose(fp);
    }
    return 0;
}
