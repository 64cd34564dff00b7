/* analogy.c — complete letter-string analogies: ABC is to BCD as HIJ is to ?
 * Teaches: inferring a transformation from one example and applying it to a new
 * case. Params: level = how many kinds of change may appear (shift every letter,
 * reverse, next letter at the end, double every letter, rotate by one); length =
 * letters per string; rounds = analogies to get right in a row. Strings have
 * distinct letters, so no two kinds of change give the same example. */
#include <spade/dsl.h>
ENV("analogy", "Complete letter-string analogies.", .family = "pattern", .max_steps = 5)
PARAM(int, level, 3, 1, 5)
PARAM(int, length, 3, 3, 6)
PARAM(int, rounds, 2, 1, 5)
STATE { char want[16]; int round; };
static void change(int kind, int k, const char *in, char *out) { /* out = the transformed in */
    int n = (int)strlen(in), j = 0;
    for (int i = 0; i < n; i++) {
        if (kind == 0) out[j++] = in[i] + k;
        if (kind == 1) out[j++] = in[n - 1 - i];
        if (kind == 2) out[j++] = in[i] + (i == n - 1);
        if (kind == 3) { out[j++] = in[i]; out[j++] = in[i]; }
        if (kind == 4) out[j++] = in[(i + 1) % n];
    }
    out[j] = 0;
}
static void draw(char *s) { /* distinct letters A..W, so that a shift by up to 3 stays in the alphabet */
    char pool[23];
    for (int i = 0; i < 23; i++) pool[i] = 'A' + i;
    shuffle(pool, 23, 1); memcpy(s, pool, length); s[length] = 0;
}
static void puzzle(void) {
    char a[8], b[16], c[8];
    int kind = rand_range(0, level - 1), k = rand_range(1, 3);
    draw(a); draw(c); change(kind, k, a, b); change(kind, k, c, S->want);
    say("Analogy %d of %d: %s is to %s as %s is to ?\n", S->round + 1, rounds, a, b, c);
}
RESET {
    say("Find the change that turns the first string into the second, apply it to the third, and answer with the\nresulting string.\n");
    puzzle();
}
STEP {
    char w[32];
    parse_word(action, w, sizeof w);
    if (!str_ieq(w, S->want)) { say("Wrong: it was %s.\n", S->want); lose(); }
    else if (++S->round == rounds) { say("Correct. All analogies solved!\n"); win(); }
    else { say("Correct.\n"); puzzle(); }
}
HINT { say("Compare the two strings letter by letter: did every letter move along the alphabet by the same amount, did the order change (reversed or rotated), did only the last letter change, or did the string grow? Name the change, then apply exactly that change to the third string."); }
SOLVE { act("%s", S->want); }
