/* latin.c — complete a Latin square: every row and every column holds 1..size once.
 * Teaches: constraint propagation (a cell whose row and column rule out all but
 * one digit) and checking a whole answer. Params: size = side of the square;
 * holes = cells to blank (as many as keep the solution unique). Blanks are
 * removed one by one only while a solver still finds exactly one completion. */
#include <spade/dsl.h>
ENV("latin", "Complete a Latin square with a unique solution.", .family = "logic", .max_steps = 1)
PARAM(int, size, 4, 3, 6)
PARAM(int, holes, 8, 1, 30)
STATE { int g[6][6], sol[6][6]; };
static int fits(int r, int c, int v) { for (int k = 0; k < size; k++) if (S->g[r][k] == v || S->g[k][c] == v) return 0; return 1; }
static int count(int cell) { /* completions of g from this cell on, stopping at 2 */
    int r = cell / size, c = cell % size, found = 0;
    if (cell == size * size) return 1;
    if (S->g[r][c]) return count(cell + 1);
    for (int v = 1; v <= size && found < 2; v++)
        if (fits(r, c, v)) { S->g[r][c] = v; found += count(cell + 1); S->g[r][c] = 0; }
    return found;
}
RESET {
    int row[6], col[6], sym[6], order[36], blank = 0;
    for (int k = 0; k < 6; k++) row[k] = col[k] = sym[k] = k;
    for (int k = 0; k < 36; k++) order[k] = k;
    shuffle(row, size, sizeof row[0]); shuffle(col, size, sizeof col[0]); shuffle(sym, size, sizeof sym[0]);
    for (int r = 0; r < size; r++) for (int c = 0; c < size; c++) S->g[r][c] = S->sol[r][c] = sym[(row[r] + col[c]) % size] + 1;
    shuffle(order, size * size, sizeof order[0]);
    for (int k = 0; k < size * size && blank < holes; k++) { /* blank a cell unless that allows a second completion */
        int r = order[k] / size, c = order[k] % size;
        S->g[r][c] = 0;
        if (count(0) == 1) blank++; else S->g[r][c] = S->sol[r][c];
    }
    say("Fill the dots so that every row and every column contains each of 1 to %d exactly once:\n", size);
    for (int r = 0; r < size; r++) {
        for (int c = 0; c < size; c++) if (S->g[r][c]) say("%d ", S->g[r][c]); else say(". ");
        say("\n");
    }
    say("Answer with the whole square, row by row, e.g. \\boxed{123 231 312} for size 3.\n");
}
STEP {
    const char *a = answer(action); int digit[4096], n = 0, ok;
    for (; *a && n < 4096; a++) if (isdigit((unsigned char)*a)) digit[n++] = *a - '0';
    ok = n >= size * size; /* the last size*size digits are the square */
    for (int k = 0; ok && k < size * size; k++) ok = digit[n - size * size + k] == S->sol[k / size][k % size];
    if (ok) { say("Correct.\n"); win(); } else { say("That is not the square.\n"); lose(); }
}
HINT { say("Look for a row or column with a single dot, then for a cell whose row and column together already hold every digit but one. Fill it, repeat, and check every row and column before answering."); }
SOLVE {
    act("\\boxed{");
    for (int r = 0; r < size; r++) for (int c = 0; c < size; c++) act("%d%s", S->sol[r][c], c == size - 1 && r < size - 1 ? " " : "");
    act("}");
}
