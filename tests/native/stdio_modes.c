/* stdio buffering modes with exactly known library calls and system calls.
 *   stdio_modes DIR   writes DIR/full, DIR/line, DIR/unbuf, DIR/big, DIR/shared, then reads DIR/full back
 * The system calls each step makes are listed beside it (glibc's stdio). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char path[4096];
static const char *at(const char *dir, const char *name)
{
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static FILE *shared;
static void *putter(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++) fputc('t', shared);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    const char *dir = argv[1];
    static char fbuf[1000], lbuf[1000], bbuf[1000], sbuf[4096], rbuf[1000];
    char data[5000];
    memset(data, 'd', sizeof data);

    /* fully buffered, 1000 bytes: 10000 fputc -> 10 writes of 1000 (the last at fclose) */
    FILE *fp = fopen(at(dir, "full"), "w");
    setvbuf(fp, fbuf, _IOFBF, sizeof fbuf);
    for (int i = 0; i < 10000; i++) fputc('x', fp);
    fclose(fp);

    /* line buffered: 100 fputs of a line -> 100 writes of 10; 5 fputc and a newline -> 1 write of 6 */
    fp = fopen(at(dir, "line"), "w");
    setvbuf(fp, lbuf, _IOLBF, sizeof lbuf);
    for (int i = 0; i < 100; i++) fputs("abcdefghi\n", fp);
    for (int i = 0; i < 5; i++) fputc('a', fp);
    fputc('\n', fp);
    fclose(fp);

    /* unbuffered: 50 fputs -> 50 writes of 5; 20 fputc -> 20 writes of 1 */
    fp = fopen(at(dir, "unbuf"), "w");
    setvbuf(fp, 0, _IONBF, 0);
    for (int i = 0; i < 50; i++) fputs("hello", fp);
    for (int i = 0; i < 20; i++) fputc('u', fp);
    fclose(fp);

    /* past the buffer: fwrite 300 (buffered), fwrite 5000 -> write 1000 (the buffer) + write 4000 (direct),
     * 300 left -> fflush: write 300; fprintf of 20 -> fclose: write 20 */
    fp = fopen(at(dir, "big"), "w");
    setvbuf(fp, bbuf, _IOFBF, sizeof bbuf);
    fwrite(data, 1, 300, fp);
    fwrite(data, 1, 5000, fp);
    fflush(fp);
    fprintf(fp, "%020d", 7);
    fclose(fp);

    /* one stream, four threads: 40000 fputc into 4096 -> 9 writes of 4096 and 1 of 3136 at fclose */
    shared = fopen(at(dir, "shared"), "w");
    setvbuf(shared, sbuf, _IOFBF, sizeof sbuf);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, putter, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    fclose(shared);

    /* reading full (10000 bytes) with a 1000-byte buffer:
     * 4 x fread 2500 -> reads 2000+1000, 2000, 2000+1000, 2000; a 5th fread -> read 0 (end of file);
     * then rewind, 10000 fgetc -> 10 reads of 1000, one more fgetc -> read 0 */
    fp = fopen(at(dir, "full"), "r");
    setvbuf(fp, rbuf, _IOFBF, sizeof rbuf);
    for (int i = 0; i < 5; i++) fread(data, 1, 2500, fp);
    fclose(fp);
    fp = fopen(at(dir, "full"), "r");
    setvbuf(fp, rbuf, _IOFBF, sizeof rbuf);
    long n = 0;
    while (fgetc(fp) != EOF) n++;
    fclose(fp);
    return n == 10000 ? 0 : 1;
}
