/* assign.c — give every worker one task so that the total cost is as small as possible.
 * Teaches: the assignment problem: a greedy cheapest pick for each worker in
 * turn can force a dear one later, so weigh each choice by what it leaves.
 * Params: workers = how many workers (and tasks); top = the largest cost;
 * slack = cost allowed above the cheapest assignment. */
#include <spade/dsl.h>
ENV("assign", "Assign tasks to workers at the least total cost.", .family = "optimization", .max_steps = 30)
PARAM(int, workers, 4, 2, 7)
PARAM(int, top, 9, 2, 99)
PARAM(int, slack, 0, 0, 20)
STATE { int cost[7][7], used, done, spent, best; }; /* used: a bit per task given; done: workers served */
static int cheapest(int k, int used) { /* least cost of giving workers k.. the tasks not in used */
    int least = k == workers ? 0 : INT_MAX;
    for (int t = 0; t < workers && k < workers; t++)
        if (!(used >> t & 1)) { int c = S->cost[k][t] + cheapest(k + 1, used | 1 << t); if (c < least) least = c; }
    return least;
}
static void show(void) {
    say("       ");
    for (int t = 0; t < workers; t++) say(" task %d", t + 1);
    for (int k = 0; k < workers; k++) {
        say("\nworker %d", k + 1);
        for (int t = 0; t < workers; t++) say(S->used >> t & 1 ? "  %3d* " : "  %3d  ", S->cost[k][t]);
    }
    say("\nCost so far: %d. Which task for worker %d?\n", S->spent, S->done + 1);
}
RESET {
    for (int k = 0; k < workers; k++) for (int t = 0; t < workers; t++) S->cost[k][t] = rand_range(1, top);
    S->best = cheapest(0, 0);
    say("Each worker does exactly one task and each task is done once; the table gives each worker's cost for\n"
        "each task. Name a task for worker 1, then worker 2, and so on; keep the total cost as low as possible.\n"
        "Tasks already given are marked *.\n");
    show();
}
STEP {
    long t = parse_int(action);
    if (t < 1 || t > workers || S->used >> (t - 1) & 1) { say("Say the number of a task not given yet.\n"); show(); return; }
    S->used |= 1 << (t - 1); S->spent += S->cost[S->done++][t - 1];
    if (S->done < workers) show();
    else if (S->spent <= S->best + slack) { say("All assigned, for %d: the least possible.\n", S->spent); win(); }
    else { say("All assigned, for %d; the least possible was %d.\n", S->spent, S->best); lose(); }
}
HINT { say("Do not just take each worker's cheapest task in turn. For a candidate choice, add its cost to the cheapest way of covering the remaining workers with the remaining tasks, and compare; checking small swaps between two workers is a quick test of a plan."); }
SOLVE {
    for (int t = 0; t < workers; t++)
        if (!(S->used >> t & 1) && S->cost[S->done][t] + cheapest(S->done + 1, S->used | 1 << t) == cheapest(S->done, S->used)) { act("%d", t + 1); return; }
}
