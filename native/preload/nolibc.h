/*
 * String helpers for the code every image runs once, at its start and its
 * end (the constructor, the environment, redaction, the part written at
 * exit).  libc's functions are bound lazily: the first call of each costs
 * the loader a symbol lookup and a save of the whole vector register state,
 * about 800 instructions, in every process, even /bin/true.  These short
 * loops cost none of that; the strings they see are short (names, paths,
 * environment entries).  The preload is built with
 * -fno-tree-loop-distribute-patterns, so the compiler does not turn them
 * back into calls of the same libc functions.  The hot paths keep libc's.
 */
#ifndef IOLENS_NOLIBC_H
#define IOLENS_NOLIBC_H

#include <stddef.h>
#include <stdint.h>

#define IOLENS_NOLIBC static inline __attribute__((unused))

IOLENS_NOLIBC size_t iolens_strlen(const char *s)
{
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

IOLENS_NOLIBC void iolens_memcpy(void *d, const void *s, size_t n)
{
    char *o = d;
    const char *i = s;
    while (n--) *o++ = *i++;
}

IOLENS_NOLIBC void iolens_memset0(void *d, size_t n)
{
    volatile char *o = d; /* volatile: never folded into a call of memset */
    while (n--) *o++ = 0;
}

IOLENS_NOLIBC int iolens_memeq(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return 0;
    return 1;
}

/* strcmp(a, b) == 0 */
IOLENS_NOLIBC int iolens_streq(const char *a, const char *b)
{
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/* strncmp(s, key, n) == 0 */
IOLENS_NOLIBC int iolens_strneq(const char *s, const char *key, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != key[i]) return 0;
        if (!s[i]) return 1;
    }
    return 1;
}

IOLENS_NOLIBC const char *iolens_strchr(const char *s, int c)
{
    for (;; s++) {
        if (*s == (char)c) return s;
        if (!*s) return 0;
    }
}

IOLENS_NOLIBC const char *iolens_memchr(const char *s, int c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == (char)c) return s + i;
    return 0;
}

/* the decimal number at *s, and *s past it */
IOLENS_NOLIBC uint64_t iolens_digits(const char **s)
{
    uint64_t v = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++) v = v * 10 + (uint64_t)(**s - '0');
    return v;
}

/* v in decimal at o, not past end; the position after it, or 0 when it did not fit */
IOLENS_NOLIBC char *iolens_put_u64(char *o, const char *end, uint64_t v)
{
    char d[20];
    int n = 0;
    do d[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n && o < end) *o++ = d[--n];
    return n ? 0 : o;
}

/* getenv over envp (the environment as the image started with it) */
IOLENS_NOLIBC const char *iolens_getenv_in(char **envp, const char *key)
{
    size_t kl = iolens_strlen(key);
    if (!envp) return 0;
    for (char **e = envp; *e; e++)
        if (iolens_strneq(*e, key, kl) && (*e)[kl] == '=') return *e + kl + 1;
    return 0;
}

#endif
