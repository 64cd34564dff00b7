/* expect: compile_error
 * tries: an expression nested 5000 deep, `(1+(1+(1+ ... 1)))`. libtcc's value stack has
 * a fixed size and, past it, reports "memory full (vstack)": a limit of the compiler
 * that the source broke, so compile_error, not out_of_memory (which it was, from the
 * words "memory full", before core/jit told tcc's tables apart from a failed
 * allocation). Far deeper nesting overflows tcc's own C stack first: nested_parens.c.
 * fill: @OPEN@ 5000 (1+
 * fill: @CLOSE@ 5000 )
 */
#include <spade/dsl.h>
ENV("deep-expression", "Hostile: an expression nested 5000 deep.", .max_steps = 10)
STATE { int n; };
RESET { int x = @OPEN@ 1 @CLOSE@; say("ready %d", x); }
STEP { say("x"); }
HINT { say("none"); }
