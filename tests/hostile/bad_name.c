/* expect: invalid_env
 * tries: a name with spaces, a slash and a newline (names are [a-z0-9_-]+).
 */
#include <spade/dsl.h>
ENV("../evil name\n", "Hostile: a name that is not an identifier.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
