/* expect: ok
 * tries: open("/tmp/spade_hostile_pwned_open", O_CREAT|O_WRONLY) as a raw syscall (nr 2) in reset
 * and step. The filter answers open/openat with EACCES (tcc itself probes files), so the
 * environment goes on: the outcome is ok, and the runner checks the file never appears
 * (and that no text says SPADE_PWNED, which a successful open would).
 */
#include <spade/dsl.h>
ENV("open-raw-tmp", "Hostile: raw open with O_CREAT.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { long fd = sys3(2, (long)"/tmp/spade_hostile_pwned_open", 0101, 0644); say("open: %s", fd >= 0 ? "SPADE_PWNED" : "refused"); }
STEP { long fd = sys3(2, (long)"/tmp/spade_hostile_pwned_open", 01101, 0644); say("open: %s", fd >= 0 ? "SPADE_PWNED" : "refused"); if (fd >= 0) sys3(1, fd, (long)"pwned", 5); }
HINT { say("none"); }
