/* Writes through dup, dup2 and fcntl(F_DUPFD) copies land on one file. */
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[30] = {0};
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int a = dup(fd);
    int b = dup2(fd, 50);
    int c = fcntl(fd, F_DUPFD, 60);
    if (a < 0 || b != 50 || c < 60) return 1;
    close(fd);
    if (write(a, buf, 10) != 10 || write(b, buf, 20) != 20 || write(c, buf, 30) != 30) return 2;
    close(a);
    close(b);
    close(c);
    return 0;
}
