/* push.c — a sokoban-like puzzle: walk into boxes to push them onto the targets.
 * Teaches: planning irreversible moves (a box in a corner stays there) and ordering
 * pushes. Params: size = room side; boxes = how many; pulls = how far the boxes were
 * dragged from the targets. Generated backwards — the solved room is scrambled by
 * pulls, which pushes can always undo — so every puzzle is solvable. */
#include <spade/dsl.h>
ENV("push", "Push every box onto a target.", .family = "grid", .max_steps = 400)
PARAM(int, size, 5, 3, 9)
PARAM(int, boxes, 2, 1, 4)
PARAM(int, pulls, 6, 1, 30)
#define M 11 /* max size + 2 */
STATE { /* push k of the plan: stand at (pr, pc) and move pd; the plan runs from k = n - 1 down to 0 */
    char goal[M][M], box[M][M], start[M][M]; int r, c, r0, c0, n, done, strayed, pr[64], pc[64], pd[64]; };
static const int DR[4] = {-1, 1, 0, 0}, DC[4] = {0, 0, -1, 1}; static const char *MOVES[4] = {"north", "south", "west", "east"};
static int wall(int r, int c) { return r == 0 || c == 0 || r > size || c > size; }
static int free_at(int r, int c) { return !wall(r, c) && !S->box[r][c]; }
static int solved(void) { return !memcmp(S->box, S->goal, sizeof S->box); }
static int planned(int d) { int k = S->n - 1 - S->done; return !S->strayed && k >= 0 && S->pr[k] == S->r && S->pc[k] == S->c && S->pd[k] == d; }
static char square(int r, int c) { return wall(r, c) ? '#' : S->box[r][c] ? (S->goal[r][c] ? '*' : 'B') : r == S->r && c == S->c ? '@' : S->goal[r][c] ? 'x' : '.'; }
static void show(void) {
    say("Boxes B, targets x, a box on a target *, you @, walls #.\n");
    for (int r = 0; r < size + 2; r++) for (int c = 0; c < size + 2; c++) say("%c%s", square(r, c), c == size + 1 ? "\n" : "");
}
RESET {
    do { /* boxes on their targets and you on a free square; then walk backwards, sometimes dragging a box */
        memset(S, 0, sizeof *S);
        for (int k = 0, r, c; k <= boxes; k++) {
            do { r = rand_range(1, size); c = rand_range(1, size); } while (!free_at(r, c));
            if (k < boxes) S->box[r][c] = S->goal[r][c] = 1; else { S->r = r; S->c = c; }
        }
        for (int t = 0; t < 5000 && S->n < 64 && (S->n < pulls || solved()); t++) {
            int d = rand_range(0, 3), br = S->r - DR[d], bc = S->c - DC[d]; /* step d, maybe dragging the box behind */
            if (!free_at(S->r + DR[d], S->c + DC[d])) continue;
            if (S->box[br][bc] && chance(0.5)) /* a pull; forwards it is a push from the new square the other way (d ^ 1) */
                { S->box[br][bc] = 0; S->box[S->r][S->c] = 1; S->pr[S->n] = S->r + DR[d]; S->pc[S->n] = S->c + DC[d]; S->pd[S->n++] = d ^ 1; }
            S->r += DR[d]; S->c += DC[d];
        }
    } while (solved()); /* you were boxed in: draw again */
    memcpy(S->start, S->box, sizeof S->box); S->r0 = S->r; S->c0 = S->c;
    say("Push every box onto a target by walking into it (boxes cannot be pulled). Move north, south, west or east;\n"
        "say restart to put everything back.\n"); show();
}
STEP {
    char w[16]; int d = 0, r, c; parse_word(action, w, sizeof w);
    while (d < 4 && !str_ieq(w, MOVES[d])) d++;
    if (str_ieq(w, "restart")) { memcpy(S->box, S->start, sizeof S->box); S->r = S->r0; S->c = S->c0; S->done = S->strayed = 0; }
    else if (d == 4) say("'%s' is not a move; say north, south, west, east or restart.\n", w);
    else if (wall(r = S->r + DR[d], c = S->c + DC[d]) || (S->box[r][c] && !free_at(r + DR[d], c + DC[d]))) say("You cannot move %s.\n", MOVES[d]);
    else if (!S->box[r][c]) { S->r = r; S->c = c; } /* a walk */
    else { S->strayed |= !planned(d); S->done += !S->strayed; S->box[r][c] = 0; S->box[r + DR[d]][c + DC[d]] = 1; S->r = r; S->c = c; } /* a push */
    if (solved()) { say("Every box is on a target!\n"); win(); } else show();
}
HINT { say("Before pushing, work out each box's path to a target and the square you must stand on to push it; never push a box into a corner or against a wall away from every target. Restart as soon as a box is stuck."); }
SOLVE { /* restart if a push strayed from the plan; else walk breadth-first to the next push square and push */
    int k = S->n - 1 - S->done, q[M * M], first[M][M], head = 0, tail = 0;
    if (S->strayed) { act("restart"); return; }
    memset(first, -1, sizeof first); first[S->r][S->c] = 4; q[tail++] = S->r * M + S->c; /* 4: the start square */
    while (head < tail) {
        int r = q[head] / M, c = q[head++] % M;
        if (r == S->pr[k] && c == S->pc[k]) { act("%s", MOVES[first[r][c] == 4 ? S->pd[k] : first[r][c]]); return; }
        for (int d = 0, nr, nc; d < 4; d++)
            if (free_at(nr = r + DR[d], nc = c + DC[d]) && first[nr][nc] < 0) { first[nr][nc] = first[r][c] == 4 ? d : first[r][c]; q[tail++] = nr * M + nc; }
    }
}
