/* odd_one.c — spot the one number that breaks the rule all the others share, puzzle after puzzle.
 * Teaches: finding a shared property (a common divisor, a last digit, perfect
 * squares, palindromes) by testing a guess against every item. Params: level =
 * how many kinds of rule may appear; items = numbers per puzzle; rounds =
 * puzzles to get right in a row. */
#include <spade/dsl.h>
ENV("odd_one", "Find the odd one out in a list of numbers, several times in a row.", .family = "pattern", .max_steps = 5)
PARAM(int, level, 2, 1, 4)
PARAM(int, items, 5, 4, 10)
PARAM(int, rounds, 3, 1, 5)
STATE { int x[10], odd, round; };
static int draw(int kind, int k, int fits) { /* a number that has the property, or one that has not */
    int a = rand_range(1, 9), b = rand_range(0, 9), s = rand_range(4, 31);
    if (kind == 0) return k * rand_range(2, 30) + (fits ? 0 : rand_range(1, k - 1)); /* multiples of k */
    if (kind == 1) return 10 * rand_range(1, 49) + (fits ? k : (k + rand_range(1, 9)) % 10); /* last digit k */
    if (kind == 2) return s * s + (fits ? 0 : rand_range(1, 2 * s)); /* squares; s*s + 2s is below (s+1)^2 */
    return 100 * a + 10 * b + (fits ? a : (a + rand_range(1, 9)) % 10); /* three-digit palindromes */
}
static int has(int kind, int k, int x) { int s = (int)sqrt(x + 0.5); return kind == 0 ? x % k == 0 : kind == 1 ? x % 10 == k : kind == 2 ? s * s == x : x > 99 && x < 1000 && x / 100 == x % 10; }
static int ambiguous(void) { /* a rule of any kind that all but one other number share */
    for (int kind = 0; kind < 4; kind++)
        for (int k = kind ? 0 : 2; k < 10; k++) {
            int out = 0, at = -1;
            for (int i = 0; i < items; i++) if (!has(kind, k, S->x[i])) { out++; at = i; }
            if (out == 1 && at != S->odd) return 1;
        }
    return 0;
}
static void puzzle(void) {
    do {
        int kind = rand_range(0, level - 1), k = kind ? rand_range(0, 9) : rand_range(3, 9);
        S->odd = rand_range(0, items - 1);
        for (int i = 0; i < items; i++) {
            int dup;
            do { S->x[i] = draw(kind, k, i != S->odd); dup = 0; for (int j = 0; j < i; j++) dup |= S->x[j] == S->x[i]; } while (dup);
        }
    } while (ambiguous());
    say("Puzzle %d of %d:", S->round + 1, rounds);
    for (int i = 0; i < items; i++) say(" %d", S->x[i]);
    say("\n");
}
RESET {
    say("In each puzzle every number but one shares a property. Answer with the position (1 to %d, counting\n"
        "from the left) of the number that does not.\n", items);
    puzzle();
}
STEP {
    if (parse_int(action) != S->odd + 1) { say("Wrong: it was number %d, %d.\n", S->odd + 1, S->x[S->odd]); lose(); }
    else if (++S->round == rounds) { say("Correct. All puzzles solved!\n"); win(); }
    else { say("Correct.\n"); puzzle(); }
}
HINT { say("Test one rule at a time against every number: a common divisor, the same last digit, perfect squares, numbers that read the same backwards. When a rule fits all but one, answer the position of that one, counting from the left."); }
SOLVE { act("%d", S->odd + 1); }
