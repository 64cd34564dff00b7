/* run_length.c — expand and compress strings in run-length code, round after round.
 * Teaches: a pattern of counted runs read both ways ("a3b1c2" is "aaabcc"),
 * exact bookkeeping of counts, and switching between two directions of one rule.
 * Params: runs = runs per string; most = the longest run; rounds = strings in a row. Held out. */
#include <spade/dsl.h>
ENV("run_length", "Expand and compress strings written in run-length code.", .family = "pattern", .max_steps = 8)
PARAM(int, runs, 3, 2, 8)
PARAM(int, most, 4, 2, 9)
PARAM(int, rounds, 2, 1, 6)
STATE { char want[80]; int done; };
static void make(void) {
    char code[40], plain[80];
    int c = 0, p = 0, prev = -1, expand = rand_range(0, 1);
    for (int r = 0; r < runs; r++) {
        int letter, n = rand_range(1, most);
        do letter = rand_range(0, 5); while (letter == prev); /* neighbours differ, or two runs would merge */
        prev = letter;
        c += snprintf(code + c, sizeof code - c, "%c%d", 'a' + letter, n);
        for (int k = 0; k < n; k++) plain[p++] = (char)('a' + letter);
    }
    plain[p] = 0;
    snprintf(S->want, sizeof S->want, "%s", expand ? plain : code);
    say("Round %d: %s %s\n", S->done + 1, expand ? "expand the code" : "compress the string", expand ? code : plain);
}
RESET {
    say("Run-length code writes each run of one letter as the letter and its length: aaabcc is a3b1c2.\n"
        "Answer with the converted text only.\n");
    make();
}
STEP {
    char got[80];
    snprintf(got, sizeof got, "%s", answer(action));
    int n = 0;
    while (got[n] && !isspace((unsigned char)got[n])) n++;
    got[n] = 0;
    if (strcmp(got, S->want)) { say("Wrong: it is %s.\n", S->want); lose(); return; }
    if (++S->done == rounds) { say("Correct.\n"); win(); return; }
    say("Correct.\n");
    make();
}
HINT { say("To expand, write each letter as many times as the digit after it says. To compress, walk the string, count how long each letter repeats, and write the letter then the count, a count of 1 included."); }
SOLVE { act("%s", S->want); }
