/* Regressions found in review, one mode each (argv[1]); argv[2] is a scratch directory.
 *   sigstat   a signal handler calls stat() while the program writes to new pipes
 *   errno     errno after a successful O_CREAT open / fopen "w" is what libc left (0 here)
 *   closedir  closedir(NULL) fails with EINVAL instead of crashing
 *   symlink   lstat a symlink, then read the file through it
 *   linebuf   1000 putc_unlocked calls on a line-buffered stream
 *   append    append 10 bytes to a 100-byte file */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static void on_alarm(int sig)
{
    struct stat st;
    (void)sig;
    stat("/", &st);
}

int main(int argc, char **argv)
{
    char p[4096], q[4096], buf[8192];
    const char *mode = argv[1], *dir = argv[2];
    if (!strcmp(mode, "sigstat")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, 0);
        struct itimerval it = {{0, 200}, {0, 200}};
        setitimer(ITIMER_REAL, &it, 0);
        for (int i = 0; i < 20000; i++) {
            int fds[2];
            if (pipe(fds)) return 1;
            if (write(fds[1], "x", 1) != 1) return 2;
            close(fds[0]);
            close(fds[1]);
        }
        return 0;
    }
    if (!strcmp(mode, "errno")) {
        snprintf(p, sizeof p, "%s/new.txt", dir);
        errno = 0;
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        if (fd < 0 || errno != 0) return 3;
        close(fd);
        snprintf(p, sizeof p, "%s/new2.txt", dir);
        errno = 0;
        FILE *fp = fopen(p, "w");
        if (!fp || errno != 0) return 4;
        fclose(fp);
        return 0;
    }
    if (!strcmp(mode, "closedir")) {
        errno = 0;
        return closedir(NULL) == -1 && errno == EINVAL ? 0 : 5;
    }
    if (!strcmp(mode, "symlink")) {
        snprintf(p, sizeof p, "%s/target.bin", dir);
        snprintf(q, sizeof q, "%s/link.bin", dir);
        struct stat st;
        if (lstat(q, &st) || !S_ISLNK(st.st_mode)) return 6;
        int fd = open(q, O_RDONLY);
        while (read(fd, buf, sizeof buf) > 0) {
        }
        close(fd);
        return 0;
    }
    if (!strcmp(mode, "linebuf")) {
        snprintf(p, sizeof p, "%s/lines.txt", dir);
        FILE *fp = fopen(p, "w");
        setvbuf(fp, 0, _IOLBF, 4096);
        for (int i = 0; i < 1000; i++) putc_unlocked(i % 50 == 49 ? '\n' : 'a', fp);
        fclose(fp);
        return 0;
    }
    if (!strcmp(mode, "append")) {
        snprintf(p, sizeof p, "%s/log.txt", dir);
        int fd = open(p, O_WRONLY | O_APPEND);
        if (write(fd, "0123456789", 10) != 10) return 7;
        close(fd);
        return 0;
    }
    return 99;
}
