/* lights_row.c — turn off every light in a row where a switch flips a light and its neighbours.
 * Teaches: reasoning about actions that interact (each press toggles three lights) and
 * working left to right so earlier lights stay fixed. Params: lights = length of the row;
 * scramble = random presses that made the start (always solvable: undo them); spare =
 * presses allowed beyond the scramble. Held out: never in the grounding corpus. */
#include <spade/dsl.h>
ENV("lights_row", "Switch off a row of lights whose switches also flip their neighbours.", .family = "logic", .max_steps = 80)
PARAM(int, lights, 8, 3, 24)
PARAM(int, scramble, 4, 1, 24)
PARAM(int, spare, 2, 0, 40)
STATE { char on[24]; char need[24]; int left; }; /* need[i]: press i an odd number of times more */
static void press(int i) {
    for (int k = i - 1; k <= i + 1; k++) if (k >= 0 && k < lights) S->on[k] ^= 1;
    S->need[i] ^= 1;
}
static int lit(void) { int n = 0; for (int i = 0; i < lights; i++) n += S->on[i]; return n; }
static void show(void) {
    say("Lights: ");
    for (int i = 0; i < lights; i++) say("%c", S->on[i] ? '1' : '0');
    say("  (switches 1-%d, left to right). Presses left: %d.\n", lights, S->left);
}
RESET {
    do { for (int k = 0; k < scramble; k++) press(rand_range(0, lights - 1)); } while (!lit());
    S->left = spare;
    for (int i = 0; i < lights; i++) S->left += S->need[i];
    say("Pressing switch k flips light k and the lights right beside it. Turn every light off (all 0).\n"
        "Say \"press K\".\n");
    show();
}
STEP {
    long k = parse_int(action);
    if (k < 1 || k > lights) { say("Say \"press K\" with K from 1 to %d.\n", lights); show(); return; }
    press((int)k - 1); S->left--;
    if (!lit()) { say("Every light is off!\n"); win(); }
    else if (S->left <= 0) { say("No presses left.\n"); lose(); }
    else show();
}
HINT { say("Go from left to right: once light k is settled, only switch k+1 can still change it, so press switch k+1 exactly when light k is on. Pressing a switch twice undoes it."); }
SOLVE { int i = 0; while (!S->need[i]) i++; act("press %d", i + 1); }
