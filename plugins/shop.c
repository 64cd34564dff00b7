/* shop.c — an example plugin: a tool-using shopping task.
 * The agent buys a shopping list at the lowest price: each item comes in several
 * brands, so it must search(), compare, add() the cheapest brand in the right
 * quantity, fix mistakes with discard(), and checkout(). Shows TOOL with string
 * and int arguments, a tool that returns text kept in S, and a tool that ends the
 * episode (checkout calls win/lose like STEP would). Params: items = lines on the
 * list; brands = brands per item (more brands, more comparing). */
#include <spade/dsl.h>
ENV("shop", "Buy a shopping list at the lowest price with shop tools.", .family = "tools", .max_steps = 40)
PARAM(int, items, 3, 1, 8)
PARAM(int, brands, 3, 2, 5)
STATE { int price[8][5], want[8], cart[8][5]; char out[512]; };
static const char *ITEM[8] = {"milk", "bread", "eggs", "rice", "apples", "coffee", "tea", "cheese"};
static const char *BRAND[5] = {"acme", "best", "daily", "fresh", "gold"};
static int cheapest(int i) { int b = 0; for (int k = 1; k < brands; k++) if (S->price[i][k] < S->price[i][b]) b = k; return b; }
static int product(const char *name) { /* "acme milk" -> i * 5 + b, or -1 */
    char full[32];
    for (int i = 0; i < 8; i++) for (int b = 0; b < brands; b++) { snprintf(full, 32, "%s %s", BRAND[b], ITEM[i]); if (str_ieq(name, full)) return i * 5 + b; }
    return -1;
}
TOOL(search, "List the brands and prices of an item, e.g. search(\"milk\").", const char *, (const char *item)) {
    S->out[0] = 0;
    for (int i = 0; i < 8; i++) if (str_ieq(item, ITEM[i]))
        for (int b = 0; b < brands; b++) snprintf(S->out + strlen(S->out), 64, "%s %s: $%d\n", BRAND[b], ITEM[i], S->price[i][b]);
    return S->out[0] ? S->out : "no such item";
}
TOOL(add, "Put qty units of a product (\"brand item\") in the cart.", const char *, (const char *product_name, int qty)) {
    int p = product(product_name);
    if (p < 0 || qty < 1 || qty > 99) return "error: unknown product or bad quantity";
    S->cart[p / 5][p % 5] += qty; return "added";
}
TOOL(discard, "Take a product out of the cart entirely.", const char *, (const char *product_name)) {
    int p = product(product_name);
    if (p < 0) return "error: unknown product";
    S->cart[p / 5][p % 5] = 0; return "removed";
}
TOOL(checkout, "Pay for the cart and end the shopping trip.", const char *, (void)) {
    int ok = 1;
    for (int i = 0; i < 8; i++) for (int b = 0; b < brands; b++) ok &= S->cart[i][b] == (b == cheapest(i) ? S->want[i] : 0);
    if (ok) win(); else lose();
    return ok ? "Paid: exactly the list, at the lowest price." : "Paid, but the cart was not the list at the lowest price.";
}
RESET {
    int order[8];
    for (int i = 0; i < 8; i++) { /* distinct prices, so one brand is the cheapest */
        order[i] = i;
        for (int b = 0; b < brands; b++) S->price[i][b] = 1 + 4 * b + rand_range(0, 3);
        shuffle(S->price[i], brands, sizeof S->price[i][0]);
    }
    shuffle(order, 8, sizeof order[0]);
    say("Buy this list, choosing the cheapest brand of each item:\n");
    for (int k = 0; k < items; k++) { S->want[order[k]] = rand_range(1, 5); say("- %d %s\n", S->want[order[k]], ITEM[order[k]]); }
    say("Tools: search(item), add(\"brand item\", qty), discard(\"brand item\"), checkout().\n");
}
STEP { say("Use the tools: search(item), add(\"brand item\", qty), discard(\"brand item\"), checkout().\n"); }
HINT { say("Search every item on the list before adding anything, note the brand with the lowest price, add exactly the listed quantity of that brand, and only then check out."); }
SOLVE {
    for (int i = 0; i < 8; i++) for (int b = 0; b < brands; b++) {
        int need = b == cheapest(i) ? S->want[i] : 0;
        if (S->cart[i][b] > need) { act("discard(\"%s %s\")", BRAND[b], ITEM[i]); return; }
        if (S->cart[i][b] < need) { act("add(\"%s %s\", %d)", BRAND[b], ITEM[i], need - S->cart[i][b]); return; }
    }
    act("checkout()");
}
