/* hanoi.c — the tower of Hanoi: gather every disk on peg 3.
 * Teaches: recursive decomposition (to move n disks, first move n-1 out of the
 * way) and rule-following over long horizons. Params: disks = how many (up to
 * 2^disks - 1 moves); scatter = chance that a disk starts on a random peg rather
 * than peg 1 (any such start is legal); spare = moves allowed beyond the optimum. */
#include <spade/dsl.h>
ENV("hanoi", "Solve the tower of Hanoi.", .family = "logic", .max_steps = 300)
PARAM(int, disks, 3, 1, 8)
PARAM(double, scatter, 0.3, 0.0, 1.0)
PARAM(int, spare, 5, 0, 40)
STATE { int peg[9], left; }; /* peg[d] of disk d (1 = smallest), pegs 0..2 */
static int top(int p) { for (int d = 1; d <= disks; d++) if (S->peg[d] == p) return d; return 99; } /* 99: empty */
static void show(void) {
    for (int p = 0; p < 3; p++) {
        say("peg %d:", p + 1);
        for (int d = disks; d >= 1; d--) if (S->peg[d] == p) say(" %d", d);
        say("\n");
    }
    say("Moves left: %d.\n", S->left);
}
RESET {
    do { /* redraw a start that is already solved */
        int target = 2;
        S->left = spare;
        for (int d = disks; d >= 1; d--) { /* the optimum: a disk off its target costs 2^(d-1), and the smaller ones must go to the third peg */
            S->peg[d] = chance(scatter) ? rand_range(0, 2) : 0;
            if (S->peg[d] != target) { S->left += 1 << (d - 1); target = 3 - S->peg[d] - target; }
        }
    } while (S->left == spare);
    say("Disks are numbered 1 (smallest) to %d; each peg lists its disks from the bottom up. Move them all to peg 3,\n"
        "one at a time, never onto a smaller disk. Say \"move A B\" to move the top disk of peg A onto peg B.\n", disks);
    show();
}
STEP {
    long v[64]; int n = parse_ints(action, v, 64), from = -1, to = -1; /* the last two numbers, pegs 1-3 */
    if (n >= 2 && v[n - 2] >= 1 && v[n - 2] <= 3 && v[n - 1] >= 1 && v[n - 1] <= 3) { from = v[n - 2] - 1; to = v[n - 1] - 1; }
    if (from < 0 || from == to) say("Say \"move A B\" with two different pegs 1, 2 or 3.\n");
    else if (top(from) == 99) say("Peg %d is empty.\n", from + 1);
    else if (top(from) > top(to)) say("Disk %d cannot go on the smaller disk %d.\n", top(from), top(to));
    else S->peg[top(from)] = to;
    S->left--;
    if (top(0) == 99 && top(1) == 99) { say("All disks are on peg 3!\n"); win(); }
    else if (S->left <= 0) { say("Out of moves.\n"); lose(); }
    else show();
}
HINT { say("Think recursively: to put the largest disk still out of place onto its target peg, first stack every smaller disk on the third peg. With the optimal pattern the smallest disk moves every other turn, always in the same rotating direction."); }
SOLVE { /* from the largest disk down: where must each disk go? the smallest one not there yet moves */
    int target = 2, from = -1, to = -1;
    for (int d = disks; d >= 1; d--)
        if (S->peg[d] != target) { from = S->peg[d]; to = target; target = 3 - S->peg[d] - target; }
    act("move %d %d", from + 1, to + 1);
}
