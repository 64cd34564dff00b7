/* ep_record.c — test environment for the scripted agents: every observation
 * repeats the action it got; the hint has numbers, words and lines to echo.
 * Ends only by max_steps. Not part of stdenv. */
#include <spade/dsl.h>
ENV("ep-record", "Repeats what it is told.", .max_steps = 20, .family = "test")
STATE { long n; };
RESET { say("Say: alpha 12 beta\nsecond line"); }
STEP { say("got [%.*s] at %ld", (int)action_len, action, steps() + 1); }
HINT { say("Try 42 or -7, then 2.5.\n  Say (left), right!\nTry 42"); }
