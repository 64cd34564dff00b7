/* clock_add.c — answer a chain of questions about times on a 24-hour clock.
 * Teaches: arithmetic in a mixed radix (60 minutes, 24 hours) with wrap-around past
 * midnight, question after question. Params: questions = how many in a row; span =
 * largest number of minutes added; back = chance that a question goes back in time. Held out. */
#include <spade/dsl.h>
ENV("clock_add", "Work out clock times after adding or subtracting minutes.", .family = "math", .max_steps = 10)
PARAM(int, questions, 2, 1, 10)
PARAM(int, span, 150, 1, 5000)
PARAM(double, back, 0.0, 0.0, 1.0)
STATE { int now, answer_min, asked; };
static void ask(void) {
    int d = rand_range(1, span), sub = chance(back);
    S->answer_min = ((S->now + (sub ? -d : d)) % 1440 + 1440) % 1440;
    say("Question %d: it is %02d:%02d. What time is it %d minutes %s? Answer as HH:MM.\n", S->asked + 1, S->now / 60, S->now % 60, d,
        sub ? "earlier" : "later");
}
RESET {
    S->now = rand_range(0, 1439);
    say("Answer %d clock question%s on a 24-hour clock (00:00 to 23:59).\n", questions, questions > 1 ? "s" : "");
    ask();
}
STEP {
    long v[8]; int n = parse_ints(answer(action), v, 8);
    int got = n >= 2 && v[n - 2] >= 0 && v[n - 2] < 24 && v[n - 1] >= 0 && v[n - 1] < 60 ? (int)(v[n - 2] * 60 + v[n - 1]) : -1;
    if (got != S->answer_min) { say("Wrong: it is %02d:%02d.\n", S->answer_min / 60, S->answer_min % 60); lose(); return; }
    S->now = S->answer_min;
    if (++S->asked == questions) { say("All correct.\n"); win(); return; }
    say("Correct.\n");
    ask();
}
HINT { say("Split the minutes into whole hours and leftover minutes; add the minutes first and carry an hour when they pass 59, then add the hours and take the result modulo 24. Going back, borrow an hour instead."); }
SOLVE { act("%02d:%02d", S->answer_min / 60, S->answer_min % 60); }
