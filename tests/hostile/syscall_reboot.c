/* expect: forbidden_syscall
 * tries: reboot with a wrong magic number (nr 169): harmless even if let through, but not on the allowlist.
 */
#include <spade/dsl.h>
ENV("syscall-reboot", "Hostile: reboot with a wrong magic number (nr 169): harmless even if let through, but not", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(169, 0, 0, 0); say("survived"); }
HINT { say("none"); }
