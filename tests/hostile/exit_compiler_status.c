/* expect: protocol_violation
 * tries: exit_group(122) as a raw syscall (nr 231) in step: 122 is
 * SPADE_WORKER_EXIT_COMPILER (122), the status of a worker whose compiler gave up, which the parent reported as out_of_memory. The parent never holds a worker that failed its lockdown (the zygote hands
 * out only workers that reported it done), and the compiler runs only while loading,
 * so after a load this status is the environment's own exit without a reply, like
 * exit_raw.c: protocol_violation. The environment must not pick its classification.
 */
#include <spade/dsl.h>
ENV("exit-compiler-status", "Hostile: exits with a status the sandbox gives meaning to.", .max_steps = 10)
STATE { int n; };
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
RESET { say("ready"); }
STEP { sys3(231, 122, 0, 0); say("survived"); }
HINT { say("none"); }
