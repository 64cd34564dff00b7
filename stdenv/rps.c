/* rps.c — rock, paper, scissors against an opponent that repeats a fixed cycle of moves.
 * Teaches: modelling an opponent: find the pattern in its history, predict
 * its next move, and play what beats it. Params: period = length of the
 * opponent's cycle (a cycle of three or more uses every move, so no single
 * move wins often); rounds = rounds played. You must win all but 2 x period,
 * and more than half. */
#include <spade/dsl.h>
ENV("rps", "Beat a patterned opponent at rock, paper, scissors.", .family = "strategy", .max_steps = 30)
PARAM(int, period, 3, 1, 6)
PARAM(int, rounds, 12, 6, 30)
STATE { int cycle[6], round, wins, need; };
static const char *MOVE[3] = {"rock", "paper", "scissors"}; /* MOVE[(m + 1) % 3] beats MOVE[m] */
RESET {
    int used;
    do { /* no shorter period hidden in a cycle of two, and every move in a longer one */
        used = 0;
        for (int i = 0; i < period; i++) { S->cycle[i] = rand_range(0, 2); used |= 1 << S->cycle[i]; }
    } while ((period == 2 && used != 3 && used != 5 && used != 6) || (period >= 3 && used != 7));
    S->need = rounds - 2 * period > rounds / 2 ? rounds - 2 * period : rounds / 2 + 1;
    say("We play %d rounds of rock, paper, scissors: rock beats scissors, scissors beats paper, paper beats rock.\n"
        "Say your move each round. You need %d wins; a draw is not a win.\n", rounds, S->need);
}
STEP {
    char w[16]; int me = -1, it = S->cycle[S->round % period];
    parse_word(action, w, sizeof w);
    for (int m = 0; m < 3; m++) if (str_ieq(w, MOVE[m])) me = m;
    S->round++;
    if (me < 0) say("Round %d: you did not play; I played %s.", S->round, MOVE[it]);
    else say("Round %d: you played %s, I played %s: %s.", S->round, MOVE[me], MOVE[it], me == (it + 1) % 3 ? "you win" : me == it ? "a draw" : "I win");
    S->wins += me == (it + 1) % 3;
    say(" Wins: %d of %d needed.\nMy moves so far:", S->wins, S->need);
    for (int r = 0; r < S->round; r++) say(" %s", MOVE[S->cycle[r % period]]);
    say("\n");
    if (S->wins == S->need) { say("You have enough wins!\n"); win(); }
    else if (S->wins + rounds - S->round < S->need) { say("You can no longer get enough wins.\n"); lose(); }
}
HINT { say("Keep a list of the opponent's moves. Look for the shortest block that repeats from the start of the list; once you are sure of it, predict the move it gives next and play the move that beats that one."); }
SOLVE { act("%s", MOVE[(S->cycle[S->round % period] + 1) % 3]); }
