/* expect: ok
 * tries: write(2, ...) as a raw syscall (nr 1). fd 2 is closed in the worker, and the filter
 * answers write on fd 2 with EBADF instead of a kill (glibc's fatal-error path writes
 * there just before abort(), and that abort must end as a crash). So the write fails,
 * nothing is written anywhere, and the environment goes on: ok. A write that succeeded
 * would say SPADE_PWNED, which the runner rejects in any returned text.
 */
#include <spade/dsl.h>
ENV("write-fd2", "Hostile: writes to stderr.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long r = sys3(1, 2, (long)"pwned\n", 6); say("write: %s", r < 0 ? "refused" : "SPADE_PWNED"); }
HINT { say("none"); }
