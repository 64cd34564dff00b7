/* expect: protocol_violation
 * tries: exit_group(0) as a raw syscall (nr 231) in step: exit is on the allowlist (the worker
 * needs it), so no signal: the parent just sees the socket close mid-call, without a reply
 * frame. That is a truncated stream: protocol_violation (not crash, there is no signal).
 */
#include <spade/dsl.h>
ENV("exit-raw", "Hostile: exits in the middle of a call.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(231, 0, 0, 0); }
HINT { say("none"); }
