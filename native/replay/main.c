/*
 * iolens-replay: replay a step's recorded operations on a directory.
 *
 *   iolens-replay JOB.json        result JSON on stdout (exit 0 ok, 1 failed, 2 bad job, 130 interrupted)
 *   iolens-replay --describe      op codes, classes and struct sizes, as JSON (from replay.h)
 *   iolens-replay --probe         what one block of the compute burn costs this CPU now, as JSON
 *
 * Files live below `root`, a fresh directory named iolens-bench-* that the caller made and removes.  The rooms
 * of the replayer, and which uses which, are listed in internal.h.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "internal.h"

static void on_signal(int sig) { stop_signal = sig; }

int main(int argc, char **argv)
{
    uint64_t main0 = now_ns();
    if (argc == 2 && !strcmp(argv[1], "--describe")) {
        describe();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--probe")) return probe();
    if (argc != 2) {
        fprintf(stderr, "usage: iolens-replay JOB.json | --describe | --probe\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    struct job_args job = {0};
    int rc = read_plan(argv[1], &job);
    if (rc) return rc;

    char err[512];
    uint64_t l0 = now_ns();
    int lrc = layout(job.cold, err, sizeof err);
    if (!lrc && *job.cwd) lrc = mirror_cwd(job.cwd, err, sizeof err);
    uint64_t layout_ns = now_ns() - l0;
    uint64_t setup_ns = l0 - main0; /* reading the job and the op list */
    int status = 0;
    const char *message = NULL;
    uint64_t wall = 0;
    if (lrc) {
        status = stop_signal ? 130 : 1;
        message = stop_signal ? "interrupted" : err;
    } else {
        if (job.hold) hold_layout();
        presize_fdtable(R.nhandles);
        message = run_threads();
        if (message) status = 1;
        wall = now_ns() - R.t0;
        if (stop_signal && !status) {
            status = 130;
            message = "interrupted";
        }
    }
    status = write_result(status, message, wall, layout_ns, setup_ns, job.logpath);
    json_free(job.job);
    return status;
}
