/*
 * The recorder's variables are its own.  Set by the launcher (IOLENS,
 * capture/record.py's `recorder_value`) or a pipeline's engine (IOLENS_DIR,
 * ...), they are taken out of environ at start, so the program (and `env`)
 * sees what it would see unprofiled, and put back only into the environments
 * passed on (exec, posix_spawn, system, popen: process.c), unless the program
 * started is one the interposer cannot load in (a static one, another
 * machine's).  Uses only the floor (base.c).
 */
#include "internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nolibc.h"

/* Set by the launcher (IOLENS, capture/record.py's `recorder_value`) or a
 * pipeline's engine (IOLENS_DIR, ...); taken out of environ at start, so the
 * program (and `env`) sees what it would see unprofiled, and put back only
 * into the environments passed on. */
static const char *const env_keys[] = {"IOLENS",           "IOLENS_DIR",        "IOLENS_TRACE",
                                        "IOLENS_MAX_FILES", "IOLENS_PARENT_PID", "IOLENS_CLOCK",
                                        "IOLENS_EXE"};
#define NKEYS (sizeof env_keys / sizeof env_keys[0])
#define KEY_EXE 6 /* the parent's answer for this image only (iolens_env_exe): never passed on as it came */
/* Pointers into the environment's own strings, which stay where they are
 * (only the array shrinks); so the start copies little and touches few pages. */
IOLENS_START_DATA static const char *env_saved[NKEYS]; /* "KEY=value", 0 when unset */
IOLENS_START_DATA static char *preload_full;           /* "LD_PRELOAD=..." as the launcher set it */
/* Where the two LD_PRELOAD strings are made: a value of usual length in .data (the page the loader writes
 * anyway), a long one in .bss (a page more to fault in). */
IOLENS_START_DATA static char preload_small[480];
static char preload_pool[1100 + 4096];
static char nothing[1];
static char *preload_own = nothing;  /* "LD_PRELOAD=<this library>"; empty: not found */
static char *preload_rest = nothing; /* the program's part of it, as left in environ; empty: none */
IOLENS_START_DATA static const char *own_path;
IOLENS_START_DATA static int env_taken;

IOLENS_COLD static int starts(const char *s, const char *key, size_t kl) { return iolens_strneq(s, key, kl) && s[kl] == '='; }

/* Is [s, s+n) this library?  By its file name (pass 0), else by the path
 * the loader used (pass 1). */
IOLENS_COLD static int is_own(const char *s, size_t n, int pass)
{
    static const char name[] = "libiolens_preload.so";
    size_t nl = sizeof name - 1;
    if (pass == 0) return n >= nl && iolens_memeq(s + n - nl, name, nl) && (n == nl || s[n - nl - 1] == '/');
    if (!own_path) { /* looked up only when needed: dladdr walks every loaded object */
        Dl_info di;
        own_path = dladdr((void *)is_own, &di) && di.dli_fname ? di.dli_fname : "";
    }
    return iolens_strlen(own_path) == n && iolens_memeq(s, own_path, n);
}

/* Where our entry is in an LD_PRELOAD value (space or colon separated).
 * Every entry is tried by name before any by path, so other preloads
 * listed first (a sanitizer's, valgrind's) cost no dladdr. */
IOLENS_COLD static const char *find_own(const char *v, size_t *len)
{
    for (int pass = 0; pass < 2; pass++)
        for (const char *p = v; *p;) {
            while (*p == ' ' || *p == ':') p++;
            const char *e = p;
            while (*e && *e != ' ' && *e != ':') e++;
            if (e > p && is_own(p, (size_t)(e - p), pass)) {
                *len = (size_t)(e - p);
                return p;
            }
            p = e;
        }
    return 0;
}

/* Is v the launcher's IOLENS value, <pid>[t][m<N>]/<directory>?  A user's
 * own IOLENS (a script's name for the iolens command, say) is not ours: it
 * is left where it is and the pipeline's IOLENS_DIR is read instead. */
IOLENS_COLD int iolens_env_packed(const char *v)
{
    if (!v || *v < '0' || *v > '9') return 0;
    while (*v >= '0' && *v <= '9') v++;
    while (*v == 't' || *v == 'm' || (*v >= '0' && *v <= '9')) v++;
    return *v == '/';
}

IOLENS_COLD const char *iolens_env(const char *key)
{
    if (!env_taken) return iolens_getenv_in(environ, key);
    size_t kl = iolens_strlen(key);
    for (size_t k = 0; k < NKEYS; k++)
        if (env_saved[k] && starts(env_saved[k], key, kl)) return env_saved[k] + kl + 1;
    return 0;
}

IOLENS_COLD void iolens_env_take(void)
{
    char **env = environ;
    if (!env) return;
    size_t o = 0;
    for (size_t i = 0; env[i]; i++) {
        char *e = env[i];
        int drop = 0;
        for (size_t k = 0; k < NKEYS && !drop && e[0] == 'I'; k++) {
            size_t kl = iolens_strlen(env_keys[k]);
            if (!starts(e, env_keys[k], kl)) continue;
            if (k == 0 && !iolens_env_packed(e + kl + 1)) break; /* the user's IOLENS, not the launcher's */
            env_saved[k] = e;
            drop = 1;
        }
        size_t at_len;
        const char *at;
        if (!drop && e[0] == 'L' && starts(e, "LD_PRELOAD", 10) && iolens_strlen(e) < sizeof preload_pool - 1100 &&
            (at = find_own(e + 11, &at_len)) != 0 && at_len + 12 < 1100) {
            preload_full = e;
            char *own = 12 + at_len + iolens_strlen(e) + 1 <= sizeof preload_small ? preload_small : preload_pool;
            char *rest = own + 11 + at_len + 1;
            iolens_memcpy(own, "LD_PRELOAD=", 11);
            iolens_memcpy(own + 11, at, at_len);
            own[11 + at_len] = 0;
            preload_own = own;
            /* the rest: the value without our entry and one separator beside it */
            size_t head = (size_t)(at - e), tail = head + at_len;
            if (e[tail] == ' ' || e[tail] == ':') tail++;
            else if (head > 11 && (e[head - 1] == ' ' || e[head - 1] == ':')) head--;
            iolens_memcpy(rest, e, head);
            iolens_memcpy(rest + head, e + tail, iolens_strlen(e + tail) + 1);
            /* a value that was only ours was unset before; anything more (even
             * a separator alone: the launcher's "ours " for an empty one) was set */
            if (iolens_strlen(e + 11) > at_len) env[o++] = preload_rest = rest;
            continue;
        }
        if (!drop) env[o++] = e;
    }
    env[o] = 0; /* the array shrinks in place; the strings stay where they are */
    env_taken = 1;
}

/* ---- a program the interposer cannot load in ---- */

extern const ElfW(Ehdr) __ehdr_start; /* this library's own ELF header, placed by the linker */

/* Does the ELF whose first n bytes are in b (read from fd) load the
 * interposer: our class, byte order and machine, and an interpreter
 * (PT_INTERP)?  Not ELF: yes, exec decides. */
IOLENS_COLD static int elf_loads(int fd, unsigned char *b, long n, size_t cap)
{
    const ElfW(Ehdr) *me = &__ehdr_start;
    ElfW(Ehdr) h;
    if (n < (long)sizeof h || !iolens_memeq((const char *)b, ELFMAG, SELFMAG)) return 1;
    iolens_memcpy(&h, b, sizeof h);
    if (h.e_ident[EI_CLASS] != me->e_ident[EI_CLASS] || h.e_ident[EI_DATA] != me->e_ident[EI_DATA] ||
        h.e_machine != me->e_machine)
        return 0;
    long base = 0; /* b holds the file's bytes [base, base + n) */
    for (unsigned i = 0; i < h.e_phnum && h.e_phentsize >= sizeof(ElfW(Phdr)); i++) {
        long at = (long)h.e_phoff + (long)i * h.e_phentsize;
        if (at < base || at + (long)sizeof(ElfW(Phdr)) > base + n) {
            base = at;
            n = syscall(SYS_pread64, fd, b, cap, at);
            if (n < (long)sizeof(ElfW(Phdr))) return 1;
        }
        ElfW(Phdr) ph;
        iolens_memcpy(&ph, b + (at - base), sizeof ph);
        if (ph.p_type == PT_INTERP) return 1;
    }
    return 0;
}

/* The absolute path p (len bytes, in a buffer of PATH_MAX) with its symbolic links resolved and "." and ".."
 * taken out, into out (PATH_MAX); its length, or -1 (a component missing, a loop, too long). */
IOLENS_COLD long iolens_resolve_path(char *p, size_t len, char *out)
{
    size_t o = 0, links = 0;
    char target[PATH_MAX];
    out[0] = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && p[i] == '/') i++;
        size_t c = i;
        while (i < len && p[i] != '/') i++;
        size_t cl = i - c;
        if (cl == 0 || (cl == 1 && p[c] == '.')) continue;
        if (cl == 2 && p[c] == '.' && p[c + 1] == '.') {
            while (o > 0 && out[--o] != '/') {
            }
            out[o] = 0;
            continue;
        }
        if (o + 1 + cl >= PATH_MAX) return -1;
        size_t back = o;
        out[o++] = '/';
        iolens_memcpy(out + o, p + c, cl);
        o += cl;
        out[o] = 0;
        long n = iolens_sysraw(SYS_readlinkat, AT_FDCWD, out, target, sizeof target - 1);
        if (n == -EINVAL) continue; /* not a link */
        if (n <= 0 || ++links > 40 || (size_t)n + 1 + (len - i) >= PATH_MAX) return -1;
        /* the link's target, then what was left of p, is the path now */
        size_t rest = len - i;
        char *tail = target + n;
        iolens_memcpy(tail, p + i, rest);
        len = (size_t)n + rest;
        iolens_memcpy(p, target, len);
        i = 0;
        o = target[0] == '/' ? 0 : back;
        out[o] = 0;
    }
    if (o == 0) out[o++] = '/';
    out[o] = 0;
    return (long)o;
}

/* The last program asked about by path (not a #! script), with its answer and the file's identity when it
 * was read: a shell that starts the same program in a loop (each a vfork child on the shell's memory, or
 * posix_spawn in the caller) then checks it with one stat instead of an open, a read and a close.  A file
 * changed since (written, replaced, moved) has another identity; a #! script is not kept (its interpreter could
 * change alone).  The lock is only tried: a thread that finds it taken asks the file. */
static struct {
    int lock, answer;
    uint64_t dev, ino, size, mtime_s, mtime_ns, ctime_s, ctime_ns;
    char path[256];
    char exe[256]; /* path with its links resolved (iolens_resolve_path); empty: not known */
} last_prog;

IOLENS_COLD static int same_file(const struct stat *st)
{
    return last_prog.dev == (uint64_t)st->st_dev && last_prog.ino == (uint64_t)st->st_ino &&
           last_prog.size == (uint64_t)st->st_size && last_prog.mtime_s == (uint64_t)st->st_mtim.tv_sec &&
           last_prog.mtime_ns == (uint64_t)st->st_mtim.tv_nsec && last_prog.ctime_s == (uint64_t)st->st_ctim.tv_sec &&
           last_prog.ctime_ns == (uint64_t)st->st_ctim.tv_nsec;
}

/* Whether the interposer loads in the program at path (or, path 0, open at
 * fd), following "#!" lines as the kernel does (capture/record.py's
 * `interposer_loads` makes the same test for the command itself).  A static
 * program ignores LD_PRELOAD, and one of another class or machine gets the
 * loader's complaint on its stderr: either is given its environment as the
 * caller passed it, as unprofiled, and its children are not followed.  Read
 * only at exec or spawn, with raw system calls; errno is kept. */
IOLENS_COLD static int loads_in_read(const char *path, int fd, int *elf);

/* The variable that tells the image started at path (absolute, an ELF the interposer loads in) its executable, as
 * resolved here: IOLENS_EXE=<this image's pid>:<length of path>:<path><its resolved path>, into var (EXE_VAR
 * bytes; "" when not known).  It is resolved once per program and kept with last_prog, where that lasts: in a
 * vfork child (the parent's memory), for a spawn or an exec of the image itself; not in a fork child, whose memory
 * goes with it (the new image then resolves the path itself, as before).  So a shell that starts the same program
 * in a loop resolves its path once, not every child (4 readlinkat for /bin/true).  The image takes the answer
 * only when this pid is its own or its parent's (built.c, `exe_from_parent`). */
#define EXE_VAR 600
IOLENS_COLD static void exe_var(char *var, const char *path, size_t pl)
{
    var[0] = 0;
    if (path[0] != '/') return;
    if (!last_prog.exe[0] && (iolens_in_vfork || iolens_g.pending != IOLENS_PENDING_FORK)) {
        char p[PATH_MAX], out[PATH_MAX];
        iolens_memcpy(p, path, pl);
        long n = iolens_resolve_path(p, pl, out);
        if (n > 0 && (size_t)n < sizeof last_prog.exe) iolens_memcpy(last_prog.exe, out, (size_t)n + 1);
    }
    size_t el = iolens_strlen(last_prog.exe);
    if (!el) return;
    char *o = var + 11, *end = var + EXE_VAR; /* 11 + two numbers of up to 20 digits and their ':' fit */
    iolens_memcpy(var, "IOLENS_EXE=", 11);
    o = iolens_put_u64(o, end, (uint64_t)iolens_g.pid);
    *o++ = ':';
    o = iolens_put_u64(o, end, pl);
    *o++ = ':';
    iolens_memcpy(o, path, pl);
    iolens_memcpy(o + pl, last_prog.exe, el + 1);
}

IOLENS_COLD static int loads_in(const char *path, int fd, char *var)
{
    struct stat st;
    size_t pl = path ? iolens_strlen(path) : sizeof last_prog.path;
    int e = errno, elf = 0, r;
    var[0] = 0;
    if (pl >= sizeof last_prog.path || syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0 ||
        __atomic_exchange_n(&last_prog.lock, 1, __ATOMIC_ACQUIRE)) {
        errno = e;
        return loads_in_read(path, fd, &elf);
    }
    if (iolens_streq(last_prog.path, path) && same_file(&st)) {
        r = last_prog.answer;
        if (r) exe_var(var, path, pl);
    } else {
        r = loads_in_read(path, fd, &elf);
        last_prog.path[0] = 0;
        last_prog.exe[0] = 0;
        if (elf) { /* the file itself was read (no #! line): kept */
            last_prog.dev = (uint64_t)st.st_dev;
            last_prog.ino = (uint64_t)st.st_ino;
            last_prog.size = (uint64_t)st.st_size;
            last_prog.mtime_s = (uint64_t)st.st_mtim.tv_sec;
            last_prog.mtime_ns = (uint64_t)st.st_mtim.tv_nsec;
            last_prog.ctime_s = (uint64_t)st.st_ctim.tv_sec;
            last_prog.ctime_ns = (uint64_t)st.st_ctim.tv_nsec;
            last_prog.answer = r;
            iolens_memcpy(last_prog.path, path, pl + 1);
            if (r) exe_var(var, path, pl);
        }
    }
    __atomic_store_n(&last_prog.lock, 0, __ATOMIC_RELEASE);
    errno = e;
    return r;
}

/* The check itself; *elf is set when the file itself was read (no #! line). */
IOLENS_COLD static int loads_in_read(const char *path, int fd, int *elf)
{
    union {
        unsigned char b[1024];
        ElfW(Ehdr) align_;
    } u;
    char interp[256];
    int r = 1, e = errno;
    for (int depth = 0; depth < 5; depth++) {
        int opened = path ? (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC) : -1;
        if (path && opened < 0) break;
        long n = syscall(SYS_pread64, path ? opened : fd, u.b, sizeof u.b, 0L);
        if (n >= 2 && u.b[0] == '#' && u.b[1] == '!') {
            long i = 2, k = 0, m = n < 256 ? n : 256; /* the kernel reads the line's first 256 bytes */
            while (i < m && (u.b[i] == ' ' || u.b[i] == '\t')) i++;
            while (i < m && u.b[i] && u.b[i] != ' ' && u.b[i] != '\t' && u.b[i] != '\n')
                interp[k++] = (char)u.b[i++];
            interp[k] = 0;
            path = interp;
        } else {
            r = elf_loads(path ? opened : fd, u.b, n, sizeof u.b);
            *elf = depth == 0 && n > 0;
            path = 0;
        }
        if (opened >= 0) syscall(SYS_close, opened);
        if (!path || !*path) break;
    }
    errno = e;
    return r;
}

/* The same for the file execvp or posix_spawnp runs: file itself with a
 * '/', else the first executable one of that name on PATH (glibc's default
 * when unset).  A non-executable namesake earlier on PATH, which those would
 * skip after trying, is not one this looks at either. */
IOLENS_COLD static int loads_in_search(const char *file, char *var)
{
    if (!file || !*file || iolens_strchr(file, '/')) return loads_in(file, -1, var);
    const char *dirs = iolens_getenv_in(environ, "PATH");
    size_t fl = iolens_strlen(file);
    char full[PATH_MAX];
    int e = errno, r = 1;
    for (const char *p = dirs ? dirs : "/bin:/usr/bin";;) {
        const char *end = iolens_strchr(p, ':');
        size_t dl = end ? (size_t)(end - p) : iolens_strlen(p);
        if (dl + fl + 2 <= sizeof full) {
            size_t o = 0;
            if (dl) {
                iolens_memcpy(full, p, dl);
                o = dl;
                full[o++] = '/';
            }
            iolens_memcpy(full + o, file, fl + 1);
            if (syscall(SYS_faccessat, AT_FDCWD, full, X_OK) == 0) {
                r = loads_in(full, -1, var);
                break;
            }
        }
        if (!end) break;
        p = end + 1;
    }
    errno = e;
    return r;
}

/* The environment to pass on at exec or spawn: envp with the recorder's
 * variables put back.  An empty environment stays empty: the caller asked
 * for nothing to be passed on, and that child is not followed.  Nor is a
 * program the interposer cannot load in (`loads_in`; search: look the file
 * up on PATH; fd: fexecve's).  Returns envp itself when nothing is missing
 * (or when it does not fit in out). */
char *const *iolens_env_for_child(char *const envp[], char **out, int cap, char *merged, size_t mcap, const char *path,
                            int fd, int search)
{
    int n = 0, o = 0, seen = 0;
    if (!env_taken || !envp || !envp[0] || mcap <= EXE_VAR) return envp;
    mcap -= EXE_VAR;
    char *exe = merged + mcap; /* IOLENS_EXE for this program, or "" */
    if (!(search ? loads_in_search(path, exe) : loads_in(path, fd, exe))) return envp;
    while (envp[n]) n++;
    if (n + (int)NKEYS + 2 > cap) return envp;
    for (int i = 0; i < n; i++) {
        char *e = envp[i];
        if (preload_own[0] && starts(e, "LD_PRELOAD", 10)) {
            size_t l;
            seen = 1;
            if (preload_rest[0] && strcmp(e, preload_rest) == 0) {
                e = preload_full; /* the program's own as left: the launcher's order back */
            } else if (!find_own(e + 11, &l)) {
                size_t ol = strlen(preload_own), vl = strlen(e + 11);
                if (ol + 1 + vl + 1 <= mcap) { /* ours first, as the launcher puts it */
                    memcpy(merged, preload_own, ol);
                    merged[ol] = ' ';
                    memcpy(merged + ol + 1, e + 11, vl + 1);
                    e = merged;
                }
            }
        }
        out[o++] = e;
    }
    if (preload_own[0] && !seen) out[o++] = preload_own;
    for (size_t k = 0; k < NKEYS; k++) {
        size_t kl = strlen(env_keys[k]);
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = starts(envp[i], env_keys[k], kl);
        if (found) continue;
        if (k == KEY_EXE && exe[0]) out[o++] = exe;
        else if (k != KEY_EXE && env_saved[k]) out[o++] = (char *)env_saved[k];
    }
    out[o] = 0;
    return out;
}

#define ENVCAP 4096
/* The array is sized to the environment (up to ENVCAP entries), so a fork
 * child about to exec writes only stack pages next to the ones it uses
 * (each page it touches first is a copy-on-write fault). */
int iolens_env_cap(char *const envp[])
{
    size_t n = 0;
    while (envp && envp[n]) n++;
    return n + NKEYS + 2 <= ENVCAP ? (int)(n + NKEYS + 2) : 0; /* 0: too many, passed on as they are */
}
