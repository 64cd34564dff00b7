/* expect: compile_error
 * tries: #include "/dev/zero": an endless file. Must be an error (open is denied), never a hang.
 */
#include "/dev/zero"
#include <spade/dsl.h>
ENV("include-dev-zero", "Hostile: includes /dev/zero.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
