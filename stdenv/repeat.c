/* repeat.c — continue a repeating pattern of letters, one letter per turn.
 * Teaches: finding the period of a sequence by comparing it with itself
 * shifted, then extending it. Params: period = longest repeating block;
 * letters = size of the alphabet; ask = letters to give. At least two whole
 * blocks are shown, so the continuation is unique (Fine and Wilf). */
#include <spade/dsl.h>
ENV("repeat", "Continue a repeating pattern of letters.", .family = "pattern", .max_steps = 12)
PARAM(int, period, 4, 3, 8)
PARAM(int, letters, 3, 2, 6)
PARAM(int, ask, 4, 1, 12)
STATE { char unit[8]; int p, len, done; };
static char at(int i) { return S->unit[i % S->p]; }
static void show(void) {
    say("Sequence:");
    for (int i = 0; i < S->len; i++) say(" %c", at(i));
    say(" ?  (letters still to give: %d)\n", ask - S->done);
}
RESET {
    int same;
    S->p = rand_range(2, period);
    do { /* a block of one repeated letter would be no pattern at all */
        same = 1;
        for (int i = 0; i < S->p; i++) { S->unit[i] = 'A' + rand_range(0, letters - 1); same &= S->unit[i] == S->unit[0]; }
    } while (same);
    S->len = 2 * S->p;
    say("The letters below repeat a fixed block over and over. Give the letter that comes next, one letter per turn.\n");
    show();
}
STEP {
    char w[8];
    if (parse_word(action, w, sizeof w) != 1 || toupper((unsigned char)w[0]) != at(S->len)) {
        say("Wrong: the next letter was %c.\n", at(S->len)); lose(); return;
    }
    S->len++;
    if (++S->done == ask) { say("Correct. The pattern is complete!\n"); win(); }
    else { say("Correct.\n"); show(); }
}
HINT { say("Find the shortest block that, repeated, gives the whole sequence: compare the sequence with itself shifted by one, two, three places until every letter matches. The next letter is then the letter one block length earlier."); }
SOLVE { act("%c", at(S->len)); }
