/* linear.c — solve a system of linear equations with integer coefficients.
 * Teaches: elimination and substitution, keeping signs straight, checking a
 * solution by plugging it back in. Params: vars = unknowns (1-3, one equation
 * each); coef = largest coefficient; range = largest |value| of an unknown.
 * The coefficient matrix is redrawn until its determinant is nonzero, so the
 * integer solution is unique. */
#include <spade/dsl.h>
ENV("linear", "Solve a system of linear equations.", .family = "math", .max_steps = 1)
PARAM(int, vars, 2, 1, 3)
PARAM(int, coef, 9, 1, 30)
PARAM(int, range, 10, 1, 100)
STATE { long a[3][3], x[3]; };
static long det(void) {
    long (*a)[3] = S->a;
    if (vars == 1) return a[0][0];
    if (vars == 2) return a[0][0] * a[1][1] - a[0][1] * a[1][0];
    return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
           a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
}
RESET {
    static const char NAME[3] = {'x', 'y', 'z'};
    for (int j = 0; j < vars; j++) S->x[j] = rand_range(-range, range);
    do for (int i = 0; i < vars; i++) for (int j = 0; j < vars; j++) S->a[i][j] = rand_range(-coef, coef); while (det() == 0);
    say("Solve for %s:\n", vars == 1 ? "x" : vars == 2 ? "x and y" : "x, y and z");
    for (int i = 0; i < vars; i++) {
        long rhs = 0; int first = 1;
        for (int j = 0; j < vars; j++) {
            long c = S->a[i][j]; rhs += c * S->x[j];
            if (c == 0) continue;
            say(first ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + "));
            if (labs(c) != 1) say("%ld", labs(c));
            say("%c", NAME[j]); first = 0;
        }
        say(" = %ld\n", rhs);
    }
    say("Answer with the values in the order x, y, z, e.g. \\boxed{3, -1}.\n");
}
STEP {
    long got[64]; int n = parse_ints(action, got, 64), ok = n >= vars; /* the last `vars` numbers are the answer */
    for (int j = 0; ok && j < vars; j++) ok = got[n - vars + j] == S->x[j];
    if (ok) { say("Correct.\n"); win(); } else { say("Wrong.\n"); lose(); }
}
HINT { say("Eliminate one unknown at a time: scale two equations so one unknown has opposite coefficients and add them. Solve the last equation, substitute back, and check every original equation before answering."); }
SOLVE {
    for (int j = 0; j < vars; j++) act(j ? ", %ld" : "\\boxed{%ld", S->x[j]);
    act("}");
}
