/* Redaction rules for argv, script text and environment values: the one copy.
 *
 * Each rule marks byte ranges of a value as secret; the ranges are then
 * replaced by "***".  The rules:
 *   - a flag whose name announces a secret: --password=V, --token V, --pass,
 *     --pw, --pwd, --auth, ... (the value; --no-password and --*-stdin are
 *     switches and take no value);
 *   - NAME=V where NAME announces a secret (AWS_SECRET_ACCESS_KEY=..., as
 *     given to env or a shell);
 *   - per program: -p V and -pV for mysql, mariadb, their tools and sshpass;
 *     -u/--user/-U/--proxy-user/-E/--cert user:V for curl (after the colon);
 *     `aws configure set aws_secret_access_key V`;
 *   - URL passwords (scheme://user:V@host) and secret query parameters
 *     (X-Amz-Signature, sig, token, key, ...);
 *   - HTTP headers anywhere in a value: "Authorization: Bearer V", Cookie,
 *     X-Api-Key, X-Auth-Token, ... (the scheme word is kept), and
 *     "password": "V" in JSON;
 *   - connection strings: AccountKey=, SharedAccessSignature=, Password=,
 *     Pwd=, ... separated by ';' (or by spaces, as in libpq's conninfo);
 *   - script text (the argument after sh/bash -c, and any argument with
 *     spaces in it) is split into shell words and every rule is applied to
 *     them, so `bash -c 'mysql -pV db'` loses V; nested quoting is followed a
 *     few levels deep.
 * No allocation: the buffers are on the stack and bounded. */
#include "redact.h"

#include <stdint.h>
#include <string.h>

#include "nolibc.h" /* every image runs these rules at its start: no libc functions to bind */

#define MASK "***"
#define MASK_LEN 3
#define MAX_RANGES 64
#define WORD_MAX 2048 /* longer shell words get the value rules on their raw text */
#define TEXT_DEPTH 3  /* nested scripts followed */

/* ---- small helpers -------------------------------------------------------- */

struct ranges {
    int n;
    size_t floor; /* when the table is full: everything from here on is masked */
    size_t s[MAX_RANGES], e[MAX_RANGES];
};

IOLENS_REDACT_COLD static void ranges_init(struct ranges *r)
{
    r->n = 0;
    r->floor = SIZE_MAX;
}

IOLENS_REDACT_COLD static void add_range(struct ranges *r, size_t s, size_t e)
{
    if (e <= s) return;
    for (int k = 0; k < r->n; k++) /* found twice (a script and its words): kept once */
        if (r->s[k] <= s && e <= r->e[k]) return;
    if (r->n == MAX_RANGES) {
        if (s < r->floor) r->floor = s;
        return;
    }
    r->s[r->n] = s;
    r->e[r->n] = e;
    r->n++;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alnum(int c) { return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'z'); }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int in_set(int c, const char *set) { return c != 0 && iolens_strchr(set, c) != NULL; }

/* s[0..n) equals lit, ignoring ASCII case */
/* s[0..l) equals lit[0..l), ignoring ASCII case in s (lit is lower case) */
static int ieq_n(const char *s, const char *lit, size_t l)
{
    for (size_t i = 0; i < l; i++)
        if (lower((unsigned char)s[i]) != lit[i]) return 0;
    return 1;
}

IOLENS_REDACT_COLD static int ieq(const char *s, size_t n, const char *lit)
{
    return iolens_strlen(lit) == n && ieq_n(s, lit, n);
}

IOLENS_REDACT_COLD static int icontains(const char *s, size_t n, const char *lit)
{
    size_t l = iolens_strlen(lit);
    for (size_t i = 0; i + l <= n; i++) /* the first byte before the rest: most positions fail on it */
        if (lower((unsigned char)s[i]) == lit[0] && ieq_n(s + i, lit, l)) return 1;
    return 0;
}

IOLENS_REDACT_COLD static int iends(const char *s, size_t n, const char *lit)
{
    size_t l = iolens_strlen(lit);
    return n >= l && ieq_n(s + n - l, lit, l);
}

static const char *find(const char *s, size_t n, int c) { return iolens_memchr(s, c, n); }

/* A flag, variable or key name that announces a secret value. */
IOLENS_REDACT_COLD static int secret_name(const char *s, size_t n)
{
    static const char *const words[] = {"password", "passwd", "passphrase", "secret", "token", "apikey", "api_key",
                                        "api-key", "access_key", "access-key", "accesskey", "accountkey",
                                        "credential", "private_key", "private-key", "session_key",
                                        "authorization", "sharedaccess", "_key", "-key"};
    /* whole last component only: --pass, DB_PW, --auth (not --bypass-cache) */
    static const char *const parts[] = {"pass", "pw", "pwd", "auth", "sas", "sig", "signature"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (icontains(s, n, words[i])) return 1;
    size_t b = n;
    while (b > 0 && !in_set(s[b - 1], "-_.:")) b--;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (ieq(s + b, n - b, parts[i])) return 1;
    return 0;
}

/* ---- rules on a value ----------------------------------------------------- */

/* scheme://user:PASSWORD@host/path?sig=SECRET&token=SECRET, every URL in v */
IOLENS_REDACT_COLD static void url_rule(const char *v, size_t n, struct ranges *r)
{
    size_t run_end = 0; /* end of the current run of non-blank characters */
    int in_run = 0;     /* URLs seen in it: a run of thousands is masked, not scanned thousands of times */
    for (size_t i = 0; i + 3 <= n; i++) {
        if (!(v[i] == ':' && v[i + 1] == '/' && v[i + 2] == '/')) continue;
        if (i >= run_end) {
            for (run_end = i; run_end < n && !in_set(v[run_end], "\"' \t\n\r");) run_end++;
            in_run = 0;
        }
        if (++in_run > 64) {
            add_range(r, i, run_end);
            i = run_end;
            continue;
        }
        size_t a = i + 3, end = a, at = SIZE_MAX;
        while (end < n && !in_set(v[end], "/?#\"' \t\n\r")) end++;
        for (size_t k = a; k < end; k++)
            if (v[k] == '@') at = k; /* the last '@': a password may hold one */
        if (at != SIZE_MAX) {
            const char *colon = find(v + a, at - a, ':');
            if (colon) add_range(r, (size_t)(colon - v) + 1, at);
        }
        size_t q = end;
        while (q < n && !in_set(v[q], "?#\"' \t\n\r")) q++;
        if (q >= n || v[q] != '?') continue;
        for (size_t p = q + 1; p < n && !in_set(v[p], "#\"' \t\n\r");) {
            size_t pe = p;
            while (pe < n && !in_set(v[pe], "&#\"' \t\n\r")) pe++;
            const char *eq = find(v + p, pe - p, '=');
            if (eq) {
                size_t kl = (size_t)(eq - v) - p;
                if (secret_name(v + p, kl) || ieq(v + p, kl, "key") || icontains(v + p, kl, "signature"))
                    add_range(r, (size_t)(eq - v) + 1, pe);
            }
            p = pe < n && v[pe] == '&' ? pe + 1 : n;
        }
    }
}

IOLENS_REDACT_COLD static int header_secret(const char *s, size_t n)
{
    return ieq(s, n, "cookie") || ieq(s, n, "set-cookie") || ieq(s, n, "proxy-authorization") || secret_name(s, n);
}

static int hname_char(int c) { return is_alnum(c) || c == '-' || c == '_'; }

/* "Authorization: Bearer SECRET" up to the end of the line, a literal \n or a
 * quote; "password": "SECRET" in JSON. */
IOLENS_REDACT_COLD static void header_rule(const char *v, size_t n, struct ranges *r)
{
    for (size_t i = 1; i < n; i++) {
        if (v[i] != ':') continue;
        int json = v[i - 1] == '"';
        size_t ne = json ? i - 1 : i, s = ne;
        while (s > 0 && hname_char(v[s - 1])) s--;
        if (s > 1 && v[s - 1] == '\\' && in_set(v[s], "nrt")) s++; /* "...\nAuthorization:" */
        if (s == ne) continue;
        if (json && (s == 0 || v[s - 1] != '"')) continue;
        size_t before = json ? s - 1 : s;
        if (before > 0 && !in_set(v[before - 1], " \t\n\r'\"{,;([=") &&
            !(before > 1 && v[before - 2] == '\\' && in_set(v[before - 1], "nrt")))
            continue;
        if (!header_secret(v + s, ne - s)) continue;
        size_t b = i + 1, e;
        while (b < n && (v[b] == ' ' || v[b] == '\t')) b++;
        if (json) {
            if (b < n && v[b] == '"') {
                e = ++b;
                while (e < n && v[e] != '"' && v[e] != '\n') e++;
            } else {
                e = b;
                while (e < n && !in_set(v[e], ",}\n\r \t")) e++;
            }
            add_range(r, b, e);
            i = e;
            continue;
        }
        e = b;
        while (e < n && !in_set(v[e], "\n\r'\"") && !(v[e] == '\\' && e + 1 < n && in_set(v[e + 1], "nr"))) e++;
        size_t w = b;
        while (w < e && (is_alnum(v[w]) || v[w] == '-')) w++;
        if (w > b && w < e && v[w] == ' ') /* keep the scheme: Bearer, Basic, token, ... */
            for (b = w; b < e && v[b] == ' ';) b++;
        add_range(r, b, e);
        if (e > i) i = e - 1;
    }
}

/* Server=x;AccountKey=SECRET;... or host=x password=SECRET (libpq) */
IOLENS_REDACT_COLD static void conn_rule(const char *v, size_t n, struct ranges *r)
{
    int semi = find(v, n, ';') != NULL;
    for (size_t i = 1; i < n; i++) {
        if (v[i] != '=') continue;
        size_t s = i;
        while (s > 0 && (hname_char(v[s - 1]) || v[s - 1] == '.')) s--;
        if (s == i || (s > 0 && !in_set(v[s - 1], "; \t\n\r"))) continue;
        if (!secret_name(v + s, i - s)) continue;
        size_t e = i + 1;
        while (e < n && (semi ? v[e] != ';' : !is_space(v[e]))) e++;
        add_range(r, i + 1, e);
        i = e; /* linear time, whatever the value */
    }
}

IOLENS_REDACT_COLD static void value_rules(const char *v, size_t n, struct ranges *r)
{
    url_rule(v, n, r);
    header_rule(v, n, r);
    conn_rule(v, n, r);
}

/* ---- rules on a sequence of words (argv, or the words of a script) -------- */

enum prog { P_NONE, P_MYSQL, P_SSHPASS, P_CURL, P_AWS, P_SHELL };
enum next { N_NONE, N_ALL, N_AFTER_COLON, N_PLAIN };

struct ctx {
    int prog;           /* the program these words are arguments of */
    int next;           /* what the next word is */
    int script_pending; /* a shell saw -c: its first operand is a script */
    int depth;          /* scripts inside scripts */
};

IOLENS_REDACT_COLD static int prog_of(const char *v, size_t n)
{
    static const char *const mysql[] = {"mysql",         "mysqldump",    "mysqladmin",     "mysqlimport",
                                        "mysqlshow",     "mysqlcheck",   "mysqlpump",      "mysqlslap",
                                        "mariadb",       "mariadb-dump", "mariadb-admin",  "mariadb-import",
                                        "mariadb-show",  "mariadb-check", "mariadb-slap",  "mysqlbinlog"};
    static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"};
    size_t b = n;
    while (b > 0 && v[b - 1] != '/') b--;
    const char *base = v + b;
    size_t bl = n - b;
    for (size_t i = 0; i < sizeof mysql / sizeof mysql[0]; i++)
        if (bl == iolens_strlen(mysql[i]) && iolens_memeq(base, mysql[i], bl)) return P_MYSQL;
    for (size_t i = 0; i < sizeof shells / sizeof shells[0]; i++)
        if (bl == iolens_strlen(shells[i]) && iolens_memeq(base, shells[i], bl)) return P_SHELL;
    if (bl == 7 && iolens_memeq(base, "sshpass", 7)) return P_SSHPASS;
    if (bl == 4 && iolens_memeq(base, "curl", 4)) return P_CURL;
    if (bl == 3 && iolens_memeq(base, "aws", 3)) return P_AWS;
    return P_NONE;
}

IOLENS_REDACT_COLD static void after_colon(const char *v, size_t from, size_t n, struct ranges *r)
{
    const char *colon = find(v + from, n - from, ':');
    if (colon) add_range(r, (size_t)(colon - v) + 1, n);
}

IOLENS_REDACT_COLD static int curl_userpass(const char *name, size_t nl)
{
    return ieq(name, nl, "user") || ieq(name, nl, "proxy-user") || ieq(name, nl, "cert") ||
           ieq(name, nl, "proxy-cert");
}

IOLENS_REDACT_COLD static void flag_rules(struct ctx *c, const char *v, size_t n, struct ranges *r)
{
    size_t d = v[1] == '-' ? 2 : 1;
    const char *eq = find(v, n, '=');
    size_t nend = eq ? (size_t)(eq - v) : n;
    const char *name = v + d;
    size_t nl = nend - d;
    if (eq) {
        if (secret_name(name, nl))
            add_range(r, nend + 1, n);
        else if (c->prog == P_CURL && d == 2 && curl_userpass(name, nl))
            after_colon(v, nend + 1, n, r);
        return;
    }
    if (d == 2) {
        if (nl == 0) return; /* "--" */
        if (c->prog == P_CURL && curl_userpass(name, nl))
            c->next = N_AFTER_COLON;
        else if (secret_name(name, nl) && !(nl > 3 && ieq(name, 3, "no-")) && !iends(name, nl, "stdin"))
            c->next = N_ALL;
        return;
    }
    switch (c->prog) {
    case P_MYSQL:
    case P_SSHPASS:
        if (v[1] == 'p') {
            if (n == 2)
                c->next = N_ALL;
            else
                add_range(r, 2, n);
        }
        return;
    case P_CURL:
        if (in_set(v[1], "uUE")) {
            if (n == 2)
                c->next = N_AFTER_COLON;
            else
                after_colon(v, 2, n, r);
        }
        return;
    case P_SHELL:
        if (n == 2 && (v[1] == 'o' || v[1] == 'O')) {
            c->next = N_PLAIN; /* -o pipefail */
            return;
        }
        for (size_t i = 1; i < n && is_alnum(v[i]); i++)
            if (v[i] == 'c') c->script_pending = 1;
        return;
    default:
        return;
    }
}

IOLENS_REDACT_COLD static void text_rules(const char *t, size_t n, struct ranges *r, int depth);

IOLENS_REDACT_COLD static void word_rules(struct ctx *c, const char *v, size_t n, struct ranges *r)
{
    int next = c->next;
    c->next = N_NONE;
    if (next == N_ALL) {
        add_range(r, 0, n);
        return;
    }
    if (next == N_AFTER_COLON) {
        after_colon(v, 0, n, r);
        return;
    }
    int spaced = 0;
    for (size_t i = 0; i < n && !spaced; i++) spaced = is_space(v[i]);
    if (spaced) { /* a command line: connection strings are found in its words */
        url_rule(v, n, r);
        header_rule(v, n, r);
    } else {
        value_rules(v, n, r);
    }
    if (next != N_PLAIN && n >= 2 && v[0] == '-' && !is_digit(v[1])) {
        flag_rules(c, v, n, r);
    } else if (next != N_PLAIN && c->prog == P_SHELL && c->script_pending) {
        c->script_pending = 0;
        text_rules(v, n, r, c->depth + 1);
        return;
    } else if (next != N_PLAIN) {
        const char *eq = find(v, n, '=');
        if (eq && eq > v) {
            size_t kl = (size_t)(eq - v);
            if (!find(v, kl, '/') && !find(v, kl, ' ') && kl < 64 && secret_name(v, kl)) add_range(r, kl + 1, n);
        } else if (!eq && c->prog == P_AWS && !find(v, n, '/') && secret_name(v, n)) {
            c->next = N_ALL; /* aws configure set aws_secret_access_key VALUE */
        } else if (!eq) {
            int p = prog_of(v, n);
            if (p != P_NONE) {
                c->prog = p;
                c->script_pending = 0;
            }
        }
    }
    if (spaced) text_rules(v, n, r, c->depth + 1); /* an argument that is itself a command line */
}

/* Ranges found in a word's unquoted value, moved back onto its raw text. */
IOLENS_REDACT_COLD static void map_ranges(const struct ranges *wr, const uint16_t *map, size_t vl, size_t ws, size_t we,
                       struct ranges *r)
{
    for (int k = 0; k < wr->n; k++) add_range(r, ws + map[wr->s[k]], ws + map[wr->e[k] - 1] + 1);
    if (wr->floor < vl) add_range(r, ws + map[wr->floor], we);
}

static int text_sep(int c) { return in_set(c, "\n;|&()`"); }

/* Shell-like text: split into words (quotes and backslashes followed), rules
 * applied to each word with the program context reset at ; | & ( ) and
 * newlines, plus the header rule over the raw text. */
IOLENS_REDACT_COLD static void text_rules(const char *t, size_t n, struct ranges *r, int depth)
{
    header_rule(t, n, r);
    if (depth > TEXT_DEPTH) {
        value_rules(t, n, r);
        return;
    }
    struct ctx c = {P_NONE, N_NONE, 0, depth};
    char val[WORD_MAX];
    uint16_t map[WORD_MAX];
    size_t i = 0;
    while (i < n) {
        if (t[i] == ' ' || t[i] == '\t' || t[i] == '<' || t[i] == '>' || t[i] == '\r') {
            i++;
            continue;
        }
        if (text_sep(t[i])) {
            c.prog = P_NONE;
            c.next = N_NONE;
            c.script_pending = 0;
            i++;
            continue;
        }
        size_t ws = i, vl = 0;
        int over = 0;
#define PUSH(k)                                                         \
    do {                                                                \
        if (vl < WORD_MAX && (k) - ws <= UINT16_MAX) {                  \
            val[vl] = t[k];                                             \
            map[vl++] = (uint16_t)((k) - ws);                           \
        } else {                                                        \
            over = 1;                                                   \
        }                                                               \
    } while (0)
        while (i < n) {
            char ch = t[i];
            if (ch == '\'') {
                for (i++; i < n && t[i] != '\''; i++) PUSH(i);
                if (i < n) i++;
            } else if (ch == '"') {
                for (i++; i < n && t[i] != '"'; i++) {
                    if (t[i] == '\\' && i + 1 < n && in_set(t[i + 1], "\"\\$`")) i++;
                    PUSH(i);
                }
                if (i < n) i++;
            } else if (ch == '\\' && i + 1 < n) {
                PUSH(i + 1);
                i += 2;
            } else if (is_space(ch) || text_sep(ch) || ch == '<' || ch == '>') {
                break;
            } else {
                PUSH(i);
                i++;
            }
        }
#undef PUSH
        struct ranges wr;
        ranges_init(&wr);
        if (over) { /* too long to unquote: the rules on its raw text */
            word_rules(&c, t + ws, i - ws, &wr);
            for (int k = 0; k < wr.n; k++) add_range(r, ws + wr.s[k], ws + wr.e[k]);
            if (wr.floor < i - ws) add_range(r, ws + wr.floor, i);
        } else if (vl > 0) {
            word_rules(&c, val, vl, &wr);
            map_ranges(&wr, map, vl, ws, i, r);
        }
    }
}

/* ---- output --------------------------------------------------------------- */

IOLENS_REDACT_COLD static size_t put(char *out, size_t o, size_t cap, const char *s, size_t n)
{
    if (o + n + 1 > cap) n = o + 1 < cap ? cap - o - 1 : 0;
    iolens_memcpy(out + o, s, n);
    return o + n;
}

/* v with the ranges replaced by the mask (sorted and merged first). */
IOLENS_REDACT_COLD static size_t put_masked(char *out, size_t o, size_t cap, const char *v, size_t n, struct ranges *r)
{
    for (int a = 1; a < r->n; a++) /* insertion sort by start */
        for (int b = a; b > 0 && r->s[b - 1] > r->s[b]; b--) {
            size_t ts = r->s[b], te = r->e[b];
            r->s[b] = r->s[b - 1];
            r->e[b] = r->e[b - 1];
            r->s[b - 1] = ts;
            r->e[b - 1] = te;
        }
    size_t pos = 0, end = r->floor < n ? r->floor : n;
    int masked = 0; /* the text just before pos is a mask */
    for (int k = 0; k < r->n && r->s[k] < end; k++) {
        size_t s = r->s[k], e = r->e[k] < end ? r->e[k] : end;
        if (masked && s <= pos) { /* overlaps or touches the mask just written */
            if (e > pos) pos = e;
            continue;
        }
        o = put(out, o, cap, v + pos, s - pos);
        o = put(out, o, cap, MASK, MASK_LEN);
        pos = e;
        masked = 1;
    }
    if (end == n) return put(out, o, cap, v + pos, n - pos);
    if (!(masked && end <= pos)) { /* the range table overflowed: mask all that follows */
        o = put(out, o, cap, v + pos, end - pos);
        o = put(out, o, cap, MASK, MASK_LEN);
    }
    return o;
}

size_t iolens_redact_argv(int argc, char **argv, char *out, size_t cap)
{
    size_t o = 0;
    if (!argv || cap == 0) return 0;
    struct ctx c = {P_NONE, N_NONE, 0, 0};
    for (int i = 0; i < argc && argv[i]; i++) {
        const char *a = argv[i];
        size_t n = iolens_strlen(a);
        struct ranges r;
        ranges_init(&r);
        word_rules(&c, a, n, &r);
        o = put_masked(out, o, cap, a, n, &r);
        if (o + 1 < cap) out[o++] = 0;
    }
    return o;
}

/* Inline, not strncmp: every image runs this over its whole environment at
 * start, and most names differ from a key in their first byte. */
static inline __attribute__((always_inline)) int has_prefix(const char *v, const char *key)
{
    while (*key)
        if (*v++ != *key++) return 0;
    return 1;
}

/* The variables kept (a name, or a prefix of names), all in A-Z. */
#define IOLENS_ENV_KEEP(X) \
    X("TMPDIR=") X("TMP=") X("TEMP=") X("OMP_NUM_THREADS=") X("MKL_NUM_THREADS=") X("OPENBLAS_NUM_THREADS=") \
    X("SLURM_JOB_ID=") X("SLURM_CPUS_PER_TASK=") X("SLURM_JOB_NAME=") X("PBS_JOBID=") X("NXF_") X("SNAKEMAKE") \
    X("AWS_") X("GOOGLE_") X("AZURE_") X("S3_") X("HTS_") X("REF_PATH=") X("REF_CACHE=")

/* Is v a variable to keep?  Each key is a literal, so its first byte is a
 * constant compared with v[0]: a name is ruled out in a few compares rather
 * than by walking a table of pointers. */
IOLENS_REDACT_COLD static int env_wanted(const char *v)
{
#define IOLENS_X_KEEP(key) \
    if (v[0] == key[0] && has_prefix(v + 1, key + 1)) return 1;
    IOLENS_ENV_KEEP(IOLENS_X_KEEP)
#undef IOLENS_X_KEEP
    return 0;
}

size_t iolens_capture_env(char **envp, char *out, size_t cap)
{
    size_t o = 0;
    if (!envp || cap == 0) return 0;
    /* the first letters of the keys: most names are ruled out by one test */
    uint32_t first = 0;
#define IOLENS_X_FIRST(key) first |= 1u << (key[0] - 'A');
    IOLENS_ENV_KEEP(IOLENS_X_FIRST)
#undef IOLENS_X_FIRST
    for (char **e = envp; *e; e++) {
        const char *v = *e;
        unsigned c0 = (unsigned)(unsigned char)v[0] - 'A';
        if (c0 >= 26 || !(first >> c0 & 1) || !env_wanted(v)) continue;
        const char *eq = iolens_strchr(v, '=');
        if (!eq) continue;
        o = put(out, o, cap, v, (size_t)(eq + 1 - v));
        if (secret_name(v, (size_t)(eq - v))) {
            o = put(out, o, cap, MASK, MASK_LEN);
        } else {
            const char *val = eq + 1;
            size_t n = iolens_strlen(val);
            struct ranges r;
            ranges_init(&r);
            text_rules(val, n, &r, 1);
            o = put_masked(out, o, cap, val, n, &r);
        }
        if (o + 1 < cap) out[o++] = 0;
    }
    return o;
}
