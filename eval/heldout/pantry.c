/* pantry.c — stock a pantry for a recipe: look up what is there, buy only what is missing.
 * Teaches: tool use with lookups before acting (the amount to buy depends on a value you
 * must query), arithmetic on tool results, and a budget that punishes waste. Params:
 * items = ingredients in the recipe; servings = largest number of servings asked for;
 * waste = units you may buy beyond what is needed. Held out. */
#include <spade/dsl.h>
ENV("pantry", "Buy exactly the missing ingredients for a recipe, using tools.", .family = "tools", .max_steps = 30)
PARAM(int, items, 2, 1, 6)
PARAM(int, servings, 4, 1, 12)
PARAM(int, waste, 0, 0, 50)
STATE { int have[6], per[6], want, bought, short_at_start; };
static const char *FOOD[6] = {"flour", "eggs", "sugar", "butter", "milk", "salt"};
static int food(const char *name) { for (int i = 0; i < items; i++) if (str_ieq(name, FOOD[i])) return i; return -1; }
static int missing(int i) { int m = S->per[i] * S->want - S->have[i]; return m > 0 ? m : 0; }
TOOL(stock, "Return how many units of an ingredient the pantry holds.", int, (const char *item)) { return food(item) < 0 ? -1 : S->have[food(item)]; }
TOOL(buy, "Buy units of an ingredient; returns the new amount held.", int, (const char *item, int units)) {
    int i = food(item);
    if (i < 0 || units < 1 || units > 1000) { say("Error: unknown ingredient or bad amount.\n"); return -1; }
    S->have[i] += units; S->bought += units; return S->have[i];
}
TOOL(price, "Return today's price of an ingredient in cents.", int, (const char *item)) { return food(item) < 0 ? -1 : 40 + 15 * food(item); }
RESET {
    do { /* at least one ingredient must be short, or "done" alone would win */
        S->want = rand_range(1, servings); S->short_at_start = 0;
        for (int i = 0; i < items; i++) { S->per[i] = rand_range(1, 4); S->have[i] = rand_range(0, 3 * S->per[i] * S->want / 2); S->short_at_start += missing(i); }
    } while (!S->short_at_start);
    say("Cook for %d. The recipe needs, per serving:", S->want);
    for (int i = 0; i < items; i++) say("%s %d %s", i ? "," : "", S->per[i], FOOD[i]);
    say(".\nTools: stock(item), buy(item, units), price(item). Buy what is missing (nothing more), then say done.\n");
}
STEP {
    char w[16]; parse_word(action, w, sizeof w);
    if (!str_ieq(w, "done")) { say("Call a tool, or say done.\n"); return; }
    int short_of = 0;
    for (int i = 0; i < items; i++) short_of += missing(i);
    if (short_of) { say("Still short of ingredients.\n"); lose(); }
    else if (S->bought - S->short_at_start > waste) { say("Too much was bought.\n"); lose(); }
    else { say("The pantry is stocked.\n"); win(); }
}
HINT { say("For each ingredient call stock first, multiply the per-serving amount by the number of servings, and buy only the difference when it is positive; the price does not matter."); }
SOLVE {
    for (int i = 0; i < items; i++) if (missing(i)) { act("buy(\"%s\", %d)", FOOD[i], missing(i)); return; }
    act("done");
}
