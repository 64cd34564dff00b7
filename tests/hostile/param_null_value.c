/* expect: invalid_env
 * tries: a hand-written param whose value pointer is NULL: the host writes params through
 * that pointer before every call, so it must reject it at load rather than crash.
 */
#include <spade/dsl.h>
ENV("param-null", "Hostile: a param without storage.", .max_steps = 10)
STATE { int n; };
spade_param_def spade_param_0 = {"level", SPADE_PARAM_INT, 0, 1, 0, 10, ""};
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
