/* expect: timeout
 * tries: a slow-loris reply: in step it writes a well-formed RESULTS frame one byte at a
 * time, each 0.2 s after the last (spinning on clock_gettime, raw nr 228), so that
 * bytes keep arriving well within any per-read timeout. The call deadline is absolute
 * (fixed when the request is sent), so the parent gives up at it all the same and
 * kills the worker: timeout, not a parent that waits as long as bytes trickle in.
 */
#include <spade/dsl.h>
ENV("ipc-slow-loris", "Hostile: a reply one byte at a time.", .max_steps = 10)
STATE { int n; };
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
static double now(void)
{
    long ts[2];
    sys3(228, 1, (long)ts, 0); /* CLOCK_MONOTONIC */
    return ts[0] + ts[1] * 1e-9;
}
RESET { say("ready"); }
STEP {
    static unsigned char frame[12 + 4 + 2 * 24 + 2];
    unsigned int *h = (unsigned int *)frame;
    int i;
    h[0] = 0x30445053u; h[1] = 0x103; h[2] = sizeof frame - 12; h[3] = 2;
    for (i = 0; i < (int)sizeof frame; i++) {
        double t = now();
        while (now() - t < 0.2)
            ;
        sys3(1, 3, (long)(frame + i), 1);
    }
    say("done");
}
HINT { say("none"); }
