/* ep_len.c — test environment for the episode layer: episodes of 2 to 10
 * steps (max_steps 8, so some are truncated), an observation that repeats the
 * action, and a `fail` param that makes the second step of every episode whose
 * token is a multiple of 5 crash (1) or hang (2). Not part of stdenv. */
#include <spade/dsl.h>
ENV("ep-len", "Say the token until the episode ends.", .max_steps = 8, .success = 1.5, .family = "test")
PARAM(int, fail, 0, 0, 2)
STATE { long len, tok; };
RESET {
    S->len = rand_range(2, 10);
    S->tok = rand_range(0, 99);
    say("Token %ld.", S->tok);
}
STEP {
    if (steps() == 1 && S->tok % 5 == 0) {
        if (fail == 1) {
            volatile long *p = 0;
            *p = 1;
        }
        if (fail == 2)
            for (volatile long i = 0;; i++) {
            }
    }
    reward(parse_int(action) == S->tok ? 0.5 : rand_real() * 0.01);
    say("got [%.*s] step %ld of %ld", (int)action_len, action, steps() + 1, S->len);
    if (steps() + 1 >= S->len)
        finish(0);
}
HINT { say("The token is %ld.", S->tok); }
SOLVE { act("%ld", S->tok); }
