/* T threads, each writes N blocks of 4 KiB to its own file. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *dir;
static int n;

static void *work(void *arg)
{
    char p[4096], buf[4096] = {0};
    snprintf(p, sizeof p, "%s/t%ld.dat", dir, (long)arg);
    int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    for (int i = 0; i < n; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) exit(1);
    fdatasync(fd);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    dir = argv[1];
    int t = atoi(argv[2]);
    n = atoi(argv[3]);
    pthread_t th[64];
    for (long i = 0; i < t; i++) pthread_create(&th[i], 0, work, (void *)i);
    for (int i = 0; i < t; i++) pthread_join(th[i], 0);
    return 0;
}
