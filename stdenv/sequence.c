/* sequence.c — find the next term of an integer sequence.
 * Teaches: spotting structure by differences, ratios and recurrences.
 * Params: level = how many rule kinds may appear (1 arithmetic, 2 + geometric,
 * 3 + quadratic, 4 + Fibonacci-like, 5 + two interleaved arithmetic sequences);
 * shown = terms shown; scale = size of the starting values and steps. */
#include <spade/dsl.h>
ENV("sequence", "Give the next term of an integer sequence.", .family = "math", .max_steps = 1)
PARAM(int, level, 3, 1, 5)
PARAM(int, shown, 6, 4, 10)
PARAM(int, scale, 10, 1, 100)
STATE { long t[11]; };
RESET {
    int kind = rand_range(1, level);
    long a = rand_range(1, scale), d = rand_range(1, scale) * (chance(0.3) ? -1 : 1), d2 = rand_range(1, 1 + scale / 5);
    for (int i = 0; i <= shown; i++) {
        if (kind == 1) S->t[i] = a + d * i;
        if (kind == 2) S->t[i] = i ? S->t[i - 1] * (2 + d2 % 3) : a;          /* ratio 2, 3 or 4 */
        if (kind == 3) S->t[i] = a + d * i + d2 * i * i;                      /* constant second difference */
        if (kind == 4) S->t[i] = i < 2 ? a + i * labs(d) : S->t[i - 1] + S->t[i - 2];
        if (kind == 5) S->t[i] = i % 2 ? d + d2 * (i / 2) : a + (d2 + 1) * (i / 2); /* two sequences, turn about */
    }
    say("What comes next? ");
    for (int i = 0; i < shown; i++) say("%ld, ", S->t[i]);
    say("... Answer with the next term.\n");
}
STEP {
    if (parse_int(action) == S->t[shown]) { say("Correct.\n"); win(); }
    else { say("Wrong: it is %ld.\n", S->t[shown]); lose(); }
}
HINT { say("Take differences between neighbours, then differences of those; if they are not constant try ratios, whether each term is the sum of the two before, or whether the odd and even positions form two separate sequences."); }
SOLVE { act("%ld", S->t[shown]); }
