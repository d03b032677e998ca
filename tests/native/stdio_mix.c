/* Buffered stdio calls that continue each other, and calls that do not.
 *   stdio_mix DIR
 * 500 one-byte fputc to DIR/a and DIR/b, alternating; an fseek of a back to
 * 0 and 100 more fputc there; then a second thread and this one each write
 * 1,000 fputc to DIR/c at once (the stream's lock orders them).  Every
 * stream has a 1 MiB buffer: no call but the closes reaches the kernel.
 * Exits 0 when every call worked. */
#include <pthread.h>
#include <stdio.h>

static FILE *fa, *fb, *fc;
static char abuf[1 << 20], bbuf[1 << 20], cbuf[1 << 20];

static void *writer(void *arg)
{
    for (int i = 0; i < 1000; i++)
        if (fputc('c', fc) == EOF) return arg;
    return 0;
}

static FILE *open_in(const char *dir, const char *name, char *buf)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f && setvbuf(f, buf, _IOFBF, 1 << 20)) return 0;
    return f;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    fa = open_in(argv[1], "a", abuf);
    fb = open_in(argv[1], "b", bbuf);
    fc = open_in(argv[1], "c", cbuf);
    if (!fa || !fb || !fc) return 3;
    for (int i = 0; i < 500; i++)
        if (fputc('a', fa) == EOF || fputc('b', fb) == EOF) return 4;
    if (fseek(fa, 0, SEEK_SET)) return 5;
    for (int i = 0; i < 100; i++)
        if (fputc('A', fa) == EOF) return 6;
    pthread_t t;
    if (pthread_create(&t, 0, writer, (void *)1)) return 7;
    int bad = writer((void *)1) != 0;
    void *rt;
    if (pthread_join(t, &rt) || rt || bad) return 8;
    return fclose(fa) || fclose(fb) || fclose(fc) ? 9 : 0;
}
