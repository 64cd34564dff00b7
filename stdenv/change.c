/* change.c — pay an amount exactly with the fewest coins of an odd currency.
 * Teaches: when greedy fails (with coins 1, 3 and 4, six is 3 + 3, not 4 + 1 + 1)
 * and the dynamic programme that does not. Params: kinds = coin values besides
 * 1; top = largest coin value; amount = largest amount to pay. */
#include <spade/dsl.h>
ENV("change", "Pay an amount exactly with the fewest coins.", .family = "optimization", .max_steps = 120)
PARAM(int, kinds, 3, 1, 6)
PARAM(int, top, 12, 3, 50)
PARAM(int, amount, 40, 10, 200)
STATE { int coin[7], n, due, paid, fewest[201]; };
static void show(void) { say("Still to pay: %d. Coins used: %d of the %d allowed.\n", S->due, S->paid, S->fewest[S->due] + S->paid); }
static int is_coin(long d) { for (int k = 0; k < S->n; k++) if (S->coin[k] == d) return 1; return 0; }
RESET {
    S->coin[0] = 1; S->n = 1;
    while (S->n < kinds + 1 && S->n < top) { int d = rand_range(2, top); if (!is_coin(d)) S->coin[S->n++] = d; }
    for (int i = 1; i < S->n; i++) /* in increasing order */
        for (int j = i; j > 0 && S->coin[j] < S->coin[j - 1]; j--) { int t = S->coin[j]; S->coin[j] = S->coin[j - 1]; S->coin[j - 1] = t; }
    S->due = rand_range(amount / 2 + 1, amount);
    for (int a = 1; a <= S->due; a++) { /* fewest[a]: fewest coins that make a */
        S->fewest[a] = a;
        for (int k = 0; k < S->n; k++) if (S->coin[k] <= a && S->fewest[a - S->coin[k]] + 1 < S->fewest[a]) S->fewest[a] = S->fewest[a - S->coin[k]] + 1;
    }
    say("Pay the amount exactly, one coin per turn, using as few coins as possible. Say the value of the coin\nyou pay. The coins are:");
    for (int k = 0; k < S->n; k++) say(" %d", S->coin[k]);
    say(".\n"); show();
}
STEP {
    long d = parse_int(action);
    if (!is_coin(d) || d > S->due) { say("Say the value of one coin, at most what is still to pay.\n"); show(); return; }
    int budget = S->fewest[S->due] + S->paid; /* the fewest coins for the whole amount */
    S->due -= d; S->paid++;
    if (S->fewest[S->due] + S->paid > budget) { say("Paying %ld leaves an amount that needs too many coins.\n", d); lose(); }
    else if (!S->due) { say("Paid exactly, with the fewest coins!\n"); win(); }
    else show();
}
HINT { say("Taking the largest coin that fits is not always best with these coins. Work it out from small amounts upward: note the fewest coins for each amount, then pay a coin that leaves an amount needing exactly one coin fewer."); }
SOLVE {
    for (int k = S->n - 1; k >= 0; k--)
        if (S->coin[k] <= S->due && S->fewest[S->due - S->coin[k]] == S->fewest[S->due] - 1) { act("%d", S->coin[k]); return; }
}
