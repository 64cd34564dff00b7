/* ranking.c — put people in order of height from clues that compare two of them.
 * Teaches: chaining comparisons (transitivity) into a total order, and ignoring
 * clues that repeat what the chain already says. Params: people = how many;
 * extra = clues beyond the neighbouring pairs that fix the order. */
#include <spade/dsl.h>
ENV("ranking", "Order people by height from pairwise clues.", .family = "deduction", .max_steps = 1)
PARAM(int, people, 4, 3, 8)
PARAM(int, extra, 2, 0, 10)
STATE { int order[8]; }; /* order[0] is the tallest */
static const char *NAME[8] = {"Ann", "Bob", "Cyd", "Dee", "Eve", "Fay", "Gus", "Hal"};
RESET {
    int hi[18], lo[18], n = 0, pick[18];
    for (int i = 0; i < people; i++) S->order[i] = i;
    shuffle(S->order, people, sizeof S->order[0]);
    for (int k = 0; k + 1 < people; k++, n++) { hi[n] = S->order[k]; lo[n] = S->order[k + 1]; } /* these fix the order */
    for (int k = 0; k < extra; k++, n++) { /* true but implied: someone at least two places taller */
        int a = rand_range(0, people - 3), b = rand_range(a + 2, people - 1);
        hi[n] = S->order[a]; lo[n] = S->order[b];
    }
    for (int k = 0; k < n; k++) pick[k] = k;
    shuffle(pick, n, sizeof pick[0]);
    say("No two of these people are the same height.\n");
    for (int k = 0; k < n; k++)
        if (chance(0.5)) say("- %s is taller than %s.\n", NAME[hi[pick[k]]], NAME[lo[pick[k]]]);
        else say("- %s is shorter than %s.\n", NAME[lo[pick[k]]], NAME[hi[pick[k]]]);
    say("Answer with their initials in one word from the tallest to the shortest (XYZ would mean X, then Y, then Z).\n");
}
STEP {
    char w[16]; int ok = parse_word(action, w, sizeof w) == people;
    for (int i = 0; ok && i < people; i++) ok = toupper((unsigned char)w[i]) == NAME[S->order[i]][0];
    if (ok) { say("Correct.\n"); win(); }
    else { say("Wrong: from the tallest, "); for (int i = 0; i < people; i++) say("%c", NAME[S->order[i]][0]); say(".\n"); lose(); }
}
HINT { say("Rewrite every clue the same way round, as taller over shorter. The tallest person is never the shorter one in any clue; put them first, cross out their clues, and find the next tallest the same way."); }
SOLVE { for (int i = 0; i < people; i++) act("%c", NAME[S->order[i]][0]); }
