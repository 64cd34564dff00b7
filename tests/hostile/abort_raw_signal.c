/* expect: forbidden_syscall
 * tries: abort by raising SIGABRT on itself: kill(getpid(), SIGABRT) as raw syscalls (nr 39, 62).
 * Sending a signal is a syscall the allowlist does not have, so the filter kills the
 * worker with SIGSYS before any SIGABRT exists: forbidden_syscall, not crash.
 */
#include <spade/dsl.h>
ENV("abort-raw-signal", "Hostile: abort by raising SIGABRT on itself: kill(getpid(), SIGABRT) as raw syscalls (nr ", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long me = sys3(39, 0, 0, 0); sys3(62, me, 6, 0); say("survived"); }
HINT { say("none"); }
