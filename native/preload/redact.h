/* Secrets never reach the capture: argv and the recorded environment are
 * redacted in the process before they are written.
 *
 * These rules are the only copy: the interposer links redact.c, and the same
 * file is built alone as libiolens_redact.so, which Python loads (redact.py)
 * for iolens's own record of the command. */
#ifndef IOLENS_REDACT_H
#define IOLENS_REDACT_H
#include <stddef.h>

#ifdef IOLENS_REDACT_EXPORT
#define IOLENS_REDACT_API __attribute__((visibility("default")))
#else
#define IOLENS_REDACT_API
#endif
/* run once per image, at its start: with the interposer's other start-up code (core.h, IOLENS_COLD) */
#define IOLENS_REDACT_COLD __attribute__((cold))

/* argv as NUL-separated text with secret values replaced by "***".
 * Output past cap - 1 bytes is cut; the return value is the bytes written. */
IOLENS_REDACT_API IOLENS_REDACT_COLD size_t iolens_redact_argv(int argc, char **argv, char *out, size_t cap);
/* The environment variables worth keeping (temp dirs, thread counts,
 * scheduler and cloud settings) as NUL-separated K=V, secrets redacted. */
IOLENS_REDACT_API IOLENS_REDACT_COLD size_t iolens_capture_env(char **envp, char *out, size_t cap);
#endif
