/* expect: forbidden_syscall
 * tries: ptrace(PTRACE_TRACEME) as a raw syscall (nr 101).
 */
#include <spade/dsl.h>
ENV("ptrace-asm", "Hostile: ptrace(PTRACE_TRACEME) as a raw syscall (nr 101)", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(101, 0, 0, 0); say("survived"); }
HINT { say("none"); }
