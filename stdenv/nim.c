/* nim.c — play Nim against a fixed opponent: whoever takes the last object wins.
 * Teaches: game strategy by an invariant (the XOR of the heap sizes), and
 * playing a whole game against an adversary. Params: heaps = how many heaps;
 * size = largest heap; skill = chance the opponent plays its best move. Every
 * game can be won: when the start is already lost for the mover, the opponent moves first. */
#include <spade/dsl.h>
ENV("nim", "Win a game of Nim against a fixed opponent.", .family = "logic", .max_steps = 100)
PARAM(int, heaps, 3, 2, 6)
PARAM(int, size, 7, 1, 30)
PARAM(double, skill, 1.0, 0.0, 1.0)
STATE { int heap[6]; };
static int nim_sum(void) { int x = 0; for (int h = 0; h < heaps; h++) x ^= S->heap[h]; return x; }
static int left(void) { int n = 0; for (int h = 0; h < heaps; h++) n += S->heap[h]; return n; }
static int best(void) { /* a heap whose reduction to heap ^ nim_sum leaves XOR 0, or -1 */
    for (int h = 0; h < heaps; h++) if ((S->heap[h] ^ nim_sum()) < S->heap[h]) return h;
    return -1;
}
static void show(void) {
    for (int h = 0; h < heaps; h++) say("%sheap %d has %d", h ? ", " : "", h + 1, S->heap[h]);
    say(".\n");
}
static void opponent(void) {
    int h = best(), n;
    if (h >= 0 && chance(skill)) n = S->heap[h] - (S->heap[h] ^ nim_sum());
    else { do h = rand_range(0, heaps - 1); while (!S->heap[h]); n = rand_range(1, S->heap[h]); }
    S->heap[h] -= n;
    say("I take %d from heap %d.\n", n, h + 1);
}
RESET {
    for (int h = 0; h < heaps; h++) S->heap[h] = rand_range(1, size);
    say("We play Nim. On your turn take any number of objects, at least one, from a single heap; whoever takes\n"
        "the last object wins. Say \"take N from H\" to take N objects from heap H.\n");
    if (!nim_sum()) opponent();
    show();
}
STEP {
    long v[64]; int k = parse_ints(action, v, 64); /* the last two numbers: how many, and from which heap */
    long n = k >= 2 ? v[k - 2] : 0, h = k >= 2 ? v[k - 1] : 0;
    if (h < 1 || h > heaps || n < 1 || n > S->heap[h - 1]) { say("Say \"take N from H\" with 1 <= N <= the size of heap H.\n"); show(); return; }
    S->heap[h - 1] -= n;
    if (!left()) { say("You took the last object. You win!\n"); win(); return; }
    opponent();
    if (!left()) { say("I took the last object. I win.\n"); lose(); } else show();
}
HINT { say("Write each heap size in binary and XOR them together. Always move to a position where that XOR is zero: pick a heap whose size drops when XORed with the total, and reduce it to that value."); }
SOLVE {
    int h = best(), n = 1;
    if (h >= 0) n = S->heap[h] - (S->heap[h] ^ nim_sum());
    else for (h = 0; !S->heap[h]; h++) {} /* a lost position: take one and hope for a mistake */
    act("take %d from %d", n, h + 1);
}
