/* expect: forbidden_syscall
 * tries: rewrites its own compiled function with `mov eax,57; syscall; ret` (fork) and calls it.
 * It first asks mprotect (raw nr 10) for RWX on that page: if that is refused, it
 * forks with a raw syscall instead, so the outcome is SIGSYS whatever the JIT's W^X policy.
 */
#include <spade/dsl.h>
ENV("self-modify", "Hostile: patches its own code.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
static int victim(void) { return 1; }
static const unsigned char code[] = {0xb8, 57, 0, 0, 0, 0x0f, 0x05, 0xc3};
RESET { say("ready"); }
STEP { unsigned long page = (unsigned long)(void *)victim & ~4095UL;
    if (sys3(10, (long)page, 8192, 7) != 0) sys3(57, 0, 0, 0);
    memcpy((void *)victim, code, sizeof code);
    say("%d", victim()); }
HINT { say("none"); }
