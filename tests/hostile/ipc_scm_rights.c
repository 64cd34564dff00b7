/* expect: protocol_violation
 * tries: sendmsg (raw nr 46, allowed on fd 3) with SCM_RIGHTS ancillary data passing its own
 * socket to the parent, plus one byte (stream sockets need one). The parent must not
 * end up holding a new fd (the runner counts them) and the stray byte breaks the
 * framing: protocol_violation.
 * The kernel refuses the fd passing with ETOOMANYREFS whenever the user (root here, for
 * every process on the machine) has any fd in flight: the worker's RLIMIT_NOFILE is 0
 * and, inside its own user namespace, it has no CAP_SYS_ADMIN/CAP_SYS_RESOURCE that
 * would override that. The first version of this program then got an intermittent ok.
 * Now, when sendmsg fails, it writes the byte plainly, so the outcome does not depend on
 * the rest of the machine.
 * The IPC socket is fd 3 in every worker (SPADE_WORKER_FD, core/sandbox/internal.h): the
 * worker closes every other fd, so it is the only one open; the filter lets write/read
 * through on it alone.
 */
#include <spade/dsl.h>
ENV("ipc-scm-rights", "Hostile: passes an fd to the parent.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { long msg[7]; long iov[2]; long cm[3]; int *fdp = (int *)&cm[2]; char byte = 'X';
    memset(msg, 0, sizeof msg); memset(cm, 0, sizeof cm);
    iov[0] = (long)&byte; iov[1] = 1;
    cm[0] = 20; ((int *)&cm[1])[0] = 1; ((int *)&cm[1])[1] = 1; fdp[0] = 3;
    msg[2] = (long)iov; msg[3] = 1; msg[4] = (long)cm; msg[5] = 24;
    if (sys3(46, 3, (long)msg, 0) != 1) sys3(1, 3, (long)&byte, 1);
    say("sent"); }
HINT { say("none"); }
