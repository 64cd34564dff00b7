/* bad_param.c — invalid test environment: a param default outside its range. */
#include <spade/dsl.h>
ENV("bad_param", "Default outside the range.")
PARAM(int, size, 50, 1, 30)
STATE { int x; };
RESET { say("size %d", size); }
STEP { finish(1); }
HINT { say("none"); }
