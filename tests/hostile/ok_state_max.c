/* expect: ok
 * tries: a state of exactly SPADE_STATE_MAX (16 MiB), written end to end in reset: the
 * limit is inclusive, so this is ok (huge_state.c is the one over it).
 */
#include <spade/dsl.h>
ENV("state-max", "Hostile: the largest state allowed.", .max_steps = 10)
STATE { char buf[16 * 1024 * 1024]; };
RESET { long i; for (i = 0; i < (long)sizeof S->buf; i += 4096) S->buf[i] = (char)i; say("ready %d", S->buf[4096]); }
STEP { say("ok"); }
HINT { say("none"); }
