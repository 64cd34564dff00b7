/* cop.c — chase a robber along the roads of a tree-shaped town and catch it within a time limit.
 * Teaches: pursuit against an adversary: on a tree, stepping towards the robber
 * cuts off its escape, since it can never get past you. Params: nodes = how
 * many crossroads; skill = chance the robber flees to the square furthest from
 * you (else it moves at random); spare = moves beyond the distance from your
 * start to the furthest crossroads, which always suffices. */
#include <spade/dsl.h>
ENV("cop", "Catch a fleeing robber on a tree of roads.", .family = "strategy", .max_steps = 40)
PARAM(int, nodes, 8, 3, 20)
PARAM(double, skill, 1.0, 0.0, 1.0)
PARAM(int, spare, 1, 0, 10)
STATE { char road[20][20]; int cop, robber, left; };
static void dist(int from, int *d) { /* breadth-first over the roads */
    int q[20], head = 0, tail = 0;
    for (int i = 0; i < nodes; i++) d[i] = -1;
    d[from] = 0; q[tail++] = from;
    while (head < tail) for (int i = 0, u = q[head++]; i < nodes; i++) if (S->road[u][i] && d[i] < 0) { d[i] = d[u] + 1; q[tail++] = i; }
}
static void show(void) {
    say("Roads:");
    for (int i = 0; i < nodes; i++) for (int j = i + 1; j < nodes; j++) if (S->road[i][j]) say(" %d-%d", i + 1, j + 1);
    say(". You are at %d; the robber is at %d. Moves left: %d.\n", S->cop + 1, S->robber + 1, S->left);
}
RESET {
    int label[20], d[20], far = 0;
    for (int i = 0; i < nodes; i++) label[i] = i;
    shuffle(label, nodes, sizeof label[0]);
    for (int i = 1; i < nodes; i++) { int p = label[rand_range(0, i - 1)]; S->road[label[i]][p] = S->road[p][label[i]] = 1; }
    do { S->cop = rand_range(0, nodes - 1); S->robber = rand_range(0, nodes - 1); dist(S->cop, d); } while (d[S->robber] < 2);
    for (int i = 0; i < nodes; i++) if (d[i] > far) far = d[i];
    S->left = far + spare;
    say("You are the cop. Each turn you move along one road to a neighbouring crossroads (say its number), then\n"
        "the robber moves along one road or stays; it never walks into you. Land on the robber to catch it.\n");
    show();
}
STEP {
    long n = parse_int(action); int d[20], best = S->robber, moves[20], k = 0;
    if (n < 1 || n > nodes || !S->road[S->cop][n - 1]) say("Say a crossroads next to yours.\n"); else S->cop = n - 1;
    if (S->cop == S->robber) { say("You caught the robber!\n"); win(); return; }
    if (--S->left == 0) { say("Out of time: the robber got away.\n"); lose(); return; }
    dist(S->cop, d);
    for (int i = 0; i < nodes; i++) if ((i == S->robber || S->road[S->robber][i]) && i != S->cop) { moves[k++] = i; if (d[i] > d[best]) best = i; }
    S->robber = chance(skill) ? best : moves[rand_range(0, k - 1)];
    show();
}
HINT { say("Work out the route from you to the robber and take its first road every turn. The robber cannot slip past you, so each such step shrinks the part of the town it can reach; wandering lets it double back."); }
SOLVE { int d[20]; dist(S->robber, d); for (int i = 0; i < nodes; i++) if (S->road[S->cop][i] && d[i] == d[S->cop] - 1) { act("%d", i + 1); return; } }
