/* expect: forbidden_syscall
 * tries: the x32 ABI: getppid with bit 30 set (0x40000000 | 110); a filter that forgets the x32 bit lets any syscall through.
 */
#include <spade/dsl.h>
ENV("syscall-x32", "Hostile: the x32 ABI: getppid with bit 30 set (0x40000000 | 110)", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(0x40000000L | 110, 0, 0, 0); say("survived"); }
HINT { say("none"); }
