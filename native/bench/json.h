/*
 * A small JSON reader (to a tree) and writer, enough for engine jobs and results.
 * Numbers are doubles; strings are NUL-terminated UTF-8.
 */
#ifndef IOLENS_BENCH_JSON_H
#define IOLENS_BENCH_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct jval {
    enum jtype type;
    double num;
    int boolean;
    char *str;           /* J_STR */
    char *key;           /* set when this value is a member of an object */
    struct jval *child;  /* first element / member */
    struct jval *next;   /* next sibling */
} jval;

/* Parse text; NULL on error with a message in err (size errlen). */
jval *json_parse(const char *text, char *err, size_t errlen);
void json_free(jval *v);

const jval *json_get(const jval *obj, const char *key);
size_t json_len(const jval *arr);
const jval *json_at(const jval *arr, size_t i);

/* Typed getters with defaults; they report a type mismatch through *bad (if not NULL). */
double json_num(const jval *obj, const char *key, double dflt, const char **bad);
int json_bool(const jval *obj, const char *key, int dflt, const char **bad);
const char *json_str(const jval *obj, const char *key, const char *dflt, const char **bad);

/* Writer: a streaming emitter that tracks commas. */
typedef struct {
    FILE *f;
    int depth;
    int first[64];
} jw;

void jw_init(jw *w, FILE *f);
void jw_obj(jw *w, const char *key);   /* key NULL inside arrays / at top */
void jw_end_obj(jw *w);
void jw_arr(jw *w, const char *key);
void jw_end_arr(jw *w);
void jw_str(jw *w, const char *key, const char *s);   /* s NULL -> null */
void jw_num(jw *w, const char *key, double v);        /* NaN/inf -> null */
void jw_int(jw *w, const char *key, int64_t v);
void jw_uint(jw *w, const char *key, uint64_t v);
void jw_bool(jw *w, const char *key, int v);
void jw_null(jw *w, const char *key);

#endif
