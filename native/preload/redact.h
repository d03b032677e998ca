/* Secrets never reach the capture: argv and the recorded environment are
 * redacted in the process before they are written. */
#ifndef IOLENS_REDACT_H
#define IOLENS_REDACT_H
#include <stddef.h>

/* argv as NUL-separated text with secret values replaced by "***". */
size_t iolens_redact_argv(int argc, char **argv, char *out, size_t cap);
/* The environment variables worth keeping (temp dirs, thread counts,
 * scheduler and cloud settings) as NUL-separated K=V, secrets redacted. */
size_t iolens_capture_env(char **envp, char *out, size_t cap);
#endif
