/* bad_tool.c — invalid test environment: a tool whose signature no call could match. */
#include <spade/dsl.h>
ENV("bad_tool", "A tool with an unparseable signature.")
STATE { int x; };
static int zap(int x) { return x; }
spade_tool_def spade_tool_0 = {"zap", "int (struct foo x)", "Zaps.", (void *)zap};
RESET { say("hi"); }
STEP { finish(1); }
HINT { say("none"); }
