/* Prints its environment, one variable a line, as the program received it.
 * Built statically too (tests/test_profile_harmless.py): a static program
 * ignores LD_PRELOAD, so the profiler must not leave anything of its own in
 * what it is given. */
#include <stdio.h>

extern char **environ;

int main(void)
{
    for (char **e = environ; *e; e++) puts(*e);
    return 0;
}
