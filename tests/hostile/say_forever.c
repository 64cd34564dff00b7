/* expect: timeout
 * tries: say() in an endless loop in reset. The runtime drops output past the 64 KiB cap and
 * flags it, but it cannot stop a loop that never returns: the call deadline does. So
 * timeout, not output_too_large (say_loop.c is the bounded one); what matters is that
 * the worker's memory does not grow and the parent gets its answer in time.
 */
#include <spade/dsl.h>
ENV("say-forever", "Hostile: says forever.", .max_steps = 10)
STATE { int n; };
RESET { for (;;) say("all work and no play "); }
STEP { say("ok"); }
HINT { say("none"); }
