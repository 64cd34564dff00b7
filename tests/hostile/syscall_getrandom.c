/* expect: forbidden_syscall
 * tries: getrandom as a raw syscall (nr 318): randomness other than the seeded generator.
 */
#include <spade/dsl.h>
ENV("syscall-getrandom", "Hostile: getrandom as a raw syscall (nr 318): randomness other than the seeded generator", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { char b[8]; sys3(318, (long)b, 8, 0); say("survived"); }
HINT { say("none"); }
