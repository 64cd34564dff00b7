/* expect: forbidden_syscall
 * tries: fork as a raw `syscall` instruction (nr 57) in step.
 */
#include <spade/dsl.h>
ENV("fork-asm", "Hostile: fork as a raw `syscall` instruction (nr 57) in step", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(57, 0, 0, 0); say("survived"); }
HINT { say("none"); }
