/* cli_good.c — test environment for the checker and the CLI: several steps,
 * a param, a hint and a SOLVE that always wins; it must pass every check.
 * Walk a token to a target cell on a line with "left"/"right". Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_good", "Walk to the target cell with left and right.", .max_steps = 30, .family = "grid")
PARAM(int, width, 9, 3, 21)
STATE { long pos, target; };
static void show(void) {
    for (long i = 0; i < width; i++) say("%c", i == S->pos ? '@' : i == S->target ? 'X' : '.');
    say("\n");
}
RESET {
    S->pos = rand_range(0, width - 1);
    do S->target = rand_range(0, width - 1); while (S->target == S->pos);
    say("Move @ onto X. Answer left or right.\n");
    show();
}
STEP {
    char w[16];
    parse_word(action, w, sizeof w);
    if (str_ieq(w, "left") && S->pos > 0) S->pos--;
    else if (str_ieq(w, "right") && S->pos < width - 1) S->pos++;
    show();
    if (S->pos == S->target) win();
}
HINT { say("Compare the columns of @ and X and move toward X."); }
SOLVE { act("%s", S->pos < S->target ? "right" : "left"); }
