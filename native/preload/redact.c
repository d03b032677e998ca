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
#include "redact_rules.h"

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
        rd_add_range(r, from, n);
        return;
    }
    const char *at = find(v + from, n - from, after);
    if (at) rd_add_range(r, (size_t)(at - v) + 1, n);
}

IOLENS_REDACT_COLD static int curl_userpass(const char *name, size_t nl)
{
    return rd_ieq(name, nl, "user") || rd_ieq(name, nl, "proxy-user") || rd_ieq(name, nl, "cert") ||
           rd_ieq(name, nl, "proxy-cert");
}

/* A flag name that may take a secret (--key, --creds, --pin): its value is
 * masked when it is secret-shaped. */
IOLENS_REDACT_COLD static int weak_secret_name(const char *s, size_t n)
{
    return rd_secret_name(s, n) || rd_icontains(s, n, "key") || rd_icontains(s, n, "cred") || rd_icontains(s, n, "pass") || rd_icontains(s, n, "auth") ||
           rd_icontains(s, n, "pin") || rd_icontains(s, n, "otp") || rd_icontains(s, n, "sec");
}

/* A flag whose value is a secret whatever its shape (--token-file PATH and
 * --key-dir PATH: a secret-shaped value only). */
IOLENS_REDACT_COLD static int strong_flag(const char *name, size_t nl)
{
    return rd_secret_name(name, nl) && !rd_iends(name, nl, "file") && !rd_iends(name, nl, "path") && !rd_iends(name, nl, "dir");
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
    if (kind == K_FLAG && c->prog->after && d == 2 && rd_ieq(name, nl, "user")) { /* smbclient --user u%V */
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
        if (strong_flag(name, nl) || (weak_secret_name(name, nl) && rd_secret_shaped(eq + 1, n - nend - 1)))
            rd_add_range(r, nend + 1, n);
        return;
    }
    if ((d == 2 || nl > 2) && strong_flag(name, nl) && !(nl > 3 && rd_ieq(name, 3, "no-")) && !rd_iends(name, nl, "stdin"))
        c->next = N_ALL;
    else if (d == 2 ? weak_secret_name(name, nl) : n == 2 && in_set(v[1], "pPkKaw"))
        c->next = N_SHAPED;
    else if (d == 1 && n > 2 && in_set(v[1], "pPkKw") && rd_secret_shaped(v + 2, n - 2))
        rd_add_range(r, 2, n); /* -pV of a program not known here */
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
    return rd_iends(v, n, word) && (n == l || v[n - l - 1] == 'n');
}

/* An operand: a program name, a subcommand, or a secret by its position. */
IOLENS_REDACT_COLD static void operand_rules(struct ctx *c, const char *v, size_t n, struct ranges *r)
{
    int kind = kind_of(c);
    if (c->netrc && (netrc_password(v, n, "password") || netrc_password(v, n, "passwd"))) {
        c->next = N_ALL; /* machine h login u password V, also in printf's "...\npassword V" */
        return;
    }
    if (rd_ieq(v, n, "machine") || rd_ieq(v, n, "default")) c->netrc = 1;
    if (kind == K_AWS && !find(v, n, '/') && rd_secret_name(v, n)) {
        c->next = N_ALL; /* aws configure set aws_secret_access_key V; rclone config create r s3 secret_access_key V */
        return;
    }
    if (kind == K_FLAG && (c->prog->how & H_LOGIN) && rd_ieq(v, n, "login")) c->login = 1;
    if (kind == K_MC && (rd_ieq(v, n, "set") || rd_ieq(v, n, "add"))) { /* mc alias set NAME URL KEY SECRET */
        c->login = 1;
        c->pos = 0;
        return;
    }
    c->pos++;
    if (kind == K_MC && c->login && c->pos == 4) {
        rd_add_range(r, 0, n);
        return;
    }
    if (kind == K_HTPASSWD && (c->batch & 1) && c->pos == ((c->batch & 2) ? 2 : 3)) {
        rd_add_range(r, 0, n); /* htpasswd -b FILE USER V, htpasswd -nb USER V */
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
    if (next == N_ALL || (next == N_SHAPED && rd_secret_shaped(v, n))) {
        rd_add_range(r, 0, n);
        return;
    }
    if (next == N_AFTER) {
        after_char(v, 0, n, c->after, r);
        return;
    }
    int spaced = 0;
    for (size_t i = 0; i < n && !spaced; i++) spaced = is_space(v[i]);
    if (spaced) { /* a command line: connection strings are found in its words */
        rd_url_rule(v, n, r);
        rd_header_rule(v, n, r);
        rd_token_rule(v, n, r);
    } else {
        rd_value_rules(v, n, r);
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
                (rd_secret_name(v, kl) || (env_name(v, kl) && rd_loose_secret_name(v, kl))))
                rd_add_range(r, kl + 1, n);
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
    for (int k = 0; k < wr->n; k++) rd_add_range(r, ws + map[wr->s[k]], ws + map[wr->e[k] - 1] + 1);
    if (wr->floor < vl) rd_add_range(r, ws + map[wr->floor], we);
}

static int text_sep(int c) { return in_set(c, "\n;|&()`"); }

/* Shell-like text: split into words (quotes and backslashes followed), rules
 * applied to each word with the program context reset at ; | & ( ) and
 * newlines, plus the header rule over the raw text. */
IOLENS_REDACT_COLD static void text_rules(const char *t, size_t n, struct ranges *r, int depth)
{
    rd_header_rule(t, n, r);
    if (depth > TEXT_DEPTH) {
        rd_value_rules(t, n, r);
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
        rd_ranges_init(&wr);
        if (over) { /* too long to unquote: the rules on its raw text */
            word_rules(&c, t + ws, i - ws, &wr);
            for (int k = 0; k < wr.n; k++) rd_add_range(r, ws + wr.s[k], ws + wr.e[k]);
            if (wr.floor < i - ws) rd_add_range(r, ws + wr.floor, i);
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
        rd_ranges_init(&r);
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
        const char *val = eq + 1;
        size_t n = iolens_strlen(val);
        if (rd_loose_secret_name(v, (size_t)(eq - v))) {
            o = put(out, o, cap, MASK, MASK_LEN);
        } else if (rd_plain_value(val, n)) { /* a path, a number, a name: most kept values */
            o = put(out, o, cap, val, n);
        } else {
            struct ranges r;
            rd_ranges_init(&r);
            text_rules(val, n, &r, 1);
            o = put_masked(out, o, cap, val, n, &r);
        }
        if (o + 1 < cap) out[o++] = 0;
    }
    return o;
}
