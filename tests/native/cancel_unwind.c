/* A thread cancelled while blocked in a hooked read(): cancellation unwinds
 * through the interposer's frame (its .eh_frame, found through
 * .eh_frame_hdr: the library is linked without the C runtime's start files)
 * and runs the thread's cleanup handler.  Prints what happened. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int p[2];

static void cleanup(void *a)
{
    (void)a;
    puts("cleanup ran");
}

static void *blocked(void *a)
{
    (void)a;
    char c;
    pthread_cleanup_push(cleanup, 0);
    if (read(p[0], &c, 1) < 0) perror("read");
    pthread_cleanup_pop(0);
    return 0;
}

int main(void)
{
    if (pipe(p) != 0) return 1;
    pthread_t t;
    pthread_create(&t, 0, blocked, 0);
    usleep(100000);
    pthread_cancel(t);
    void *r;
    pthread_join(t, &r);
    printf("cancelled=%d\n", r == PTHREAD_CANCELED);
    return 0;
}
