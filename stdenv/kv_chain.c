/* kv_chain.c — follow a chain of references through a key-value store.
 * Teaches: tool calls whose arguments come from earlier results (pointer chasing),
 * and ignoring distractor entries. Params: keys = entries in the store; depth =
 * links to follow before the number (clamped to keys - 1). */
#include <spade/dsl.h>
ENV("kv_chain", "Follow references through a key-value store to a number.", .family = "tools", .max_steps = 60)
PARAM(int, keys, 8, 2, 40)
PARAM(int, depth, 3, 1, 20)
STATE { char key[40][8], val[40][8]; int n, len, chain[40], reached; }; /* chain[0..len]: the path; reached = links fetched */
static int find(const char *k) { for (int i = 0; i < S->n; i++) if (!strcmp(S->key[i], k)) return i; return -1; }
TOOL(get, "Return the value stored under key, or an error.", const char *, (const char *key)) {
    int i = find(key);
    if (i < 0) return "error: no such key";
    if (S->reached <= S->len && i == S->chain[S->reached]) S->reached++;
    return S->val[i];
}
TOOL(count, "Return how many keys the store holds.", int, (void)) { return S->n; }
RESET {
    static const char *CONS = "bdfgklmnprstvz", *VOW = "aeiou";
    S->n = keys; S->len = depth < keys ? depth : keys - 1;
    for (int i = 0; i < S->n; i++) /* distinct four-letter names like "pavo" */
        do { for (int j = 0; j < 4; j++) S->key[i][j] = j % 2 ? VOW[rand_range(0, 4)] : CONS[rand_range(0, 13)]; } while (find(S->key[i]) < i);
    for (int i = 0; i < S->n; i++) S->chain[i] = i;
    shuffle(S->chain, S->n, sizeof S->chain[0]);
    for (int i = 0; i < S->n; i++) /* off the chain: a random number or a random key, as decoys */
        if (chance(0.5)) snprintf(S->val[i], 8, "%d", (int)rand_range(100, 999)); else memcpy(S->val[i], S->key[rand_range(0, S->n - 1)], 8);
    for (int k = 0; k < S->len; k++) memcpy(S->val[S->chain[k]], S->key[S->chain[k + 1]], 8);
    snprintf(S->val[S->chain[S->len]], 8, "%d", (int)rand_range(100, 999));
    say("A key-value store holds %d entries. A value is either a number or the name of another key.\n"
        "Start at key \"%s\" and follow the names until you reach a number; answer with that number.\n"
        "Tools: get(key), count().\n", S->n, S->key[S->chain[0]]);
}
STEP {
    const char *want = S->val[S->chain[S->len]];
    if (parse_int(action) == atoi(want)) { say("Correct.\n"); win(); } else { say("Wrong: it was %s.\n", want); lose(); }
}
HINT { say("Call get on the start key, then call get on exactly the name it returns, and repeat; stop at the first value made of digits and answer it. Never guess a value you have not fetched."); }
SOLVE {
    if (S->reached <= S->len) act("get(\"%s\")", S->key[S->chain[S->reached]]);
    else act("%s", S->val[S->chain[S->len]]);
}
