/* expect: forbidden_syscall
 * tries: mmap an anonymous RWX page (raw nr 9), copy in shellcode `mov eax,57; syscall; ret` (fork)
 * and call it. Whether mmap with PROT_EXEC is refused (killed) or allowed (then the
 * shellcode's fork is killed), the worker dies of SIGSYS; if mmap merely fails, the
 * program does the fork syscall directly.
 */
#include <spade/dsl.h>
ENV("mmap-exec-shellcode", "Hostile: mmap an anonymous RWX page (raw nr 9), copy in shellcode `mov eax,57", .max_steps = 10)
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
STEP { static const unsigned char code[] = {0xb8, 57, 0, 0, 0, 0x0f, 0x05, 0xc3};
    long p = sys6(9, 0, 4096, 7, 0x22, -1, 0);
    if (p < 0 && p > -4096) sys6(57, 0, 0, 0, 0, 0, 0);
    memcpy((void *)p, code, sizeof code);
    ((void (*)(void))p)(); say("survived"); }
HINT { say("none"); }
