/* The shared libzstd timed by a plain C loop, to check iolens's measurer and `zstd -b` against a third timer.
 *
 *   cc -O2 -o zstd_loop benchmarks/zstd_loop.c -lzstd && ./zstd_loop FILE [LEVEL]
 *
 * Compresses FILE once at LEVEL (default 3), then decompresses it for one second at a time, three times each way:
 * with ZSTD_decompressDCtx (what iolens's same-library codec calls) and with ZSTD_decompressStream (what `zstd -b`
 * calls), printing the best single pass and the one-second average in MB/s (10^6 bytes of decompressed data).
 * Needs libzstd-dev. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [LEVEL]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    rewind(f);
    char *src = malloc(n), *out = malloc(n);
    size_t cap = ZSTD_compressBound(n);
    char *cb = malloc(cap);
    if (!src || !out || !cb || fread(src, 1, n, f) != n) {
        fprintf(stderr, "%s: cannot read it into memory\n", argv[1]);
        return 2;
    }
    fclose(f);
    memset(out, 0xE5, n);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, argc > 2 ? atoi(argv[2]) : 3);
    size_t cs = ZSTD_compress2(cc, cb, cap, src, n);
    if (ZSTD_isError(cs)) {
        fprintf(stderr, "compression failed: %s\n", ZSTD_getErrorName(cs));
        return 1;
    }
    ZSTD_DCtx *d = ZSTD_createDCtx();
    printf("libzstd %s, %zu -> %zu bytes\n", ZSTD_versionString(), n, cs);
    for (int stream = 0; stream < 2; stream++)
        for (int r = 0; r < 3; r++) {
            double t0 = now(), best = 1e9, b = t0;
            int k = 0;
            while (b - t0 < 1.0) {
                double a = now();
                if (!stream) {
                    ZSTD_decompressDCtx(d, out, n, cb, cs);
                } else {
                    ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
                    ZSTD_inBuffer in = {cb, cs, 0};
                    ZSTD_outBuffer o = {out, n, 0};
                    size_t more = 1;
                    while (more && !ZSTD_isError(more)) more = ZSTD_decompressStream(d, &o, &in);
                }
                b = now();
                k++;
                if (b - a < best) best = b - a;
            }
            printf("%-21s best %6.0f MB/s, 1 s average %6.0f MB/s\n",
                   stream ? "ZSTD_decompressStream" : "ZSTD_decompressDCtx", (double)n / best / 1e6,
                   (double)n * k / (b - t0) / 1e6);
        }
    if (memcmp(src, out, n) != 0) {
        fprintf(stderr, "round trip differs\n");
        return 1;
    }
    return 0;
}
