/* bank.c — test environment with tools: deposit, withdraw, balance; the final
 * answer goes to STEP. Exercises tool dispatch, what tools say, the tool list in
 * the first observation, and reward from a tool. Not part of stdenv. */
#include <spade/dsl.h>
ENV("bank", "Deposit into a hidden balance, then report the new balance.", .max_steps = 10, .family = "tools")
PARAM(int, amount_max, 100, 1, 10000)
STATE { long balance, amount; int deposited, looked; };
TOOL(deposit, "Add money to the account; returns the new balance.", long, (int amount)) {
    if (amount <= 0) {
        say("Deposits must be positive.");
        return S->balance;
    }
    S->balance += amount;
    if (amount == S->amount)
        S->deposited = 1;
    return S->balance;
}
TOOL(withdraw, "Take money out; returns the new balance, or -1 when funds are short.", long, (int amount)) {
    if (amount <= 0 || amount > S->balance) {
        say("Insufficient funds.");
        return -1;
    }
    S->balance -= amount;
    return S->balance;
}
TOOL(balance, "The current balance.", long, (void)) {
    if (!S->looked)
        reward(0.25); /* looking is worth something, once */
    S->looked = 1;
    return S->balance;
}
RESET {
    S->balance = rand_range(0, 1000);
    S->amount = rand_range(1, amount_max);
    say("Deposit %ld into the account, then answer with the balance.", S->amount);
}
STEP { finish(S->deposited && parse_int(action) == S->balance); }
HINT { say("Deposit first; the deposit returns the balance you need."); }
SOLVE {
    if (!S->deposited)
        act("deposit(%ld)", S->amount);
    else
        act("<answer>%ld</answer>", S->balance);
}
