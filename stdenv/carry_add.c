/* carry_add.c — add (and subtract) long numbers exactly, carries and borrows included.
 * Teaches: column arithmetic that cannot be guessed: every digit of the answer counts.
 * Params: terms = how many numbers; digits = digits per number; minus = chance
 * that a term after the first is subtracted (the running total never goes below 0). */
#include <spade/dsl.h>
ENV("carry_add", "Add and subtract several long numbers exactly.", .family = "math", .max_steps = 1)
PARAM(int, terms, 2, 2, 9)
PARAM(int, digits, 4, 1, 17)
PARAM(double, minus, 0.0, 0.0, 1.0)
STATE { long sum; };
RESET {
    long lo = 1;
    for (int k = 1; k < digits; k++) lo *= 10;
    say("Compute ");
    for (int k = 0; k < terms; k++) {
        long x = rand_range(lo, 10 * lo - 1);
        int sub = k > 0 && x <= S->sum && chance(minus);
        S->sum += sub ? -x : x;
        say(k == 0 ? "%ld" : sub ? " - %ld" : " + %ld", x);
    }
    say(". Answer with the number only.\n");
}
STEP {
    if (parse_int(action) == S->sum) { say("Correct.\n"); win(); }
    else { say("Wrong: it is %ld.\n", S->sum); lose(); }
}
HINT { say("Write the numbers right-aligned in columns and work from the rightmost column leftward, carrying a ten into the next column when a sum passes 9 and borrowing one when a difference goes negative. Check by estimating with the leading digits."); }
SOLVE { act("%ld", S->sum); }
