/* expect: ok
 * tries: clock_gettime(CLOCK_MONOTONIC) as a raw syscall (nr 228). Allowed, like rdtsc: the
 * sandbox contains, the validation gate checks determinism (same seed, same output).
 */
#include <spade/dsl.h>
ENV("ok-clock-gettime", "Hostile: clock_gettime(CLOCK_MONOTONIC) as a raw syscall (nr 228)", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long ts[2]; long r = sys3(228, 1, (long)ts, 0); say("clock %s", r == 0 ? "read" : "refused"); say("survived"); }
HINT { say("none"); }
