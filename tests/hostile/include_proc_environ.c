/* expect: compile_error
 * tries: #include "/proc/self/environ" to leak the worker's environment through an error.
 */
#include "/proc/self/environ"
#include <spade/dsl.h>
ENV("include-environ", "Hostile: includes /proc/self/environ.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
