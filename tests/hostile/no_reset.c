/* expect: invalid_env
 * tries: an environment without reset (hand-written against env.h).
 */
#include <spade/dsl.h>
ENV("no-reset", "Hostile: has no reset.", .max_steps = 10)
struct spade_state *spade_S;
unsigned long spade_state_size(void) { return 8; }
void spade_step(const char *action, unsigned long len) { say("ok"); }
void spade_hint(void) { say("none"); }
