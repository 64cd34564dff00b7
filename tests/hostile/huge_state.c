/* expect: invalid_env
 * tries: a memory bomb through the state: STATE of 1 GiB. The host validates state_size
 * against SPADE_STATE_MAX (16 MiB) at load, before allocating any instance.
 */
#include <spade/dsl.h>
ENV("huge-state", "Hostile: a 1 GiB state.", .max_steps = 10)
STATE { char buf[1 << 30]; };
RESET { S->buf[0] = 1; say("ready"); }
STEP { say("ok"); }
HINT { say("none"); }
