/* gate_hintmoves.c — test environment for hint_echo: the hint lists the
 * moves, so its pieces played in order, one per step, win (each alone loses:
 * a wrong move ends the walk). Not part of stdenv. */
#include <spade/dsl.h>
ENV("gate_hintmoves", "Walk the hidden path.", .max_steps = 6, .family = "test")
STATE { int path[3], at; };
static const char *W[4] = {"north", "south", "east", "west"};
RESET { for (int i = 0; i < 3; i++) S->path[i] = rand_range(0, 3); S->at = 0; say("Walk the hidden path: three moves."); }
STEP {
    if (!str_ieq(action, W[S->path[S->at]])) { say("Lost."); lose(); return; }
    if (++S->at == 3) { say("Home."); win(); } else say("Good, go on.");
}
HINT { say("%s %s %s", W[S->path[0]], W[S->path[1]], W[S->path[2]]); }
SOLVE { act("%s", W[S->path[S->at]]); }
