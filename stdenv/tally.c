/* tally.c — keep running counts as goods come and go, and say a count whenever asked.
 * Teaches: updating a mental state from a stream of events: each observation
 * reports only the latest change, never the totals. Params: kinds = how many
 * kinds of goods; rounds = events (each followed by a question); most = the
 * largest number that arrives or leaves at once. */
#include <spade/dsl.h>
ENV("tally", "Keep running counts of goods as they arrive and leave.", .family = "memory", .max_steps = 16)
PARAM(int, kinds, 3, 1, 6)
PARAM(int, rounds, 5, 2, 16)
PARAM(int, most, 5, 2, 20)
STATE { int count[6], asked, done; };
static const char *GOOD[6] = {"apples", "boxes", "coats", "drums", "eggs", "forks"};
static void event(void) {
    int g = rand_range(0, kinds - 1), n = rand_range(1, most);
    if (S->count[g] >= n && chance(0.4)) { S->count[g] -= n; say("%d %s leave.", n, GOOD[g]); }
    else { S->count[g] += n; say("%d %s arrive.", n, GOOD[g]); }
    S->asked = rand_range(0, kinds - 1);
    say(" How many %s are in the store now?\n", GOOD[S->asked]);
}
RESET {
    say("A store starts empty. Each turn some goods arrive or leave, and you are asked how many of one kind\n"
        "are in the store. Only the change is reported, so keep your own counts. Answer with the number.\n"
        "The goods are:");
    for (int g = 0; g < kinds; g++) say(" %s", GOOD[g]);
    say(".\n");
    event();
}
STEP {
    int want = S->count[S->asked];
    if (parse_int(action) != want) { say("Wrong: there are %d %s.\n", want, GOOD[S->asked]); lose(); }
    else if (++S->done == rounds) { say("Correct. The store is closed!\n"); win(); }
    else { say("Correct. "); event(); }
}
HINT { say("Keep one written line per kind of goods with its running total. After each report add the arrivals or subtract the departures on that line only, then read off the kind you are asked about."); }
SOLVE { act("%d", S->count[S->asked]); }
