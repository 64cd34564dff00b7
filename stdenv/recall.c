/* recall.c — remember a table shown once, then answer questions about it from memory.
 * Teaches: holding facts across turns: the table is only in the first
 * observation, so later answers must come from what the agent kept. Params:
 * pairs = entries in the table; ask = questions; digits = digits per number. */
#include <spade/dsl.h>
ENV("recall", "Memorise a table shown once and answer questions about it later.", .family = "memory", .max_steps = 10)
PARAM(int, pairs, 4, 2, 12)
PARAM(int, ask, 3, 1, 10)
PARAM(int, digits, 2, 1, 5)
STATE { int value[12], q[10], done; };
static const char *NAME[12] = {"apple", "brick", "cloud", "drum", "eagle", "fern", "glove", "harp", "igloo", "jelly", "kite", "lemon"};
static void question(void) { say("Question %d of %d: what number was %s?\n", S->done + 1, ask, NAME[S->q[S->done]]); }
RESET {
    int lo = 1, order[12];
    for (int k = 1; k < digits; k++) lo *= 10;
    for (int i = 0; i < pairs; i++) { S->value[i] = rand_range(lo, 10 * lo - 1); order[i] = i; }
    shuffle(order, pairs, sizeof order[0]);
    for (int k = 0; k < ask; k++) S->q[k] = k < pairs ? order[k] : rand_range(0, pairs - 1); /* distinct while they last */
    say("Remember this table; it will not be shown again.\n");
    for (int i = 0; i < pairs; i++) say("  %s = %d\n", NAME[i], S->value[i]);
    say("Answer each question with the number.\n");
    question();
}
STEP {
    int want = S->value[S->q[S->done]];
    if (parse_int(action) != want) { say("Wrong: %s was %d.\n", NAME[S->q[S->done]], want); lose(); }
    else if (++S->done == ask) { say("Correct. All recalled!\n"); win(); }
    else { say("Correct.\n"); question(); }
}
HINT { say("Copy the table into your notes the moment you see it, word by word with its number, and look up each question there instead of guessing from a vague memory."); }
SOLVE { act("%d", S->value[S->q[S->done]]); }
