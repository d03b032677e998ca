/*
 * Reading the plan: the job JSON (files, handles, threads, processes, pipes; see docs/whatif.md) and its binary
 * op list into R, every index checked before anything runs.  A job that cannot be replayed is answered with a
 * result of status "error" and exit status 2.
 */
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct replay R;

const char *const OP_NAMES[RP_NOPS] = {
#define RP_X_OP(n, c, d) #n,
    RP_OPS(RP_X_OP)
#undef RP_X_OP
};
const int OP_CLASS[RP_NOPS] = {
#define RP_X_OP(n, c, d) RP_CLASS_##c,
    RP_OPS(RP_X_OP)
#undef RP_X_OP
};
const char *const OP_DOCS[RP_NOPS] = {
#define RP_X_OP(n, c, d) d,
    RP_OPS(RP_X_OP)
#undef RP_X_OP
};
const char *const CLASS_NAMES[RP_NCLASS] = {
#define RP_X_CLASS(n) #n,
    RP_CLASSES(RP_X_CLASS)
#undef RP_X_CLASS
};

static int bad_job(const char *msg, const char *what)
{
    jw w;
    jw_init(&w, stdout);
    jw_obj(&w, NULL);
    jw_str(&w, "tag", "iolens-replay-result");
    jw_str(&w, "status", "error");
    char m[512];
    snprintf(m, sizeof m, "%s%s%s", msg, what ? ": " : "", what ? what : "");
    jw_str(&w, "message", m);
    jw_end_obj(&w);
    fputc('\n', stdout);
    return 2;
}

static int safe_rel(const char *p)
{
    if (!p || !*p || p[0] == '/') return 0;
    for (const char *c = p; *c;) {
        const char *s = strchr(c, '/');
        size_t n = s ? (size_t)(s - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) return 0;
        c = s ? s + 1 : c + n;
    }
    return 1;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[n] = 0;
    if (len) *len = (size_t)n;
    return b;
}

/* The files, handles, threads and processes the job lists; 0 or the exit status (also for a field of the
 * wrong type in *badp, the job's fields read before). */
static int read_objects(const jval *job, const char **badp)
{
    const char *bad = *badp;
    const jval *files = json_get(job, "files");
    R.nfiles = json_len(files);
    R.files = calloc(R.nfiles + 1, sizeof *R.files);
    for (size_t i = 0; i < R.nfiles; i++) {
        const jval *f = json_at(files, i);
        const char *p = json_str(f, "path", NULL, &bad);
        if (!safe_rel(p)) return bad_job("unsafe file path", p);
        R.files[i].path = strdup(p);
        R.files[i].name = R.files[i].path;
        R.files[i].at = R.rootfd;
        R.files[i].dir = json_bool(f, "dir", 0, &bad);
        R.files[i].layout = (int64_t)json_num(f, "layout", -1, &bad);
        const char *c = json_str(f, "content", "random", &bad);
        for (int k = 0; k < CONTENT__COUNT; k++)
            if (!strcmp(c, CONTENT_NAMES[k]) && k != CONTENT_template) R.files[i].content = k;
    }
    const jval *handles = json_get(job, "handles");
    R.nhandles = json_len(handles);
    R.handles = calloc(R.nhandles + 1, sizeof *R.handles);
    for (size_t i = 0; i < R.nhandles; i++) {
        double fi = json_num(json_at(handles, i), "file", -1, &bad);
        if (fi < 0 || fi >= (double)R.nfiles) return bad_job("a handle names no file", NULL);
        R.handles[i].file = (int)fi;
        R.handles[i].read_only = json_bool(json_at(handles, i), "read_only", 0, &bad);
        R.handles[i].fd = -1;
        pthread_mutex_init(&R.handles[i].mu, NULL);
    }
    const jval *threads = json_get(job, "threads");
    R.nthreads = json_len(threads);
    double dto = json_num(job, "dependency_timeout_s", (double)DEP_TIMEOUT_NS / 1e9, &bad);
    R.dep_timeout_ns = dto > 0 ? (uint64_t)(dto * 1e9) : DEP_TIMEOUT_NS;
    R.nprocs = (size_t)json_num(job, "processes", 0, &bad);
    R.npipes = (size_t)json_num(job, "pipes", 0, &bad);
    R.threads = calloc(R.nthreads + 1, sizeof *R.threads);
    R.procs = calloc(R.nprocs + 1, sizeof *R.procs);
    R.pipe_w = calloc(R.npipes + 1, sizeof *R.pipe_w);
    R.pipe_r = calloc(R.npipes + 1, sizeof *R.pipe_r);
    R.pipe_cv = calloc(R.npipes + 1, sizeof *R.pipe_cv);
    for (size_t i = 0; i < R.nthreads; i++) {
        double p = json_num(json_at(threads, i), "process", -1, &bad);
        if (p < 0 || p >= (double)R.nprocs) return bad_job("a thread names no process", NULL);
        R.threads[i].proc = (uint32_t)p;
        R.threads[i].wake_at = SIZE_MAX;
        double share = json_num(json_at(threads, i), "cpu_share", 0, &bad);
        R.threads[i].cpu_share = share < 0 ? 0 : share > 1 ? 1 : share;
        double ws = json_num(json_at(threads, i), "wait_share", 1, &bad);
        R.threads[i].wait_share = ws < 0 ? 0 : ws > 1 ? 1 : ws;
        R.procs[(size_t)p].threads_left++;
    }
    const jval *roots = json_get(job, "roots");
    for (size_t i = 0; i < json_len(roots); i++) {
        double p = json_at(roots, i)->num;
        if (p >= 0 && p < (double)R.nprocs) R.procs[(size_t)p].started = 1;
    }
    return bad ? bad_job("a job field has the wrong type", bad) : 0;
}

/* The op list: grouped by thread, every object it names in range; 0 or the exit status. */
static int read_ops(const char *path)
{
    size_t olen = 0;
    R.ops = (struct rp_op *)slurp(path, &olen);
    if (!R.ops || olen % sizeof(struct rp_op)) return bad_job("cannot read the op list", path);
    R.nops = olen / sizeof(struct rp_op);
    for (size_t i = 0; i < R.nops; i++) {
        const struct rp_op *o = &R.ops[i];
        if (o->op >= RP_NOPS || o->thread >= R.nthreads || (i && o->thread < R.ops[i - 1].thread))
            return bad_job("the op list is damaged or not grouped by thread", NULL);
        uint32_t lim = 0;
        switch (o->op) {
        case RP_OP_START: case RP_OP_SPAWN: case RP_OP_WAIT: lim = (uint32_t)R.nprocs; break;
        case RP_OP_EXIT: lim = UINT32_MAX; break;
        case RP_OP_PIPE_READ: case RP_OP_PIPE_WRITE: lim = (uint32_t)R.npipes; break;
        case RP_OP_AFTER: lim = (uint32_t)R.nthreads; break;
        case RP_OP_STAT: case RP_OP_UNLINK: case RP_OP_MKDIR: case RP_OP_RENAME: lim = (uint32_t)R.nfiles; break;
        case RP_OP_SYNCFS: lim = UINT32_MAX; break;
        default: lim = (uint32_t)R.nhandles;
        }
        if (o->obj >= lim) return bad_job("an op names an object out of range", OP_NAMES[o->op]);
        struct rthread *t = &R.threads[o->thread];
        if (!t->n) t->first = i;
        t->n++;
    }
    for (size_t i = 0; i < R.nops; i++) { /* an AFTER names an op of its thread obj, and not its own thread */
        const struct rp_op *o = &R.ops[i];
        if (o->op != RP_OP_AFTER) continue;
        struct rthread *w = &R.threads[o->obj];
        if (o->obj == o->thread || o->offset < w->first || o->offset >= w->first + w->n)
            return bad_job("an AFTER op names no op of another thread", NULL);
        w->watched = 1;
    }
    return 0;
}

int read_plan(const char *path, struct job_args *args)
{
    char err[512];
    char *text = slurp(path, NULL);
    if (!text) return bad_job("cannot read the job", path);
    jval *job = args->job = json_parse(text, err, sizeof err);
    free(text);
    if (!job) return bad_job("the job is not JSON", err);
    const char *bad = NULL;
    const char *root = json_str(job, "root", NULL, &bad);
    const char *base = root ? strrchr(root, '/') : NULL;
    if (!root || root[0] != '/' || !base || strncmp(base + 1, "iolens-bench-", 13))
        return bad_job("root must be an absolute iolens-bench-* directory", root);
    R.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (R.rootfd < 0) return bad_job("cannot open root", strerror(errno));
    R.cwdfd = -1;
    args->cwd = json_str(job, "cwd", "", &bad);
    if (*args->cwd && !safe_rel(args->cwd)) return bad_job("unsafe working directory", args->cwd);
    R.speed_max = !strcmp(json_str(job, "speed", "recorded", &bad), "max");
    args->cold = !strcmp(json_str(job, "cache", "warm", &bad), "cold");
    args->hold = json_bool(job, "hold_after_layout", 0, &bad);
    R.ns_per_block = json_num(job, "cpu_ns_per_block", 0, &bad);
    if (!(R.ns_per_block > 0 && R.ns_per_block < 1e6)) R.ns_per_block = 0;
    int rc = read_objects(job, &bad);
    if (rc) return rc;
    if ((rc = read_ops(json_str(job, "ops", "", &bad)))) return rc;
    args->logpath = json_str(job, "log", NULL, &bad);
    if (args->logpath) R.log = calloc(R.nops + 1, sizeof *R.log);
    if (content_pool(CONTENT_random, NULL, IOBUF, 11, &R.wpool, err, sizeof err))
        return bad_job("out of memory", NULL);
    pthread_mutex_init(&R.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (size_t i = 0; i < R.nprocs; i++) pthread_cond_init(&R.procs[i].cv, &ca);
    for (size_t i = 0; i < R.npipes; i++) pthread_cond_init(&R.pipe_cv[i], &ca);
    for (size_t i = 0; i < R.nthreads; i++) pthread_cond_init(&R.threads[i].cv, &ca);
    return 0;
}
