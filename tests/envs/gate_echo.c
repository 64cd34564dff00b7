/* gate_echo.c — test environment for obs_echo: "type back the code shown"
 * is won by echoing the observation's number. Not part of stdenv. */
#include <spade/dsl.h>
ENV("gate_echo", "Type back the code.", .max_steps = 2, .family = "test")
STATE { long code; };
RESET { S->code = rand_range(1000, 9999); say("Your code is %ld. Type it back.", S->code); }
STEP { finish(parse_int(action) == S->code); }
HINT { say("Read carefully."); }
SOLVE { act("%ld", S->code); }
