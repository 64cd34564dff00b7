/* expect: forbidden_syscall
 * tries: connect(0, 127.0.0.1:22) as a raw syscall (nr 42), skipping socket().
 */
#include <spade/dsl.h>
ENV("connect-asm", "Hostile: connect(0, 127", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { unsigned char sa[16]; memset(sa, 0, sizeof sa); sa[0] = 2; sa[3] = 22; sa[4] = 127; sa[7] = 1; sys3(42, 0, (long)sa, 16); say("survived"); }
HINT { say("none"); }
