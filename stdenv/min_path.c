/* min_path.c — cross a grid of costs from the top left to the bottom right as cheaply as possible.
 * Teaches: dynamic programming over a grid (the cheapest cost from each square
 * to the goal, filled in backwards) instead of a greedy walk. Params: size =
 * squares per side; top = the largest cost of a square; slack = cost allowed
 * above the cheapest. */
#include <spade/dsl.h>
ENV("min_path", "Find the cheapest path across a grid of costs, moving right or down.", .family = "optimization", .max_steps = 40)
PARAM(int, size, 4, 2, 8)
PARAM(int, top, 9, 2, 9)
PARAM(int, slack, 0, 0, 20)
STATE { int cost[8][8], r, c, spent, best; };
static int togo(int r, int c) { /* cheapest cost of the squares after (r, c), to the goal */
    int t[8][8];
    for (int i = size - 1; i >= 0; i--)
        for (int j = size - 1; j >= 0; j--) {
            int down = i + 1 < size ? S->cost[i + 1][j] + t[i + 1][j] : INT_MAX, right = j + 1 < size ? S->cost[i][j + 1] + t[i][j + 1] : INT_MAX;
            t[i][j] = i == size - 1 && j == size - 1 ? 0 : down < right ? down : right;
        }
    return t[r][c];
}
static void show(void) {
    for (int i = 0; i < size; i++) {
        for (int j = 0; j < size; j++) say(i == S->r && j == S->c ? "[%d]" : " %d ", S->cost[i][j]);
        say("\n");
    }
    say("You are at [ ]. Cost so far: %d.\n", S->spent);
}
RESET {
    for (int i = 0; i < size; i++) for (int j = 0; j < size; j++) S->cost[i][j] = rand_range(1, top);
    S->spent = S->cost[0][0]; S->best = S->spent + togo(0, 0);
    say("Walk from the top left square to the bottom right one, moving \"right\" or \"down\" one square at a time.\n"
        "You pay the cost of every square you stand on; reach the corner paying as little as possible.\n");
    show();
}
STEP {
    char w[8]; int down;
    parse_word(action, w, sizeof w);
    down = str_ieq(w, "down");
    if ((!down && !str_ieq(w, "right")) || (down ? S->r : S->c) == size - 1) { say("Say right or down, staying on the grid.\n"); show(); return; }
    if (down) S->r++; else S->c++;
    S->spent += S->cost[S->r][S->c];
    if (S->r < size - 1 || S->c < size - 1) show();
    else if (S->spent <= S->best + slack) { say("You reached the corner paying %d, the cheapest possible.\n", S->spent); win(); }
    else { say("You reached the corner paying %d; the cheapest path costs %d.\n", S->spent, S->best); lose(); }
}
HINT { say("Work backwards from the goal corner: the cheapest cost from a square is its own cost plus the cheaper of the cheapest costs from the square to its right and the square below it. Fill these in for every square, then always step to the neighbour with the lower figure."); }
SOLVE {
    int down = S->r < size - 1 && (S->c == size - 1 || S->cost[S->r + 1][S->c] + togo(S->r + 1, S->c) <= S->cost[S->r][S->c + 1] + togo(S->r, S->c + 1));
    act("%s", down ? "down" : "right");
}
