/* expect: forbidden_syscall
 * tries: a tool (reached through libffi when the runner sends `probe(7)`) that forks with a raw
 * syscall (nr 57): the tool path runs under the same filter.
 */
#include <spade/dsl.h>
ENV("tool-fork", "Hostile: a tool that forks.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter is what must stop it. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
TOOL(probe, "Forks.", int, (int x)) { return (int)sys3(57, 0, 0, 0) + x; }
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
