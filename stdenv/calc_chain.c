/* calc_chain.c — evaluate a chain of big-number operations with calculator tools.
 * Teaches: delegating exact arithmetic to tools, threading each result into the
 * next call, then answering in plain text. Params: ops = operations in the chain;
 * digits = digits of each operand (products stay below 10^10). */
#include <spade/dsl.h>
ENV("calc_chain", "Use calculator tools to evaluate a chain of operations.", .family = "tools", .max_steps = 40)
PARAM(int, ops, 4, 1, 12)
PARAM(int, digits, 4, 1, 6)
STATE { long arg[12], cur, result; int op[12], done; }; /* cur = the value after the first `done` operations */
#define BIG 1000000000000L /* larger arguments could overflow a long */
static const char *VERB[3] = {"add", "subtract", "multiply by"}, *TOOLS[3] = {"add", "sub", "mul"};
static long apply(int op, long a, long b) { return op == 0 ? a + b : op == 1 ? a - b : a * b; }
static long track(int op, long a, long b) { /* a call that performs the next operation advances the chain */
    if (a > BIG || a < -BIG || b > BIG || b < -BIG) { say("Error: the calculator takes numbers up to 10^12.\n"); return 0; }
    if (S->done < ops && op == S->op[S->done] && a == S->cur && b == S->arg[S->done]) { S->cur = apply(op, a, b); S->done++; }
    return apply(op, a, b);
}
TOOL(add, "Return a + b.", long, (long a, long b)) { return track(0, a, b); }
TOOL(sub, "Return a - b.", long, (long a, long b)) { return track(1, a, b); }
TOOL(mul, "Return a * b.", long, (long a, long b)) { return track(2, a, b); }
RESET {
    long lo = 1;
    for (int k = 1; k < digits; k++) lo *= 10;
    S->cur = S->result = rand_range(lo, 10 * lo - 1);
    say("Start with %ld, then in order:\n", S->cur);
    for (int k = 0; k < ops; k++) {
        S->arg[k] = rand_range(lo, 10 * lo - 1);
        S->op[k] = labs(S->result) < 1000000000L / lo ? rand_range(0, 2) : rand_range(0, 1); /* keep products small */
        S->result = apply(S->op[k], S->result, S->arg[k]);
        say("%d. %s %ld\n", k + 1, VERB[S->op[k]], S->arg[k]);
    }
    say("Tools: add(a, b), sub(a, b), mul(a, b). When you have the result, answer with the number alone.\n");
}
STEP {
    if (parse_int(action) == S->result) { say("Correct.\n"); win(); } else { say("Wrong: the result was %ld.\n", S->result); lose(); }
}
HINT { say("Make one tool call per step, in the listed order, passing the previous call's result as the first argument; do not compute in your head. Answer only after the last call."); }
SOLVE {
    if (S->done < ops) act("%s(%ld, %ld)", TOOLS[S->op[S->done]], S->cur, S->arg[S->done]);
    else act("%ld", S->cur);
}
