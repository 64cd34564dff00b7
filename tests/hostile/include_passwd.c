/* expect: compile_error
 * tries: #include "/etc/passwd" to leak it in the compiler's error message; open is denied
 * (EACCES), so the message says the file cannot be opened and shows no content.
 */
#include "/etc/passwd"
#include <spade/dsl.h>
ENV("include-passwd", "Hostile: includes /etc/passwd.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
