/* fork (child writes 200 bytes), fork+exec, posix_spawn; exits 7. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void put(const char *dir, const char *name, int n)
{
    char p[4096], buf[512] = {0};
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (write(fd, buf, (size_t)n) != n) _exit(9);
    close(fd);
}

int main(int argc, char **argv)
{
    put(argv[1], "parent.dat", 100);
    pid_t p = fork();
    if (p == 0) {
        put(argv[1], "child.dat", 200);
        return 0;
    }
    int st;
    waitpid(p, &st, 0);
    p = fork();
    if (p == 0) {
        char *args[] = {"true", 0};
        execv("/bin/true", args);
        _exit(127);
    }
    waitpid(p, &st, 0);
    char *sargs[] = {"sh", "-c", "exit 5", 0};
    if (posix_spawn(&p, "/bin/sh", 0, 0, sargs, environ) != 0) return 1;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 5) return 2;
    return 7;
}
