/* tmpl_mark.c — test template for [designer] source = template (tests/test_template.sh):
 * two holes a policy from scratch fills with random bytes. The first ends a
 * line comment (nearly any filling compiles); the second is the body of an
 * unused macro (some random bytes do not compile), so the gates see valid and
 * invalid fillings. The game is won by an action whose first byte is above
 * 127: a policy from scratch wins about half its plays and the gates' agents
 * (ASCII only) never do, so valid fillings get differing rewards. Not stdenv. */
#include <spade/dsl.h>
ENV("tmpl_mark", "Answer with a byte above 127.", .max_steps = 1, .family = "test")
// a note: @@
#define NOTE @@
STATE { int x; };
RESET { say("Say something."); }
STEP { finish(action_len > 0 && (unsigned char)action[0] >= 128); }
HINT { say("begin high."); }
SOLVE { act("\xc3\xa9"); }
