/* expect: timeout
 * tries: blocks in read() (raw nr 0) on its own IPC socket, hoping to steal the parent's next
 * request; nobody writes to it while the parent waits for the reply, so it hangs and
 * the call deadline must fire.
 * The IPC socket is fd 3 in every worker (SPADE_WORKER_FD, core/sandbox/internal.h): the
 * worker closes every other fd, so it is the only one open; the filter lets write/read
 * through on it alone.
 */
#include <spade/dsl.h>
ENV("read-ipc", "Hostile: reads its own IPC socket.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { char buf[64]; sys3(0, 3, (long)buf, sizeof buf); say("survived"); }
HINT { say("none"); }
