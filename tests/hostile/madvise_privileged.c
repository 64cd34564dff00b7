/* expect: ok
 * tries: madvise (allowed for malloc) with the advice values that reach beyond the
 * worker's own memory: MADV_MERGEABLE (12: hands its pages to KSM, whose merging of
 * identical pages across processes is a timing side channel on other processes'
 * memory), MADV_PAGEOUT (21: forces swap-out I/O) and MADV_SOFT_OFFLINE (101: takes a
 * physical page of the machine offline; with CAP_SYS_ADMIN, which a root trainer's
 * worker has whenever the kernel refuses it a user namespace; MADV_HWPOISON, 100, is
 * the same check and poisons shared file pages, killing every process that maps them:
 * not tried here, see docs/sandbox.md), each also with high bits set in the 64-bit
 * argument (the kernel reads an int). All must be refused with an errno (EPERM from the
 * filter): a refused advice is harmless, so the worker lives on (ok); one that succeeds
 * says SPADE_PWNED. MADV_DONTNEED, which malloc uses, must still work.
 * Before the filter checked the advice, MADV_MERGEABLE returned 0 (any user may call it).
 */
#include <spade/dsl.h>
ENV("madvise-privileged", "Hostile: madvise beyond its own memory.", .max_steps = 10)
STATE { int n; };
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
STEP {
    static const long advice[] = {12, 21, 101, 0x100000000L + 12, 0x7fffffff00000000L + 101};
    long p = sys6(9, 0, 4096, 3, 0x22, -1, 0); /* mmap PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS */
    int i, pwned = 0;
    if (p < 0 && p > -4096) { say("no memory"); return; }
    *(volatile char *)p = 1;
    for (i = 0; i < 5; i++)
        if (sys6(28, p, 4096, advice[i], 0, 0, 0) == 0) pwned = 1;
    if (sys6(28, p, 4096, 4, 0, 0, 0) != 0) say("MADV_DONTNEED refused; ");
    say(pwned ? "SPADE_PWNED" : "refused");
}
HINT { say("none"); }
