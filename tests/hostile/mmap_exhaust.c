/* expect: out_of_memory
 * tries: eats the whole address space with raw anonymous mmaps (nr 9, 64 MiB each, PROT_NONE,
 * never touched) in reset, then keeps going: the runtime needs memory for the 1 MiB
 * action the runner sends next and cannot get it.
 */
#include <spade/dsl.h>
ENV("mmap-exhaust", "Hostile: exhausts the address space.", .max_steps = 10)
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
RESET { long n = 0; while (n < 100000) { long p = sys6(9, 0, 64L << 20, 0, 0x22, -1, 0); if (p < 0 && p > -4096) break; n++; }
    while (n < 200000) { long p = sys6(9, 0, 4096, 0, 0x22, -1, 0); if (p < 0 && p > -4096) break; n++; }
    say("mapped %ld", n); }
STEP { say("%lu", (unsigned long)action_len); }
HINT { say("none"); }
