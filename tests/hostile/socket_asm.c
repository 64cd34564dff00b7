/* expect: forbidden_syscall
 * tries: socket(AF_INET, SOCK_STREAM) as a raw syscall (nr 41) in reset.
 */
#include <spade/dsl.h>
ENV("socket-asm", "Hostile: socket(AF_INET, SOCK_STREAM) as a raw syscall (nr 41) in reset", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { sys3(41, 2, 1, 0); say("survived"); }
STEP { say("ok"); }
HINT { say("none"); }
