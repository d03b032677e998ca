/* A thread created late in its process's life: the main thread writes a byte to OUT1, computes for about 100 ms of
 * CPU, then starts a thread that writes a byte to OUT2, and joins it.  Usage: late_thread OUT1 OUT2 */
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static const char *out2;

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int put(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    int ok = write(fd, "x", 1) == 1;
    return close(fd) == 0 && ok ? 0 : -1;
}

static void *late(void *arg)
{
    (void)arg;
    return put(out2) == 0 ? 0 : (void *)1;
}

int main(int argc, char **argv)
{
    if (argc < 3) return 2;
    out2 = argv[2];
    if (put(argv[1])) return 3;
    volatile unsigned long spin = 0;
    for (double t0 = cpu_s(); cpu_s() - t0 < 0.1;) spin++;
    pthread_t t;
    void *rc;
    if (pthread_create(&t, 0, late, 0) || pthread_join(t, &rc) || rc) return 4;
    return 0;
}
