/* key_door.c — pick up keys (a, b, c) to unlock doors (A, B, C) on the way to the exit E.
 * Teaches: ordering subgoals (fetch a key before its door) and routing on a grid.
 * Params: doors = locked walls between rooms (each key lies in its door's room or
 * an earlier one, so some need a detour back); size = squares per room side;
 * clutter = percent of rubble (#). Redrawn until everything is reachable. */
#include <spade/dsl.h>
ENV("key_door", "Collect keys and unlock doors to reach the exit.", .family = "grid", .max_steps = 300)
PARAM(int, doors, 2, 0, 3)
PARAM(int, size, 5, 3, 15)
PARAM(int, clutter, 10, 0, 30)
#define H 17 /* max size + 2 */
#define W 65 /* 4 rooms of max size, 3 walls, 2 borders */
STATE { char g[H][W], keys[4]; int h, w, r, c; };
static const int DR[4] = {-1, 1, 0, 0}, DC[4] = {0, 0, -1, 1};
static const char *MOVES[4] = {"north", "south", "west", "east"};
static int passable(int r, int c) { char x = S->g[r][c]; return x != '#' && (x < 'A' || x > 'C' || strchr(S->keys, tolower(x))); }
static char next_goal(void) { for (int k = 0; k < doors; k++) if (!strchr(S->keys, 'a' + k)) return 'a' + k; return 'E'; }
static int route(char goal) { /* breadth-first from @: the first move toward the nearest goal square, -1 if none */
    int q[H * W], first[H][W], head = 0, tail = 0;
    memset(first, -1, sizeof first); first[S->r][S->c] = 4; q[tail++] = S->r * W + S->c;
    while (head < tail) {
        int r = q[head] / W, c = q[head++] % W;
        if (S->g[r][c] == goal) return first[r][c];
        for (int d = 0, nr, nc; d < 4; d++)
            if (passable(nr = r + DR[d], nc = c + DC[d]) && first[nr][nc] < 0) { first[nr][nc] = first[r][c] == 4 ? d : first[r][c]; q[tail++] = nr * W + nc; }
    }
    return -1;
}
static int place(char what, int room) { /* a random free square of a room: r * W + c, or -1 if none turns up */
    for (int t = 0; t < 100; t++) {
        int r = rand_range(1, size), c = room * (size + 1) + rand_range(1, size);
        if (S->g[r][c] == '.') { S->g[r][c] = what; return r * W + c; }
    }
    return -1;
}
static void show(void) {
    say("Keys held: %s. You are @.\n", S->keys[0] ? S->keys : "none");
    for (int r = 0; r < S->h; r++) say("%.*s\n", S->w, S->g[r]);
}
RESET {
    S->h = size + 2; S->w = (doors + 1) * (size + 1) + 1;
    for (int ok = 0; !ok;) { /* rooms, rubble, doors, keys, exit, you; keep the first layout where every goal is reachable */
        for (int r = 0; r < S->h; r++) for (int c = 0; c < S->w; c++)
            S->g[r][c] = r == 0 || r == S->h - 1 || c % (size + 1) == 0 || chance(clutter / 100.0) ? '#' : '.';
        for (int k = 0; k < doors; k++) { S->g[rand_range(1, size)][(k + 1) * (size + 1)] = 'A' + k; place('a' + k, rand_range(0, k)); }
        int at = place('@', 0); if (at < 0) continue; /* a room full of rubble: draw again */
        S->r = at / W; S->c = at % W; place('E', doors); memcpy(S->keys, "abc", 4); ok = 1;
        for (int k = 0; k <= doors; k++) ok &= route(k < doors ? 'a' + k : 'E') >= 0;
    }
    memset(S->keys, 0, sizeof S->keys);
    say("Reach the exit E. A door (A, B, C) opens only if you hold its key (a, b, c); walk onto a key to take it.\n"
        "Move one square per turn: north, south, west or east.\n"); show();
}
STEP {
    char w[16], x = 0; int d = 0; parse_word(action, w, sizeof w);
    while (d < 4 && !str_ieq(w, MOVES[d])) d++;
    if (d == 4) say("'%s' is not a move; say north, south, west or east.\n", w);
    else if (!passable(S->r + DR[d], S->c + DC[d])) say("The way %s is blocked%s.\n", MOVES[d], S->g[S->r + DR[d]][S->c + DC[d]] == '#' ? "" : " by a locked door");
    else { S->g[S->r][S->c] = '.'; x = S->g[S->r += DR[d]][S->c += DC[d]]; S->g[S->r][S->c] = '@'; }
    if (x >= 'a' && x <= 'c') { S->keys[strlen(S->keys)] = x; say("You take key %c.\n", x); }
    if (x >= 'A' && x <= 'C') say("You unlock door %c and walk through.\n", x);
    if (x == 'E') { say("You reached the exit!\n"); win(); } else show();
}
HINT { say("Before moving, list which key opens each door between you and E; fetch each key first, even when it means walking back through rooms you already crossed."); }
SOLVE { act("%s", MOVES[route(next_goal())]); }
