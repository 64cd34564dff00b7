/* expect: ok
 * tries: open("/etc/passwd") then read it as raw syscalls, and say what it read. open gets
 * EACCES, so nothing is read: ok; the runner rejects any text holding "root:x:0:0"
 * or SPADE_PWNED (said if the open succeeded).
 */
#include <spade/dsl.h>
ENV("open-raw-passwd", "Hostile: raw open of /etc/passwd.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { char buf[256]; long n = 0; long fd = sys3(2, (long)"/etc/passwd", 0, 0); if (fd >= 0) n = sys3(0, fd, (long)buf, 255); if (n < 0) n = 0; buf[n] = 0; say("%s: %s", fd >= 0 ? "SPADE_PWNED" : "refused", buf); }
HINT { say("none"); }
