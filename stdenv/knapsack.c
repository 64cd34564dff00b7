/* knapsack.c — pack a bag with the most valuable items that fit under its weight limit.
 * Teaches: combinatorial optimisation (value per weight is a guide, not the
 * answer: swaps can beat greedy) and checking a claim of optimality before
 * committing. Params: items = how many to choose from; heavy = largest weight;
 * slack = value you may fall short of the best possible. */
#include <spade/dsl.h>
ENV("knapsack", "Pack the most valuable set of items that fits in a bag.", .family = "optimization", .max_steps = 40)
PARAM(int, items, 6, 3, 12)
PARAM(int, heavy, 9, 2, 20)
PARAM(int, slack, 0, 0, 20)
STATE { int w[12], v[12], in[12], cap, best, best_set; };
static int total(const int *x, int set) { int t = 0; for (int i = 0; i < items; i++) t += set >> i & 1 ? x[i] : 0; return t; }
static int bag(void) { int set = 0; for (int i = 0; i < items; i++) set |= S->in[i] << i; return set; }
static void show(void) {
    say("Items (weight, value):");
    for (int i = 0; i < items; i++) say(" %d:(%d,%d)%s", i + 1, S->w[i], S->v[i], S->in[i] ? "*" : "");
    say("\nIn the bag (*): weight %d of %d, value %d.\n", total(S->w, bag()), S->cap, total(S->v, bag()));
}
RESET {
    for (int i = 0; i < items; i++) { S->w[i] = rand_range(1, heavy); S->v[i] = rand_range(1, 20); S->cap += S->w[i]; }
    S->cap /= 2;
    for (int set = 0; set < 1 << items; set++) /* every subset: at most 4096 */
        if (total(S->w, set) <= S->cap && total(S->v, set) > S->best) { S->best = total(S->v, set); S->best_set = set; }
    say("Choose items for a bag that holds weight %d. Say an item's number to put it in or take it out again;\n"
        "say \"done\" when the bag holds the most value that fits.\n", S->cap);
    show();
}
STEP {
    char w[8]; long i = parse_int(action);
    parse_word(action, w, sizeof w);
    if (i >= 1 && i <= items) { S->in[i - 1] ^= 1; show(); }
    else if (!str_ieq(w, "done")) { say("Say an item number from 1 to %d, or \"done\".\n", items); show(); }
    else if (total(S->w, bag()) > S->cap) { say("The bag is over its weight limit.\n"); lose(); }
    else if (total(S->v, bag()) + slack < S->best) { say("A better bag was worth %d.\n", S->best); lose(); }
    else { say("A best bag!\n"); win(); }
}
HINT { say("Rank items by value per unit of weight as a first guess, then look at the weight left over: try swapping one chosen item for one or two others and keep any swap that raises the value without going over the limit. Only then say you are finished."); }
SOLVE {
    for (int i = 0; i < items; i++) if (S->in[i] != (S->best_set >> i & 1)) { act("%d", i + 1); return; }
    act("done");
}
