/* killpoint.c — SPADE_KILL_AT: die at a named point of an iteration, and
 * SPADE_STOP_AT: stop there (killpoint.h).
 * Not a signal handler or a fault injector: one getenv each, one comparison. */
#include "killpoint.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* want is "NAME:ITERATION": 1 when it names this point and iteration. */
static int names(const char *want, const char *name, int iteration) {
    if (!want) return 0;
    size_t n = strlen(name);
    if (strncmp(want, name, n) != 0 || want[n] != ':') return 0;
    char *end = NULL;
    long at = strtol(want + n + 1, &end, 10);
    return end != want + n + 1 && *end == '\0' && at == iteration;
}

void spade_killpoint(const char *name, int iteration) {
    static int read;
    static const char *kill_at, *stop_at; /* "NAME:ITERATION", or NULL when unset */
    if (!read) {
        kill_at = getenv("SPADE_KILL_AT");
        stop_at = getenv("SPADE_STOP_AT");
        if (kill_at && !*kill_at) kill_at = NULL;
        if (stop_at && !*stop_at) stop_at = NULL;
        read = 1;
    }
    if (!kill_at && !stop_at) return;
    if (names(kill_at, name, iteration)) raise(SIGKILL);
    if (names(stop_at, name, iteration)) raise(SIGSTOP); /* a test's SIGCONT goes on from here */
}
