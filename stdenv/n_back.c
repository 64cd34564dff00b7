/* n_back.c — a stream of letters, one per turn: is each the same as the one shown N turns before?
 * Teaches: keeping a rolling window of recent observations in mind, since every
 * observation shows only the newest letter. Params: back = how far back to
 * compare; rounds = questions to answer; letters = size of the alphabet (few
 * letters make near misses more common). About a third of the letters match. */
#include <spade/dsl.h>
ENV("n_back", "Say whether each letter matches the one shown N turns earlier.", .family = "memory", .max_steps = 20)
PARAM(int, back, 2, 1, 4)
PARAM(int, rounds, 6, 2, 16)
PARAM(int, letters, 4, 2, 8)
STATE { char seq[20]; int now; }; /* seq[0..now] shown so far */
static void show(void) { say("Letter %d: %c. Is it the same as the letter %d before it? (yes or no)\n", S->now + 1, S->seq[S->now], back); }
RESET {
    for (int i = 0; i < back + rounds; i++) {
        S->seq[i] = 'A' + rand_range(0, letters - 1);
        if (i >= back && chance(0.33)) S->seq[i] = S->seq[i - back];
    }
    say("Letters will be shown one at a time; only the newest is shown. For each letter, say whether it is the\n"
        "same as the letter %d before it. The first letters are:", back);
    for (int i = 0; i < back; i++) say(" %c", S->seq[i]);
    say(".\n");
    S->now = back; show();
}
STEP {
    char w[8]; int same = S->seq[S->now] == S->seq[S->now - back];
    parse_word(action, w, sizeof w);
    if (!str_ieq(w, same ? "yes" : "no")) { say("Wrong: letter %d before it was %c.\n", back, S->seq[S->now - back]); lose(); }
    else if (++S->now == back + rounds) { say("Correct. The stream is over!\n"); win(); }
    else { say("Correct.\n"); show(); }
}
HINT { say("Keep a written list of the letters in the order they came, adding each new one at the end. To answer, count back along your list from the newest letter and compare."); }
SOLVE { act("%s", S->seq[S->now] == S->seq[S->now - back] ? "yes" : "no"); }
