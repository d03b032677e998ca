/*
 * The job vocabulary's tables, one per X-macro list in bench.h: the names the parser looks up and the results
 * print, and the kind and io of each op as enums.
 */
#include "internal.h"

const char *const OP_NAMES[OP__COUNT] = {
#define X(n, k, io, d) #n,
    BENCH_OPS(X)
#undef X
};
const kind_t OP_KIND[OP__COUNT] = {
#define X(n, k, io, d) KIND_##k,
    BENCH_OPS(X)
#undef X
};
const io_kind OP_IO[OP__COUNT] = {
#define X(n, k, io, d) IO_##io,
    BENCH_OPS(X)
#undef X
};
const char *const SYNC_NAMES[SYNC__COUNT] = {
#define X(n) #n,
    BENCH_SYNCS(X)
#undef X
};
const char *const LAYOUT_NAMES[LAYOUT__COUNT] = {
#define X(n) #n,
    BENCH_LAYOUTS(X)
#undef X
};
const char *const ENGINE_NAMES[ENGINE__COUNT] = {
#define X(n) #n,
    BENCH_ENGINES(X)
#undef X
};
