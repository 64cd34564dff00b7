/* expect: invalid_env
 * tries: a param whose default lies outside [min, max], and min > max.
 */
#include <spade/dsl.h>
ENV("param-range", "Hostile: an impossible param range.", .max_steps = 10)
STATE { int n; };
static int level = 5;
spade_param_def spade_param_0 = {"level", SPADE_PARAM_INT, &level, 50, 10, 1, ""};
RESET { say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
