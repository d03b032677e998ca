/* Small JSON reader and writer; see json.h. */
#include "json.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p, *start;
    char *err;
    size_t errlen;
    int depth;
} parser;

static void perr(parser *ps, const char *what)
{
    if (ps->err && !ps->err[0])
        snprintf(ps->err, ps->errlen, "%s at offset %ld", what, (long)(ps->p - ps->start));
}

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static jval *new_val(enum jtype t)
{
    jval *v = calloc(1, sizeof *v);
    if (v)
        v->type = t;
    return v;
}

static void put_utf8(char **o, unsigned cp)
{
    char *q = *o;
    if (cp < 0x80) {
        *q++ = (char)cp;
    } else if (cp < 0x800) {
        *q++ = (char)(0xC0 | (cp >> 6));
        *q++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *q++ = (char)(0xE0 | (cp >> 12));
        *q++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *q++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *q++ = (char)(0xF0 | (cp >> 18));
        *q++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *q++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *q++ = (char)(0x80 | (cp & 0x3F));
    }
    *o = q;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static char *parse_string(parser *ps)
{
    /* ps->p at opening quote */
    const char *s = ++ps->p;
    size_t n = 0;
    while (s[n] && s[n] != '"') {
        if (s[n] == '\\' && s[n + 1])
            n++;
        n++;
    }
    if (!s[n]) {
        perr(ps, "unterminated string");
        return NULL;
    }
    char *out = malloc(n * 2 + 1), *o = out;
    if (!out)
        return NULL;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) {
            perr(ps, "control character in string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        c = (unsigned char)*ps->p++;
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(ps->p, &cp)) goto bad;
            ps->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->p[0] == '\\' && ps->p[1] == 'u' && !hex4(ps->p + 2, &lo) &&
                lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                ps->p += 6;
            }
            put_utf8(&o, cp);
            break;
        }
        default:
        bad:
            perr(ps, "bad escape in string");
            free(out);
            return NULL;
        }
    }
    ps->p++;
    *o = 0;
    return out;
}

static jval *parse_value(parser *ps);

static jval *parse_container(parser *ps, int is_obj)
{
    jval *v = new_val(is_obj ? J_OBJ : J_ARR), **tail;
    if (!v)
        return NULL;
    tail = &v->child;
    ps->p++;
    skip_ws(ps);
    char close = is_obj ? '}' : ']';
    if (*ps->p == close) {
        ps->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (is_obj) {
            if (*ps->p != '"') {
                perr(ps, "expected a string key");
                goto fail;
            }
            if (!(key = parse_string(ps)))
                goto fail;
            skip_ws(ps);
            if (*ps->p != ':') {
                free(key);
                perr(ps, "expected ':'");
                goto fail;
            }
            ps->p++;
        }
        jval *c = parse_value(ps);
        if (!c) {
            free(key);
            goto fail;
        }
        c->key = key;
        *tail = c;
        tail = &c->next;
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return v;
        }
        perr(ps, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        goto fail;
    }
fail:
    json_free(v);
    return NULL;
}

static jval *parse_value(parser *ps)
{
    skip_ws(ps);
    if (++ps->depth > 60) {
        perr(ps, "nesting too deep");
        return NULL;
    }
    jval *v = NULL;
    char c = *ps->p;
    if (c == '{' || c == '[') {
        v = parse_container(ps, c == '{');
    } else if (c == '"') {
        char *s = parse_string(ps);
        if (s && (v = new_val(J_STR)))
            v->str = s;
        else
            free(s);
    } else if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
        v = new_val(J_BOOL);
        if (v)
            v->boolean = c == 't';
        ps->p += c == 't' ? 4 : 5;
    } else if (!strncmp(ps->p, "null", 4)) {
        v = new_val(J_NULL);
        ps->p += 4;
    } else if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        double d = strtod(ps->p, &end);
        if (end == ps->p) {
            perr(ps, "bad number");
        } else if ((v = new_val(J_NUM))) {
            v->num = d;
            ps->p = end;
        }
    } else {
        perr(ps, c ? "unexpected character" : "unexpected end of input");
    }
    ps->depth--;
    return v;
}

jval *json_parse(const char *text, char *err, size_t errlen)
{
    parser ps = {text, text, err, errlen, 0};
    if (err && errlen)
        err[0] = 0;
    jval *v = parse_value(&ps);
    if (!v) {
        perr(&ps, "invalid JSON");
        return NULL;
    }
    skip_ws(&ps);
    if (*ps.p) {
        perr(&ps, "trailing characters after JSON");
        json_free(v);
        return NULL;
    }
    return v;
}

void json_free(jval *v)
{
    while (v) {
        jval *n = v->next;
        json_free(v->child);
        free(v->str);
        free(v->key);
        free(v);
        v = n;
    }
}

const jval *json_get(const jval *obj, const char *key)
{
    if (!obj || obj->type != J_OBJ)
        return NULL;
    const jval *found = NULL;
    for (const jval *c = obj->child; c; c = c->next)
        if (c->key && !strcmp(c->key, key))
            found = c;  /* last one wins, as in most parsers */
    return found;
}

size_t json_len(const jval *arr)
{
    size_t n = 0;
    if (arr && (arr->type == J_ARR || arr->type == J_OBJ))
        for (const jval *c = arr->child; c; c = c->next)
            n++;
    return n;
}

const jval *json_at(const jval *arr, size_t i)
{
    if (!arr)
        return NULL;
    for (const jval *c = arr->child; c; c = c->next)
        if (i-- == 0)
            return c;
    return NULL;
}

double json_num(const jval *obj, const char *key, double dflt, const char **bad)
{
    const jval *v = json_get(obj, key);
    if (!v || v->type == J_NULL)
        return dflt;
    if (v->type == J_BOOL)
        return v->boolean;
    if (v->type != J_NUM) {
        if (bad)
            *bad = key;
        return dflt;
    }
    return v->num;
}

int json_bool(const jval *obj, const char *key, int dflt, const char **bad)
{
    const jval *v = json_get(obj, key);
    if (!v || v->type == J_NULL)
        return dflt;
    if (v->type == J_BOOL)
        return v->boolean;
    if (v->type == J_NUM)
        return v->num != 0;
    if (bad)
        *bad = key;
    return dflt;
}

const char *json_str(const jval *obj, const char *key, const char *dflt, const char **bad)
{
    const jval *v = json_get(obj, key);
    if (!v || v->type == J_NULL)
        return dflt;
    if (v->type != J_STR) {
        if (bad)
            *bad = key;
        return dflt;
    }
    return v->str;
}

/* ---- writer ---------------------------------------------------------------- */

void jw_init(jw *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->first[0] = 1;
}

static void put_escaped(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void jw_key(jw *w, const char *key)
{
    if (!w->first[w->depth])
        fputc(',', w->f);
    w->first[w->depth] = 0;
    if (key) {
        put_escaped(w->f, key);
        fputc(':', w->f);
    }
}

void jw_obj(jw *w, const char *key)
{
    jw_key(w, key);
    fputc('{', w->f);
    if (w->depth < 63)
        w->first[++w->depth] = 1;
}

void jw_end_obj(jw *w)
{
    fputc('}', w->f);
    if (w->depth > 0)
        w->depth--;
}

void jw_arr(jw *w, const char *key)
{
    jw_key(w, key);
    fputc('[', w->f);
    if (w->depth < 63)
        w->first[++w->depth] = 1;
}

void jw_end_arr(jw *w)
{
    fputc(']', w->f);
    if (w->depth > 0)
        w->depth--;
}

void jw_str(jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    if (s)
        put_escaped(w->f, s);
    else
        fputs("null", w->f);
}

void jw_num(jw *w, const char *key, double v)
{
    jw_key(w, key);
    if (isnan(v) || isinf(v))
        fputs("null", w->f);
    else
        fprintf(w->f, "%.9g", v);
}

void jw_int(jw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void jw_uint(jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void jw_bool(jw *w, const char *key, int v)
{
    jw_key(w, key);
    fputs(v ? "true" : "false", w->f);
}

void jw_null(jw *w, const char *key)
{
    jw_key(w, key);
    fputs("null", w->f);
}
