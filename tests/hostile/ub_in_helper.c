/* expect: crash
 * tries: undefined behaviour inside a helper (parse_ints storing through a misaligned long *),
 * then a null write. A normal build stores the values (x86 allows it) and crashes on the null
 * write; a sanitizer build (--enable-sanitizers) finds the misaligned store first, in the
 * helper, and the worker must still end as a crash, not as forbidden_syscall: UBSan's report
 * path makes calls the filter refuses ("sanitizer builds" in core/sandbox/worker.c).
 */
#include <spade/dsl.h>
ENV("ub-in-helper", "Hostile: undefined behaviour inside a helper.", .max_steps = 10)
STATE { long buf[4]; };
RESET { say("ready"); }
STEP { parse_ints("1 2 3", (long *)((char *)S->buf + 1), 2); *(volatile int *)0 = 1; say("survived"); }
HINT { say("none"); }
