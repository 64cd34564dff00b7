/* expect: forbidden_syscall
 * tries: execve("/bin/sh", ["/bin/sh", "-c", "touch /tmp/spade_hostile_pwned_execve"]) as a raw syscall (nr 59).
 */
#include <spade/dsl.h>
ENV("execve-asm", "Hostile: execve('/bin/sh', ['/bin/sh', '-c', 'touch /tmp/spade_hostile_pwned_execve']) as", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { const char *argv[4]; argv[0] = "/bin/sh"; argv[1] = "-c"; argv[2] = "touch /tmp/spade_hostile_pwned_execve"; argv[3] = 0; sys3(59, (long)argv[0], (long)argv, 0); say("survived"); }
HINT { say("none"); }
