/* sb_moody.c — test environment for core/sandbox: behaves on command.
 * The action decides what step does: "loop" never returns, "crash" writes
 * through a null pointer, "flood" says more than SPADE_OBS_MAX, "busy" burns
 * some milliseconds of CPU and answers, "ok"/anything else answers at once.
 * Tests use it to reach each failure class from a worker that loaded fine.
 * Not part of stdenv. */
#include <spade/dsl.h>
ENV("sb-moody", "Does what the action says: ok, loop, crash, flood.", .max_steps = 50, .family = "test")
STATE { long n; };
RESET { say("ready %ld", rand_range(0, 1000)); }
STEP {
    if (strcmp(action, "loop") == 0) {
        volatile long x = 0;
        for (;;)
            x++;
    }
    if (strcmp(action, "crash") == 0) {
        volatile int *p = 0;
        *p = 1;
    }
    if (strcmp(action, "busy") == 0) {
        volatile long x = 0;
        for (long i = 0; i < 4000000; i++)
            x += i;
    }
    if (strcmp(action, "flood") == 0)
        for (int i = 0; i < 100000; i++)
            say("flood flood flood ");
    S->n++;
    say("fine %ld", S->n);
    if (strcmp(action, "done") == 0)
        win();
}
HINT { say("say ok"); }
