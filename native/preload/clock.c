/*
 * The call clock: CLOCK_MONOTONIC nanoseconds, as cheaply as is safe.
 *
 * The vDSO's clock_gettime costs two reads of the TSC's shared scale, a
 * fenced rdtsc and the arithmetic; the interposer reads the clock twice per
 * call.  Where the kernel keeps time with the TSC itself (current
 * clocksource "tsc", which it only keeps when the TSC is invariant and
 * stable) and the CPU says the TSC is invariant (CPUID 0x80000007 EDX bit 8:
 * constant rate, running in deep C-states), the TSC is read directly and
 * scaled.  The scale comes from the process's own first clock reads: an
 * anchor at the first timed call, the scale once 2 ms have passed, refined
 * from the same anchor on the rare paths (timeline coarsening and the end of
 * the image), so its error stays a few tens of nanoseconds over the
 * elapsed time.  Until then, anywhere else, and with IOLENS_CLOCK=vdso, the
 * vDSO is used.  A process that does no timed call never looks.
 */
#include "core.h"

#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nolibc.h"
#if defined(__x86_64__)
#include <cpuid.h>
#endif

enum { CLK_UNKNOWN = 0, CLK_VDSO = IOLENS_CLOCK_VDSO, CLK_CALIBRATING = 2, CLK_BUSY = 3, CLK_TSC = 4 };
_Static_assert(IOLENS_CLOCK_VDSO == 1, "state values");

#define CALIBRATE_NS 2000000ull
#define NSLOTS 16

int iolens_clock_state;
#if defined(__x86_64__) /* the TSC's state; other machines keep the vDSO's clock */
/* 32 bytes each, so the scale in use (read by every hooked call) is on one cache line */
static struct {
    struct iolens_tsc k;
} __attribute__((aligned(32))) slots[NSLOTS];
static unsigned nslots;
static uint64_t anchor_tsc, anchor_mono, scaled_span;
#endif

/* Called once the environment is known: IOLENS_CLOCK=vdso forces the vDSO. */
IOLENS_COLD static void clock_start(void)
{
    const char *c = iolens_env("IOLENS_CLOCK");
#if defined(__x86_64__)
    if (c && iolens_streq(c, "vdso")) iolens_clock_state = CLK_VDSO;
#else
    (void)c;
    iolens_clock_state = CLK_VDSO;
#endif
}

IOLENS_LAYER(clock, .start = clock_start);

#if defined(__x86_64__)
/* errno is kept: this runs inside a hooked call, after its real call returned. */
static int tsc_check(void);
static int tsc_is_safe(void)
{
    int e = errno;
    int ok = tsc_check();
    errno = e;
    return ok;
}

static int tsc_check(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
    __cpuid(0x80000007u, a, b, c, d);
    if (!(d & (1u << 8))) return 0; /* invariant TSC */
    char buf[32];
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                          O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return 0;
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    return n == 4 && memcmp(buf, "tsc\n", 4) == 0;
}

/* Publish a scale from the anchor to (tsc, mono). */
static void publish_scale(uint64_t tsc, uint64_t mono)
{
    if (tsc <= anchor_tsc || mono <= anchor_mono) return;
    struct iolens_tsc *k = &slots[nslots++ % NSLOTS].k;
    k->mult = (uint64_t)((((unsigned __int128)(mono - anchor_mono)) << 32) / (tsc - anchor_tsc));
    k->tsc0 = tsc;
    k->mono0 = mono;
    scaled_span = mono - anchor_mono;
    __atomic_store_n(&iolens_g.tsc, k, __ATOMIC_RELEASE);
}
#endif

/* The vDSO clock while the TSC is not (yet) known to be usable. */
uint64_t iolens_now_calibrating(void)
{
    uint64_t m = iolens_mono();
#if defined(__x86_64__)
    int st = __atomic_load_n(&iolens_clock_state, __ATOMIC_ACQUIRE);
    if (st == CLK_UNKNOWN) {
        int want = CLK_UNKNOWN;
        if (__atomic_compare_exchange_n(&iolens_clock_state, &want, CLK_BUSY, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            anchor_tsc = __builtin_ia32_rdtsc();
            anchor_mono = iolens_mono();
            __atomic_store_n(&iolens_clock_state, CLK_CALIBRATING, __ATOMIC_RELEASE);
        }
    } else if (st == CLK_CALIBRATING && m - anchor_mono >= CALIBRATE_NS) {
        int want = CLK_CALIBRATING;
        if (__atomic_compare_exchange_n(&iolens_clock_state, &want, CLK_BUSY, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            int ok = tsc_is_safe();
            if (ok) {
                uint64_t t = __builtin_ia32_rdtsc();
                publish_scale(t, iolens_mono());
            }
            __atomic_store_n(&iolens_clock_state, ok ? CLK_TSC : CLK_VDSO, __ATOMIC_RELEASE);
        }
    }
#endif
    return m;
}

/* On a rare path: once the time since the anchor has doubled, rescale from
 * the anchor to now, so the scale's error keeps shrinking as the run grows. */
void iolens_clock_refine(void)
{
#if defined(__x86_64__)
    if (__atomic_load_n(&iolens_clock_state, __ATOMIC_ACQUIRE) != CLK_TSC) return;
    uint64_t m = iolens_mono();
    if (m - anchor_mono < 2 * scaled_span) return;
    int want = CLK_TSC;
    if (!__atomic_compare_exchange_n(&iolens_clock_state, &want, CLK_BUSY, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return;
    uint64_t t = __builtin_ia32_rdtsc();
    publish_scale(t, iolens_mono());
    __atomic_store_n(&iolens_clock_state, CLK_TSC, __ATOMIC_RELEASE);
#endif
}
