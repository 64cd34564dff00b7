/* rpn_eval.c — evaluate programs for a small stack machine written in reverse Polish notation.
 * Teaches: simulating a stack step by step (operands are pushed, an operator pops two
 * and pushes the result), where reading left to right as ordinary arithmetic fails.
 * Params: ops = operators per program; top = largest operand; programs = how many in a row. Held out. */
#include <spade/dsl.h>
ENV("rpn_eval", "Evaluate reverse Polish (stack machine) programs.", .family = "math", .max_steps = 5)
PARAM(int, ops, 3, 1, 8)
PARAM(int, top, 9, 2, 20)
PARAM(int, programs, 1, 1, 5)
STATE { long value; int done; };
static void make(void) {
    long stack[16]; int depth = 0, pushed = 0;
    say("Program %d:", S->done + 1);
    while (pushed < ops + 1 || depth > 1) { /* push while operands remain and the stack is shallow; else apply */
        if (pushed < ops + 1 && (depth < 2 || chance(0.4))) { stack[depth++] = rand_range(1, top); pushed++; say(" %ld", stack[depth - 1]); continue; }
        int op = rand_range(0, 2); long b = stack[--depth], a = stack[--depth];
        stack[depth++] = op == 0 ? a + b : op == 1 ? a - b : a * b;
        say(" %c", "+-*"[op]);
    }
    S->value = stack[0];
    say("\nWhat value is left on the stack? Answer with the number.\n");
}
RESET {
    say("A stack machine reads a program left to right: a number is pushed; an operator (+, -, *) pops b, then a, and pushes a op b.\n");
    make();
}
STEP {
    if (parse_int(action) != S->value) { say("Wrong: the result is %ld.\n", S->value); lose(); return; }
    if (++S->done == programs) { say("Correct.\n"); win(); return; }
    say("Correct.\n");
    make();
}
HINT { say("Keep the stack written out as a list and update it token by token: append each number; for an operator remove the last two, combine them in their original order (the lower one first) and append the result. Subtraction is not symmetric."); }
SOLVE { act("%ld", S->value); }
