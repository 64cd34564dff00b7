/* expect: forbidden_syscall
 * tries: kill(0, SIGTERM) as a raw syscall (nr 62): the whole process group.
 */
#include <spade/dsl.h>
ENV("kill-group-asm", "Hostile: kill(0, SIGTERM) as a raw syscall (nr 62): the whole process group", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(62, 0, 15, 0); say("survived"); }
HINT { say("none"); }
