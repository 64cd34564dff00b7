/* expect: timeout
 * tries: an infinite loop in spade_state_size(), written by hand against env.h: the host
 * calls it while loading, so the load itself must hit its deadline.
 */
#include <spade/dsl.h>
ENV("loop-state-size", "Hostile: state_size never returns.", .max_steps = 10)
struct spade_state *spade_S;
unsigned long spade_state_size(void) { volatile int x = 0; for (;;) x++; return 8; }
void spade_reset(void) { say("ready"); }
void spade_step(const char *action, unsigned long len) { say("ok"); }
void spade_hint(void) { say("none"); }
