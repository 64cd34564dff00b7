/* cli_growobs.c — test environment for the checker: every observation repeats
 * the whole history, so it outgrows SPADE_OBS_MAX after a few steps (the
 * obs_size check must fail). Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_growobs", "An observation that keeps growing.", .max_steps = 30, .family = "test")
STATE { long n; };
static void say_block(long k) {
    for (long i = 0; i < k; i++)
        say("%s", "history history history history history history history history history history history "
                  "history history history history history history history history history history history "
                  "history history history history history history history history history history history "
                  "history history history history history history history history history history history "
                  "history history history history history history history history history history history\n");
}
RESET { S->n = 1; say("Say anything."); }
STEP { S->n++; say_block(S->n * 40); }
HINT { say("Nothing helps."); }
