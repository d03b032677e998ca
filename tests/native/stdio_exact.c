/* stdio with known byte counts: 1092 bytes written, then read back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    char buf[100];
    memset(buf, 'a', sizeof buf);
    FILE *fp = fopen(argv[1], "w");
    for (int i = 0; i < 10; i++) fwrite(buf, 1, 100, fp);       /* 1000 */
    for (int i = 0; i < 50; i++) fputc('b', fp);                /* 50 */
    for (int i = 0; i < 3; i++) fputs("hello\n", fp);           /* 18 */
    for (int i = 0; i < 4; i++) fprintf(fp, "%05d\n", i);       /* 24 */
    fclose(fp);
    fp = fopen(argv[1], "r");
    if (fread(buf, 1, 100, fp) != 100) return 1;                /* 100 */
    for (int i = 0; i < 5; i++) fgetc(fp);                      /* 5 */
    fseek(fp, 1050, SEEK_SET);
    char line[64];
    if (!fgets(line, sizeof line, fp)) return 2;                /* "hello\n": 6 */
    char *l = 0;
    size_t cap = 0;
    if (getline(&l, &cap, fp) != 6) return 3;                   /* 6 */
    if (ftell(fp) != 1062) return 4;
    rewind(fp);
    fclose(fp);
    free(l);
    return 0;
}
