/* gate_copy_carry.c — test environment for behavioural novelty: stdenv's
 * carry_add renamed carry_mul, its comments and hint reworded and its
 * variables renamed, its mechanics unchanged ("Compute 4821 + 1377"), as a
 * pretrained model wrote it when asked for a multiplying variant. Below the
 * text cosine of a near-duplicate, it plays exactly as carry_add does.
 * Not part of stdenv. */
#include <spade/dsl.h>
ENV("carry_mul", "A new arithmetic drill over big operands with exact results.", .family = "math", .max_steps = 1)
PARAM(int, terms, 2, 2, 9)
PARAM(int, digits, 4, 1, 17)
PARAM(double, minus, 0.0, 0.0, 1.0)
STATE { long total; };
RESET {
    long base = 1;
    int n = 1;
    while (n < digits) { base = base * 10; n++; }
    say("Compute ");
    for (int t = 0; t < terms; t++) {
        long v = rand_range(base, 10 * base - 1);
        int neg = t > 0 && v <= S->total && chance(minus);
        if (neg) S->total = S->total - v; else S->total = S->total + v;
        say(t == 0 ? "%ld" : neg ? " - %ld" : " + %ld", v);
    }
    say(". Answer with the number only.\n");
}
STEP {
    long guess = parse_int(action);
    if (guess != S->total) { say("Wrong: it is %ld.\n", S->total); lose(); return; }
    say("Correct.\n");
    win();
}
HINT { say("Line the operands up by place value; go digit by digit from the ones place, passing overflow left."); }
SOLVE { long r = S->total; act("%ld", r); }
