/* treasure_dist.c — locate a buried treasure from the distances your test digs report.
 * Teaches: deduction from numeric feedback (each dig tells the Manhattan distance to the
 * treasure) and choosing probes that pin the answer down quickly. Params: size = side of
 * the field; digs = digs allowed (the treasure is found by digging exactly on it). Held out. */
#include <spade/dsl.h>
ENV("treasure_dist", "Find a buried treasure from the distances of your digs.", .family = "grid", .max_steps = 20)
PARAM(int, size, 6, 3, 50)
PARAM(int, digs, 4, 3, 20)
STATE { int tr, tc, left, probes, d[2]; };
RESET {
    S->tr = rand_range(1, size); S->tc = rand_range(1, size); S->left = digs;
    say("A treasure is buried on a %d x %d field (rows and columns 1-%d). Say \"dig R C\"; a miss tells you how many\n"
        "steps (rows plus columns apart) the treasure is from there. You have %d digs.\n", size, size, size, digs);
}
STEP {
    long v[8]; int n = parse_ints(action, v, 8);
    if (n < 2 || v[n - 2] < 1 || v[n - 2] > size || v[n - 1] < 1 || v[n - 1] > size) { say("Say \"dig R C\" with R and C from 1 to %d.\n", size); return; }
    int r = (int)v[n - 2], c = (int)v[n - 1], dist = abs(r - S->tr) + abs(c - S->tc);
    S->left--;
    if (!dist) { say("You found the treasure!\n"); win(); return; }
    if (S->probes < 2 && r == 1 && c == (S->probes ? size : 1)) S->d[S->probes++] = dist; /* what SOLVE's two corner probes learn */
    say("Nothing here; the treasure is %d steps away. Digs left: %d.\n", dist, S->left);
    if (S->left <= 0) { say("No digs left.\n"); lose(); }
}
HINT { say("Dig in two corners of the same edge first: the two distances add up to a fixed amount plus twice the treasure's row offset, so together they give its row and its column exactly."); }
SOLVE {
    if (S->probes == 0) { act("dig 1 1"); return; }
    if (S->probes == 1) { act("dig 1 %d", size); return; }
    /* d0 = (r-1) + (c-1), d1 = (r-1) + (size-c): r-1 = (d0 + d1 - (size-1)) / 2 */
    int r = (S->d[0] + S->d[1] - (size - 1)) / 2 + 1, c = S->d[0] - (r - 1) + 1;
    act("dig %d %d", r, c);
}
