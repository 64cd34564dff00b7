/* coin_row.c — take turns with an opponent picking a coin from either end of a row; end with more.
 * Teaches: minimax on intervals: the best end to take is the one that leaves
 * the opponent the least, not the larger coin now. Params: coins = coins in the
 * row; top = the largest coin; skill = chance the opponent plays its best move
 * (else it greedily takes the larger end). Rows are drawn again until the
 * first player can force a strict win. */
#include <spade/dsl.h>
ENV("coin_row", "Take coins from the ends of a row and finish with more than your opponent.", .family = "strategy", .max_steps = 40)
PARAM(int, coins, 6, 4, 16)
PARAM(int, top, 9, 2, 50)
PARAM(double, skill, 1.0, 0.0, 1.0)
STATE { int c[16], lo, hi, mine, theirs; }; /* coins lo..hi are left */
static int margin(int lo, int hi, int *left) { /* the most the mover can end ahead by on coins lo..hi */
    int m[16][16];
    for (int i = hi; i >= lo; i--)
        for (int j = i; j <= hi; j++) m[i][j] = i == j ? S->c[i] : S->c[i] - m[i + 1][j] > S->c[j] - m[i][j - 1] ? S->c[i] - m[i + 1][j] : S->c[j] - m[i][j - 1];
    *left = lo == hi || S->c[lo] - m[lo + 1][hi] >= S->c[hi] - m[lo][hi - 1];
    return m[lo][hi];
}
static int take(int left) { return left ? S->c[S->lo++] : S->c[S->hi--]; }
static void show(void) {
    say("Row:");
    for (int i = S->lo; i <= S->hi; i++) say(" %d", S->c[i]);
    say(". You have %d, I have %d.\n", S->mine, S->theirs);
}
RESET {
    int left;
    do { for (int i = 0; i < coins; i++) S->c[i] = rand_range(1, top); } while (margin(0, coins - 1, &left) <= 0);
    S->hi = coins - 1;
    say("We take turns removing one coin from either end of the row; you go first. Say \"left\" or \"right\";\n"
        "anything else passes your turn. When the row is empty, whoever holds more wins (a tie is not a win).\n");
    show();
}
STEP {
    char w[8]; int left;
    parse_word(action, w, sizeof w);
    if (!str_ieq(w, "left") && !str_ieq(w, "right")) say("That is not left or right, so you pass.\n");
    else S->mine += take(str_ieq(w, "left"));
    if (S->lo <= S->hi) {
        margin(S->lo, S->hi, &left);
        if (!chance(skill)) left = S->c[S->lo] >= S->c[S->hi];
        say("I take the %s coin, %d.\n", left ? "left" : "right", left ? S->c[S->lo] : S->c[S->hi]);
        S->theirs += take(left);
    }
    if (S->lo <= S->hi) show();
    else if (S->mine > S->theirs) { say("You end with %d against my %d. You win!\n", S->mine, S->theirs); win(); }
    else { say("You end with %d against my %d. You lose.\n", S->mine, S->theirs); lose(); }
}
HINT { say("The bigger end coin is not always the better take: it may uncover a big coin for your opponent. For short rows work out exactly what each choice leaves, and for longer ones compare the value of each end minus the best your opponent can then do."); }
SOLVE { int left; margin(S->lo, S->hi, &left); act("%s", left ? "left" : "right"); }
