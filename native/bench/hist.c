/* Log-bucketed histogram; see hist.h for the error bound. */
#include "hist.h"

#include <math.h>
#include <string.h>

void hist_init(hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

void hist_merge(hist *into, const hist *from)
{
    if (!from->count)
        return;
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        into->b[i] += from->b[i];
}

/* Midpoint of bucket i (exact for the linear range). */
static double bucket_value(unsigned i)
{
    if (i < HIST_SUB)
        return (double)i;
    unsigned e = i / HIST_SUB + HIST_SUB_BITS - 1;
    unsigned sub = i % HIST_SUB;
    double width = ldexp(1.0, (int)(e - HIST_SUB_BITS));
    return ldexp(1.0, (int)e) + (sub + 0.5) * width;
}

/* The value at rank ceil(q * count) (nearest-rank definition), clamped to [min, max]. */
double hist_quantile(const hist *h, double q)
{
    if (!h->count)
        return NAN;
    if (q <= 0)
        return (double)h->min;
    if (q >= 1)
        return (double)h->max;
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            double v = bucket_value(i);
            if (v < (double)h->min)
                v = (double)h->min;
            if (v > (double)h->max)
                v = (double)h->max;
            return v;
        }
    }
    return (double)h->max;
}
