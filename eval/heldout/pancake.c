/* pancake.c — sort a stack of pancakes when the only move flips the top k of them.
 * Teaches: an unusual primitive (prefix reversal) and a plan that fixes the largest
 * unsorted item first: bring it to the top, then flip it down into place.
 * Params: cakes = stack height; spare = flips allowed beyond 2 * cakes - 3. Held out. */
#include <spade/dsl.h>
ENV("pancake", "Sort a stack of pancakes using only flips of the top k.", .family = "optimisation", .max_steps = 60)
PARAM(int, cakes, 4, 2, 12)
PARAM(int, spare, 2, 0, 20)
STATE { int p[12], left; }; /* p[0] is the top; sorted means p[i] = i + 1 */
static void flip(int k) { for (int i = 0, j = k - 1; i < j; i++, j--) { int t = S->p[i]; S->p[i] = S->p[j]; S->p[j] = t; } }
static int sorted(void) { for (int i = 0; i < cakes; i++) if (S->p[i] != i + 1) return 0; return 1; }
static void show(void) {
    say("Stack from top to bottom:");
    for (int i = 0; i < cakes; i++) say(" %d", S->p[i]);
    say(". Flips left: %d.\n", S->left);
}
RESET {
    for (int i = 0; i < cakes; i++) S->p[i] = i + 1;
    while (sorted()) shuffle(S->p, cakes, sizeof S->p[0]);
    S->left = (cakes > 2 ? 2 * cakes - 3 : 1) + spare;
    say("Sort the stack so the sizes read 1, 2, ... from the top (the smallest on top).\n"
        "Say \"flip K\" to turn the top K pancakes over as one block.\n");
    show();
}
STEP {
    long k = parse_int(action);
    if (k < 2 || k > cakes) { say("Say \"flip K\" with K from 2 to %d.\n", cakes); show(); return; }
    flip((int)k); S->left--;
    if (sorted()) { say("The stack is sorted!\n"); win(); }
    else if (S->left <= 0) { say("No flips left.\n"); lose(); }
    else show();
}
HINT { say("Place the biggest pancake that is not yet at its spot: flip it to the top (if it is not already there), then flip the whole unsorted part so it lands at the bottom of that part. Then repeat with the next biggest."); }
SOLVE {
    int n = cakes;
    while (S->p[n - 1] == n) n--; /* the bottom part that is already in place */
    int at = 0; while (S->p[at] != n) at++;
    act("flip %d", at == 0 ? n : at + 1);
}
