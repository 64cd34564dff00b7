/* expect: invalid_env
 * tries: an environment without spade_meta (no ENV line).
 */
#include <spade/dsl.h>
STATE { int n; };
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
