/* expect: forbidden_syscall
 * tries: creat("/tmp/spade_hostile_pwned_creat") as a raw syscall (nr 85); creat is not on the allowlist at all.
 */
#include <spade/dsl.h>
ENV("creat-asm", "Hostile: creat('/tmp/spade_hostile_pwned_creat') as a raw syscall (nr 85)", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(85, (long)"/tmp/spade_hostile_pwned_creat", 0644, 0); say("survived"); }
HINT { say("none"); }
