/* cur_step.c — test environment for the adaptive curriculum: at hard = 0
 * every answer wins, above it none does, so a curriculum over `hard` must go
 * up after a window at 0 and come back down after a window above it. Not
 * part of stdenv. */
#include <spade/dsl.h>
ENV("cur_step", "Won only at the easiest level.", .max_steps = 1, .family = "test")
PARAM(int, hard, 0, 0, 4)
STATE { int x; };
RESET { say("Say anything."); }
STEP { finish(hard == 0); }
HINT { say("It depends on the level."); }
SOLVE { act("ok"); }
