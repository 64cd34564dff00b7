/* expect: protocol_violation
 * tries: answers a step with a forged FAIL frame that says compile_error (line 1,
 * "forged"), then spins so that the honest reply never follows. An honest worker
 * reports compile_error, link_error and invalid_env only in reply to LOAD; in reply
 * to a step it is a lie, and a designer's environment that crashes or loops at run
 * time could pass itself off as a mere syntax error. Before the parent checked the
 * outcome against the request, this program got compile_error.
 */
#include <spade/dsl.h>
ENV("ipc-forged-fail-compile", "Hostile: a step answered with a compile error.", .max_steps = 10)
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
    frame[3] = 1; /* SPADE_OUT_COMPILE */
    frame[4] = 1; frame[5] = 6;
    memcpy(&frame[6], "forged", 6);
    sys3(1, 3, (long)frame, 12 + 12 + 6);
    { volatile int x = 0; for (;;) x++; }
}
HINT { say("none"); }
