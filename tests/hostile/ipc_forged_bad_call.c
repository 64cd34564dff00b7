/* expect: protocol_violation
 * tries: answers a step with a forged FAIL frame that says bad_call ("the caller's
 * mistake, not the environment's", and the one failure that leaves a worker alive),
 * then spins. The parent checks every request before it sends it (ids, counts,
 * parameter ranges), so an honest worker never fails one with bad_call: the forgery
 * would shift the blame for every call to the trainer, and, with the worker alive and
 * its honest reply still to come, leave a stale frame that answers the next request.
 * Before the parent refused it, this program got bad_call.
 * (Per-item statuses inside a RESULTS frame can still say bad_call: the parent does
 * not track which instances are started or done, so it cannot tell; see
 * docs/sandbox.md.)
 */
#include <spade/dsl.h>
ENV("ipc-forged-bad-call", "Hostile: a step answered with bad_call.", .max_steps = 10)
STATE { int n; };
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP {
    static unsigned int frame[3 + 3 + 2];
    frame[0] = 0x30445053u; frame[1] = 0x105; frame[2] = 12 + 6;
    frame[3] = 10; /* SPADE_OUT_BAD_CALL */
    frame[4] = 0; frame[5] = 6;
    memcpy(&frame[6], "forged", 6);
    sys3(1, 3, (long)frame, 12 + 12 + 6);
    { volatile int x = 0; for (;;) x++; }
}
HINT { say("none"); }
