/* expect: crash
 * tries: an undefined instruction (ud2) in step (SIGILL).
 */
#include <spade/dsl.h>
ENV("ud2", "Hostile: illegal instruction.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { __asm__ __volatile__("ud2"); say("survived"); }
HINT { say("none"); }
