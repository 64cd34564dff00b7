/* expect: forbidden_syscall
 * tries: rt_sigaction(SIGSEGV, ignore) as a raw syscall (nr 13), to survive its own faults.
 */
#include <spade/dsl.h>
ENV("rt-sigaction-asm", "Hostile: rt_sigaction(SIGSEGV, ignore) as a raw syscall (nr 13), to survive its own fault", .max_steps = 10)
STATE { int n; };
/* A raw six-argument system call (r10, r8, r9 loaded from memory in the asm text). */
static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
    long ret;
    long args[6];
    args[0] = a; args[1] = b; args[2] = c; args[3] = d; args[4] = e; args[5] = f;
    __asm__ __volatile__("movq 0(%%rbx), %%rdi\n\tmovq 8(%%rbx), %%rsi\n\tmovq 16(%%rbx), %%rdx\n\t"
                         "movq 24(%%rbx), %%r10\n\tmovq 32(%%rbx), %%r8\n\tmovq 40(%%rbx), %%r9\n\tsyscall"
                         : "=a"(ret) : "a"(nr), "b"(args) : "rdi", "rsi", "rdx", "r10", "r8", "r9", "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long act[4]; memset(act, 0, sizeof act); act[0] = 1; sys6(13, 11, (long)act, 0, 8, 0, 0); say("survived"); }
HINT { say("none"); }
