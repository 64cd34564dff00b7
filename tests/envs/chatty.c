/* chatty.c — test environment that says exactly `bytes` bytes on reset and on
 * each step, and `hint_bytes` in its hint: probes the output cap. Not part of
 * stdenv. */
#include <spade/dsl.h>
ENV("chatty", "Says exactly as many bytes as asked.", .max_steps = 3, .family = "test")
PARAM(int, bytes, 100, 0, 1000000)
PARAM(int, hint_bytes, 10, 0, 1000000)
STATE { int calls; };
static void say_n(long n, char c) {
    char chunk[1001];
    memset(chunk, c, 1000);
    chunk[1000] = '\0';
    for (; n > 0; n -= 1000)
        say("%.*s", (int)(n < 1000 ? n : 1000), chunk);
}
RESET { say_n(bytes, 'x'); }
STEP {
    S->calls++;
    say_n(bytes, 'y');
    finish(1);
}
HINT { say_n(hint_bytes, 'h'); }
SOLVE { act("ok"); }
