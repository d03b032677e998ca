/* Known I/O with known sleeps, for the replay tests: the main thread writes 8 blocks of 64 KiB with 30 ms of
 * sleep between them, fsyncs, and a second thread reads the input file in 4 reads of 128 KiB with 50 ms sleeps.
 * Usage: replay_known INPUT OUTPUT  (INPUT must hold at least 512 KiB) */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *in_path;

static void ms(int n)
{
    struct timespec ts = {n / 1000, (long)(n % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *reader(void *arg)
{
    (void)arg;
    static char buf[131072];
    int fd = open(in_path, O_RDONLY);
    if (fd < 0) exit(2);
    for (int i = 0; i < 4; i++) {
        ms(50);
        if (pread(fd, buf, sizeof buf, (off_t)i * (off_t)sizeof buf) != (ssize_t)sizeof buf) exit(3);
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) return 1;
    in_path = argv[1];
    pthread_t th;
    pthread_create(&th, NULL, reader, NULL);
    static char buf[65536];
    memset(buf, 'x', sizeof buf);
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 4;
    for (int i = 0; i < 8; i++) {
        ms(30);
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return 5;
    }
    fsync(fd);
    close(fd);
    pthread_join(th, NULL);
    return 0;
}
