/*
 * The recorder core: an image's lifetime.  The constructor notes the start,
 * the part is made lazily (on the first recorded call), and the image's end
 * (exit, exec, fatal signal) closes it or writes it whole.  The layers (the
 * interface files) that have work at start or at exit register it with
 * IOLENS_LAYER (core.h); the core runs their hooks and names none of them.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "nolibc.h"

IOLENS_START_DATA int iolens_exit_status;

#define EACH_LAYER(l) for (const struct iolens_layer *const *l = iolens_layers; l < iolens_layers + iolens_nlayers; l++)

IOLENS_COLD static void layers_start(void)
{
    EACH_LAYER(l) if ((*l)->start) (*l)->start();
}

IOLENS_COLD static int layers_waiting(void)
{
    EACH_LAYER(l) if ((*l)->waiting && (*l)->waiting()) return 1;
    return 0;
}

IOLENS_COLD static void layers_exit(void)
{
    EACH_LAYER(l) if ((*l)->exit) (*l)->exit();
}

/*
 * An image makes its part lazily: on its first call that records (iolens_on)
 * or that must write (wait, thread creation), or at its end.  At start it
 * only notes what the part must say of that moment (below), with no file, no
 * mapping and no space reserved.  A process that does no file I/O (a `true`,
 * an `env` that execs, a `test` in a shell loop) so costs one file written
 * with one write at its end (write_built), and a fork child that execs
 * without recording anything costs nothing (iolens_after_fork_child).
 */

IOLENS_START_DATA static int launcher_pid; /* the top process's parent; 0: not known */

IOLENS_COLD static void warn_once(const char *what)
{
    /* A part that does not fit under the program's own RLIMIT_FSIZE is not a
     * set-up error to report on the program's stderr: the image is missing
     * from the capture, and its parent's record of it says so. */
    if (iolens_fsize_short) return;
    /* Only the top process warns, so a pipeline of thousands says it once. */
    const char *parent = iolens_env("IOLENS_PARENT_PID");
    int want = launcher_pid ? launcher_pid : parent ? atoi(parent) : 0;
    if (want && want != (int)syscall(SYS_getppid)) return;
    char msg[900];
    int n = snprintf(msg, sizeof msg, "iolens: warning: %s in %s (%s); the program runs unprofiled\n", what,
                     iolens_g.dir, strerror(errno));
    if (n > 0) iolens_sys_write(2, msg, (unsigned long)n);
}

IOLENS_COLD __attribute__((constructor(102))) static void iolens_init(int argc, char **argv, char **envp)
{
    struct iolens_state *g = &iolens_g;
    /* the launcher's one variable, IOLENS=<its pid>[t][m<max files>]<directory>
     * (capture/record.py, `recorder_value`); else a pipeline's IOLENS_DIR and friends */
    const char *packed = iolens_getenv_in(environ, "IOLENS"), *dir;
    if (!iolens_env_packed(packed)) packed = 0; /* a user's own IOLENS: not ours */
    dir = packed;
    int trace = 0, pid = 0;
    uint64_t max_files = 0;
    if (packed) {
        pid = (int)iolens_digits(&dir);
        while (*dir && *dir != '/') {
            if (*dir == 't') trace = 1;
            if (*dir++ == 'm') max_files = iolens_digits(&dir);
        }
    } else {
        dir = iolens_getenv_in(environ, "IOLENS_DIR");
    }
    if (!dir || !*dir || iolens_strlen(dir) >= sizeof g->dir) return;
    iolens_guard = 1;
    iolens_memcpy(g->dir, dir, iolens_strlen(dir) + 1);
    iolens_note_exec(argc, argv, envp);
    iolens_env_take(); /* the program sees the environment it would see unprofiled */
    if (!packed) {
        const char *t = iolens_env("IOLENS_TRACE"), *mf = iolens_env("IOLENS_MAX_FILES");
        trace = t && *t == '1';
        max_files = mf ? iolens_digits(&mf) : 0;
    }
    launcher_pid = pid;
    g->trace = trace;
    g->max_files = max_files ? max_files : 1000000;
    g->pid = (int)syscall(SYS_getpid);
    iolens_take_start(iolens_built_proc());
    iolens_note_strings(argc, argv, envp);
    layers_start(); /* the clock, the fatal signals' handlers */
    g->pending = IOLENS_PENDING_START; /* the part is made when first needed */
    g->active = 1;
    iolens_guard = 0;
}

/* Async-signal-safe: end fields are plain stores into the shared mapping.
 * at_exit: the streams' waiting bytes are counted first (exit flushes them
 * after the destructors). */
IOLENS_COLD static void finalize(uint64_t flags, uint64_t status, int at_exit)
{
    struct iolens_state *g = &iolens_g;
    if (!g->active || iolens_in_vfork || g->pid != (int)syscall(SYS_getpid)) return;
    int pending = g->pending;
    if (pending == IOLENS_PENDING_FORK || pending == IOLENS_PENDING_DONE) return;
    if (pending == IOLENS_PENDING_START) {
        /* Bytes a stream holds that no recorded call put there (libc's own
         * messages) become flushes of a file at exit: that needs the part. */
        if (at_exit && !iolens_guard && layers_waiting()) {
            iolens_materialize();
            if (!g->active) return;
        } else {
            int guard = iolens_guard;
            iolens_guard = 1;
            int r = iolens_write_built(flags, status); /* errno untouched */
            if (r == 0) {
                g->pending = IOLENS_PENDING_DONE;
            } else {
                int saved = errno;
                errno = -r;
                warn_once("cannot write the capture");
                errno = saved;
                g->active = 0;
                g->pending = 0;
            }
            iolens_guard = guard;
            return;
        }
    }
    if (g->proc->flags & IOLENS_PF_FINALIZED) return;
    if (at_exit && !iolens_guard) layers_exit(); /* stdio's waiting bytes */
    int saved = errno;
    int guard = iolens_guard;
    iolens_guard = 1;
    iolens_srun_end_all();
    iolens_clock_refine();
    iolens_fill_end(g->proc, !(g->proc->flags & IOLENS_PF_NO_KERNEL_IO));
    g->proc->exit_status = status;
    iolens_trace_flush_all();
    __atomic_fetch_or(&g->proc->flags, IOLENS_PF_FINALIZED | flags, __ATOMIC_RELEASE);
    iolens_guard = guard;
    errno = saved;
}

/* exec failed: the image goes on. */
void iolens_unfinalize(void)
{
    struct iolens_state *g = &iolens_g;
    if (!g->active || iolens_in_vfork) return; /* a vfork child's failed exec: not ours */
    if (g->pending == IOLENS_PENDING_DONE) {
        /* the part written for the exec goes: the image writes (or makes) its part again later */
        syscall(SYS_unlinkat, AT_FDCWD, g->part_path, 0);
        iolens_built_proc()->flags = 0;
        iolens_built_proc()->end_mono = 0;
        g->pending = IOLENS_PENDING_START;
        return;
    }
    if (g->pending) return;
    g->proc->flags &= ~(uint64_t)(IOLENS_PF_FINALIZED | IOLENS_PF_EXECED);
    g->proc->end_mono = 0;
}

void iolens_finalize(uint64_t flags, uint64_t status) { finalize(flags, status, 0); }

IOLENS_COLD __attribute__((destructor(101))) static void iolens_fini(void)
{
    finalize(IOLENS_PF_EXITED, (uint64_t)iolens_exit_status, 1);
}

void iolens_child_reaped(int pid, int status, const struct rusage *ru)
{
    /* Every locked section runs with the guard set, so a SIGCHLD handler that
     * interrupted one (and reaps here) sees iolens_on() false and records
     * nothing rather than spinning on a lock its own thread holds. */
    if (!iolens_on() || pid <= 0) return;
    iolens_guard = 1;
    lock();
    struct iolens_child *c = iolens_rec_alloc(sizeof *c);
    if (c) {
        c->pid = (uint64_t)pid;
        c->status = WIFSIGNALED(status) ? 128u + (uint64_t)WTERMSIG(status) : (uint64_t)WEXITSTATUS(status);
        c->end_mono = iolens_now();
        if (ru) {
            c->utime_ns = tv_ns(ru->ru_utime);
            c->stime_ns = tv_ns(ru->ru_stime);
            c->maxrss_kb = (uint64_t)ru->ru_maxrss;
        }
        iolens_publish(c, IOLENS_KIND_CHILD, IOLENS_VER_CHILD);
    }
    unlock();
    iolens_guard = 0;
}

/*
 * In a fork child the parent's part (if it has one yet) is still mapped, and
 * it is shared memory: nothing may be written to it.  Most fork children of
 * shells exec at once, so the child's own part is made lazily, by the first
 * call that records (iolens_on) or that must write (wait, thread creation).
 * A child that execs or exits without recording anything costs no part at
 * all; the exec'd image has its own.
 */
void iolens_after_fork_child(void)
{
    struct iolens_state *g = &iolens_g;
    if (!g->active) return;
    g->lock = 0;
    g->mt = 0;
    memset(g->inflight, 0, sizeof g->inflight);
    iolens_trace_drop_all();  /* the parent's unflushed events are the parent's */
    iolens_srun_drop_all(); /* and so are its runs' counts */
    iolens_tls.own = 0;     /* and its recorder's time */
    g->pending = IOLENS_PENDING_FORK;
}

/* Make the part now: the first call that records in an image (its start as
 * noted by the constructor), in a fork child (its start is now), or after
 * the image's end was written (it is made again from what was written). */
void iolens_materialize(void)
{
    struct iolens_state *g = &iolens_g;
    int kind = g->pending;
    if (!kind) return;
    /* Making the part (a file, its mapping, the start's records) is the recorder's time in the gap before the
     * thread's first event: it joins that event's own_ns (0.08-0.14 ms an image on a 2-CPU VM). */
    uint64_t m0 = g->trace ? iolens_now() : 0;
    int guard = iolens_guard;
    iolens_guard = 1;
    g->pending = 0;
    g->active = 0;
    char *old_base = g->base; /* a fork child's: the parent's part, if it had one */
    g->base = 0;              /* a new address-space reservation; the old one stays mapped until copied */
    iolens_files_reset();
    struct iolens_proc now;
    if (kind == IOLENS_PENDING_FORK) {
        memset(&now, 0, sizeof now);
        g->pid = (int)syscall(SYS_getpid);
        iolens_take_start(&now);
        iolens_take_kernel_start(&now);
        now.flags = IOLENS_PF_FORKED;
    } else if (kind == IOLENS_PENDING_START) {
        iolens_take_kernel_start(iolens_built_proc());
    }
    /* an image's: its start as noted, or, once written, its end as written
     * too (the calls after it are then recorded as a mapped part records them) */
    if (iolens_start_part(kind == IOLENS_PENDING_FORK ? &now : iolens_built_proc()) != 0) {
        if (old_base) sys_munmap(old_base, g->reserve);
        memset(iolens_fds, 0, sizeof iolens_fds);
        if (kind != IOLENS_PENDING_FORK) warn_once("cannot write the capture");
        iolens_guard = guard;
        return;
    }
    iolens_add_start_strings();
    /* the open descriptors' files, as records of this process */
    for (int fd = 0; fd <= iolens_fd_high && fd < IOLENS_FDMAX; fd++) {
        struct iolens_fdstate *f = &iolens_fds[fd];
        if (f->state != FD_TRACKED || !f->rec) continue;
        struct iolens_file *o = f->rec;
        struct iolens_file *rec = iolens_file_for(iolens_rec_path(o), o->flags & (IOLENS_FF_DIRECTORY | IOLENS_FF_NOT_A_FILE |
                                                                       IOLENS_FF_AGGREGATE));
        if (rec) {
            rec->flags |= IOLENS_FF_INHERITED;
            rec->dev = o->dev;
            rec->ino = o->ino;
            rec->mode = o->mode;
        }
        f->rec = rec;
    }
    if (old_base) sys_munmap(old_base, g->reserve);
    g->active = 1;
    if (g->trace) iolens_tls.own += iolens_since(m0);
    iolens_guard = guard;
}
