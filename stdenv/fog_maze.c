/* fog_maze.c — find the exit of a maze you can only see a few squares of.
 * Teaches: exploring under partial observation, keeping a mental map, backtracking.
 * Params: size = cells per side (drawn 2*size+1 wide); radius = how far you see.
 * The exit hides in the far quarter; 4*size*size moves are enough to walk every
 * corridor twice. Carved depth-first, so always solvable. */
#include <spade/dsl.h>
ENV("fog_maze", "Explore a maze under fog of war to find the hidden exit.", .family = "grid", .max_steps = 1000)
PARAM(int, size, 5, 2, 15)
PARAM(int, radius, 1, 1, 6)
#define N 31 /* 2 * max size + 1 */
STATE { char g[N][N], seen[N][N]; int n, r, c, left; };
static const int DR[4] = {-1, 1, 0, 0}, DC[4] = {0, 0, -1, 1};
static const char *MOVES[4] = {"north", "south", "west", "east"};
static int inside(int r, int c) { return r > 0 && c > 0 && r < S->n - 1 && c < S->n - 1; }
static void carve(int r, int c) { /* randomized depth-first: visit cells two squares away */
    int d[4] = {0, 1, 2, 3};
    S->g[r][c] = '.'; shuffle(d, 4, sizeof d[0]);
    for (int k = 0, nr, nc; k < 4; k++)
        if (inside(nr = r + 2 * DR[d[k]], nc = c + 2 * DC[d[k]]) && S->g[nr][nc] == '#') { S->g[r + DR[d[k]]][c + DC[d[k]]] = '.'; carve(nr, nc); }
}
static void show(void) { /* the window around @; squares off the map are blank */
    say("You are @ at row %d, column %d (the map is %d by %d). Moves left: %d. You see:\n", S->r, S->c, S->n, S->n, S->left);
    for (int r = S->r - radius; r <= S->r + radius; r++) {
        for (int c = S->c - radius; c <= S->c + radius; c++) {
            int on = r >= 0 && c >= 0 && r < S->n && c < S->n;
            if (on) S->seen[r][c] = 1;
            say("%c", r == S->r && c == S->c ? '@' : on ? S->g[r][c] : ' ');
        }
        say("\n");
    }
}
RESET {
    S->n = 2 * size + 1; S->r = S->c = 1; S->left = 4 * size * size;
    memset(S->g, '#', sizeof S->g); carve(1, 1);
    S->g[2 * rand_range(size / 2, size - 1) + 1][2 * rand_range(size / 2, size - 1) + 1] = 'E'; /* far quarter */
    say("Somewhere in this maze is an exit E; walls are #. Move one square per turn: north, south, west or east.\n"); show();
}
STEP {
    char w[16]; int d = 0; parse_word(action, w, sizeof w);
    while (d < 4 && !str_ieq(w, MOVES[d])) d++;
    if (d == 4) say("'%s' is not a move; say north, south, west or east.\n", w);
    else if (S->g[S->r + DR[d]][S->c + DC[d]] == '#') say("A wall blocks the way %s.\n", MOVES[d]);
    else { S->r += DR[d]; S->c += DC[d]; }
    if (S->g[S->r][S->c] == 'E') { say("You found the exit!\n"); win(); }
    else if (--S->left <= 0) { say("You ran out of moves.\n"); lose(); }
    else show();
}
HINT { say("Explore depth-first and keep a map: follow one wall, note every fork you pass, and when a corridor dead-ends go back to the nearest fork with an unexplored branch instead of wandering."); }
SOLVE { /* only what was seen: breadth-first to E if seen, else to the nearest square next to the unknown */
    int q[N * N], first[N][N], head = 0, tail = 0;
    memset(first, -1, sizeof first); first[S->r][S->c] = 4; q[tail++] = S->r * N + S->c;
    while (head < tail) {
        int r = q[head] / N, c = q[head++] % N, frontier = 0;
        for (int d = 0; d < 4; d++) frontier |= !S->seen[r + DR[d]][c + DC[d]];
        if (first[r][c] < 4 && (S->g[r][c] == 'E' || frontier)) { act("%s", MOVES[first[r][c]]); return; }
        for (int d = 0, nr, nc; d < 4; d++)
            if (S->seen[nr = r + DR[d]][nc = c + DC[d]] && S->g[nr][nc] != '#' && first[nr][nc] < 0) { first[nr][nc] = first[r][c] < 4 ? first[r][c] : d; q[tail++] = nr * N + nc; }
    }
}
