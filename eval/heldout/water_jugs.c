/* water_jugs.c — measure an exact amount of water with two unmarked jugs.
 * Teaches: searching a small state space (fill, empty, pour) for the shortest plan
 * and thinking in remainders. Params: big = capacity of jug B; slack = moves allowed
 * beyond the shortest plan. Jug A's capacity and the target are drawn so the target
 * is reachable. Held out: never in the grounding corpus. */
#include <spade/dsl.h>
ENV("water_jugs", "Measure an exact amount of water with two unmarked jugs.", .family = "optimisation", .max_steps = 60)
PARAM(int, big, 7, 3, 30)
PARAM(int, slack, 4, 0, 30)
STATE { int cap[2], have[2], target, left; };
static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }
static void apply(int *h, int move) { /* 0,1 fill A/B; 2,3 empty A/B; 4 pour A->B; 5 pour B->A */
    if (move < 2) h[move] = S->cap[move]; else if (move < 4) h[move - 2] = 0;
    else { int f = move - 4, t = 1 - f, n = h[f] < S->cap[t] - h[t] ? h[f] : S->cap[t] - h[t]; h[f] -= n; h[t] += n; }
}
static int plan(int *first) { /* BFS from the current state: moves to a goal, and the first move */
    int dist[31 * 31], from[31 * 31], q[31 * 31], head = 0, tail = 0, s0 = S->have[0] * 31 + S->have[1];
    for (int i = 0; i < 31 * 31; i++) dist[i] = -1;
    dist[s0] = 0; from[s0] = -1; q[tail++] = s0;
    while (head < tail) {
        int s = q[head++], h[2] = {s / 31, s % 31};
        if (h[0] == S->target || h[1] == S->target) { *first = from[s]; return dist[s]; }
        for (int m = 0; m < 6; m++) {
            int g[2] = {h[0], h[1]}; apply(g, m); int t = g[0] * 31 + g[1];
            if (dist[t] < 0) { dist[t] = dist[s] + 1; from[t] = from[s] < 0 ? m : from[s]; q[tail++] = t; }
        }
    }
    return -1;
}
static const char *WORDS[6] = {"fill A", "fill B", "empty A", "empty B", "pour A B", "pour B A"};
static void show(void) { say("Jug A holds %d of %d, jug B holds %d of %d. Moves left: %d.\n", S->have[0], S->cap[0], S->have[1], S->cap[1], S->left); }
RESET {
    int first;
    S->cap[1] = big;
    do S->cap[0] = rand_range(2, big - 1); while (gcd(S->cap[0], big) != 1);
    do S->target = rand_range(1, big - 1); while (S->target == S->cap[0]);
    S->left = plan(&first) + slack;
    say("Get exactly %d units of water into either jug. Say one of: fill A, fill B, empty A, empty B, pour A B, pour B A.\n", S->target);
    show();
}
STEP {
    char a[64]; int m = 0; snprintf(a, sizeof a, "%s", answer(action));
    while (m < 6 && !str_ieq(a, WORDS[m])) m++;
    if (m == 6) { say("Say fill A, fill B, empty A, empty B, pour A B or pour B A.\n"); show(); return; }
    apply(S->have, m); S->left--;
    if (S->have[0] == S->target || S->have[1] == S->target) { say("A jug holds exactly %d!\n", S->target); win(); }
    else if (S->left <= 0) { say("Out of moves.\n"); lose(); }
    else show();
}
HINT { say("Work with remainders: repeatedly fill the small jug and pour it into the big one, emptying the big one whenever it is full; the amounts that appear step through multiples of the small capacity modulo the big one. Try the opposite direction too and keep the shorter."); }
SOLVE { int first; plan(&first); act("%s", WORDS[first]); }
