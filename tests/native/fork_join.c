/* Threads created for one job and joined, and a thread that works alongside the main thread.
 * Usage: fork_join DIR
 *   The main thread writes DIR/main; three times it starts a thread that writes DIR/spillN, fdatasyncs and closes
 *   it, joins that thread and writes DIR/main again.  Then it starts a thread that writes DIR/pool twenty times,
 *   2 ms apart, while it writes DIR/main twenty times, 2 ms apart, and joins it. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static char block[65536];

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void *spill(void *arg)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/spill%ld", dir, (long)arg);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, block, sizeof block) != sizeof block || fdatasync(fd) || close(fd)) return (void *)1;
    return 0;
}

static void *pool(void *arg)
{
    (void)arg;
    char path[4096];
    snprintf(path, sizeof path, "%s/pool", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return (void *)1;
    for (int i = 0; i < 20; i++) {
        if (write(fd, block, 4096) != 4096) return (void *)1;
        pause_ms(2);
    }
    return close(fd) ? (void *)1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    dir = argv[1];
    memset(block, 'x', sizeof block);
    char path[4096];
    snprintf(path, sizeof path, "%s/main", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, block, 4096) != 4096) return 3;
    for (long i = 0; i < 3; i++) {
        pthread_t t;
        void *rc;
        if (pthread_create(&t, 0, spill, (void *)i) || pthread_join(t, &rc) || rc) return 4;
        if (write(fd, block, 4096) != 4096) return 5;
    }
    pthread_t t;
    void *rc;
    if (pthread_create(&t, 0, pool, 0)) return 6;
    for (int i = 0; i < 20; i++) {
        if (write(fd, block, 4096) != 4096) return 7;
        pause_ms(2);
    }
    if (pthread_join(t, &rc) || rc) return 8;
    return close(fd) ? 9 : 0;
}
