/* classify.c — induce a hidden yes/no rule from labelled numbers, then label new ones.
 * Teaches: hypothesis testing (propose a rule, check it against every example,
 * drop it at the first contradiction) and applying it. Params: level = how many
 * kinds of rule (a threshold, even, a multiple of three, a small last digit, an
 * odd digit sum); examples = labelled numbers shown at least; ask = numbers to
 * label. More examples are shown until every rule that fits them all agrees on
 * every number asked, so the answers are unique. */
#include <spade/dsl.h>
ENV("classify", "Learn a hidden rule from labelled numbers, then label new ones.", .family = "pattern", .max_steps = 10)
PARAM(int, level, 3, 1, 5)
PARAM(int, examples, 8, 4, 20)
PARAM(int, ask, 5, 1, 10)
STATE { int kind, t, ex[100], n_ex, q[10], done; };
static int rule(int kind, int t, int x) {
    return kind == 0 ? x > t : kind == 1 ? x % 2 == 0 : kind == 2 ? x % 3 == 0 : kind == 3 ? x % 10 < 5 : (x / 10 + x % 10) % 2;
}
static int ambiguous(void) { /* a rule of any kind fits every example but disagrees on a number to ask */
    for (int kind = 0; kind < 5; kind++)
        for (int t = 0; t < (kind ? 1 : 100); t++) {
            int fits = 1, agree = 1;
            for (int i = 0; i < S->n_ex && fits; i++) fits = rule(kind, t, S->ex[i]) == rule(S->kind, S->t, S->ex[i]);
            for (int i = 0; i < ask && agree; i++) agree = rule(kind, t, S->q[i]) == rule(S->kind, S->t, S->q[i]);
            if (fits && !agree) return 1;
        }
    return 0;
}
static void show(void) {
    for (int yes = 1; yes >= 0; yes--) {
        say(yes ? "yes:" : "\nno: ");
        for (int i = 0; i < S->n_ex; i++) if (rule(S->kind, S->t, S->ex[i]) == yes) say(" %d", S->ex[i]);
    }
    say("\nIs %d a yes or a no? (%d to label)\n", S->q[S->done], ask - S->done);
}
RESET {
    int pool[99], used[100] = {0};
    S->kind = rand_range(0, level - 1); S->t = rand_range(20, 79);
    for (int i = 0; i < ask; i++) { /* distinct, and not right at a threshold, where no example could decide */
        do S->q[i] = rand_range(1, 99); while (used[S->q[i]] || (!S->kind && abs(S->q[i] - S->t) < 3));
        used[S->q[i]] = 1;
    }
    for (int i = 0; i < 99; i++) pool[i] = i + 1;
    shuffle(pool, 99, sizeof pool[0]);
    for (int i = 0; i < 99 && (S->n_ex < examples || ambiguous()); i++) if (!used[pool[i]]) S->ex[S->n_ex++] = pool[i];
    say("A hidden rule says yes or no to every number from 1 to 99. These numbers are labelled:\n");
    show();
}
STEP {
    char w[8]; int x = S->q[S->done], yes = rule(S->kind, S->t, x);
    parse_word(action, w, sizeof w);
    if (!str_ieq(w, yes ? "yes" : "no")) { say("Wrong: %d is a %s.\n", x, yes ? "yes" : "no"); lose(); return; }
    S->ex[S->n_ex++] = x;
    if (++S->done == ask) { say("Correct. All labelled!\n"); win(); } else { say("Correct.\n"); show(); }
}
HINT { say("Propose a simple rule (bigger than some value, even, divisible by three, a last digit below five, an odd sum of digits) and test it on every labelled number; drop it at the first contradiction. Apply the rule that survives."); }
SOLVE { act("%s", rule(S->kind, S->t, S->q[S->done]) ? "yes" : "no"); }
