/* expect: forbidden_syscall
 * tries: io_uring_setup as a raw syscall (nr 425): a way around per-syscall filters.
 */
#include <spade/dsl.h>
ENV("syscall-io-uring", "Hostile: io_uring_setup as a raw syscall (nr 425): a way around per-syscall filters", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long p[16]; memset(p, 0, sizeof p); sys3(425, 8, (long)p, 0); say("survived"); }
HINT { say("none"); }
