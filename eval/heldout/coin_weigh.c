/* coin_weigh.c — find the one heavier coin with as few weighings on a balance as possible.
 * Teaches: experiments that split the hypotheses three ways (left heavy, right heavy,
 * balanced) and bookkeeping of what each outcome rules out. Params: coins = how many;
 * spare = weighings allowed beyond the optimum ceil(log3(coins)). Held out. */
#include <spade/dsl.h>
ENV("coin_weigh", "Find the heavier coin with a balance scale.", .family = "logic", .max_steps = 12)
PARAM(int, coins, 12, 3, 60)
PARAM(int, spare, 1, 0, 5)
STATE { int heavy, left; char suspect[61]; }; /* suspect[k]: coin k is still consistent with every weighing */
static void weigh(const long *v, int n) {
    int half = n / 2, side = 0; char pan[61] = {0};
    for (int i = 0; i < n; i++) if (v[i] < 1 || v[i] > coins || pan[v[i]]) { say("Name each coin 1-%d at most once.\n", coins); return; } else pan[v[i]] = i < half ? 1 : 2;
    for (int i = 0; i < n; i++) if (v[i] == S->heavy) side = i < half ? 1 : 2;
    for (int k = 1; k <= coins; k++) if (pan[k] != side) S->suspect[k] = 0;
    S->left--;
    say("%s. Weighings left: %d.\n", side == 1 ? "The left pan is heavier" : side == 2 ? "The right pan is heavier" : "The pans balance", S->left);
}
RESET {
    int k = 0;
    for (long p = 1; p < coins; p *= 3) k++;
    S->heavy = rand_range(1, coins); S->left = k + spare;
    for (int c = 1; c <= coins; c++) S->suspect[c] = 1;
    say("Coins 1-%d look alike; one is heavier. To weigh, say \"weigh\" and the coins, the first half on the left pan and\n"
        "the second half on the right (an even count, e.g. weigh 1 2 3 4). To answer, say \"coin K\". You have %d weighings.\n", coins, S->left);
}
STEP {
    long v[64]; int n = parse_ints(action, v, 64);
    if (strstr(action, "coin") && n >= 1) { if (v[n - 1] == S->heavy) { say("Right, coin %d.\n", S->heavy); win(); } else { say("No, it was coin %d.\n", S->heavy); lose(); } return; }
    if (!strstr(action, "weigh") || n < 2 || n % 2) { say("Say \"weigh A B ...\" with an even number of coins, or \"coin K\".\n"); return; }
    if (S->left <= 0) { say("No weighings left: say \"coin K\".\n"); return; }
    weigh(v, n);
}
HINT { say("Split the suspects into three groups as equal as possible, put two of them on the pans with the same count each, and keep the heavier pan's group, or the group left off when they balance."); }
SOLVE {
    int list[61], n = 0, third, at;
    char buf[400];
    for (int c = 1; c <= coins; c++) if (S->suspect[c]) list[n++] = c;
    if (n == 1) { act("coin %d", list[0]); return; }
    third = (n + 2) / 3; at = snprintf(buf, sizeof buf, "weigh");
    for (int i = 0; i < 2 * third && i < n; i++) at += snprintf(buf + at, sizeof buf - at, " %d", list[i]);
    act("%s", buf);
}
