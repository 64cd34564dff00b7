/* expect: forbidden_syscall
 * tries: clone3 as a raw `syscall` instruction (nr 435) in step.
 */
#include <spade/dsl.h>
ENV("clone3-asm", "Hostile: clone3 as a raw `syscall` instruction (nr 435) in step", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long args[11]; memset(args, 0, sizeof args); args[4] = 17; sys3(435, (long)args, sizeof args, 0); say("survived"); }
HINT { say("none"); }
