/* two_turns.c — test environment: three turns whose observations say which
 * turn it is; won when the third action is "go". For the policy agent's
 * transcript tests (several turns, an observation per turn). Not part of stdenv. */
#include <spade/dsl.h>
ENV("two_turns", "Say go on the third turn.", .max_steps = 3, .family = "logic")
PARAM(int, unused, 0, 0, 1)
STATE { int t; };
RESET { say("turn 1 of 3"); }
STEP {
    S->t++;
    if (S->t == 3) { finish(str_ieq(action, "go")); return; }
    say("turn %d of 3, you said [%.*s]", S->t + 1, (int)action_len, action);
}
HINT { say("Wait for the last turn."); }
SOLVE { act("%s", S->t == 2 ? "go" : "wait"); }
