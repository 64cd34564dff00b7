/* expect: forbidden_syscall
 * tries: mprotect its own stack page RWX (raw nr 10), write `mov eax,57; syscall; ret` (fork)
 * there and jump to it; if mprotect fails, fork with a raw syscall instead.
 */
#include <spade/dsl.h>
ENV("mprotect-stack-exec", "Hostile: mprotect its own stack page RWX (raw nr 10), write `mov eax,57", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { unsigned char buf[8192]; unsigned long page = ((unsigned long)buf + 4095) & ~4095UL;
    static const unsigned char code[] = {0xb8, 57, 0, 0, 0, 0x0f, 0x05, 0xc3};
    long r = sys3(10, (long)page, 4096, 7);
    if (r != 0) sys3(57, 0, 0, 0);
    memcpy((void *)page, code, sizeof code);
    ((void (*)(void))page)(); say("survived"); }
HINT { say("none"); }
