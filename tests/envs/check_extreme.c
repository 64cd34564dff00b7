/* check_extreme.c — test environment for the checker: correct at its default
 * `tries`, broken at the top of the range it declares. STATE holds 10 guesses,
 * `tries` allows 100: the 11th guess overwrites the message pointer after the
 * array, and the next say() follows it. `spade check` at the defaults passed this
 * (issue: "12 passed"); param_extremes must fail it. Not part of stdenv. */
#include <spade/dsl.h>
ENV("check_extreme", "Guess the number; remembers your guesses.", .max_steps = 200, .family = "test")
PARAM(int, tries, 5, 1, 100)
STATE { long secret, n; char tried[10][6]; const char *msg; };
RESET {
    S->secret = rand_range(1, 100);
    S->msg = "Guess again.";
    say("Guess a number from 1 to 100; %ld tries.", (long)tries);
}
STEP {
    memcpy(S->tried[S->n], action, action_len < 6 ? action_len : 6); /* the bug: n may reach tries - 1 */
    S->n++;
    if (parse_int(action) == S->secret) { win(); return; }
    if (S->n >= tries) { lose(); return; }
    say("%s", S->msg);
}
HINT { say("Halve the range each time."); }
SOLVE { act("%ld", S->secret); }
