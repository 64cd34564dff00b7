/* high_low.c — find a hidden number from "higher" and "lower" answers within a guess budget.
 * Teaches: halving an interval on every answer (binary search) and keeping the
 * bounds that earlier answers set. Params: top = the number lies in 1..top;
 * spare = guesses allowed beyond ceil(log2(top + 1)), the fewest that always suffice. Held out. */
#include <spade/dsl.h>
ENV("high_low", "Find a hidden number from higher/lower answers.", .family = "logic", .max_steps = 40)
PARAM(int, top, 100, 8, 1000000)
PARAM(int, spare, 1, 0, 10)
STATE { long secret, lo, hi; int left; }; /* lo..hi: what the answers so far allow */
RESET {
    int k = 0;
    for (long p = 1; p <= top; p *= 2) k++;
    S->secret = rand_range(1, top); S->lo = 1; S->hi = top; S->left = k + spare;
    say("I picked a whole number from 1 to %d. Guess it; after each guess I say higher or lower.\n"
        "You have %d guesses.\n", top, S->left);
}
STEP {
    long g = parse_int(action);
    if (g == NO_INT) { say("Guess a whole number.\n"); return; }
    S->left--;
    if (g == S->secret) { say("Yes, it is %ld!\n", g); win(); return; }
    if (g < S->secret) { say("Higher than %ld.", g); if (g >= S->lo) S->lo = g + 1; }
    else { say("Lower than %ld.", g); if (g <= S->hi) S->hi = g - 1; }
    if (S->left <= 0) { say(" No guesses left; it was %ld.\n", S->secret); lose(); }
    else say(" Guesses left: %d.\n", S->left);
}
HINT { say("Keep the smallest and largest numbers still possible and always guess the middle of them; each answer then halves what is left."); }
SOLVE { act("%ld", (S->lo + S->hi) / 2); }
