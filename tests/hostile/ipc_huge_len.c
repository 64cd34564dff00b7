/* expect: protocol_violation
 * tries: writes a frame header with the right magic and type RESULTS but a length of
 * 0xfffffff0 bytes (over the parent's 64 MiB cap), then returns: the parent must refuse
 * the length, not allocate it or wait for 4 GiB.
 * The IPC socket is fd 3 in every worker (SPADE_WORKER_FD, core/sandbox/internal.h): the
 * worker closes every other fd, so it is the only one open; the filter lets write/read
 * through on it alone.
 */
#include <spade/dsl.h>
ENV("ipc-huge-len", "Hostile: a forged frame header.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { unsigned int h[3]; h[0] = 0x30445053u; h[1] = 0x103; h[2] = 0xfffffff0u; sys3(1, 3, (long)h, sizeof h); say("ok"); }
HINT { say("none"); }
