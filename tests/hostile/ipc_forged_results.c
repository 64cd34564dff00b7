/* expect: protocol_violation
 * tries: writes a complete, well-formed RESULTS frame that claims 1000 results (the parent
 * asked for 2), each with a reward of 1e300 and success set, then returns: the count
 * must be checked against the request.
 * The IPC socket is fd 3 in every worker (SPADE_WORKER_FD, core/sandbox/internal.h): the
 * worker closes every other fd, so it is the only one open; the filter lets write/read
 * through on it alone.
 */
#include <spade/dsl.h>
ENV("ipc-forged", "Hostile: forged results on the IPC socket.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
static unsigned char frame[12 + 4 + 1000 * 24 + 1000];
RESET { say("ready"); }
STEP { unsigned int *h = (unsigned int *)frame; unsigned char *p = frame + 16; int i;
    h[0] = 0x30445053u; h[1] = 0x103; h[2] = sizeof frame - 12; h[3] = 1000;
    for (i = 0; i < 1000; i++) { double big = 1e300; memcpy(p + i * 24, &big, 8); memcpy(p + i * 24 + 8, &big, 8); p[i * 24 + 20] = 1; p[i * 24 + 22] = 1; }
    sys3(1, 3, (long)frame, sizeof frame); say("ok"); }
HINT { say("none"); }
