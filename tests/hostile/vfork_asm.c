/* expect: forbidden_syscall
 * tries: vfork as a raw `syscall` instruction (nr 58) in reset.
 */
#include <spade/dsl.h>
ENV("vfork-asm", "Hostile: vfork as a raw `syscall` instruction (nr 58) in reset", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { sys3(58, 0, 0, 0); say("survived"); }
STEP { say("ok"); }
HINT { say("none"); }
