/* digit_first.c — test environment: one step, won by an action whose first
 * byte is a digit. Trivially learnable by a policy from scratch (about 10 of
 * 263 byte tokens win at first), so tests/test_agent can show GRPO working in
 * seconds. Not part of stdenv. */
#include <spade/dsl.h>
ENV("digit_first", "Answer with anything that starts with a digit.", .max_steps = 1, .family = "math")
PARAM(int, unused, 0, 0, 1)
STATE { int x; };
RESET { say("Say a number."); }
STEP { finish(action_len > 0 && isdigit((unsigned char)action[0])); }
HINT { say("Start with a digit."); }
SOLVE { act("7"); }
