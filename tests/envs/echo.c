/* echo.c — test environment without SOLVE: reports how many bytes of the action
 * it saw up to the first NUL and in all, and the parsed answer. Not part of
 * stdenv. */
#include <spade/dsl.h>
ENV("echo", "Tells what it received.", .max_steps = 1000000)
STATE { long calls; };
RESET { say("Say anything."); }
STEP {
    S->calls++;
    long n = parse_int(action);
    say("strlen %lu len %lu int %ld steps %ld", (unsigned long)strlen(action), (unsigned long)action_len, n, steps());
    reward(0.5);
}
HINT { say("Anything goes."); }
