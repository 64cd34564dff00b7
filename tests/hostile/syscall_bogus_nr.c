/* expect: forbidden_syscall
 * tries: a syscall number no kernel has (9999): the filter's default action applies.
 */
#include <spade/dsl.h>
ENV("syscall-bogus-nr", "Hostile: a syscall number no kernel has (9999): the filter's default action applies", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(9999, 0, 0, 0); say("survived"); }
HINT { say("none"); }
