/* expect: forbidden_syscall
 * tries: seccomp(SECCOMP_SET_MODE_STRICT) as a raw syscall (nr 317).
 */
#include <spade/dsl.h>
ENV("syscall-seccomp", "Hostile: seccomp(SECCOMP_SET_MODE_STRICT) as a raw syscall (nr 317)", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(317, 0, 0, 0); say("survived"); }
HINT { say("none"); }
