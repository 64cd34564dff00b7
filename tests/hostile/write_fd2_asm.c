/* expect: forbidden_syscall
 * tries: write(2, ...) as a raw syscall (nr 1): the filter allows write only on the IPC socket.
 */
#include <spade/dsl.h>
ENV("write-fd2-asm", "Hostile: write(2, ", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(1, 2, (long)"pwned\n", 6); say("survived"); }
HINT { say("none"); }
