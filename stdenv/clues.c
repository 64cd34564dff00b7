/* clues.c — work out who owns which pet from a list of clues, then answer who owns each one.
 * Teaches: elimination in a grid of possibilities (a row or column with one
 * option left is settled, which removes that option elsewhere). Params:
 * people = how many people (and pets); direct = chance that a clue names an
 * owner outright rather than ruling something out. Clues are added until
 * exactly one way of owning the pets fits them all. */
#include <spade/dsl.h>
ENV("clues", "Deduce who owns which pet from clues.", .family = "deduction", .max_steps = 5)
PARAM(int, people, 3, 2, 5)
PARAM(double, direct, 0.2, 0.0, 1.0)
STATE { int owner[5], kind[40], who[40], other[40], pet[40], n, asked; };
static const char *WHO[5] = {"Ann", "Bob", "Cyd", "Dee", "Eve"}, *PET[5] = {"cat", "dog", "fish", "hen", "owl"};
static int holds(int c, const int *own) {
    int o = own[S->pet[c]];
    return S->kind[c] == 0 ? o != S->who[c] : S->kind[c] == 1 ? o == S->who[c] : o == S->who[c] || o == S->other[c];
}
static int count(int pet, int used, int *own) { /* ways to give pets pet.. owners not in used that fit every clue */
    int ways = 0;
    if (pet == people) { for (int c = 0; c < S->n; c++) if (!holds(c, own)) return 0; return 1; }
    for (int p = 0; p < people; p++) if (!(used >> p & 1)) { own[pet] = p; ways += count(pet + 1, used | 1 << p, own); }
    return ways;
}
static void ask(void) { say("Who owns the %s?\n", PET[S->asked]); }
RESET {
    int own[5];
    for (int p = 0; p < people; p++) S->owner[p] = p;
    shuffle(S->owner, people, sizeof S->owner[0]); /* owner[pet] */
    say("%d people each own one of %d pets. Clues:\n", people, people);
    do { /* a true clue: "X does not own P", "X owns P" or "P belongs to X or Y" */
        int c = S->n++, k = S->kind[c] = chance(direct) || c >= 30 ? 1 : 2 * rand_range(0, 1);
        S->pet[c] = rand_range(0, people - 1);
        do S->who[c] = rand_range(0, people - 1); while (k == 0 && S->who[c] == S->owner[S->pet[c]]);
        if (k == 1) S->who[c] = S->owner[S->pet[c]];
        do S->other[c] = rand_range(0, people - 1); while (S->other[c] == S->who[c]);
        if (k == 2 && S->who[c] != S->owner[S->pet[c]]) S->other[c] = S->owner[S->pet[c]];
        if (k == 0) say("- %s does not own the %s.\n", WHO[S->who[c]], PET[S->pet[c]]);
        if (k == 1) say("- %s owns the %s.\n", WHO[S->who[c]], PET[S->pet[c]]);
        if (k == 2) say("- The %s belongs to %s or %s.\n", PET[S->pet[c]], WHO[S->who[c]], WHO[S->other[c]]);
    } while (count(0, 0, own) > 1);
    say("Answer each question with a name.\n");
    ask();
}
STEP {
    char w[16]; int o = S->owner[S->asked];
    parse_word(action, w, sizeof w);
    if (!str_ieq(w, WHO[o])) { say("Wrong: %s owns the %s.\n", WHO[o], PET[S->asked]); lose(); }
    else if (++S->asked == people) { say("Correct. Every pet is placed!\n"); win(); }
    else { say("Correct.\n"); ask(); }
}
HINT { say("Draw a table of people against pets. Cross out each pairing a clue rules out, and mark each pairing a clue fixes. When only one pairing is left in a row or a column, it holds, and every other pairing in its row and column is out. Repeat until the table is full."); }
SOLVE { act("%s", WHO[S->owner[S->asked]]); }
