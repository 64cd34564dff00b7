/* pairs.c — the memory card game: turn over two cards at a time and find every matching pair.
 * Teaches: remembering what was seen across turns (each turn shows only the two
 * cards just turned) and using it: a card whose partner you have seen is a sure
 * match. Params: pairs = how many pairs; spare = turns beyond the 2 x pairs a
 * perfect memory needs at worst. */
#include <spade/dsl.h>
ENV("pairs", "Find all matching pairs of face-down cards.", .family = "memory", .max_steps = 60)
PARAM(int, pairs, 4, 2, 10)
PARAM(int, spare, 2, 0, 20)
STATE { char card[20], up[20], seen[20]; int left, found; };
static void show(void) {
    say("Cards:");
    for (int i = 0; i < 2 * pairs; i++) say(" %d:%c", i + 1, S->up[i] ? S->card[i] : '#');
    say("  Pairs found: %d of %d. Turns left: %d.\n", S->found, pairs, S->left);
}
RESET {
    for (int i = 0; i < 2 * pairs; i++) S->card[i] = 'A' + i / 2;
    shuffle(S->card, 2 * pairs, 1);
    S->left = 2 * pairs + spare;
    say("%d cards lie face down (#); every letter is on exactly two of them. Each turn say two card numbers, e.g.\n"
        "\"flip 3 5\", to turn them over. A matching pair stays face up; otherwise both are turned back.\n", 2 * pairs);
    show();
}
STEP {
    long v[64]; int n = parse_ints(action, v, 64), i = n >= 2 ? v[n - 2] - 1 : -1, j = n >= 2 ? v[n - 1] - 1 : -1;
    if (i < 0 || j < 0 || i >= 2 * pairs || j >= 2 * pairs || i == j || S->up[i] || S->up[j]) {
        say("Say two different numbers of face-down cards.\n"); show(); return;
    }
    S->left--; S->seen[i] = S->seen[j] = 1;
    say("Card %d is %c and card %d is %c", i + 1, S->card[i], j + 1, S->card[j]);
    if (S->card[i] == S->card[j]) { S->up[i] = S->up[j] = 1; S->found++; say(": a pair!\n"); }
    else say(": no match; they are turned back.\n");
    if (S->found == pairs) { say("All pairs found!\n"); win(); }
    else if (S->left == 0) { say("Out of turns.\n"); lose(); }
    else show();
}
HINT { say("Write down every card you have seen with its number. If you know where both cards of some letter are, turn those two. Otherwise turn two cards you have never seen; never turn a card you have already seen without its partner."); }
SOLVE { /* a known pair if there is one, else two cards never seen (one unseen card left: its partner is seen) */
    int a = -1, b = -1;
    for (int i = 0; i < 2 * pairs; i++)
        for (int j = i + 1; j < 2 * pairs; j++)
            if (!S->up[i] && S->seen[i] && S->seen[j] && S->card[i] == S->card[j]) { act("flip %d %d", i + 1, j + 1); return; }
    for (int i = 0; i < 2 * pairs; i++) if (!S->up[i] && !S->seen[i]) { if (a < 0) a = i; else if (b < 0) b = i; }
    for (int i = 0; b < 0 && i < 2 * pairs; i++) if (!S->up[i] && i != a) b = i;
    act("flip %d %d", a + 1, b + 1);
}
