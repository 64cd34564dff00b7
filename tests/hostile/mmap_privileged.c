/* expect: ok
 * tries: mmap (allowed for malloc and the code image) with MAP_HUGETLB (pages from the
 * machine-wide huge page pool, which a GPU trainer may have reserved) and with
 * MAP_LOCKED (unswappable memory: RLIMIT_MEMLOCK is 0, but a root worker that the
 * kernel refused a user namespace keeps CAP_IPC_LOCK, which overrides it), 8 MiB each.
 * The filter refuses both with EPERM, so the worker lives on (ok). Anything but EPERM
 * says SPADE_PWNED: on a machine without huge pages and without CAP_IPC_LOCK the kernel
 * fails both calls itself (ENOMEM, EAGAIN), so only EPERM proves that the filter, not
 * the machine, refused them. A plain anonymous mmap must still work.
 */
#include <spade/dsl.h>
ENV("mmap-privileged", "Hostile: huge and locked pages.", .max_steps = 10)
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
    long huge = sys6(9, 0, 8 << 20, 3, 0x22 | 0x40000, -1, 0); /* MAP_PRIVATE|ANONYMOUS|HUGETLB */
    long lock = sys6(9, 0, 8 << 20, 3, 0x22 | 0x2000, -1, 0);  /* MAP_PRIVATE|ANONYMOUS|LOCKED */
    long plain = sys6(9, 0, 4096, 3, 0x22, -1, 0);
    if (plain < 0 && plain > -4096) say("plain mmap refused; ");
    say(huge == -1 && lock == -1 ? "refused" : "SPADE_PWNED");
}
HINT { say("none"); }
