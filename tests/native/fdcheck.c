/* What a program sees of its descriptors, printed for comparison with and
 * without the profiler.
 *   fdcheck close N    close(N) on a descriptor never opened: "close=-1 EBADF"
 *   fdcheck emfile     opens of /dev/null until EMFILE: "opens=K EMFILE"
 *   fdcheck list       the entries of /proc/self/fd (without the listing's own)
 *   fdcheck dup2 N     dup2(1, N), write through N, close N
 *   fdcheck grow N how write N bytes to "grown" in 1 KiB steps; past RLIMIT_FSIZE
 *                      how=die: the default action, ign: SIGXFSZ ignored,
 *                      catch: a handler that counts; prints what write saw */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t caught;
static void on_xfsz(int sig) { caught += sig == SIGXFSZ; }

static const char *ename(int e)
{
    return e == EBADF ? "EBADF" : e == EMFILE ? "EMFILE" : e == EFBIG ? "EFBIG" : strerror(e);
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    if (!strcmp(argv[1], "close") && argc > 2) {
        int r = close(atoi(argv[2]));
        printf("close=%d %s\n", r, r ? ename(errno) : "ok");
    } else if (!strcmp(argv[1], "emfile")) {
        int n = 0, fd;
        while ((fd = open("/dev/null", O_RDONLY)) >= 0) n++;
        printf("opens=%d %s\n", n, ename(errno));
    } else if (!strcmp(argv[1], "list")) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        if (!d) return 1;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d)) printf("%s\n", e->d_name);
        closedir(d);
    } else if (!strcmp(argv[1], "dup2") && argc > 2) {
        int n = atoi(argv[2]);
        fflush(stdout);
        if (dup2(1, n) != n) return 1;
        if (write(n, "through\n", 8) != 8) return 1;
        printf("close=%d\n", close(n));
    } else if (!strcmp(argv[1], "grow") && argc > 3) {
        if (!strcmp(argv[3], "ign")) signal(SIGXFSZ, SIG_IGN);
        if (!strcmp(argv[3], "catch")) signal(SIGXFSZ, on_xfsz);
        int fd = open("grown", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[1024];
        memset(buf, 'g', sizeof buf);
        long n = atol(argv[2]), done = 0;
        ssize_t w = 0;
        while (done < n && (w = write(fd, buf, (size_t)(n - done < 1024 ? n - done : 1024))) > 0) done += w;
        printf("written=%ld %s caught=%d\n", done, w < 0 ? ename(errno) : "ok", (int)caught);
        close(fd);
    } else {
        return 2;
    }
    return 0;
}
