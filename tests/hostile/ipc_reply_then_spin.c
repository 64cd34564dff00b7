/* expect: timeout
 * tries: answers the first step itself with a complete, well-formed RESULTS frame (the
 * right count, empty observations) and then spins forever, so the worker is busy
 * while the parent believes it idle. The parent cannot tell a forged reply that
 * fits from an honest one (the worker runs this code; it may say anything well
 * formed), so that step succeeds; what must hold is that the spinning worker costs
 * bounded CPU (RLIMIT_CPU, raised only as the parent's own calls go on) and that
 * the next call, which it never answers, ends at its deadline: timeout.
 */
#include <spade/dsl.h>
ENV("ipc-reply-then-spin", "Hostile: replies, then keeps running.", .max_steps = 10)
STATE { int n; };
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP {
    static unsigned char frame[12 + 4 + 2 * 24 + 2];
    unsigned int *h = (unsigned int *)frame;
    h[0] = 0x30445053u; h[1] = 0x103; h[2] = sizeof frame - 12; h[3] = 2;
    sys3(1, 3, (long)frame, sizeof frame);
    { volatile int x = 0; for (;;) x++; }
}
HINT { say("none"); }
