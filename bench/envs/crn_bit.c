/* crn_bit.c — bench environment for bench/bench_crn.c: one turn, won when
 * a hashed bit of the action's first byte and the seed's key is 1, so a
 * policy that writes noise wins about half its plays, on every seed, and two
 * different first bytes win or lose independently (as two different answers
 * of a real game would; a rule on the byte's value, such as its parity, would
 * tie the outcome to the token's id, which common random numbers keep close).
 * The hint names one winning character. Not part of stdenv. */
#include <spade/dsl.h>
ENV("crn_bit", "Say a word; some words win.", .max_steps = 1, .family = "logic")
PARAM(int, unused, 0, 0, 1)
STATE { int key; };
static int wins(int key, int c) { return (int)(((unsigned)(c ^ key) * 2654435761u) >> 31); }
RESET {
    S->key = (int)rand_range(0, 255);
    say("Say a word.");
}
STEP { finish(action_len > 0 && wins(S->key, (unsigned char)action[0])); }
HINT {
    int c = 'a';
    while (c < 'z' && !wins(S->key, c)) c++;
    say("Start with %c.", c);
}
SOLVE {
    int c = 'a';
    while (c < 'z' && !wins(S->key, c)) c++;
    act("%c", c);
}
