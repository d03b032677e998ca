/* Redaction rules for argv, script text and environment values: the one copy.
 *
 * Each rule marks byte ranges of a value as secret; the ranges are then
 * replaced by "***".  The rules are classes (docs/design.md lists them):
 *   - flags whose name announces a secret, in any spelling: --password=V,
 *     --client-secret V, -Password V, -storepass V (--no-password, --*-stdin
 *     are switches; --token-file and --key-dir take a path);
 *   - a secret-shaped value (16+ key characters, case and digits mixed) after
 *     a flag that may take one: --key V, -k V, -pV of an unknown program;
 *   - per program, its password arguments (the tools[] table): mysql -pV,
 *     zip -P V, 7z -pV, redis-cli -a V, docker login -p V, smbclient -U u%V,
 *     lftp -u u,V, curl -u u:V, htpasswd -b f u V, mc alias set N URL K V,
 *     aws configure set aws_secret_access_key V, ...;
 *   - NAME=V where NAME announces a secret (any component of an upper-case
 *     NAME: AWS_CREDS=V), as given to env or a shell;
 *   - URLs: the userinfo's password, a userinfo that is a token, secret query
 *     parameters, webhook paths (hooks.slack.com, .../webhooks/ID/V);
 *   - vendor tokens by prefix and shape (ghp_V, xoxb-V, sk-proj-V, AKIAV, ...;
 *     the prefix is kept), JWTs, the bodies of PEM and OpenSSH key blocks;
 *   - HTTP headers anywhere in a value: "Authorization: Bearer V", Cookie,
 *     X-Api-Key, ... (the scheme word is kept), and "password": "V" in JSON;
 *   - connection strings: AccountKey=, SharedAccessSignature=, Password=,
 *     Pwd=, ... separated by ';', ',' or spaces (libpq's conninfo, mount -o);
 *   - .netrc text: machine H login U password V;
 *   - script text (the argument after sh/bash -c, and any argument with
 *     spaces in it) is split into shell words and every rule is applied to
 *     them, so `bash -c 'mysql -pV db'` loses V; nested quoting is followed a
 *     few levels deep;
 *   - the environment: a kept variable whose name has a component announcing
 *     a secret (CREDS, ACCESS, SECRET, TOKEN, KEY, PASS, AUTH, ...) is NAME=***,
 *     whatever rule kept it.
 * No allocation: the buffers are on the stack and bounded.  Every image runs
 * these rules at its start, so a word is ruled out early: a token is tried
 * only where a run of token characters starts with a prefix's first letter
 * and is long enough, a program name only when its length can match. */
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

/* inlined into the cold (size-optimized) rules: they run on every byte */
#define IOLENS_INLINE static inline __attribute__((always_inline))
IOLENS_INLINE int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
IOLENS_INLINE int is_digit(int c) { return c >= '0' && c <= '9'; }
IOLENS_INLINE int is_alnum(int c) { return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'z'); }
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

/* a literal and its length, so tables are walked without measuring each entry */
struct lit {
    const char *s;
    unsigned char n;
};
#define LIT(x) {x, sizeof(x) - 1}

IOLENS_REDACT_COLD static int ieq(const char *s, size_t n, const char *lit)
{
    return iolens_strlen(lit) == n && ieq_n(s, lit, n);
}

IOLENS_REDACT_COLD static int icontains_l(const char *s, size_t n, const char *lit, size_t l)
{
    for (size_t i = 0; i + l <= n; i++) /* the first byte before the rest: most positions fail on it */
        if (lower((unsigned char)s[i]) == lit[0] && ieq_n(s + i, lit, l)) return 1;
    return 0;
}

IOLENS_REDACT_COLD static int icontains(const char *s, size_t n, const char *lit)
{
    return icontains_l(s, n, lit, iolens_strlen(lit));
}

/* s[0..n) contains one of the words, ignoring case */
IOLENS_REDACT_COLD static int icontains_any(const char *s, size_t n, const struct lit *w, size_t nw)
{
    for (size_t i = 0; i < nw; i++)
        if (icontains_l(s, n, w[i].s, w[i].n)) return 1;
    return 0;
}

/* s[0..n) is one of the words, ignoring case */
IOLENS_REDACT_COLD static int ieq_any(const char *s, size_t n, const struct lit *w, size_t nw)
{
    for (size_t i = 0; i < nw; i++)
        if (w[i].n == n && ieq_n(s, w[i].s, n)) return 1;
    return 0;
}
#define COUNT(a) (sizeof(a) / sizeof(a)[0])

IOLENS_REDACT_COLD static int iends(const char *s, size_t n, const char *lit)
{
    size_t l = iolens_strlen(lit);
    return n >= l && ieq_n(s + n - l, lit, l);
}

static const char *find(const char *s, size_t n, int c) { return iolens_memchr(s, c, n); }

/* A flag, variable or key name that announces a secret value. */
IOLENS_REDACT_COLD static int secret_name(const char *s, size_t n)
{
    /* "_key" and "-key" stand for api_key, access-key, private_key, ... */
    static const struct lit words[] = {LIT("password"), LIT("passwd"),    LIT("passphrase"),    LIT("secret"),
                                       LIT("token"),    LIT("apikey"),    LIT("accesskey"),     LIT("accountkey"),
                                       LIT("cred"),     LIT("authorization"), LIT("sharedaccess"), LIT("_key"),
                                       LIT("-key")};
    /* whole last component only: --pass, DB_PW, --auth (not --bypass-cache) */
    static const struct lit parts[] = {LIT("pass"),       LIT("pw"),         LIT("pwd"),           LIT("auth"),
                                       LIT("sas"),        LIT("sig"),        LIT("signature"),     LIT("passin"),
                                       LIT("passout"),    LIT("storepass"),  LIT("keypass"),       LIT("srcstorepass"),
                                       LIT("deststorepass"), LIT("srckeypass"), LIT("destkeypass")};
    if (icontains_any(s, n, words, COUNT(words))) return 1;
    size_t b = n;
    while (b > 0 && !in_set(s[b - 1], "-_.:")) b--;
    return ieq_any(s + b, n - b, parts, COUNT(parts));
}

/* A variable or parameter name with a component that announces a secret:
 * AWS_CREDS, NXF_TOWER_ACCESS, S3_KEY, ?sig=, as well as every secret_name. */
IOLENS_REDACT_COLD static int loose_secret_name(const char *s, size_t n)
{
    static const struct lit starts[] = {LIT("secret"),  LIT("token"),  LIT("passw"), LIT("auth"), LIT("apikey"),
                                        LIT("private"), LIT("cookie"), LIT("bearer"), LIT("jwt")};
    static const struct lit whole[] = {LIT("pass"), LIT("pw"),  LIT("pwd"), LIT("access"), LIT("key"),
                                       LIT("keys"), LIT("sig"), LIT("sas"), LIT("otp"),    LIT("pat")};
    if (secret_name(s, n)) return 1;
    for (size_t b = 0; b < n;) {
        size_t e = b;
        while (e < n && !in_set(s[e], "-_.")) e++;
        for (size_t i = 0; i < COUNT(starts); i++)
            if (e - b >= starts[i].n && ieq_n(s + b, starts[i].s, starts[i].n)) return 1;
        if (ieq_any(s + b, e - b, whole, COUNT(whole))) return 1;
        b = e + 1;
    }
    return 0;
}

/* A value that looks like a key rather than a word or a path: 16+ characters of
 * a key alphabet, with lower case, upper case and digits mixed (or 32+ hex). */
IOLENS_REDACT_COLD static int secret_shaped(const char *v, size_t n)
{
    if (n < 16 || v[0] == '/' || v[0] == '-') return 0;
    int lo = 0, up = 0, dg = 0, hex = 1;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)v[i];
        if (c >= 'a' && c <= 'z') lo = 1, hex &= c <= 'f';
        else if (c >= 'A' && c <= 'Z') up = 1, hex = 0;
        else if (is_digit(c)) dg = 1;
        else if (!in_set(c, "+/=_~-")) return 0;
        else hex = 0;
    }
    return (lo && up && dg) || (hex && n >= 32 && lo && dg);
}

/* ---- rules on a value ----------------------------------------------------- */

/* the characters of a token: one load per byte on the rules' busiest path */
static const unsigned char tok_chars[256] = {['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1, ['_'] = 1,
                                             ['-'] = 1};
IOLENS_INLINE int tok_char(int c) { return tok_chars[(unsigned char)c]; }

/* the first letters of the prefixes vendor_token and jwt_end know */
IOLENS_INLINE int token_first(int c)
{
    switch (c) {
    case 'g': case 'x': case 's': case 'r': case 'w': case 'A': case 'a':
    case 'y': case 'h': case 'n': case 'p': case 'd': case 'S': case 'e':
        return 1;
    default:
        return 0;
    }
}

/* Vendor tokens by prefix and shape (the prefix is kept: ghp_***), anywhere in a
 * value; minimum lengths keep ordinary words out. */
IOLENS_REDACT_COLD static size_t vendor_token(const char *v, size_t n)
{
    size_t run = 0; /* the token's length, as far as the longest prefix and its minimum */
    while (run < n && run < 64 && (tok_char(v[run]) || v[run] == '.')) run++;
    /* PREFIX with at least MIN characters after it */
#define TRY(prefix, min) \
    if (run >= sizeof(prefix) - 1 + (min) && iolens_memeq(v, prefix, sizeof(prefix) - 1)) return sizeof(prefix) - 1;
    switch (v[0]) { /* one line a first letter */
    case 'g': TRY("ghp_", 20) TRY("gho_", 20) TRY("ghu_", 20) TRY("ghs_", 20) TRY("ghr_", 20) TRY("github_pat_", 20)
        TRY("glpat-", 16) TRY("gldt-", 16) TRY("glrt-", 16) TRY("glc_", 20) break;
    case 'x': TRY("xoxb-", 10) TRY("xoxp-", 10) TRY("xoxa-", 10) TRY("xoxr-", 10) TRY("xoxs-", 10) TRY("xoxe-", 10)
        TRY("xapp-", 10) break;
    case 's': TRY("sk-proj-", 16) TRY("sk-ant-", 16) TRY("sk-svcacct-", 16) TRY("sk-", 32) TRY("sk_live_", 16)
        TRY("sk_test_", 16) TRY("shpat_", 20) TRY("shpss_", 20) break;
    case 'r': TRY("rk_live_", 16) TRY("rk_test_", 16) break;
    case 'w': TRY("whsec_", 16) break;
    case 'A': TRY("AKIA", 16) TRY("ASIA", 16) TRY("AIza", 30) TRY("AGE-SECRET-KEY-1", 20) break;
    case 'y': TRY("ya29.", 20) break;
    case 'h': TRY("hf_", 30) TRY("hvs.", 20) TRY("hvb.", 20) break;
    case 'n': TRY("npm_", 30) break;
    case 'p': TRY("pypi-", 40) break;
    case 'd': TRY("dop_v1_", 32) TRY("dapi", 32) break;
    case 'S': TRY("SG.", 20) break;
    default:
        break;
    }
#undef TRY
    return 0;
}

/* eyJ<header>.<payload>.<signature>: a JWT, whole */
IOLENS_REDACT_COLD static size_t jwt_end(const char *v, size_t n)
{
    if (n < 3 || !iolens_memeq(v, "eyJ", 3)) return 0;
    size_t e = 0;
    for (int part = 0; part < 3; part++) {
        size_t b = e;
        while (e < n && tok_char(v[e])) e++;
        if (part < 2 && (e - b < 8 || e >= n || v[e] != '.')) return 0;
        if (part < 2) e++;
    }
    return e;
}

/* -----BEGIN <label>----- ... -----END <label>-----: the body of any block but a
 * certificate or a public key (the markers are kept); an unended block to the end. */
IOLENS_REDACT_COLD static size_t pem_rule(const char *v, size_t n, size_t i, struct ranges *r)
{
    if (n - i < 16 || !iolens_memeq(v + i, "-----BEGIN ", 11)) return i;
    size_t ls = i + 11, le = ls;
    while (le < n && v[le] != '-' && v[le] != '\n') le++;
    if (le + 5 > n || !iolens_memeq(v + le, "-----", 5)) return i;
    if (icontains(v + ls, le - ls, "certificate") || icontains(v + ls, le - ls, "public")) return le + 5;
    size_t b = le + 5, e = b;
    while (e + 8 <= n && !iolens_memeq(v + e, "-----END", 8)) e++;
    if (e + 8 > n) e = n;
    add_range(r, b, e);
    return e;
}

/* Tokens, JWTs and key blocks wherever they start a word of a value: the
 * first character of each run of token characters is tried, the rest skipped. */
IOLENS_REDACT_COLD static void token_rule(const char *v, size_t n, struct ranges *r)
{
    for (size_t i = 0; i < n;) {
        int c = v[i];
        if (c == '-') {
            size_t e = pem_rule(v, n, i, r);
            if (e != i) {
                i = e;
                continue;
            }
        } else if (token_first(c)) {
            size_t e = i; /* no prefix and its minimum is shorter than 15: most words stop here */
            while (e < n && e - i < 15 && (tok_char(v[e]) || v[e] == '.')) e++;
            e = e - i < 15 ? 0 : jwt_end(v + i, n - i);
            if (e) {
                add_range(r, i, i + e);
                i += e;
                continue;
            }
            size_t l = vendor_token(v + i, n - i);
            if (l) {
                for (e = i + l; e < n && (tok_char(v[e]) || v[e] == '.');) e++;
                add_range(r, i + l, e);
                i = e;
                continue;
            }
        }
        if (!tok_char(c)) {
            i++;
            continue;
        }
        while (i < n && tok_char(v[i])) i++;
    }
}

/* user:PASSWORD, or a userinfo that is not a plain user name (a token): masked */
IOLENS_REDACT_COLD static void userinfo_rule(const char *v, size_t a, size_t at, struct ranges *r)
{
    const char *colon = find(v + a, at - a, ':');
    if (colon) {
        add_range(r, (size_t)(colon - v) + 1, at);
        return;
    }
    int plain = at - a <= 32;
    for (size_t k = a; k < at && plain; k++) plain = (v[k] >= 'a' && v[k] <= 'z') || is_digit(v[k]) ||
                                                     in_set(v[k], "._-");
    if (!plain || vendor_token(v + a, at - a)) add_range(r, a, at);
}

/* Webhook URLs carry their secret in the path: hooks.slack.com/..., .../webhooks/ID/TOKEN */
IOLENS_REDACT_COLD static void webhook_rule(const char *v, size_t host, size_t hend, size_t pend, struct ranges *r)
{
    if (iends(v + host, hend - host, "hooks.slack.com")) {
        add_range(r, hend, pend);
        return;
    }
    for (size_t k = hend; k + 8 < pend; k++)
        if (v[k] == '/' && ieq_n(v + k + 1, "webhook", 7)) {
            while (k + 1 < pend && v[k + 1] != '/') k++;
            add_range(r, k + 1, pend);
            return;
        }
}

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
        if (at != SIZE_MAX) userinfo_rule(v, a, at, r);
        size_t q = end;
        while (q < n && !in_set(v[q], "?#\"' \t\n\r")) q++;
        webhook_rule(v, at != SIZE_MAX ? at + 1 : a, end, q, r);
        if (q >= n || v[q] != '?') continue;
        size_t lim = q + 1; /* the query ends where another URL starts: each byte is read for one URL */
        while (lim + 3 <= n && !(v[lim] == ':' && v[lim + 1] == '/' && v[lim + 2] == '/')) lim++;
        if (lim + 3 > n) lim = n;
        for (size_t p = q + 1; p < lim && !in_set(v[p], "#\"' \t\n\r");) {
            size_t pe = p;
            while (pe < lim && !in_set(v[pe], "&#\"' \t\n\r")) pe++;
            const char *eq = find(v + p, pe - p, '=');
            if (eq) {
                size_t kl = (size_t)(eq - v) - p;
                if (loose_secret_name(v + p, kl) || icontains(v + p, kl, "signature"))
                    add_range(r, (size_t)(eq - v) + 1, pe);
            }
            p = pe < lim && v[pe] == '&' ? pe + 1 : lim;
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
        if (s == i || (s > 0 && !in_set(v[s - 1], "; \t\n\r,"))) continue;
        if (!secret_name(v + s, i - s)) continue;
        int comma = s > 0 && v[s - 1] == ','; /* mount -o user=u,password=V,uid=0 */
        size_t e = i + 1;
        while (e < n && (semi ? v[e] != ';' : !is_space(v[e]) && !(comma && v[e] == ','))) e++;
        add_range(r, i + 1, e);
        i = e; /* linear time, whatever the value */
    }
}

IOLENS_REDACT_COLD static void value_rules(const char *v, size_t n, struct ranges *r)
{
    url_rule(v, n, r);
    header_rule(v, n, r);
    token_rule(v, n, r);
    conn_rule(v, n, r);
}

/* ---- rules on a sequence of words (argv, or the words of a script) -------- */

enum kind { K_NONE, K_FLAG, K_CURL, K_AWS, K_SHELL, K_HTPASSWD, K_MC };
enum next { N_NONE, N_ALL, N_AFTER, N_PLAIN, N_SHAPED };
enum how { H_ATTACHED = 1, H_NEXT = 2, H_LOGIN = 4 }; /* -pV, -p V, only after `login` */

/* Programs whose arguments follow rules of their own: for K_FLAG, the short
 * flag that takes a password, how, and the character the secret follows (0: all
 * of it; `smbclient -U user%V`). */
static const struct tool {
    struct lit name;
    unsigned char kind;
    char flag, after, how;
} tools[] = {
    {LIT("mysql"), K_FLAG, 'p', 0, 3},          {LIT("mysqldump"), K_FLAG, 'p', 0, 3},     {LIT("mysqladmin"), K_FLAG, 'p', 0, 3},
    {LIT("mysqlimport"), K_FLAG, 'p', 0, 3},    {LIT("mysqlshow"), K_FLAG, 'p', 0, 3},     {LIT("mysqlcheck"), K_FLAG, 'p', 0, 3},
    {LIT("mysqlpump"), K_FLAG, 'p', 0, 3},      {LIT("mysqlslap"), K_FLAG, 'p', 0, 3},     {LIT("mysqlbinlog"), K_FLAG, 'p', 0, 3},
    {LIT("mariadb"), K_FLAG, 'p', 0, 3},        {LIT("mariadb-dump"), K_FLAG, 'p', 0, 3},  {LIT("mariadb-admin"), K_FLAG, 'p', 0, 3},
    {LIT("mariadb-import"), K_FLAG, 'p', 0, 3}, {LIT("mariadb-show"), K_FLAG, 'p', 0, 3},  {LIT("mariadb-check"), K_FLAG, 'p', 0, 3},
    {LIT("mariadb-slap"), K_FLAG, 'p', 0, 3},   {LIT("sshpass"), K_FLAG, 'p', 0, 3},       {LIT("mongo"), K_FLAG, 'p', 0, 3},
    {LIT("mongosh"), K_FLAG, 'p', 0, 3},        {LIT("mongodump"), K_FLAG, 'p', 0, 3},     {LIT("mongorestore"), K_FLAG, 'p', 0, 3},
    {LIT("mongoexport"), K_FLAG, 'p', 0, 3},    {LIT("mongoimport"), K_FLAG, 'p', 0, 3},   {LIT("zip"), K_FLAG, 'P', 0, 3},
    {LIT("unzip"), K_FLAG, 'P', 0, 3},          {LIT("zipcloak"), K_FLAG, 'P', 0, 3},      {LIT("7z"), K_FLAG, 'p', 0, H_ATTACHED},
    {LIT("7za"), K_FLAG, 'p', 0, H_ATTACHED},   {LIT("7zr"), K_FLAG, 'p', 0, H_ATTACHED},  {LIT("7zz"), K_FLAG, 'p', 0, H_ATTACHED},
    {LIT("redis-cli"), K_FLAG, 'a', 0, 3},      {LIT("valkey-cli"), K_FLAG, 'a', 0, 3},    {LIT("keydb-cli"), K_FLAG, 'a', 0, 3},
    {LIT("redis-benchmark"), K_FLAG, 'a', 0, 3}, {LIT("docker"), K_FLAG, 'p', 0, 7},       {LIT("podman"), K_FLAG, 'p', 0, 7},
    {LIT("nerdctl"), K_FLAG, 'p', 0, 7},        {LIT("buildah"), K_FLAG, 'p', 0, 7},       {LIT("skopeo"), K_FLAG, 'p', 0, 7},
    {LIT("helm"), K_FLAG, 'p', 0, 7},           {LIT("oras"), K_FLAG, 'p', 0, 7},          {LIT("smbclient"), K_FLAG, 'U', '%', 3},
    {LIT("rpcclient"), K_FLAG, 'U', '%', 3},    {LIT("smbget"), K_FLAG, 'U', '%', 3},      {LIT("smbcacls"), K_FLAG, 'U', '%', 3},
    {LIT("lftp"), K_FLAG, 'u', ',', 3},         {LIT("ldapsearch"), K_FLAG, 'w', 0, 3},    {LIT("ldapadd"), K_FLAG, 'w', 0, 3},
    {LIT("ldapmodify"), K_FLAG, 'w', 0, 3},     {LIT("ldapdelete"), K_FLAG, 'w', 0, 3},    {LIT("ldapwhoami"), K_FLAG, 'w', 0, 3},
    {LIT("ldappasswd"), K_FLAG, 'w', 0, 3},     {LIT("sqlcmd"), K_FLAG, 'P', 0, 3},        {LIT("bcp"), K_FLAG, 'P', 0, 3},
    {LIT("ipmitool"), K_FLAG, 'P', 0, 3},       {LIT("az"), K_FLAG, 'p', 0, 3},            {LIT("rdesktop"), K_FLAG, 'p', 0, 3},
    {LIT("curl"), K_CURL, 0, 0, 0},             {LIT("aws"), K_AWS, 0, 0, 0},              {LIT("rclone"), K_AWS, 0, 0, 0},
    {LIT("htpasswd"), K_HTPASSWD, 0, 0, 0},     {LIT("mc"), K_MC, 0, 0, 0},                {LIT("mcli"), K_MC, 0, 0, 0},
    {LIT("sh"), K_SHELL, 0, 0, 0},              {LIT("bash"), K_SHELL, 0, 0, 0},           {LIT("dash"), K_SHELL, 0, 0, 0},
    {LIT("zsh"), K_SHELL, 0, 0, 0},             {LIT("ksh"), K_SHELL, 0, 0, 0},            {LIT("ash"), K_SHELL, 0, 0, 0},
    {LIT("mksh"), K_SHELL, 0, 0, 0},            {LIT("fish"), K_SHELL, 0, 0, 0},
};

struct ctx {
    const struct tool *prog; /* the program these words are arguments of */
    int next;                /* what the next word is */
    char after;              /* N_AFTER: the character the secret follows */
    int script_pending;      /* a shell saw -c: its first operand is a script */
    int depth;               /* scripts inside scripts */
    int login;               /* `docker login`, `mc alias set`: the subcommand seen */
    int pos;                 /* operands since the program (or its subcommand) */
    int batch;               /* htpasswd: -b (bit 1), -n (bit 2) */
    int netrc;               /* `machine HOST login U password V` text */
};

IOLENS_REDACT_COLD static const struct tool *prog_of(const char *v, size_t n)
{
    size_t b = n;
    while (b > 0 && v[b - 1] != '/') b--;
    const char *base = v + b;
    size_t bl = n - b;
    if (bl < 2 || bl > 15) return NULL; /* "az" .. "redis-benchmark": most file names are ruled out here */
    for (size_t i = 0; i < COUNT(tools); i++)
        if (base[0] == tools[i].name.s[0] && bl == tools[i].name.n && iolens_memeq(base, tools[i].name.s, bl))
            return &tools[i];
    return NULL;
}

static int kind_of(const struct ctx *c) { return c->prog ? c->prog->kind : K_NONE; }

IOLENS_REDACT_COLD static void new_command(struct ctx *c)
{
    c->prog = NULL;
    c->next = N_NONE;
    c->script_pending = c->login = c->pos = c->batch = 0;
}

/* field by field, not `= {0}`, which the compiler may turn into a call of libc's memset (bound at its first call) */
IOLENS_REDACT_COLD static void ctx_init(struct ctx *c, int depth)
{
    new_command(c);
    c->after = 0;
    c->depth = depth;
    c->netrc = 0;
}

/* the secret after `after` in v[from..n) (all of it when after is 0) */
IOLENS_REDACT_COLD static void after_char(const char *v, size_t from, size_t n, char after, struct ranges *r)
{
    if (!after) {
        add_range(r, from, n);
        return;
    }
    const char *at = find(v + from, n - from, after);
    if (at) add_range(r, (size_t)(at - v) + 1, n);
}

IOLENS_REDACT_COLD static int curl_userpass(const char *name, size_t nl)
{
    return ieq(name, nl, "user") || ieq(name, nl, "proxy-user") || ieq(name, nl, "cert") ||
           ieq(name, nl, "proxy-cert");
}

/* A flag name that may take a secret (--key, --creds, --pin): its value is
 * masked when it is secret-shaped. */
IOLENS_REDACT_COLD static int weak_secret_name(const char *s, size_t n)
{
    return secret_name(s, n) || icontains(s, n, "key") || icontains(s, n, "cred") || icontains(s, n, "pass") || icontains(s, n, "auth") ||
           icontains(s, n, "pin") || icontains(s, n, "otp") || icontains(s, n, "sec");
}

/* A flag whose value is a secret whatever its shape (--token-file PATH and
 * --key-dir PATH: a secret-shaped value only). */
IOLENS_REDACT_COLD static int strong_flag(const char *name, size_t nl)
{
    return secret_name(name, nl) && !iends(name, nl, "file") && !iends(name, nl, "path") && !iends(name, nl, "dir");
}

IOLENS_REDACT_COLD static void flag_rules(struct ctx *c, const char *v, size_t n, struct ranges *r)
{
    size_t d = v[1] == '-' ? 2 : 1;
    const char *eq = find(v, n, '=');
    size_t nend = eq ? (size_t)(eq - v) : n;
    const char *name = v + d;
    size_t nl = nend - d;
    int kind = kind_of(c);
    if (kind == K_FLAG && d == 1 && v[1] == c->prog->flag && (!(c->prog->how & H_LOGIN) || c->login)) {
        if (n > 2 && (c->prog->how & H_ATTACHED))
            after_char(v, 2, n, c->prog->after, r);
        else if (n == 2 && (c->prog->how & H_NEXT)) {
            c->next = N_AFTER;
            c->after = c->prog->after;
        }
        return;
    }
    if (kind == K_FLAG && c->prog->after && d == 2 && ieq(name, nl, "user")) { /* smbclient --user u%V */
        if (eq)
            after_char(v, nend + 1, n, c->prog->after, r);
        else {
            c->next = N_AFTER;
            c->after = c->prog->after;
        }
        return;
    }
    if (kind == K_CURL && (d == 2 ? curl_userpass(name, nl) : in_set(v[1], "uUE"))) {
        if (d == 2 && eq)
            after_char(v, nend + 1, n, ':', r);
        else if (d == 1 && n > 2)
            after_char(v, 2, n, ':', r);
        else {
            c->next = N_AFTER;
            c->after = ':';
        }
        return;
    }
    if (kind == K_HTPASSWD && d == 1) {
        if (n == 2 && (v[1] == 'C' || v[1] == 'r')) c->next = N_PLAIN; /* -C cost, -r rounds */
        for (size_t i = 1; i < n; i++) c->batch |= (v[i] == 'b') | (v[i] == 'n') << 1;
        return;
    }
    if (kind == K_SHELL && d == 1) {
        if (n == 2 && (v[1] == 'o' || v[1] == 'O')) {
            c->next = N_PLAIN; /* -o pipefail */
            return;
        }
        for (size_t i = 1; i < n && is_alnum(v[i]); i++)
            if (v[i] == 'c') c->script_pending = 1;
        return;
    }
    if (d == 2 && nl == 0) return; /* "--" */
    if (eq) {
        if (strong_flag(name, nl) || (weak_secret_name(name, nl) && secret_shaped(eq + 1, n - nend - 1)))
            add_range(r, nend + 1, n);
        return;
    }
    if ((d == 2 || nl > 2) && strong_flag(name, nl) && !(nl > 3 && ieq(name, 3, "no-")) && !iends(name, nl, "stdin"))
        c->next = N_ALL;
    else if (d == 2 ? weak_secret_name(name, nl) : n == 2 && in_set(v[1], "pPkKaw"))
        c->next = N_SHAPED;
    else if (d == 1 && n > 2 && in_set(v[1], "pPkKw") && secret_shaped(v + 2, n - 2))
        add_range(r, 2, n); /* -pV of a program not known here */
}

IOLENS_REDACT_COLD static void text_rules(const char *t, size_t n, struct ranges *r, int depth);

/* an environment-style name: A-Z, 0-9 and _ */
static int env_name(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || is_digit(s[i]) || s[i] == '_')) return 0;
    return n > 0;
}

/* "password" in .netrc text, also at the end of printf's "...\npassword" (unquoted: "...npassword") */
IOLENS_REDACT_COLD static int netrc_password(const char *v, size_t n, const char *word)
{
    size_t l = iolens_strlen(word);
    return iends(v, n, word) && (n == l || v[n - l - 1] == 'n');
}

/* An operand: a program name, a subcommand, or a secret by its position. */
IOLENS_REDACT_COLD static void operand_rules(struct ctx *c, const char *v, size_t n, struct ranges *r)
{
    int kind = kind_of(c);
    if (c->netrc && (netrc_password(v, n, "password") || netrc_password(v, n, "passwd"))) {
        c->next = N_ALL; /* machine h login u password V, also in printf's "...\npassword V" */
        return;
    }
    if (ieq(v, n, "machine") || ieq(v, n, "default")) c->netrc = 1;
    if (kind == K_AWS && !find(v, n, '/') && secret_name(v, n)) {
        c->next = N_ALL; /* aws configure set aws_secret_access_key V; rclone config create r s3 secret_access_key V */
        return;
    }
    if (kind == K_FLAG && (c->prog->how & H_LOGIN) && ieq(v, n, "login")) c->login = 1;
    if (kind == K_MC && (ieq(v, n, "set") || ieq(v, n, "add"))) { /* mc alias set NAME URL KEY SECRET */
        c->login = 1;
        c->pos = 0;
        return;
    }
    c->pos++;
    if (kind == K_MC && c->login && c->pos == 4) {
        add_range(r, 0, n);
        return;
    }
    if (kind == K_HTPASSWD && (c->batch & 1) && c->pos == ((c->batch & 2) ? 2 : 3)) {
        add_range(r, 0, n); /* htpasswd -b FILE USER V, htpasswd -nb USER V */
        return;
    }
    const struct tool *p = prog_of(v, n);
    if (p) {
        int netrc = c->netrc;
        new_command(c);
        c->prog = p;
        c->netrc = netrc;
    }
}

IOLENS_REDACT_COLD static void word_rules(struct ctx *c, const char *v, size_t n, struct ranges *r)
{
    int next = c->next;
    c->next = N_NONE;
    if (next == N_ALL || (next == N_SHAPED && secret_shaped(v, n))) {
        add_range(r, 0, n);
        return;
    }
    if (next == N_AFTER) {
        after_char(v, 0, n, c->after, r);
        return;
    }
    int spaced = 0;
    for (size_t i = 0; i < n && !spaced; i++) spaced = is_space(v[i]);
    if (spaced) { /* a command line: connection strings are found in its words */
        url_rule(v, n, r);
        header_rule(v, n, r);
        token_rule(v, n, r);
    } else {
        value_rules(v, n, r);
    }
    if (next != N_PLAIN && n >= 2 && v[0] == '-' && !is_digit(v[1])) {
        flag_rules(c, v, n, r);
    } else if (next != N_PLAIN && kind_of(c) == K_SHELL && c->script_pending) {
        c->script_pending = 0;
        text_rules(v, n, r, c->depth + 1);
        return;
    } else if (next != N_PLAIN) {
        const char *eq = find(v, n, '=');
        if (eq && eq > v) {
            size_t kl = (size_t)(eq - v);
            if (!find(v, kl, '/') && !find(v, kl, ' ') && kl < 64 &&
                (secret_name(v, kl) || (env_name(v, kl) && loose_secret_name(v, kl))))
                add_range(r, kl + 1, n);
        } else if (!eq) {
            operand_rules(c, v, n, r);
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
    struct ctx c;
    ctx_init(&c, depth);
    char val[WORD_MAX];
    uint16_t map[WORD_MAX];
    size_t i = 0;
    while (i < n) {
        if (t[i] == ' ' || t[i] == '\t' || t[i] == '<' || t[i] == '>' || t[i] == '\r') {
            i++;
            continue;
        }
        if (text_sep(t[i])) {
            new_command(&c);
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
    struct ctx c;
    ctx_init(&c, 0);
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
        if (loose_secret_name(v, (size_t)(eq - v))) {
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
