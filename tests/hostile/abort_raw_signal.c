/* expect: forbidden_syscall
 * tries: abort by raising SIGABRT on itself: kill(getpid(), SIGABRT) as raw syscalls (nr 39, 62).
 * getpid is refused with EPERM (it is on abort()'s path), and kill is not on the
 * allowlist at all, so the filter kills the worker with SIGSYS before any SIGABRT
 * exists: forbidden_syscall, not crash. (When getpid is refused the target is a pid
 * that cannot exist, so the program is harmless even under a broken filter.)
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
STEP { long me = sys3(39, 0, 0, 0); if (me <= 1) me = 0x3ffffff0L; sys3(62, me, 6, 0); say("survived"); }
HINT { say("none"); }
