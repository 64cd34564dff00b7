/* cups.c — a designer template: find the ball under one of a row of cups.
 * Not an environment until filled: [designer] source = template has the
 * policy complete the two PARAM lines that end in a hole (cups = how many
 * cups, tries = how many guesses), e.g. "6, 2, 30)" and "4, 1, 30)". The
 * filling sets the difficulty: more cups or fewer tries is harder; too few
 * tries to search even the cups the hint leaves fails the solve gate, a
 * broken line fails compile. Teaches: not guessing a cup twice, and using the
 * hint to halve the search. */
#include <spade/dsl.h>
ENV("cups", "Find the ball under one of a row of cups.", .family = "logic", .max_steps = 64)
PARAM(int, cups, @@
PARAM(int, tries, @@
STATE { int n, tries, left, ball; };
RESET {
    S->n = cups < 1 ? 1 : cups > 60 ? 60 : cups;
    S->tries = S->left = tries < 1 ? 1 : tries > 60 ? 60 : tries;
    S->ball = rand_range(1, S->n);
    say("A ball is under one of %d cups, numbered 1 to %d. Name a cup. You have %d tries.\n", S->n, S->n, S->left);
}
STEP {
    long g = parse_int(action);
    S->left--;
    if (g == S->ball) { say("Yes, it is under cup %ld!\n", g); win(); return; }
    if (S->left <= 0) { say("No. It was under cup %d.\n", S->ball); lose(); return; }
    if (g < 1 || g > S->n) say("Name a cup from 1 to %d. %d tries left.\n", S->n, S->left);
    else say("Not under cup %ld. %d tries left.\n", g, S->left);
}
HINT { say("The ball is under an %s-numbered cup.", S->ball % 2 ? "odd" : "even"); }
SOLVE { act("%d", 2 - S->ball % 2 + 2 * (S->tries - S->left)); } /* the cups of the hint's parity, in order */
