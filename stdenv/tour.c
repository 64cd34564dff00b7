/* tour.c — visit every town once and come home, travelling as short a distance as possible.
 * Teaches: the travelling salesman problem on a small map: nearest-neighbour is
 * a start, not the optimum; compare whole orders. Params: towns = how many,
 * home included; spread = size of the map; slack = distance allowed above the
 * shortest tour. Distances are city blocks: |dx| + |dy|. */
#include <spade/dsl.h>
ENV("tour", "Find a short round trip through every town.", .family = "optimization", .max_steps = 30)
PARAM(int, towns, 5, 3, 8)
PARAM(int, spread, 9, 3, 30)
PARAM(int, slack, 0, 0, 20)
STATE { int x[8], y[8], at, seen, walked, best; };
static int dist(int a, int b) { return abs(S->x[a] - S->x[b]) + abs(S->y[a] - S->y[b]); }
static int shortest(int at, int seen) { /* the shortest way from town at through the unseen towns and home */
    int least = INT_MAX;
    if (seen == (1 << towns) - 1) return dist(at, 0);
    for (int t = 1; t < towns; t++)
        if (!(seen >> t & 1)) { int d = dist(at, t) + shortest(t, seen | 1 << t); if (d < least) least = d; }
    return least;
}
static void show(void) {
    say("You are in town %d, having travelled %d. Towns still to visit:", S->at + 1, S->walked);
    for (int t = 1; t < towns; t++) if (!(S->seen >> t & 1)) say(" %d", t + 1);
    say(".\n");
}
RESET {
    for (int t = 0; t < towns; t++) { S->x[t] = rand_range(0, spread); S->y[t] = rand_range(0, spread); }
    S->seen = 1; S->best = shortest(0, 1);
    say("Towns (x, y):");
    for (int t = 0; t < towns; t++) say(" %d:(%d,%d)", t + 1, S->x[t], S->y[t]);
    say("\nStart at home, town 1, visit every other town once and return home. The distance between two towns\n"
        "is |x1 - x2| + |y1 - y2|. Say the number of the next town; after the last one you go home.\n");
    show();
}
STEP {
    long t = parse_int(action);
    if (t < 2 || t > towns || S->seen >> (t - 1) & 1) { say("Say the number of a town you have not visited.\n"); show(); return; }
    S->walked += dist(S->at, t - 1); S->at = t - 1; S->seen |= 1 << (t - 1);
    if (S->seen != (1 << towns) - 1) { show(); return; }
    S->walked += dist(S->at, 0);
    if (S->walked <= S->best + slack) { say("Home again after %d: a shortest tour!\n", S->walked); win(); }
    else { say("Home again after %d; the shortest tour is %d.\n", S->walked, S->best); lose(); }
}
HINT { say("Sketch the towns on a grid. A good tour goes round the outside without crossing itself; start from nearest-neighbour order, then try reversing a stretch of the order and keep the change whenever the total distance drops."); }
SOLVE {
    for (int t = 1; t < towns; t++)
        if (!(S->seen >> t & 1) && dist(S->at, t) + shortest(t, S->seen | 1 << t) == shortest(S->at, S->seen)) { act("%d", t + 1); return; }
}
