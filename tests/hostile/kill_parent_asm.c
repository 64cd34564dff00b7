/* expect: forbidden_syscall
 * tries: kill(getppid(), SIGKILL) as raw syscalls (nr 110, 62): the parent is the zygote.
 */
#include <spade/dsl.h>
ENV("kill-parent-asm", "Hostile: kill(getppid(), SIGKILL) as raw syscalls (nr 110, 62): the parent is the zygote", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long pp = sys3(110, 0, 0, 0); if (pp > 1) sys3(62, pp, 9, 0); say("survived"); }
HINT { say("none"); }
