/* expect: protocol_violation
 * tries: exit_group(121) as a raw syscall (nr 231) in step: 121 is
 * SPADE_WORKER_EXIT_LOCKDOWN (121), the status of a worker that could not lock itself down, which the parent reported as internal_error ("the sandbox itself failed; report it"). The parent never holds a worker that failed its lockdown (the zygote hands
 * out only workers that reported it done), and the compiler runs only while loading,
 * so after a load this status is the environment's own exit without a reply, like
 * exit_raw.c: protocol_violation. The environment must not pick its classification.
 */
#include <spade/dsl.h>
ENV("exit-lockdown-status", "Hostile: exits with a status the sandbox gives meaning to.", .max_steps = 10)
STATE { int n; };
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(231, 121, 0, 0); say("survived"); }
HINT { say("none"); }
