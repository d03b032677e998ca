/* A vfork child redirects and closes before exec; the parent's own view of
 * its descriptors must not change.  usage: vfork_exact FILE ECHO
 * FILE gets "child\n" (from ECHO, run by the child with stdout on FILE) and
 * then "x" from the parent; the parent writes "parent\n" to its stdout. */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) return 2;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 1;
    pid_t p = vfork();
    if (p == 0) {
        char *args[] = {"echo", "child", 0};
        dup2(fd, 1);
        close(fd);
        execv(argv[2], args);
        _exit(127);
    }
    int st;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    if (write(1, "parent\n", 7) != 7 || write(fd, "x", 1) != 1) return 1;
    return close(fd) == 0 ? 0 : 1;
}
