/* bench_tools.c — what a tool call costs: finding the call in the agent's
 * text, type-checking it and calling through libffi, against a direct C call
 * of the same function, both measured in this run.
 *
 * What it is not: a measure of the host or the sandbox round trip (a tool call
 * rides inside a step); only core/tools. The target is <= 2 us per dispatched
 * call (prepared table, short action). Run: `make bench` or ./bench/bench_tools.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/tools.h"

static long g_balance;

static int deposit(int amount) {
    g_balance += amount;
    return (int)g_balance;
}

static int send(int amount, const char *to) {
    g_balance -= amount + (to[0] == '\0');
    return (int)g_balance;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The reference: the same function through a pointer the compiler cannot see
 * through, so it is a real call, as ffi_call's is. */
static int (*volatile direct_deposit)(int) = deposit;

/* Each figure is the best of ROUNDS rounds: on a shared 2-core machine the
 * minimum is the stable estimate of what the code costs. */
#define ROUNDS 7

static double time_direct(long iters) {
    double best = 1e30;
    long sum = 0;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) sum += direct_deposit((int)(i & 7));
        double ns = (now_s() - t0) * 1e9 / (double)iters;
        if (ns < best) best = ns;
    }
    if (sum == 42) puts(""); /* keep sum alive */
    return best;
}

typedef spade_dispatch (*dispatch_fn)(const void *ctx, const char *text, size_t len, char *out, size_t cap);

static const spade_tool_def DEFS[] = {
    {"deposit", "int (int amount)", "Deposit money.", (void *)deposit},
    {"send", "int (int amount, const char *to)", "Send money.", (void *)send},
};
static spade_tool_sig SIGS[2];

static spade_dispatch via_table(const void *ctx, const char *text, size_t len, char *out, size_t cap) {
    return spade_tool_table_dispatch(ctx, text, len, out, cap);
}

static spade_dispatch via_plain(const void *ctx, const char *text, size_t len, char *out, size_t cap) {
    return spade_tools_dispatch(DEFS, SIGS, 2, text, len, out, cap);
}

static double time_dispatch(dispatch_fn fn, const void *ctx, const char *text, long iters) {
    char out[256];
    size_t len = strlen(text);
    if (fn(ctx, text, len, out, sizeof out) != SPADE_DISPATCH_CALLED) {
        fprintf(stderr, "bench_tools: '%.40s' was not called: %s\n", text, out);
        exit(1);
    }
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        for (long i = 0; i < iters; i++) fn(ctx, text, len, out, sizeof out);
        double ns = (now_s() - t0) * 1e9 / (double)iters;
        if (ns < best) best = ns;
    }
    return best;
}

int main(void) {
    char err[256];
    for (int i = 0; i < 2; i++)
        if (spade_tool_sig_parse(DEFS[i].signature, &SIGS[i], err, sizeof err) < 0) {
            fprintf(stderr, "bench_tools: %s\n", err);
            return 1;
        }
    spade_tool_table *t;
    if (spade_tool_table_new(&t, DEFS, SIGS, 2, err, sizeof err) < 0) {
        fprintf(stderr, "bench_tools: %s\n", err);
        return 1;
    }
    static char thinking[1200];
    snprintf(thinking, sizeof thinking,
             "The balance is low, so before sending anything I should put money in. I considered "
             "send(5, \"bob\") first, but that would overdraw the account, and withdrawing makes no sense "
             "either. The task says to end with exactly ten, which means one deposit of ten now. "
             "Let me double check the arithmetic: zero plus ten is ten, and nothing else changes it. "
             "So the action is:\n<tool_call>{\"name\": \"deposit\", \"arguments\": {\"amount\": 10}}</tool_call>");

    const long direct_iters = 10 * 1000 * 1000, iters = 200 * 1000;
    double direct = time_direct(direct_iters);
    struct {
        const char *what;
        dispatch_fn fn;
        const char *text;
    } cases[] = {
        {"table   deposit(5)", via_table, "deposit(5)"},
        {"table   send(5, \"bob\")", via_table, "send(5, \"bob\")"},
        {"table   JSON in <tool_call>", via_table,
         "<tool_call>{\"name\": \"send\", \"arguments\": {\"to\": \"bob\", \"amount\": 5}}</tool_call>"},
        {"table   600 B of thinking + call", via_table, thinking},
        {"plain   deposit(5) (cif per call)", via_plain, "deposit(5)"},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    double first = 0;
    printf("bench_tools: best of %d rounds\n", ROUNDS);
    printf("direct C call of deposit()             %8.1f ns/call\n", direct);
    for (int i = 0; i < ncases; i++) {
        double ns = time_dispatch(cases[i].fn, cases[i].fn == via_table ? (const void *)t : NULL, cases[i].text, iters);
        if (i == 0) first = ns;
        printf("dispatch %-32s %8.1f ns/call  (%.0fx the direct call)\n", cases[i].what, ns, ns / direct);
    }
    printf("target <= 2000 ns per dispatched call: %s (deposit(5): %.1f ns, ratio %.0fx)\n",
           first <= 2000 ? "met" : "MISSED", first, first / direct);
    spade_tool_table_free(t);
    return 0;
}
