/* maze.c — walk from @ to the exit E of a generated maze, one square per move.
 * Teaches: reading a drawn grid and planning a whole route before moving.
 * Params: size = cells per side (drawn 2*size+1 wide); loops = percent of inner
 * walls knocked down (0: exactly one route); slack = moves allowed beyond the
 * shortest route (0: no mistakes). Randomized depth-first carving: always solvable. */
#include <spade/dsl.h>
ENV("maze", "Walk through a generated maze to the exit.", .family = "grid", .max_steps = 1000)
PARAM(int, size, 5, 2, 20)
PARAM(int, loops, 0, 0, 50)
PARAM(int, slack, 10, 0, 100)
#define N 41 /* 2 * max size + 1 */
STATE { char g[N][N]; int n, r, c, left; };
static const int DR[4] = {-1, 1, 0, 0}, DC[4] = {0, 0, -1, 1};
static const char *MOVES[8] = {"north", "south", "west", "east", "up", "down", "left", "right"};
static int inside(int r, int c) { return r > 0 && c > 0 && r < S->n - 1 && c < S->n - 1; }
static int open_at(int r, int c) { return inside(r, c) && S->g[r][c] != '#'; }
static void bfs(int dist[N][N]) { /* dist[r][c] = moves from (r, c) to E; -1 if walled off */
    int q[N * N], head = 0, tail = 0, e = S->n - 2;
    memset(dist, -1, sizeof(int) * N * N); dist[e][e] = 0; q[tail++] = e * N + e;
    while (head < tail) {
        int r = q[head] / N, c = q[head++] % N;
        for (int d = 0, nr, nc; d < 4; d++)
            if (open_at(nr = r + DR[d], nc = c + DC[d]) && dist[nr][nc] < 0) { dist[nr][nc] = dist[r][c] + 1; q[tail++] = nr * N + nc; }
    }
}
static void carve(int r, int c) { /* randomized depth-first: visit cells two squares away */
    int d[4] = {0, 1, 2, 3};
    S->g[r][c] = '.'; shuffle(d, 4, sizeof d[0]);
    for (int k = 0, nr, nc; k < 4; k++)
        if (inside(nr = r + 2 * DR[d[k]], nc = c + 2 * DC[d[k]]) && S->g[nr][nc] == '#') { S->g[r + DR[d[k]]][c + DC[d[k]]] = '.'; carve(nr, nc); }
}
static void show(void) {
    say("Moves left: %d. You are @, the exit is E, walls are #.\n", S->left);
    for (int r = 0; r < S->n; r++) say("%.*s\n", S->n, S->g[r]);
}
RESET {
    int dist[N][N];
    S->n = 2 * size + 1; S->r = S->c = 1;
    memset(S->g, '#', sizeof S->g); carve(1, 1);
    for (int r = 1; r < S->n - 1; r++) /* walls between two cells sit at odd+even squares */
        for (int c = 1 + r % 2; c < S->n - 1; c += 2) if (chance(loops / 100.0)) S->g[r][c] = '.';
    S->g[S->n - 2][S->n - 2] = 'E'; S->g[1][1] = '@'; bfs(dist); S->left = dist[1][1] + slack;
    say("Find the way from @ to the exit E. One square per turn: north, south, west or east.\n"); show();
}
STEP {
    char w[16]; int d = 0; parse_word(action, w, sizeof w);
    while (d < 8 && !str_ieq(w, MOVES[d])) d++;
    if (d == 8) say("'%s' is not a move; say north, south, west or east.\n", w);
    else if (!open_at(S->r + DR[d % 4], S->c + DC[d % 4])) say("A wall blocks the way %s.\n", MOVES[d % 4]);
    else { S->g[S->r][S->c] = '.'; S->r += DR[d % 4]; S->c += DC[d % 4]; }
    if (S->g[S->r][S->c] == 'E') { say("You reached the exit!\n"); win(); }
    else if (--S->left <= 0) { say("You ran out of moves.\n"); lose(); }
    else { S->g[S->r][S->c] = '@'; show(); }
}
HINT { say("Trace the route backwards from E to @ on the map before moving; at a fork, take the corridor that really leads to E, not the one that merely points toward it."); }
SOLVE {
    int dist[N][N], d = 0; bfs(dist);
    while (!(open_at(S->r + DR[d], S->c + DC[d]) && dist[S->r + DR[d]][S->c + DC[d]] == dist[S->r][S->c] - 1)) d++;
    act("%s", MOVES[d]);
}
