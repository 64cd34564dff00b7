/* bank.c — carry out banking instructions revealed one at a time.
 * Teaches: following a sequence of instructions with the right tool and arguments,
 * looking a value up before acting on it ("half of ..."), and leaving distractor
 * tools alone. Params: tasks = instructions; accounts = how many; lookups = chance
 * that an instruction needs a balance first. */
#include <spade/dsl.h>
ENV("bank", "Carry out banking instructions that arrive one after another.", .family = "tools", .max_steps = 60)
PARAM(int, tasks, 4, 1, 10)
PARAM(int, accounts, 3, 2, 6)
PARAM(double, lookups, 0.3, 0.0, 1.0)
STATE { long bal[6], want[11][6]; int kind[10], from[10], to[10], amount[10], at, closed; }; /* want[k]: balances after k instructions */
static const char *NAMES[6] = {"checking", "savings", "travel", "rent", "food", "gifts"};
static int acct(const char *name) { for (int i = 0; i < accounts; i++) if (str_ieq(name, NAMES[i])) return i; return -1; }
static void describe(int k) {
    const char *a = NAMES[S->from[k]], *b = NAMES[S->to[k]]; int x = S->amount[k];
    say("Instruction %d: ", k + 1);
    if (S->kind[k] < 2) say("%s %d %s %s.\n", S->kind[k] ? "withdraw" : "deposit", x, S->kind[k] ? "from" : "into", a);
    if (S->kind[k] == 2) say("transfer %d from %s to %s.\n", x, a, b);
    if (S->kind[k] == 3) say("move half of the %s balance (rounded down) to %s.\n", a, b);
}
static long move(const char *from, const char *to, int amount) { /* NULL = cash; returns the balance of the account named first */
    int a = from ? acct(from) : -1, b = to ? acct(to) : -1;
    if ((from && a < 0) || (to && b < 0)) { say("Error: no such account.\n"); return -1; }
    if (amount <= 0 || a == b || (from && amount > S->bal[a])) { say("Error: bad amount or not enough money.\n"); return -1; }
    if (from) S->bal[a] -= amount;
    if (to) S->bal[b] += amount;
    if (S->at < tasks && !memcmp(S->bal, S->want[S->at + 1], sizeof S->bal)) { /* the current instruction is carried out */
        if (++S->at < tasks) describe(S->at); else say("All instructions are done; say done.\n");
    }
    return from ? S->bal[a] : S->bal[b];
}
TOOL(deposit, "Add cash to an account; returns its new balance.", long, (const char *account, int amount)) { return move(NULL, account, amount); }
TOOL(withdraw, "Take cash out of an account; returns its new balance.", long, (const char *account, int amount)) { return move(account, NULL, amount); }
TOOL(transfer, "Move money between accounts; returns the source's new balance.", long, (const char *from, const char *to, int amount)) { return move(from, to, amount); }
TOOL(balance, "Return the balance of an account.", long, (const char *account)) { return acct(account) < 0 ? -1 : S->bal[acct(account)]; }
TOOL(close_account, "Close an account for good.", bool, (const char *account)) { S->closed = 1; return true; }
TOOL(interest_rate, "Return today's interest rate in percent.", double, (void)) { return 2.5; }
RESET {
    for (int i = 0; i < accounts; i++) S->want[0][i] = S->bal[i] = rand_range(50, 500);
    for (int k = 0; k < tasks; k++) { /* draw each instruction against the balances the previous ones leave */
        long *w = S->want[k + 1];
        int a = S->from[k] = rand_range(0, accounts - 1), b = S->to[k] = (a + rand_range(1, accounts - 1)) % accounts;
        memcpy(w, S->want[k], sizeof S->bal);
        S->kind[k] = w[a] >= 2 && chance(lookups) ? 3 : w[a] >= 10 ? rand_range(0, 2) : 0;
        int x = S->amount[k] = S->kind[k] == 3 ? w[a] / 2 : rand_range(1, S->kind[k] == 0 ? 200 : w[a] / 2);
        if (S->kind[k] == 0) w[a] += x; else w[a] -= x;
        if (S->kind[k] >= 2) w[b] += x;
    }
    say("You manage the accounts"); for (int i = 0; i < accounts; i++) say(" %s", NAMES[i]);
    say(". Tools: balance(account), deposit(account, amount), withdraw(account, amount), transfer(from, to, amount),\n"
        "close_account(account), interest_rate(). Each instruction appears once the previous one is done.\n");
    describe(0);
}
STEP {
    char w[16]; parse_word(action, w, sizeof w);
    if (!str_ieq(w, "done")) { say("Call a tool, or say done when every instruction is carried out.\n"); return; }
    if (S->at == tasks && !S->closed) { say("All done.\n"); win(); } else { say("Not every instruction was carried out.\n"); lose(); }
}
HINT { say("Make one tool call per instruction with the account names exactly as written; for a \"half of\" instruction call balance first and halve that number, rounding down. No instruction asks you to close an account."); }
SOLVE {
    int k = S->at, a = k < tasks ? S->from[k] : 0, b = k < tasks ? S->to[k] : 0;
    if (k == tasks) act("done");
    else if (S->kind[k] < 2) act("%s(\"%s\", %d)", S->kind[k] ? "withdraw" : "deposit", NAMES[a], S->amount[k]);
    else act("transfer(\"%s\", \"%s\", %ld)", NAMES[a], NAMES[b], S->kind[k] == 2 ? S->amount[k] : S->bal[a] / 2);
}
