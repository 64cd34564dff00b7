/* check_emptywin.c — test environment for the checker: the empty action wins
 * (a bug: "no answer" compares equal to the secret word's unset slot). The
 * max_steps probe plays the empty action and must say so. Not part of stdenv. */
#include <spade/dsl.h>
ENV("check_emptywin", "Say the secret word.", .max_steps = 5, .family = "test")
STATE { long k; };
RESET { S->k = rand_range(0, 2); say("Say the word I think of (it is a colour)."); }
STEP {
    static const char *const words[] = {"red", "green", "blue"};
    char w[16];
    int n = parse_word(action, w, sizeof w);
    if (n == 0 || str_ieq(w, words[S->k])) win(); else say("No.");
}
HINT { say("A primary colour."); }
SOLVE { static const char *const words[] = {"red", "green", "blue"}; act("%s", words[S->k]); }
