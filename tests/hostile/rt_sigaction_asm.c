/* expect: crash
 * tries: installs a SIGSEGV handler that spins forever (raw rt_sigaction, nr 13, with
 * SA_RESTORER), then dereferences NULL. The filter refuses rt_sigaction (EPERM), so
 * the fault kills the worker: crash. Had the handler been installed, the call would hang
 * until the deadline (timeout) instead: the outcome tells which happened.
 */
#include <spade/dsl.h>
ENV("sigaction-segv", "Hostile: catches its own SIGSEGV.", .max_steps = 10)
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
static void spin(int sig) { volatile int x = sig; for (;;) x++; }
RESET { say("ready"); }
STEP { long act[4]; memset(act, 0, sizeof act); act[0] = (long)(void *)spin; act[1] = 0x04000000L; act[2] = (long)(void *)spin;
    sys6(13, 11, (long)act, 0, 8, 0, 0);
    { volatile int *p = 0; say("%d", *p); } }
HINT { say("none"); }
