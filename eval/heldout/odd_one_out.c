/* odd_one_out.c — spot the number that breaks the rule the others follow, round after round.
 * Teaches: inducing a hidden rule from examples (a common divisor, a common last digit, a
 * fixed remainder, a digit sum) and testing every item against it. Params: rounds = how
 * many lists in a row; size = numbers per list; top = how large the numbers get. Held out. */
#include <spade/dsl.h>
ENV("odd_one_out", "Find the number that does not follow the others' rule.", .family = "pattern", .max_steps = 8)
PARAM(int, rounds, 2, 1, 8)
PARAM(int, size, 5, 4, 10)
PARAM(int, top, 100, 100, 1000)
STATE { long odd; int done; };
static int digit_sum(long x) { int s = 0; for (; x; x /= 10) s += x % 10; return s; }
static int fits(int rule, int k, long x) { /* rule 0: multiple of k; 1: last digit k; 2: odd-even parity k; 3: digit sum parity k */
    return rule == 0 ? x % k == 0 : rule == 1 ? x % 10 == k : rule == 2 ? x % 2 == k : digit_sum(x) % 2 == k;
}
static int unique(const long *x, int where) { /* no other rule singles out a different number */
    for (int r = 0; r < 4; r++)
        for (int k = 0; k <= 9; k++) {
            int miss = 0, at = -1;
            if ((r == 0 && k < 3) || (r >= 2 && k > 1)) continue;
            for (int i = 0; i < size; i++) if (!fits(r, k, x[i])) { miss++; at = i; }
            if (miss == 1 && at != where) return 0;
        }
    return 1;
}
static void make(void) {
    int rule = rand_range(0, 3), k = rule == 0 ? rand_range(3, 9) : rule == 1 ? rand_range(0, 9) : rand_range(0, 1), where = rand_range(0, size - 1);
    long seen[10]; int n = 0;
    while (n < size) { /* distinct numbers: size - 1 that fit and one, at `where`, that does not */
        long x = rand_range(10, top);
        int ok = 1; for (int i = 0; i < n; i++) ok &= seen[i] != x;
        if (ok && (n == where ? !fits(rule, k, x) : fits(rule, k, x))) seen[n++] = x;
        if (n == size && !unique(seen, where)) n = 0;
    }
    S->odd = seen[where];
    say("Round %d:", S->done + 1);
    for (int i = 0; i < size; i++) say(" %ld", seen[i]);
    say(".\nWhich number does not follow the rule the others share? Answer with that number.\n");
}
RESET { say("Each round lists numbers that share a rule, except one.\n"); make(); }
STEP {
    if (parse_int(action) != S->odd) { say("No: it was %ld.\n", S->odd); lose(); return; }
    if (++S->done == rounds) { say("Correct.\n"); win(); return; }
    say("Correct.\n");
    make();
}
HINT { say("Test simple properties one at a time against all the numbers: divisibility by 3 to 9, the last digit, even or odd, the parity of the digit sum. The property that holds for all but one singles out the answer."); }
SOLVE { act("%ld", S->odd); }
