/* tictactoe.c — play noughts and crosses against an opponent and never lose a game.
 * Teaches: looking ahead in a game: win when you can, block the opponent's two
 * in a row, and take squares that make two threats. Params: skill = chance the
 * opponent plays a perfect move (else a random one); games = games to get
 * through without a loss. The opponent plays X and opens on a random square. */
#include <spade/dsl.h>
ENV("tictactoe", "Play noughts and crosses without losing.", .family = "strategy", .max_steps = 40)
PARAM(double, skill, 0.5, 0.0, 1.0)
PARAM(int, games, 2, 1, 4)
STATE { char b[10]; int game; }; /* b: the nine squares, '.' when free, and a NUL */
static const int LINE[8][3] = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {0, 3, 6}, {1, 4, 7}, {2, 5, 8}, {0, 4, 8}, {2, 4, 6}};
static char winner(void) {
    for (int k = 0; k < 8; k++) if (S->b[LINE[k][0]] != '.' && S->b[LINE[k][0]] == S->b[LINE[k][1]] && S->b[LINE[k][1]] == S->b[LINE[k][2]]) return S->b[LINE[k][0]];
    return 0;
}
static int full(void) { return !strchr(S->b, '.'); }
static int value(char me, char turn) { /* for me, with turn to move: 1 a win, 0 a draw, -1 a loss */
    int best = turn == me ? -2 : 2;
    if (winner()) return winner() == me ? 1 : -1;
    if (full()) return 0;
    for (int i = 0; i < 9; i++)
        if (S->b[i] == '.') {
            S->b[i] = turn; int v = value(me, 'X' + 'O' - turn); S->b[i] = '.';
            if (turn == me ? v > best : v < best) best = v;
            if (best == (turn == me ? 1 : -1)) break; /* nothing beats it */
        }
    return best;
}
static int best_move(char me) {
    int best = -2, at = 0;
    for (int i = 0; i < 9; i++) if (S->b[i] == '.') { S->b[i] = me; int v = value(me, 'X' + 'O' - me); S->b[i] = '.'; if (v > best) { best = v; at = i; } }
    return at;
}
static void opponent(void) {
    int i;
    if (strchr(S->b, 'X') && chance(skill)) i = best_move('X'); /* never searched from the empty board */
    else do i = rand_range(0, 8); while (S->b[i] != '.');
    S->b[i] = 'X'; say("I play X on %d.\n", i + 1);
}
static char cell(int i) { return S->b[i] == '.' ? '1' + i : S->b[i]; }
static void show(void) { for (int r = 0; r < 3; r++) say(" %c %c %c\n", cell(3 * r), cell(3 * r + 1), cell(3 * r + 2)); }
static void start(void) { memset(S->b, '.', 9); say("Game %d of %d.\n", S->game + 1, games); opponent(); show(); }
RESET {
    say("We play noughts and crosses: three in a row, column or diagonal wins. I am X and you are O. Say the\n"
        "number of a free square. Get through %d game%s without losing (a draw is fine).\n", games, games > 1 ? "s" : "");
    start();
}
STEP {
    long i = parse_int(action);
    if (i < 1 || i > 9 || S->b[i - 1] != '.') { say("Say the number of a free square.\n"); show(); return; }
    S->b[i - 1] = 'O';
    if (!winner() && !full()) opponent();
    if (winner() == 'X') { show(); say("Three X in a row: I win.\n"); lose(); return; }
    if (!winner() && !full()) { show(); return; }
    say(winner() ? "Three O in a row: you win this game.\n" : "The board is full: a draw.\n");
    if (++S->game == games) { say("You did not lose a game!\n"); win(); } else start();
}
HINT { say("Before every move check two things: can you complete a line now, and can your opponent complete one on its next move? Win first, block second. Otherwise prefer the centre, then corners, and look for a square that sets up two lines at once."); }
SOLVE { act("%d", best_move('O') + 1); }
