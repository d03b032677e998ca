#include "redact.h"

#include <ctype.h>
#include <string.h>

#define MASK "***"

/* A flag or variable name that announces a secret value. */
static int secret_name(const char *s, size_t n)
{
    static const char *words[] = {"password", "passwd", "secret", "token", "apikey", "api_key", "api-key",
                                  "access_key", "access-key", "accesskey", "credential", "private_key",
                                  "private-key", "session_key", "authorization", "_key", "-key"};
    char low[128];
    if (n >= sizeof low) n = sizeof low - 1;
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)s[i]);
    low[n] = 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(low, words[i])) return 1;
    return 0;
}

static size_t put(char *out, size_t o, size_t cap, const char *s, size_t n)
{
    if (o + n + 1 > cap) n = o + 1 < cap ? cap - o - 1 : 0;
    memcpy(out + o, s, n);
    return o + n;
}

/* Copy one value, masking URL passwords (scheme://user:pw@host) and secret
 * query parameters (?X-Amz-Signature=..., &token=...). */
static size_t put_value(char *out, size_t o, size_t cap, const char *v)
{
    const char *scheme = strstr(v, "://");
    if (!scheme) return put(out, o, cap, v, strlen(v));
    const char *auth = scheme + 3;
    const char *at = strchr(auth, '@');
    const char *slash = strchr(auth, '/');
    const char *colon = strchr(auth, ':');
    if (at && (!slash || at < slash) && colon && colon < at) {
        o = put(out, o, cap, v, (size_t)(colon + 1 - v));
        o = put(out, o, cap, MASK, 3);
        v = at;
    }
    const char *q = strchr(v, '?');
    if (!q) return put(out, o, cap, v, strlen(v));
    o = put(out, o, cap, v, (size_t)(q + 1 - v));
    const char *p = q + 1;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t kl = eq ? (size_t)(eq - p) : len;
        if (eq && (secret_name(p, kl) || (kl >= 9 && strncasecmp(p, "signature", 9) == 0) ||
                   strncasecmp(p, "x-amz-signature", kl) == 0 || strncasecmp(p, "sig", kl) == 0)) {
            o = put(out, o, cap, p, kl + 1);
            o = put(out, o, cap, MASK, 3);
        } else {
            o = put(out, o, cap, p, len);
        }
        if (!amp) break;
        o = put(out, o, cap, "&", 1);
        p = amp + 1;
    }
    return o;
}

static int is_flag(const char *a) { return a[0] == '-' && a[1] != 0 && !isdigit((unsigned char)a[1]); }

size_t iolens_redact_argv(int argc, char **argv, char *out, size_t cap)
{
    size_t o = 0;
    int mask_next = 0;
    if (!argv || cap == 0) return 0;
    for (int i = 0; i < argc && argv[i]; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        if (mask_next) {
            o = put(out, o, cap, MASK, 3);
            mask_next = 0;
        } else if (is_flag(a) && eq && secret_name(a, (size_t)(eq - a))) {
            o = put(out, o, cap, a, (size_t)(eq + 1 - a));
            o = put(out, o, cap, MASK, 3);
        } else if (!is_flag(a) && eq && eq > a && secret_name(a, (size_t)(eq - a)) &&
                   !strchr(a, '/') && (size_t)(eq - a) < 64) {
            o = put(out, o, cap, a, (size_t)(eq + 1 - a)); /* NAME=secret on a command line */
            o = put(out, o, cap, MASK, 3);
        } else {
            if (is_flag(a) && a[1] == '-' && !eq && secret_name(a, strlen(a))) mask_next = 1;
            o = put_value(out, o, cap, a);
        }
        if (o + 1 < cap) out[o++] = 0;
    }
    return o;
}

size_t iolens_capture_env(char **envp, char *out, size_t cap)
{
    static const char *keep[] = {"TMPDIR=", "TMP=", "TEMP=", "OMP_NUM_THREADS=", "MKL_NUM_THREADS=",
                                 "OPENBLAS_NUM_THREADS=", "SLURM_JOB_ID=", "SLURM_CPUS_PER_TASK=",
                                 "SLURM_JOB_NAME=", "PBS_JOBID=", "NXF_", "SNAKEMAKE", "AWS_", "GOOGLE_",
                                 "AZURE_", "S3_", "HTS_", "REF_PATH=", "REF_CACHE="};
    size_t o = 0;
    if (!envp) return 0;
    for (char **e = envp; *e; e++) {
        const char *v = *e;
        int wanted = 0;
        for (size_t i = 0; i < sizeof keep / sizeof keep[0] && !wanted; i++)
            wanted = strncmp(v, keep[i], strlen(keep[i])) == 0;
        const char *eq = strchr(v, '=');
        if (!wanted || !eq) continue;
        o = put(out, o, cap, v, (size_t)(eq + 1 - v));
        if (secret_name(v, (size_t)(eq - v)))
            o = put(out, o, cap, MASK, 3);
        else
            o = put_value(out, o, cap, eq + 1);
        if (o + 1 < cap) out[o++] = 0;
    }
    return o;
}
