/* expect: ok
 * tries: openat(AT_FDCWD, "spade_hostile_pwned_openat", O_CREAT|O_WRONLY) as a raw syscall
 * (nr 257): a file in the worker's cwd. EACCES, so ok; the runner checks the cwd stays empty.
 */
#include <spade/dsl.h>
ENV("openat-raw-cwd", "Hostile: raw openat with O_CREAT in the cwd.", .max_steps = 10)
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
STEP { long fd = sys6(257, -100, (long)"spade_hostile_pwned_openat", 0101, 0644, 0, 0); say("openat: %s", fd >= 0 ? "SPADE_PWNED" : "refused"); if (fd >= 0) sys6(1, fd, (long)"pwned", 5, 0, 0, 0); }
HINT { say("none"); }
