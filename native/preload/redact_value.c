/* Redaction rules on one value (an argument, a word of a script, an
 * environment value): URLs, vendor tokens, JWTs, key blocks, HTTP headers,
 * connection strings; and the names that announce a secret.  The classes are
 * listed in redact.c. */
#include "redact_rules.h"

/* ---- small helpers -------------------------------------------------------- */

IOLENS_REDACT_COLD void rd_ranges_init(struct ranges *r)
{
    r->n = 0;
    r->floor = SIZE_MAX;
}

IOLENS_REDACT_COLD void rd_add_range(struct ranges *r, size_t s, size_t e)
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


/* s[0..n) equals lit, ignoring ASCII case */
/* s[0..l) equals lit[0..l), ignoring ASCII case in s (lit is lower case) */
static int ieq_n(const char *s, const char *lit, size_t l)
{
    for (size_t i = 0; i < l; i++)
        if (lower((unsigned char)s[i]) != lit[i]) return 0;
    return 1;
}


IOLENS_REDACT_COLD int rd_ieq(const char *s, size_t n, const char *lit)
{
    return iolens_strlen(lit) == n && ieq_n(s, lit, n);
}

IOLENS_REDACT_COLD static int icontains_l(const char *s, size_t n, const char *lit, size_t l)
{
    for (size_t i = 0; i + l <= n; i++) /* the first byte before the rest: most positions fail on it */
        if (lower((unsigned char)s[i]) == lit[0] && ieq_n(s + i, lit, l)) return 1;
    return 0;
}

IOLENS_REDACT_COLD int rd_icontains(const char *s, size_t n, const char *lit)
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

IOLENS_REDACT_COLD int rd_iends(const char *s, size_t n, const char *lit)
{
    size_t l = iolens_strlen(lit);
    return n >= l && ieq_n(s + n - l, lit, l);
}


/* A flag, variable or key name that announces a secret value. */
IOLENS_REDACT_COLD int rd_secret_name(const char *s, size_t n)
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
IOLENS_REDACT_COLD int rd_loose_secret_name(const char *s, size_t n)
{
    static const struct lit starts[] = {LIT("secret"),  LIT("token"),  LIT("passw"), LIT("auth"), LIT("apikey"),
                                        LIT("private"), LIT("cookie"), LIT("bearer"), LIT("jwt")};
    static const struct lit whole[] = {LIT("pass"), LIT("pw"),  LIT("pwd"), LIT("access"), LIT("key"),
                                       LIT("keys"), LIT("sig"), LIT("sas"), LIT("otp"),    LIT("pat")};
    if (rd_secret_name(s, n)) return 1;
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
IOLENS_REDACT_COLD int rd_secret_shaped(const char *v, size_t n)
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
    if (rd_icontains(v + ls, le - ls, "certificate") || rd_icontains(v + ls, le - ls, "public")) return le + 5;
    size_t b = le + 5, e = b;
    while (e + 8 <= n && !iolens_memeq(v + e, "-----END", 8)) e++;
    if (e + 8 > n) e = n;
    rd_add_range(r, b, e);
    return e;
}

/* Tokens, JWTs and key blocks wherever they start a word of a value: the
 * first character of each run of token characters is tried, the rest skipped. */
IOLENS_REDACT_COLD void rd_token_rule(const char *v, size_t n, struct ranges *r)
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
                rd_add_range(r, i, i + e);
                i += e;
                continue;
            }
            size_t l = vendor_token(v + i, n - i);
            if (l) {
                for (e = i + l; e < n && (tok_char(v[e]) || v[e] == '.');) e++;
                rd_add_range(r, i + l, e);
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

/* Is v a value in which the rules on text (redact.c, `text_rules`) can mark nothing?  One pass, where the rules
 * take a dozen: no character that a rule starts from or that splits text into words (':' of a header or URL,
 * '=' of a connection string or NAME=V, blanks, quotes, backslashes, shell separators), no leading '-' (a flag),
 * and, where the token rule looks (each run of token characters), no run of token characters and dots as long
 * as the shortest vendor token (15: xoxb- and 10) that starts with a prefix's first letter.  Then the value is
 * one word of one operand, which the word rules leave as it is.  A value that fails is given to the rules: so
 * this must stay in step with rd_token_rule, rd_value_rules and text_rules (tests/test_redact.py compares the two
 * over its every form). */
IOLENS_REDACT_COLD int rd_plain_value(const char *v, size_t n)
{
#ifdef IOLENS_REDACT_NO_SHORTCUT
    (void)v;
    (void)n;
    return 0;
#else
    if (n > 0 && v[0] == '-') return 0;
    for (size_t i = 0; i < n;) {
        int c = (unsigned char)v[i];
        if (!tok_char(c)) {
            switch (c) {
            case ':': case '=': case ' ': case '\t': case '\r': case '\n': case '<': case '>': case ';': case '|':
            case '&': case '(': case ')': case '`': case '\'': case '"': case '\\':
                return 0;
            default:
                i++;
                continue;
            }
        }
        if (token_first(c))
            for (size_t e = i; e < n && (tok_char(v[e]) || v[e] == '.'); e++)
                if (e - i + 1 >= 15) return 0;
        while (i < n && tok_char(v[i])) i++;
    }
    return 1;
#endif
}

/* user:PASSWORD, or a userinfo that is not a plain user name (a token): masked */
IOLENS_REDACT_COLD static void userinfo_rule(const char *v, size_t a, size_t at, struct ranges *r)
{
    const char *colon = find(v + a, at - a, ':');
    if (colon) {
        rd_add_range(r, (size_t)(colon - v) + 1, at);
        return;
    }
    int plain = at - a <= 32;
    for (size_t k = a; k < at && plain; k++) plain = (v[k] >= 'a' && v[k] <= 'z') || is_digit(v[k]) ||
                                                     in_set(v[k], "._-");
    if (!plain || vendor_token(v + a, at - a)) rd_add_range(r, a, at);
}

/* Webhook URLs carry their secret in the path: hooks.slack.com/..., .../webhooks/ID/TOKEN */
IOLENS_REDACT_COLD static void webhook_rule(const char *v, size_t host, size_t hend, size_t pend, struct ranges *r)
{
    if (rd_iends(v + host, hend - host, "hooks.slack.com")) {
        rd_add_range(r, hend, pend);
        return;
    }
    for (size_t k = hend; k + 8 < pend; k++)
        if (v[k] == '/' && ieq_n(v + k + 1, "webhook", 7)) {
            while (k + 1 < pend && v[k + 1] != '/') k++;
            rd_add_range(r, k + 1, pend);
            return;
        }
}

/* scheme://user:PASSWORD@host/path?sig=SECRET&token=SECRET, every URL in v */
IOLENS_REDACT_COLD void rd_url_rule(const char *v, size_t n, struct ranges *r)
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
            rd_add_range(r, i, run_end);
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
                if (rd_loose_secret_name(v + p, kl) || rd_icontains(v + p, kl, "signature"))
                    rd_add_range(r, (size_t)(eq - v) + 1, pe);
            }
            p = pe < lim && v[pe] == '&' ? pe + 1 : lim;
        }
    }
}

IOLENS_REDACT_COLD static int header_secret(const char *s, size_t n)
{
    return rd_ieq(s, n, "cookie") || rd_ieq(s, n, "set-cookie") || rd_ieq(s, n, "proxy-authorization") || rd_secret_name(s, n);
}

static int hname_char(int c) { return is_alnum(c) || c == '-' || c == '_'; }

/* "Authorization: Bearer SECRET" up to the end of the line, a literal \n or a
 * quote; "password": "SECRET" in JSON. */
IOLENS_REDACT_COLD void rd_header_rule(const char *v, size_t n, struct ranges *r)
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
            rd_add_range(r, b, e);
            i = e;
            continue;
        }
        e = b;
        while (e < n && !in_set(v[e], "\n\r'\"") && !(v[e] == '\\' && e + 1 < n && in_set(v[e + 1], "nr"))) e++;
        size_t w = b;
        while (w < e && (is_alnum(v[w]) || v[w] == '-')) w++;
        if (w > b && w < e && v[w] == ' ') /* keep the scheme: Bearer, Basic, token, ... */
            for (b = w; b < e && v[b] == ' ';) b++;
        rd_add_range(r, b, e);
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
        if (!rd_secret_name(v + s, i - s)) continue;
        int comma = s > 0 && v[s - 1] == ','; /* mount -o user=u,password=V,uid=0 */
        size_t e = i + 1;
        while (e < n && (semi ? v[e] != ';' : !is_space(v[e]) && !(comma && v[e] == ','))) e++;
        rd_add_range(r, i + 1, e);
        i = e; /* linear time, whatever the value */
    }
}

IOLENS_REDACT_COLD void rd_value_rules(const char *v, size_t n, struct ranges *r)
{
    rd_url_rule(v, n, r);
    rd_header_rule(v, n, r);
    rd_token_rule(v, n, r);
    conn_rule(v, n, r);
}
