/* expect: protocol_violation
 * tries: writes 64 bytes of garbage (no magic) onto its own IPC socket in step, then returns
 * normally: the parent reads garbage where a frame header should be.
 * The IPC socket is fd 3 in every worker (SPADE_WORKER_FD, core/sandbox/internal.h): the
 * worker closes every other fd, so it is the only one open; the filter lets write/read
 * through on it alone.
 */
#include <spade/dsl.h>
ENV("garbage-ipc", "Hostile: garbage on the IPC socket.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(1, 3, (long)"GARBAGE GARBAGE GARBAGE GARBAGE GARBAGE GARBAGE GARBAGE GARBAGE!", 64); say("ok"); }
HINT { say("none"); }
