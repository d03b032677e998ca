/* What the redaction rules share (internal): the ranges a rule marks, case-blind
 * matching, and the rules on one value (redact_value.c) that the rules on words
 * and scripts (redact.c) apply to each word.  Not part of the interface:
 * redact.h is. */
#ifndef IOLENS_REDACT_RULES_H
#define IOLENS_REDACT_RULES_H
#include <stdint.h>
#include <string.h>

#include "nolibc.h" /* every image runs these rules at its start: no libc functions to bind */
#include "redact.h"

#define MASK "***"
#define MASK_LEN 3
#define MAX_RANGES 64
#define WORD_MAX 2048 /* longer shell words get the value rules on their raw text */
#define TEXT_DEPTH 3  /* nested scripts followed */

struct ranges {
    int n;
    size_t floor; /* when the table is full: everything from here on is masked */
    size_t s[MAX_RANGES], e[MAX_RANGES];
};

/* inlined into the cold (size-optimized) rules: they run on every byte */
#define IOLENS_INLINE static inline __attribute__((always_inline))
IOLENS_INLINE int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
IOLENS_INLINE int is_digit(int c) { return c >= '0' && c <= '9'; }
IOLENS_INLINE int is_alnum(int c) { return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'z'); }
IOLENS_INLINE int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
IOLENS_INLINE int in_set(int c, const char *set) { return c != 0 && iolens_strchr(set, c) != NULL; }

IOLENS_INLINE const char *find(const char *s, size_t n, int c) { return iolens_memchr(s, c, n); }

/* a literal and its length, so tables are walked without measuring each entry */
struct lit {
    const char *s;
    unsigned char n;
};
#define LIT(x) {x, sizeof(x) - 1}
#define COUNT(a) (sizeof(a) / sizeof(a)[0])

IOLENS_REDACT_COLD void rd_ranges_init(struct ranges *r);
IOLENS_REDACT_COLD void rd_add_range(struct ranges *r, size_t s, size_t e);
IOLENS_REDACT_COLD int rd_ieq(const char *s, size_t n, const char *lit);
IOLENS_REDACT_COLD int rd_icontains(const char *s, size_t n, const char *lit);
IOLENS_REDACT_COLD int rd_iends(const char *s, size_t n, const char *lit);
IOLENS_REDACT_COLD int rd_secret_name(const char *s, size_t n);
IOLENS_REDACT_COLD int rd_loose_secret_name(const char *s, size_t n);
IOLENS_REDACT_COLD int rd_secret_shaped(const char *v, size_t n);
IOLENS_REDACT_COLD void rd_token_rule(const char *v, size_t n, struct ranges *r);
IOLENS_REDACT_COLD void rd_url_rule(const char *v, size_t n, struct ranges *r);
IOLENS_REDACT_COLD void rd_header_rule(const char *v, size_t n, struct ranges *r);
IOLENS_REDACT_COLD void rd_value_rules(const char *v, size_t n, struct ranges *r);
/* v is a value the rules on text leave as it is (checked in one pass; 0: ask them). */
IOLENS_REDACT_COLD int rd_plain_value(const char *v, size_t n);
#endif
