/* expect: forbidden_syscall
 * tries: nanosleep for an hour (raw nr 35): sleeping is a way to hold a worker without burning
 * CPU (so without meeting the CPU limit); it is not on the allowlist.
 */
#include <spade/dsl.h>
ENV("syscall-nanosleep", "Hostile: nanosleep for an hour (raw nr 35): sleeping is a way to hold a worker without bu", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long ts[2]; ts[0] = 3600; ts[1] = 0; sys3(35, (long)ts, 0, 0); say("survived"); }
HINT { say("none"); }
