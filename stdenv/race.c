/* race.c — count up to a target with an opponent, adding 1 to N each turn; whoever reaches it wins.
 * Teaches: winning by working backwards from the goal: the totals that leave a
 * multiple of N + 1 to go are the ones to move to. Params: target = the total
 * to reach; most = the largest amount added per turn; skill = chance the
 * opponent plays its best move. When the start is lost for the mover, the
 * opponent moves first, so every game can be won. */
#include <spade/dsl.h>
ENV("race", "Race an opponent to say a target total.", .family = "strategy", .max_steps = 60)
PARAM(int, target, 21, 10, 100)
PARAM(int, most, 3, 2, 9)
PARAM(double, skill, 1.0, 0.0, 1.0)
STATE { int total; };
static void opponent(void) {
    int togo = target - S->total, n = togo % (most + 1);
    if (!n || !chance(skill)) n = rand_range(1, togo < most ? togo : most);
    S->total += n;
    say("I add %d, making %d.\n", n, S->total);
}
RESET {
    say("We take turns adding a number from 1 to %d to a running total that starts at 0. Whoever makes the\n"
        "total exactly %d wins. Say the number you add; anything else passes your turn.\n", most, target);
    if (target % (most + 1) == 0) opponent();
    else say("You go first. The total is 0.\n");
}
STEP {
    long n = parse_int(action);
    if (n < 1 || n > most || S->total + n > target) say("That is not a move (add 1 to %d without passing %d), so you pass.\n", most, target);
    else S->total += n;
    if (S->total == target) { say("You make %d. You win!\n", target); win(); return; }
    opponent();
    if (S->total == target) { say("I win.\n"); lose(); }
}
HINT { say("Work backwards from the target. If the amount still to go is a multiple of one more than the largest step, the player to move loses against good play. So on each turn add just enough to leave your opponent such an amount."); }
SOLVE { int r = (target - S->total) % (most + 1); act("%d", r ? r : 1); }
