/*
 * Data content for writes, generated once per job into a pool.
 *
 * - random: xoshiro256** output, incompressible;
 * - zeros;
 * - fastq: FASTQ-like text.  Reads of 150 bases are sampled from a synthetic
 *   reference (GC drifting between 35% and 60%), with substitution errors and
 *   Illumina 4-level binned qualities (Q2/Q12/Q23/Q37, as NovaSeq writes them)
 *   that fall toward the 3' end, and Illumina-style read names;
 * - sam: coordinate-sorted SAM-like text from the same reference (flags,
 *   CIGARs with soft clips, mate fields, NM/MD/AS/XS/RG tags);
 * - template: the bytes of a given file, repeated to fill the pool.
 *
 * Compressing filesystems are only measured honestly on genomic-like data:
 * random data does not compress and zeros compress absurdly well.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const CONTENT_NAMES[CONTENT__COUNT] = {
#define X(n, d) #n,
    BENCH_CONTENTS(X)
#undef X
};

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

void rng_seed(rng_t *r, uint64_t seed)
{
    /* splitmix64 to spread the seed */
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        r->s[i] = z ^ (z >> 31);
    }
}

static inline double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static inline uint64_t rng_below(rng_t *r, uint64_t n) { return n ? rng_next(r) % n : 0; }

static void fill_random(unsigned char *p, size_t n, rng_t *r)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = rng_next(r);
        memcpy(p + i, &v, 8);
    }
    if (i < n) {
        uint64_t v = rng_next(r);
        memcpy(p + i, &v, n - i);
    }
}

/* ---- genomic-like text ---------------------------------------------------- */

#define REF_LEN (4u << 20)
#define READ_LEN 150

typedef struct {
    unsigned char *ref;
    rng_t r;
} genome;

static int genome_make(genome *g, uint64_t seed)
{
    g->ref = malloc(REF_LEN);
    if (!g->ref)
        return -1;
    rng_seed(&g->r, seed ^ 0x5eedull);
    double gc = 0.45;
    for (size_t i = 0; i < REF_LEN; i++) {
        if (i % 10000 == 0) { /* GC drifts by region */
            gc += (rng_unit(&g->r) - 0.5) * 0.06;
            gc = gc < 0.35 ? 0.35 : gc > 0.60 ? 0.60 : gc;
        }
        uint64_t x = rng_next(&g->r);
        double u = (double)(x >> 11) * (1.0 / 9007199254740992.0);
        int pick = (int)(x & 1);
        g->ref[i] = u < gc ? (pick ? 'G' : 'C') : (pick ? 'A' : 'T');
    }
    /* repeats: copies of 1-5 kb elsewhere */
    for (int k = 0; k < 40; k++) {
        size_t len = 1000 + rng_below(&g->r, 4000);
        size_t src = rng_below(&g->r, REF_LEN - len), dst = rng_below(&g->r, REF_LEN - len);
        memmove(g->ref + dst, g->ref + src, len);
    }
    return 0;
}

static const char QCH[4] = {'#', '-', '8', 'F'}; /* Q2, Q12, Q23, Q37 */
static const double QERR[4] = {0.63, 0.063, 0.005, 0.0002};

/* Quality bins for one read: mostly Q37, falling out of the top bin toward the 3' end, with rare dips. */
static void read_quals(rng_t *r, int *q)
{
    for (int i = 0; i < READ_LEN; i++) {
        double pos = (double)i / (READ_LEN - 1);
        double p_bad = 0.02 + 0.10 * pos * pos, u = rng_unit(r);
        q[i] = u < p_bad * 0.08 ? 0 : u < p_bad * 0.35 ? 1 : u < p_bad ? 2 : 3;
    }
    if (rng_unit(r) < 0.03) {
        int s = (int)rng_below(r, READ_LEN - 10);
        for (int i = s; i < s + 10; i++)
            if (q[i] > 1)
                q[i] = 1;
    }
}

static const char COMPL[256] = {['A'] = 'T', ['C'] = 'G', ['G'] = 'C', ['T'] = 'A', ['N'] = 'N'};

/* Sequence at pos with errors drawn from the qualities; returns the edit count. */
static int read_seq(genome *g, size_t pos, int rev, const int *q, char *out)
{
    int nm = 0;
    for (int i = 0; i < READ_LEN; i++) {
        char b = rev ? COMPL[g->ref[pos + READ_LEN - 1 - i]] : (char)g->ref[pos + i];
        if (rng_unit(&g->r) < QERR[q[i]]) {
            static const char B[4] = {'A', 'C', 'G', 'T'};
            char nb;
            do
                nb = B[rng_below(&g->r, 4)];
            while (nb == b);
            b = q[i] == 0 && rng_unit(&g->r) < 0.3 ? 'N' : nb;
            nm++;
        }
        out[i] = b;
    }
    return nm;
}

typedef struct {
    unsigned char *p;
    size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->n >= b->cap)
        return;
    if (n > b->cap - b->n)
        n = b->cap - b->n;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void fill_fastq(unsigned char *p, size_t n, uint64_t seed)
{
    genome g;
    if (genome_make(&g, seed)) {
        memset(p, 'N', n);
        return;
    }
    sbuf b = {p, 0, n};
    int q[READ_LEN];
    char seq[READ_LEN], line[256];
    unsigned tile = 1101, x = 1000, y = 1000;
    uint64_t k = 0;
    while (b.n < b.cap) {
        if (++k % 4000 == 0) {
            tile++;
            y = 1000;
        }
        x = 1000 + (unsigned)rng_below(&g.r, 30000);
        y += 1 + (unsigned)rng_below(&g.r, 40);
        for (int mate = 1; mate <= 2; mate++) {
            read_quals(&g.r, q);
            size_t pos = rng_below(&g.r, REF_LEN - READ_LEN);
            read_seq(&g, pos, (int)(rng_next(&g.r) & 1), q, seq);
            int len = snprintf(line, sizeof line, "@A00123:8:HFWT5DSXY:4:%u:%u:%u %d:N:0:CGATGT+TTAGGC\n", tile, x,
                               y, mate);
            sb_put(&b, line, (size_t)len);
            sb_put(&b, seq, READ_LEN);
            sb_put(&b, "\n+\n", 3);
            for (int i = 0; i < READ_LEN; i++)
                line[i] = QCH[q[i]];
            line[READ_LEN] = '\n';
            sb_put(&b, line, READ_LEN + 1);
        }
    }
    free(g.ref);
}

static void fill_sam(unsigned char *p, size_t n, uint64_t seed)
{
    genome g;
    if (genome_make(&g, seed)) {
        memset(p, 'N', n);
        return;
    }
    sbuf b = {p, 0, n};
    char line[1024], seq[READ_LEN], qual[READ_LEN + 1];
    int q[READ_LEN];
    int len = snprintf(line, sizeof line,
                       "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:%u\n@RG\tID:grp1\tSM:sample1\tPL:ILLUMINA\n"
                       "@PG\tID:minimap2\tPN:minimap2\tVN:2.24\tCL:minimap2 -ax sr ref.fa r1.fq r2.fq\n",
                       REF_LEN);
    sb_put(&b, line, (size_t)len);
    size_t pos = 1;
    uint64_t k = 0;
    while (b.n < b.cap) {
        pos += rng_below(&g.r, 30); /* sorted by coordinate, ~10x depth */
        if (pos + READ_LEN >= REF_LEN)
            pos = 1;
        k++;
        read_quals(&g.r, q);
        int rev = (int)(rng_next(&g.r) & 1);
        int nm = read_seq(&g, pos - 1, 0, q, seq);
        for (int i = 0; i < READ_LEN; i++)
            qual[i] = QCH[q[i]];
        qual[READ_LEN] = 0;
        int tlen = 250 + (int)rng_below(&g.r, 200);
        int flag = rev ? (k & 1 ? 83 : 147) : (k & 1 ? 99 : 163);
        int mapq = rng_unit(&g.r) < 0.9 ? 60 : (int)rng_below(&g.r, 60);
        char cigar[32];
        int clip = rng_unit(&g.r) < 0.08 ? 1 + (int)rng_below(&g.r, 30) : 0;
        if (clip)
            snprintf(cigar, sizeof cigar, "%dS%dM", clip, READ_LEN - clip);
        else
            snprintf(cigar, sizeof cigar, "%dM", READ_LEN);
        len = snprintf(line, sizeof line,
                       "A00123:8:HFWT5DSXY:4:%u:%u:%u\t%d\tchr1\t%zu\t%d\t%s\t=\t%zu\t%d\t%.*s\t%s\t"
                       "NM:i:%d\tMD:Z:%d\tAS:i:%d\tXS:i:%d\tRG:Z:grp1\n",
                       1101 + (unsigned)(k / 4000), 1000 + (unsigned)rng_below(&g.r, 30000),
                       1000 + (unsigned)rng_below(&g.r, 30000), flag, pos, mapq, cigar,
                       pos + (size_t)tlen - READ_LEN, rev ? -tlen : tlen, READ_LEN, seq, qual, nm, READ_LEN,
                       2 * (READ_LEN - clip) - 6 * nm, (int)rng_below(&g.r, 200));
        sb_put(&b, line, (size_t)len);
    }
    free(g.ref);
}

static int fill_template(unsigned char *p, size_t n, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open content template %s: %s", path, strerror(errno));
        return -1;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "cannot read content template %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!got) {
        snprintf(err, errlen, "content template %s is empty", path);
        return -1;
    }
    for (size_t i = got; i < n; i += got) /* repeat to fill */
        memcpy(p + i, p, n - i < got ? n - i : got);
    return 0;
}

int content_pool(content_kind kind, const char *tmpl, size_t n, uint64_t seed, unsigned char **out, char *err,
                 size_t errlen)
{
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, n ? n : 4096)) {
        snprintf(err, errlen, "out of memory for a %zu-byte content pool", n);
        return -1;
    }
    unsigned char *p = mem;
    rng_t r;
    rng_seed(&r, seed);
    switch (kind) {
    case CONTENT_zeros: memset(p, 0, n); break;
    case CONTENT_random: fill_random(p, n, &r); break;
    case CONTENT_fastq: fill_fastq(p, n, seed); break;
    case CONTENT_sam: fill_sam(p, n, seed); break;
    case CONTENT_template:
        if (!tmpl) {
            snprintf(err, errlen, "content \"template\" needs a \"template\" file");
            free(p);
            return -1;
        }
        if (fill_template(p, n, tmpl, err, errlen)) {
            free(p);
            return -1;
        }
        break;
    default: memset(p, 0, n);
    }
    *out = p;
    return 0;
}
