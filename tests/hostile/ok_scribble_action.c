/* expect: ok
 * tries: casts away const and overwrites the action buffer the runtime handed it (all of
 * action_len bytes): legal memory, so ok; the runtime must not reuse it.
 */
#include <spade/dsl.h>
ENV("scribble-action", "Hostile: writes into the action buffer.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { char *p = (char *)action; unsigned long i; for (i = 0; i < action_len; i++) p[i] = 'Z'; say("wrote %lu", (unsigned long)action_len); }
HINT { say("none"); }
