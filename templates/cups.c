/* cups.c — a designer template ([designer] source = template, docs/selfplay.md),
 * not an environment until the designer fills its two holes: the texts whose
 * last whole numbers set how many cups (1 to 60) and how many tries. */
#include <spade/dsl.h>
ENV("cups", "Find the ball under one of a row of cups.", .family = "logic", .max_steps = 64)
static const char CUPS[] = "cups = @@\
";
static const char TRIES[] = "tries = @@\
";
STATE { int n, tries, left, ball; };
RESET {
    long c = parse_int(CUPS), t = parse_int(TRIES); /* no number of cups: no game */
    S->n = c < 1 ? 0 : c > 60 ? 60 : (int)c;
    S->tries = S->left = t < 1 ? 1 : t > 60 ? 60 : (int)t;
    S->ball = S->n ? rand_range(1, S->n) : 0;
    if (!S->n) say("There are no cups.\n");
    else say("A ball is under one of %d cups, 1 to %d. Name a cup. You have %d tries.\n", S->n, S->n, S->left);
}
STEP {
    long g = parse_int(action);
    S->left--;
    if (S->n && g == S->ball) { say("Yes, cup %ld!\n", g); win(); return; }
    if (!S->n || S->left <= 0) { say("No. It was cup %d.\n", S->ball); lose(); return; }
    say("Not there. %d tries left.\n", S->left);
}
HINT { say("The ball is under an %s-numbered cup.", S->ball % 2 ? "odd" : "even"); }
SOLVE { act("%d", 2 - S->ball % 2 + 2 * (S->tries - S->left)); } /* the hint's cups in order */
