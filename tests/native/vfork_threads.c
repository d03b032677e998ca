/* vfork + exec in a loop from a threaded program.
 * usage: vfork_threads NTHREADS NLOOPS PROGRAM
 * NTHREADS threads sleep while the main thread runs PROGRAM NLOOPS times
 * through vfork + execv and waits for each; prints the seconds taken. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int done;

static void *idle(void *arg)
{
    (void)arg;
    char touch[64 << 10]; /* a stack in use, as a worker's would be */
    memset(touch, 1, sizeof touch);
    while (!done) usleep(1000);
    return (void *)(long)touch[100];
}

int main(int argc, char **argv)
{
    if (argc < 4) return 2;
    int nt = atoi(argv[1]), n = atoi(argv[2]);
    pthread_t t[64];
    if (nt > 64) nt = 64;
    for (int i = 0; i < nt; i++) pthread_create(&t[i], 0, idle, 0);
    char *heap = malloc(64 << 20); /* a working set the parent keeps writing */
    memset(heap, 1, 64 << 20);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        char *args[] = {argv[3], 0};
        pid_t p = vfork();
        if (p == 0) {
            execv(argv[3], args);
            _exit(127);
        }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
        heap[(i * 4096) % (64 << 20)]++;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    done = 1;
    for (int i = 0; i < nt; i++) pthread_join(t[i], 0);
    printf("%.6f\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
    free(heap);
    return 0;
}
