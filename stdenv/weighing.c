/* weighing.c — find the one heavy coin among many with a balance, in few weighings.
 * Teaches: splitting the possibilities three ways (left heavier, right heavier,
 * balanced), so each weighing divides them by three, and tracking what is
 * still possible. Params: coins = how many coins; spare = weighings allowed
 * beyond the fewest that always suffice. */
#include <spade/dsl.h>
ENV("weighing", "Find the heavy coin with a balance in few weighings.", .family = "deduction", .max_steps = 20)
PARAM(int, coins, 9, 3, 30)
PARAM(int, spare, 0, 0, 5)
STATE { int heavy, cand, left; }; /* cand: a bit for every coin that can still be the heavy one */
static int side(const char *text, int *mask) { /* the coins named in text: how many, and which; -1 if invalid */
    long v[32]; int n = parse_ints(text, v, 32);
    *mask = 0;
    for (int k = 0; k < n; k++) { if (v[k] < 1 || v[k] > coins || *mask >> (v[k] - 1) & 1) return -1; *mask |= 1 << (v[k] - 1); }
    return n;
}
RESET {
    S->heavy = rand_range(0, coins - 1); S->cand = (1 << coins) - 1; S->left = spare;
    for (int p = 1; p < coins; p *= 3) S->left++;
    say("Coins 1 to %d look the same, but one is heavier than the others. Weigh coins on a balance by saying two\n"
        "groups with \"vs\" between them, e.g. \"1 2 vs 3 4\" (both sides the same number of coins). When you know the\n"
        "heavy coin, answer with its number alone. Weighings allowed: %d.\n", coins, S->left);
}
STEP {
    char left[256], right[256]; const char *a = answer(action), *vs = strstr(a, "vs");
    int l, r, nl, nr;
    if (!vs) {
        long k = parse_int(action);
        if (k == NO_INT) { say("Say \"A B vs C D\" to weigh, or the number of the heavy coin.\n"); return; }
        if (k == S->heavy + 1) { say("Yes, coin %ld is the heavy one.\n", k); win(); } else { say("No, it was coin %d.\n", S->heavy + 1); lose(); }
        return;
    }
    snprintf(left, sizeof left, "%.*s", (int)(vs - a < 255 ? vs - a : 255), a); snprintf(right, sizeof right, "%s", vs + 2);
    nl = side(left, &l); nr = side(right, &r);
    if (nl < 1 || nl != nr || (l & r)) { say("Put the same number of different coins (1 to %d) on each side.\n", coins); return; }
    if (S->left == 0) { say("No weighings left: name the heavy coin.\n"); return; }
    S->left--;
    if (l >> S->heavy & 1) { say("The left side is heavier."); S->cand &= l; }
    else if (r >> S->heavy & 1) { say("The right side is heavier."); S->cand &= r; }
    else { say("The two sides balance."); S->cand &= ~(l | r); }
    say(" Weighings left: %d.\n", S->left);
}
HINT { say("Split the coins that could still be heavy into three groups as equal as possible; weigh one group against another. A heavier side holds the coin; a balance means the group left off the scale does. Repeat on the group that remains."); }
SOLVE {
    int c[30], n = 0, k;
    for (int i = 0; i < coins; i++) if (S->cand >> i & 1) c[n++] = i + 1;
    if (n == 1 || S->left == 0) { act("%d", c[0]); return; }
    k = (n + 2) / 3;
    for (int i = 0; i < 2 * k; i++) act(i == k ? " vs %d" : i ? " %d" : "%d", c[i]);
}
