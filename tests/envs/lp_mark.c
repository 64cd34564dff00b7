/* lp_mark.c — test environment for the learning-potential reward: one step,
 * won by an action whose first byte is not ASCII (128..255). A policy from
 * scratch wins about half its plays (128 of its 263 byte tokens), so a micro
 * run's plays carry a learning signal and the look-ahead step moves its pass
 * rate, while the gates' random agent (numbers, words, letters: ASCII only),
 * the no-op agent and the hint echo never win it. Not part of stdenv. */
#include <spade/dsl.h>
ENV("lp_mark", "Answer with anything that starts with a byte above 127.", .max_steps = 1, .family = "test")
PARAM(int, unused, 0, 0, 1)
STATE { int x; };
RESET { say("Say something."); }
STEP { finish(action_len > 0 && (unsigned char)action[0] >= 128); }
HINT { say("Begin with a byte such as 0xC3."); }
SOLVE { act("\xc3\xa9"); }
