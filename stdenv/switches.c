/* switches.c — find out which switch drives each lamp by flipping switches and watching.
 * Teaches: causal discovery by intervention: change one thing at a time, see
 * what follows, and deduce the last cause by elimination. Params: switches =
 * how many switches; lamps = how many lamps; spare = flips allowed beyond the
 * one-less-than-the-switches that always suffice. */
#include <spade/dsl.h>
ENV("switches", "Find which switch drives each lamp.", .family = "deduction", .max_steps = 30)
PARAM(int, switches, 4, 2, 9)
PARAM(int, lamps, 3, 2, 9)
PARAM(int, spare, 1, 0, 5)
STATE { int wire[9], on[9], flipped[9], known[9], left; }; /* known[l]: the switch (1..) seen to drive lamp l, or 0 */
static void show(void) {
    say("Lamps:");
    for (int l = 0; l < lamps; l++) say(" %d %s%s", l + 1, S->on[l] ? "on" : "off", l + 1 < lamps ? "," : "");
    say(". Flips left: %d.\n", S->left);
}
RESET {
    for (int l = 0; l < lamps; l++) { S->wire[l] = rand_range(0, switches - 1); S->on[l] = rand_range(0, 1); }
    S->left = switches - 1 + spare;
    say("Each of %d lamps is wired to one of %d switches (a switch may drive several lamps, or none). Flipping a\n"
        "switch toggles its lamps. Say a switch number to flip it. When you know the wiring, answer with the switch\n"
        "of every lamp in order, one number per lamp.\n", lamps, switches);
    show();
}
STEP {
    long v[16]; int n = parse_ints(action, v, 16), ok = n == lamps;
    if (n == lamps) {
        for (int l = 0; l < lamps; l++) ok &= v[l] == S->wire[l] + 1;
        if (ok) { say("That is the wiring.\n"); win(); } else { say("That is not the wiring.\n"); lose(); }
    } else if (n != 1 || v[0] < 1 || v[0] > switches) { say("Say one switch number from 1 to %d, or the whole wiring.\n", switches); show(); }
    else if (S->left == 0) { say("No flips left: answer with the wiring.\n"); show(); }
    else {
        S->flipped[v[0] - 1] = 1; S->left--;
        for (int l = 0; l < lamps; l++) if (S->wire[l] == v[0] - 1) { S->on[l] ^= 1; S->known[l] = v[0]; }
        show();
    }
}
HINT { say("Flip one switch at a time and note which lamps change: they belong to that switch. Keep a table. A lamp that never changed belongs to the only switch you have not flipped, so you never need to flip the last one."); }
SOLVE {
    int unflipped = 0, last = 0, unknown = 0;
    for (int s = 0; s < switches; s++) if (!S->flipped[s]) { unflipped++; last = s; }
    for (int l = 0; l < lamps; l++) unknown += !S->known[l];
    if (unknown && unflipped > 1) { for (int s = 0; s < switches; s++) if (!S->flipped[s]) { act("%d", s + 1); return; } }
    for (int l = 0; l < lamps; l++) act("%s%d", l ? " " : "", S->known[l] ? S->known[l] : last + 1);
}
