/* simon.c — the game of Simon: repeat a growing sequence of colours from memory.
 * Teaches: recall of an ordered list that grows by one every round, when each
 * observation shows only the newest colour. Params: rounds = the length the
 * sequence reaches; colours = how many colours it draws from. */
#include <spade/dsl.h>
ENV("simon", "Repeat a growing sequence of colours from memory.", .family = "memory", .max_steps = 60)
PARAM(int, rounds, 4, 2, 10)
PARAM(int, colours, 4, 2, 6)
STATE { int seq[10], len, pos; }; /* seq[0..len) is the sequence now; pos: the next colour to repeat */
static const char *COLOUR[6] = {"red", "green", "blue", "yellow", "white", "black"};
static void grow(void) {
    S->seq[S->len++] = rand_range(0, colours - 1); S->pos = 0;
    say("Round %d: the new colour is %s. Now say the sequence from its first colour, one per turn.\n", S->len, COLOUR[S->seq[S->len - 1]]);
}
RESET {
    say("Simon adds one colour to a sequence every round and shows you only that new colour. Each round, say\n"
        "the whole sequence back from the start, one colour per turn. The colours are:");
    for (int c = 0; c < colours; c++) say(" %s", COLOUR[c]);
    say(".\n");
    grow();
}
STEP {
    char w[16]; int want = S->seq[S->pos];
    parse_word(action, w, sizeof w);
    if (!str_ieq(w, COLOUR[want])) { say("Wrong: colour %d was %s.\n", S->pos + 1, COLOUR[want]); lose(); }
    else if (++S->pos < S->len) say("Yes. Next colour?\n");
    else if (S->len == rounds) { say("Yes. You repeated all %d!\n", rounds); win(); }
    else { say("Yes, all of it. "); grow(); }
}
HINT { say("Keep a written list and add each new colour at its end as soon as it is shown. Then read the list from the top, one entry per turn, keeping your place."); }
SOLVE { act("%s", COLOUR[S->seq[S->pos]]); }
