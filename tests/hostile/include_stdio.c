/* expect: compile_error
 * tries: #include <stdio.h>: there are no system headers (-nostdinc).
 */
#include <stdio.h>
#include <spade/dsl.h>
ENV("include-stdio", "Hostile: includes stdio.h.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { printf("pwned"); say("ok"); }
HINT { say("none"); }
