/* Writes 1234 bytes, then dies: argv[2] is segv, abort, term, int, or sleep
 * (waits to be killed); or pipe / pipe-sigaction: writes to a pipe with no
 * reader, with a SIGPIPE handler of its own that puts the default back and
 * raises the signal again (gzip's cleanup on a `zcat | head`), set with
 * signal() or sigaction(). */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void cleanup(int sig)
{
    signal(sig, SIG_DFL);
    raise(sig);
}

static void cleanup_sigaction(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, 0);
    raise(sig);
}

int main(int argc, char **argv)
{
    char buf[1234] = {0};
    int fd = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return 1;
    if (!strcmp(argv[2], "segv")) *(volatile int *)0 = 1;
    if (!strcmp(argv[2], "abort")) raise(SIGABRT);
    if (!strcmp(argv[2], "term")) raise(SIGTERM);
    if (!strcmp(argv[2], "int")) raise(SIGINT);
    if (!strncmp(argv[2], "pipe", 4)) {
        if (argv[2][4]) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = cleanup_sigaction;
            sigaction(SIGPIPE, &sa, 0);
        } else {
            signal(SIGPIPE, cleanup);
        }
        int p[2];
        if (pipe(p) != 0) return 2;
        close(p[0]);
        if (write(p[1], "x", 1) >= 0) return 3;
        return 4; /* EPIPE without the signal */
    }
    if (!strcmp(argv[2], "sleep")) {
        write(1, "ready\n", 6);
        sleep(60);
    }
    return 0;
}
