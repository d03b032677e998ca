/* Untimed stdio calls from threads, with exactly known counts.
 *   stdio_runs DIR
 * Thread A: 1000 fwrite of 410 bytes to DIR/a.  Thread B: 500 fwrite of 50
 * bytes to DIR/b1 and 500 of 300 bytes to DIR/b2, alternating.  Thread C: 100
 * fwrite of 10 bytes to DIR/c into a 1 MiB buffer (none reaches the kernel),
 * and ends.  Then the main thread flushes c and forks: the child writes 5
 * fputc to DIR/d and exits.  Exits 0 when every call worked. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char data[512];
static FILE *fa, *fb1, *fb2, *fc;
static char cbuf[1 << 20];

static void *thread_a(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        if (fwrite(data, 1, 410, fa) != 410) return (void *)1;
    return 0;
}
static void *thread_b(void *arg)
{
    (void)arg;
    for (int i = 0; i < 500; i++)
        if (fwrite(data, 1, 50, fb1) != 50 || fwrite(data, 1, 300, fb2) != 300) return (void *)1;
    return 0;
}
static void *thread_c(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++)
        if (fwrite(data, 1, 10, fc) != 10) return (void *)1;
    return 0; /* its run is still open: the image's end or its next call must count it */
}

static FILE *open_in(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return fopen(p, "w");
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    memset(data, 'x', sizeof data);
    fa = open_in(argv[1], "a");
    fb1 = open_in(argv[1], "b1");
    fb2 = open_in(argv[1], "b2");
    fc = open_in(argv[1], "c");
    if (!fa || !fb1 || !fb2 || !fc || setvbuf(fc, cbuf, _IOFBF, sizeof cbuf)) return 3;
    /* a first call of each on this thread: the runs continue a file's calls */
    if (fwrite(data, 1, 1, fa) != 1 || fwrite(data, 1, 1, fb1) != 1 || fwrite(data, 1, 1, fb2) != 1 ||
        fwrite(data, 1, 1, fc) != 1)
        return 4;
    pthread_t t[3];
    void *(*fn[3])(void *) = {thread_a, thread_b, thread_c};
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t[i], 0, fn[i], 0)) return 5;
    for (int i = 0; i < 3; i++) {
        void *r;
        if (pthread_join(t[i], &r) || r) return 6;
    }
    if (fflush(fc)) return 7;
    pid_t pid = fork();
    if (pid < 0) return 8;
    if (pid == 0) {
        FILE *fd = open_in(argv[1], "d");
        for (int i = 0; i < 5; i++) fputc('d', fd);
        fclose(fd);
        _exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) return 9;
    return fclose(fa) || fclose(fb1) || fclose(fb2) || fclose(fc) ? 10 : 0;
}
