/* matrix.c — fill the hidden cells of a number grid whose rows and columns follow a rule.
 * Teaches: reading a two-dimensional pattern (steps along rows and columns, a
 * product table, powers down the columns) from the cells that are shown.
 * Params: size = side of the grid; holes = hidden cells to find (never in the
 * first row or column, which fix the rule); level = how many kinds of rule. */
#include <spade/dsl.h>
ENV("matrix", "Fill the hidden cells of a patterned number grid.", .family = "pattern", .max_steps = 16)
PARAM(int, size, 3, 3, 5)
PARAM(int, holes, 2, 1, 16)
PARAM(int, level, 2, 1, 3)
STATE { long g[5][5]; char hidden[5][5]; int left; };
static void show(void) {
    int first = 1;
    for (int r = 0; r < size; r++) {
        for (int c = 0; c < size; c++)
            if (!S->hidden[r][c]) say("%6ld", S->g[r][c]);
            else { say("%6s", first ? "?" : "_"); first = 0; }
        say("\n");
    }
    say("Give the number that belongs at ?. Cells still hidden: %d.\n", S->left);
}
static int next(int *r, int *c) { /* the first hidden cell in reading order */
    for (*r = 0; *r < size; (*r)++) for (*c = 0; *c < size; (*c)++) if (S->hidden[*r][*c]) return 1;
    return 0;
}
RESET {
    int kind = rand_range(1, level), cells[16], n = (size - 1) * (size - 1);
    long a = rand_range(1, 9), b = rand_range(1, 9), dr = rand_range(1, 9), dc = rand_range(1, 9), p = rand_range(2, 3);
    for (int r = 0; r < size; r++)
        for (int c = 0; c < size; c++) {
            long pw = 1;
            for (int k = 0; k < r; k++) pw *= p;
            S->g[r][c] = kind == 1 ? a + r * dr + c * dc : kind == 2 ? (a + r * dr) * (b + c * dc) : a * pw + c * dc;
        }
    for (int k = 0; k < n; k++) cells[k] = k;
    shuffle(cells, n, sizeof cells[0]);
    S->left = holes < n ? holes : n;
    for (int k = 0; k < S->left; k++) S->hidden[1 + cells[k] / (size - 1)][1 + cells[k] % (size - 1)] = 1;
    say("Every number in this grid follows one rule built from its row and its column. Hidden cells are ? and _;\n"
        "find them one at a time, in reading order.\n");
    show();
}
STEP {
    int r, c;
    next(&r, &c);
    if (parse_int(action) != S->g[r][c]) { say("Wrong: it was %ld.\n", S->g[r][c]); lose(); return; }
    S->hidden[r][c] = 0;
    if (--S->left == 0) { say("Correct. The grid is complete!\n"); win(); } else { say("Correct.\n"); show(); }
}
HINT { say("Look at the first row and the first column alone: is each a constant step, a constant ratio, or a growing product? Then check how a cell relates to the cells at the start of its row and of its column (their sum less the corner, or their product divided by the corner) before you answer."); }
SOLVE { int r, c; next(&r, &c); act("%ld", S->g[r][c]); }
