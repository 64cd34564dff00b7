/* expect: compile_error
 * tries: 100 nested `#if 1`. libtcc keeps #if nesting in a 64-entry table and, past
 * it, reports "memory full (ifdef)": a limit of the compiler that the source broke,
 * not the worker's memory. The word "memory full" made it out_of_memory (which means
 * the address-space limit was hit) until core/jit told tcc's fixed tables apart from
 * a failed allocation. docs/sandbox.md: the source's fault is a compile error.
 * fill: @IF@ 100 #if 1\n
 * fill: @ENDIF@ 100 #endif\n
 */
#include <spade/dsl.h>
@IF@
ENV("deep-ifdef", "Hostile: #if nested 100 deep.", .max_steps = 10)
@ENDIF@
STATE { int n; };
RESET { say("ready"); }
STEP { say("x"); }
HINT { say("none"); }
