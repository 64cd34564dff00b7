/* robot_program.c — write one program of F/L/R commands that drives a robot to the goal.
 * Teaches: planning a whole action sequence in advance with a heading to track (turns
 * change what "forward" means), then debugging it from where the robot stopped.
 * Params: size = side of the grid; rocks = percent of squares that are rocks; tries =
 * programs you may run. Start and goal are joined by construction. Held out. */
#include <spade/dsl.h>
ENV("robot_program", "Write an F/L/R program that drives a robot to the goal.", .family = "grid", .max_steps = 10)
PARAM(int, size, 5, 3, 12)
PARAM(int, rocks, 20, 0, 40)
PARAM(int, tries, 3, 1, 10)
STATE { char g[12][12]; int tries_left; };
static const int DR[4] = {-1, 0, 1, 0}, DC[4] = {0, 1, 0, -1}; /* north, east, south, west */
static int free_at(int r, int c) { return r >= 0 && c >= 0 && r < size && c < size && S->g[r][c] != '#'; }
static int route(char *out) { /* BFS over (row, col, heading) from the start facing east; writes the program */
    int prev[12 * 12 * 4], cmd[12 * 12 * 4], q[12 * 12 * 4], head = 0, tail = 0, s0 = 0 * 4 + 1, goal = -1;
    for (int i = 0; i < 12 * 12 * 4; i++) prev[i] = -2;
    prev[s0] = -1; q[tail++] = s0;
    while (head < tail && goal < 0) {
        int s = q[head++], r = s / 4 / 12, c = s / 4 % 12, h = s % 4;
        int next[3] = {free_at(r + DR[h], c + DC[h]) ? ((r + DR[h]) * 12 + c + DC[h]) * 4 + h : -1, s - h + (h + 3) % 4, s - h + (h + 1) % 4};
        for (int k = 0; k < 3; k++)
            if (next[k] >= 0 && prev[next[k]] == -2) { prev[next[k]] = s; cmd[next[k]] = "FLR"[k]; q[tail++] = next[k]; if (next[k] / 4 == (size - 1) * 13) goal = next[k]; }
    }
    if (goal < 0) return 0;
    int n = 0; for (int s = goal; prev[s] >= 0; s = prev[s]) n++;
    out[n] = 0; for (int s = goal, i = n - 1; prev[s] >= 0; s = prev[s]) out[i--] = (char)cmd[s];
    return n;
}
static void show(void) { for (int r = 0; r < size; r++) say("%.*s\n", size, S->g[r]); }
RESET {
    char p[12 * 12 * 4 + 1];
    do {
        for (int r = 0; r < size; r++) for (int c = 0; c < size; c++) S->g[r][c] = chance(rocks / 100.0) ? '#' : '.';
        S->g[0][0] = 'R'; S->g[size - 1][size - 1] = 'G';
    } while (!route(p));
    S->tries_left = tries;
    say("The robot R starts at the top left facing east; reach G at the bottom right. Rocks are #.\n"
        "Answer with one program: a string of F (forward one square), L (turn left), R (turn right), e.g. FFRF.\n");
    show();
}
STEP {
    int r = 0, c = 0, h = 1, n = 0; const char *p = answer(action);
    for (; *p; p++) {
        char k = (char)toupper(*p);
        if (k == 'L') h = (h + 3) % 4; else if (k == 'R') h = (h + 1) % 4;
        else if (k == 'F') { if (!free_at(r + DR[h], c + DC[h])) break; r += DR[h]; c += DC[h]; }
        else continue;
        n++;
    }
    if (r == size - 1 && c == size - 1) { say("The robot reached G!\n"); win(); return; }
    say("After %d commands the robot stopped at row %d, column %d%s.\n", n, r + 1, c + 1, *p ? " (a rock was in the way)" : "");
    if (--S->tries_left <= 0) { say("No tries left.\n"); lose(); } else say("Tries left: %d.\n", S->tries_left);
}
HINT { say("First find a path of open squares on the map, then turn it into commands while keeping track of the heading: facing east, R points south and L points north. A rock ahead stops the whole program, so check every F."); }
SOLVE { char p[12 * 12 * 4 + 1]; route(p); act("%s", p); }
