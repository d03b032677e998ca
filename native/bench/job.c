/*
 * Job parsing: the job tree (json.h) into phases and groups, checked before
 * anything runs.  Names are looked up in the tables of names.c, made from the
 * X-macro lists in bench.h, the same lists `iolens-bench --describe` prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int lookup(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

static int parse_group(const jval *jg, group *g, job_ctx *ctx, char *err, size_t errlen)
{
    const char *bad = NULL;
    memset(g, 0, sizeof *g);
    g->dirfd = -1;
    const char *op = json_str(jg, "op", NULL, &bad);
    if (!op || (int)(g->op = (op_kind)lookup(OP_NAMES, OP__COUNT, op)) < 0) {
        snprintf(err, errlen, "unknown op \"%s\"", op ? op : "(missing)");
        return -1;
    }
    int e = lookup(ENGINE_NAMES, ENGINE__COUNT, json_str(jg, "engine", "psync", &bad));
    if (e < 0) {
        snprintf(err, errlen, "unknown engine \"%s\"", json_str(jg, "engine", "", NULL));
        return -1;
    }
    g->engine = (engine_kind)e;
    g->eng = ENGINES[e];
    g->dir = (int)json_num(jg, "dir", g->eng->files ? 0 : -1, &bad);
    if (g->eng->files) {
        if (g->dir < 0 || g->dir >= ctx->ndirs) {
            snprintf(err, errlen, "group dir %d is not one of the job's %d dirs", g->dir, ctx->ndirs);
            return -1;
        }
        g->dirfd = ctx->dirfds[g->dir];
    }
    g->threads = (int)json_num(jg, "threads", 1, &bad);
    if (g->threads < 1 || g->threads > MAX_THREADS) {
        snprintf(err, errlen, "threads must be 1..%d", MAX_THREADS);
        return -1;
    }
    g->bs = (uint64_t)json_num(jg, "bs", 1 << 20, &bad);
    if (!g->bs || g->bs > (1ull << 30)) {
        snprintf(err, errlen, "bs must be 1 byte .. 1 GiB");
        return -1;
    }
    g->size = (uint64_t)json_num(jg, "size", 0, &bad);
    g->ops_limit = (uint64_t)json_num(jg, "ops", 0, &bad);
    g->file_size = (uint64_t)json_num(jg, "file_size", 0, &bad);
    g->count = (uint64_t)json_num(jg, "count", 0, &bad);
    g->segment = (uint64_t)json_num(jg, "segment", 0, &bad);
    g->writers = (uint64_t)json_num(jg, "writers", 0, &bad);
    g->first = (uint64_t)json_num(jg, "first", 0, &bad);
    g->fanout = (uint64_t)json_num(jg, "fanout", 1, &bad);
    if (!g->fanout)
        g->fanout = 1;
    g->sync_every = (uint64_t)json_num(jg, "sync_every", 0, &bad);
    g->iodepth = (uint64_t)json_num(jg, "iodepth", 1, &bad);
    if (g->iodepth < 1 || g->iodepth > 4096) {
        snprintf(err, errlen, "iodepth must be 1..4096");
        return -1;
    }
    g->runtime_s = json_num(jg, "runtime_s", 0, &bad);
    g->loop = json_bool(jg, "loop", 0, &bad);
    g->read_share = json_num(jg, "read_share", g->op == OP_randwrite ? 0.0 : 1.0, &bad);
    if (g->op == OP_randrw && !json_get(jg, "read_share"))
        g->read_share = 0.5;
    g->direct = json_bool(jg, "direct", 0, &bad);
    g->prepare = json_bool(jg, "prepare", 0, &bad);
    g->fsync_files = json_bool(jg, "fsync_files", 0, &bad);
    g->interleave = json_bool(jg, "interleave", 0, &bad);
    g->file = json_str(jg, "file", "data", &bad);
    g->prefix = json_str(jg, "prefix", "files", &bad);
    g->tmpl = json_str(jg, "template", NULL, &bad);
    int k = lookup(SYNC_NAMES, SYNC__COUNT, json_str(jg, "sync", "none", &bad));
    int l = lookup(LAYOUT_NAMES, LAYOUT__COUNT, json_str(jg, "layout", "per_thread", &bad));
    int c = lookup(CONTENT_NAMES, CONTENT__COUNT, json_str(jg, "content", "random", &bad));
    if (k < 0 || l < 0 || c < 0) {
        snprintf(err, errlen, "unknown %s", k < 0 ? "sync mode" : l < 0 ? "layout" : "content");
        return -1;
    }
    g->sync = (sync_kind)k;
    g->layout = (layout_kind)l;
    g->content = (content_kind)c;
    const jval *files = json_get(jg, "files");
    if (files && files->type == J_ARR) {
        for (const jval *f = files->child; f; f = f->next)
            if (f->type != J_STR) {
                snprintf(err, errlen, "files must be a list of strings");
                return -1;
            }
        g->files = files;
    }
    const jval *paths = json_get(jg, "paths");
    if (paths && paths->type == J_ARR)
        g->paths = paths;
    const jval *sizes = json_get(jg, "sizes");
    if (sizes && sizes->type == J_ARR && json_len(sizes)) {
        g->nsizes = json_len(sizes);
        g->sizes = calloc(g->nsizes, sizeof *g->sizes);
        for (size_t i = 0; i < g->nsizes; i++)
            g->sizes[i] = (uint64_t)json_at(sizes, i)->num;
    }
    if (bad) {
        snprintf(err, errlen, "field \"%s\" has the wrong type", bad);
        return -1;
    }
    kind_t kind = OP_KIND[g->op];
    if (g->direct && g->bs % 512) {
        snprintf(err, errlen, "direct I/O needs bs to be a multiple of 512 (better 4096)");
        return -1;
    }
    if (kind == KIND_seq && g->op == OP_write && !g->size && g->runtime_s <= 0) {
        snprintf(err, errlen, "write needs size (bytes per thread) or runtime_s");
        return -1;
    }
    if (g->layout == LAYOUT_strided) {
        if (!g->writers)
            g->writers = g->segment + (uint64_t)g->threads;
        if (g->writers < g->segment + (uint64_t)g->threads) {
            snprintf(err, errlen, "writers must cover segment + threads");
            return -1;
        }
    }
    if (kind == KIND_seq && one_file(g) && !g->size) {
        snprintf(err, errlen, "a shared file needs size (bytes per thread)");
        return -1;
    }
    if (kind == KIND_rand && !g->file_size) {
        snprintf(err, errlen, "%s needs file_size", op);
        return -1;
    }
    if (kind == KIND_small && !g->count) {
        snprintf(err, errlen, "%s needs count", op);
        return -1;
    }
    if (g->eng->files && (strchr(g->prefix, '/') || !valid_component(g->prefix, strlen(g->prefix)))) {
        snprintf(err, errlen, "prefix must be a plain name");
        return -1;
    }
    if (g->files && g->op != OP_read) {
        snprintf(err, errlen, "files lists files to read: op read only");
        return -1;
    }
    /* the timed loop, chosen once: the engine's for the op's kind (seq has two: one file, or a list) */
    loop_kind loop = kind == KIND_seq ? (g->files ? LOOP_files : LOOP_seq)
                   : kind == KIND_rand ? LOOP_rand : kind == KIND_small ? LOOP_small : LOOP__COUNT;
    g->run = loop < LOOP__COUNT ? g->eng->run[loop] : NULL;
    return 0;
}

/* The job's own fields and its directories: each must be absolute, named iolens-bench-*, and not a symlink. */
static int parse_dirs(const jval *job, job_ctx *ctx, char *err, size_t errlen)
{
    const jval *dirs = json_get(job, "dirs");
    ctx->ndirs = (int)json_len(dirs);
    if (ctx->ndirs > MAX_DIRS) {
        snprintf(err, errlen, "too many dirs");
        return -1;
    }
    for (int d = 0; d < ctx->ndirs; d++) {
        const jval *p = json_at(dirs, (size_t)d);
        if (!p || p->type != J_STR || p->str[0] != '/') {
            snprintf(err, errlen, "dirs must be absolute paths");
            return -1;
        }
        const char *base = strrchr(p->str, '/') + 1;
        if (strncmp(base, "iolens-bench-", 13)) {
            snprintf(err, errlen, "refusing to work in %s: the engine only writes inside iolens-bench-* directories",
                     p->str);
            return -1;
        }
        ctx->dirs[d] = p->str;
        ctx->dirfds[d] = open(p->str, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ctx->dirfds[d] < 0) {
            snprintf(err, errlen, "cannot open %s: %s", p->str, strerror(errno == ENOTDIR ? ELOOP : errno));
            return -1;
        }
    }
    const jval *devs = json_get(job, "device_stats");
    if (devs && (devs->type != J_ARR || (int)json_len(devs) != ctx->ndirs)) {
        snprintf(err, errlen, "device_stats must be a list with one entry (a path or null) per dir");
        return -1;
    }
    for (int d = 0; devs && d < ctx->ndirs; d++) {
        const jval *p = json_at(devs, (size_t)d);
        if (p->type == J_STR && !strncmp(p->str, "/sys/", 5))
            ctx->devstat_path[d] = p->str;
        else if (p->type != J_NULL) {
            snprintf(err, errlen, "device_stats entries must be /sys/... paths or null");
            return -1;
        }
    }
    return 0;
}

int parse_job(const jval *job, job_ctx *ctx, phase **phases_out, size_t *nphases, char *err, size_t errlen)
{
    err[0] = 0;
    const jval *ver = json_get(job, "schema_version");
    if (!ver || json_len(ver) != 2 || json_at(ver, 0)->type != J_NUM) {
        snprintf(err, errlen, "the job has no schema_version [major, minor]");
        return -1;
    }
    int major = (int)json_at(ver, 0)->num;
    if (major != BENCH_JOB_MAJOR) {
        snprintf(err, errlen, "job schema %d.x is not supported by this engine (it runs %d.x)", major,
                 BENCH_JOB_MAJOR);
        return -1;
    }
    const char *bad = NULL;
    ctx->seed = (uint64_t)json_num(job, "seed", 1, &bad);
    ctx->drop_caches = json_bool(job, "drop_caches", 0, &bad);
    ctx->progress = json_bool(job, "progress", 0, &bad);
    ctx->pool_bytes = (size_t)json_num(job, "pool_bytes", 0, &bad);
    if (parse_dirs(job, ctx, err, errlen))
        return -1;
    const jval *phases = json_get(job, "phases");
    size_t nph = json_len(phases);
    phase *ph = calloc(nph ? nph : 1, sizeof *ph);
    *phases_out = ph;
    *nphases = nph;
    for (size_t i = 0; i < nph; i++) {
        const jval *jp = json_at(phases, i);
        ph[i].name = json_str(jp, "name", "phase", &bad);
        ph[i].evict_before = json_bool(jp, "evict_before", 0, &bad);
        ph[i].report = json_bool(jp, "report", 1, &bad);
        ph[i].start_at = json_num(jp, "start_at", 0, &bad);
        ph[i].stonewall_s = json_num(jp, "stonewall_s", 0, &bad);
        const jval *groups = json_get(jp, "groups");
        ph[i].ngroups = json_len(groups);
        ph[i].groups = calloc(ph[i].ngroups ? ph[i].ngroups : 1, sizeof(group));
        if (!ph[i].ngroups) {
            snprintf(err, errlen, "phase %zu (%s) has no groups", i, ph[i].name);
            break;
        }
        for (size_t k = 0; k < ph[i].ngroups; k++) {
            char gerr[512];
            if (parse_group(json_at(groups, k), &ph[i].groups[k], ctx, gerr, sizeof gerr)) {
                snprintf(err, errlen, "phase %zu (%s) group %zu: %s", i, ph[i].name, k, gerr);
                break;
            }
        }
        if (err[0])
            break;
    }
    if (!err[0] && bad)
        snprintf(err, errlen, "field \"%s\" has the wrong type", bad);
    return err[0] ? -1 : 0;
}
