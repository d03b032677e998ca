/* Writes 1234 bytes, then dies: argv[2] is segv, abort, term, int, or sleep
 * (waits to be killed). */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[1234] = {0};
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return 1;
    if (!strcmp(argv[2], "segv")) *(volatile int *)0 = 1;
    if (!strcmp(argv[2], "abort")) raise(SIGABRT);
    if (!strcmp(argv[2], "term")) raise(SIGTERM);
    if (!strcmp(argv[2], "int")) raise(SIGINT);
    if (!strcmp(argv[2], "sleep")) {
        write(1, "ready\n", 6);
        sleep(60);
    }
    return 0;
}
