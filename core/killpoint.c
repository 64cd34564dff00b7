/* killpoint.c — SPADE_KILL_AT: die at a named point of an iteration (killpoint.h).
 * Not a signal handler or a fault injector: one getenv, one comparison. */
#include "killpoint.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

void spade_killpoint(const char *name, int iteration) {
    static int read;
    static const char *want; /* "NAME:ITERATION", or NULL when unset */
    if (!read) {
        want = getenv("SPADE_KILL_AT");
        if (want && !*want) want = NULL;
        read = 1;
    }
    if (!want) return;
    size_t n = strlen(name);
    if (strncmp(want, name, n) != 0 || want[n] != ':') return;
    char *end = NULL;
    long at = strtol(want + n + 1, &end, 10);
    if (end == want + n + 1 || *end != '\0' || at != iteration) return;
    raise(SIGKILL);
}
