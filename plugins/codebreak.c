/* codebreak.c — an example plugin: Mastermind. Crack a hidden code from feedback.
 * Each guess is scored with how many digits are right and in the right place,
 * and how many more are right but misplaced. Shows per-episode history kept in
 * S, a helper shared by STEP and SOLVE, and a SOLVE that reasons only from what
 * the agent was told (the first code consistent with every answer so far).
 * Params: length = digits in the code; colors = digits 1..colors; tries = guesses allowed. */
#include <spade/dsl.h>
ENV("codebreak", "Crack a hidden code from right-place / wrong-place feedback.", .family = "logic", .max_steps = 20)
PARAM(int, length, 4, 2, 5)
PARAM(int, colors, 6, 2, 6)
PARAM(int, tries, 10, 10, 20)
STATE { int code[5], guess[20][5], exact[20], near[20], n; };
static void score(const int *a, const int *b, int *exact, int *near) { /* Mastermind's black and white pegs */
    int ca[7] = {0}, cb[7] = {0};
    *exact = *near = 0;
    for (int k = 0; k < length; k++) if (a[k] == b[k]) ++*exact; else { ca[a[k]]++; cb[b[k]]++; }
    for (int c = 1; c <= colors; c++) *near += ca[c] < cb[c] ? ca[c] : cb[c];
}
RESET {
    for (int k = 0; k < length; k++) S->code[k] = rand_range(1, colors);
    say("I hid a code of %d digits, each from 1 to %d (digits may repeat). Guess it by writing %d digits, e.g. %.*s.\n"
        "I answer how many are right and in place, and how many more are right but misplaced. You have %d guesses.\n",
        length, colors, length, length, "12345", tries);
}
STEP {
    const char *a = answer(action); int g[5], n = 0, exact, near;
    for (const char *p = a + strlen(a); p > a && n < length; p--) /* the last `length` digits, read backwards */
        if (p[-1] >= '1' && p[-1] <= '0' + colors) g[length - 1 - n++] = p[-1] - '0';
    if (n < length) { say("Write %d digits from 1 to %d.\n", length, colors); return; }
    score(g, S->code, &exact, &near);
    memcpy(S->guess[S->n], g, sizeof g); S->exact[S->n] = exact; S->near[S->n++] = near;
    if (exact == length) { say("Cracked!\n"); win(); }
    else if (S->n == tries) { say("Out of guesses.\n"); lose(); }
    else say("%d in place, %d misplaced. %d guesses left.\n", exact, near, tries - S->n);
}
HINT { say("Only guess codes that agree with every answer so far: before each guess, check it against each earlier guess as if it were the secret and make sure it would have produced the same answers."); }
SOLVE { /* count through every code in order; the first one consistent with all feedback is the guess */
    int c[5], e, m, total = 1;
    for (int k = 0; k < length; k++) total *= colors;
    for (int i = 0; i < total; i++) {
        int ok = 1, x = i;
        for (int k = length - 1; k >= 0; k--, x /= colors) c[k] = x % colors + 1;
        for (int j = 0; ok && j < S->n; j++) { score(c, S->guess[j], &e, &m); ok = e == S->exact[j] && m == S->near[j]; }
        if (ok) { for (int k = 0; k < length; k++) act("%d", c[k]); return; }
    }
}
