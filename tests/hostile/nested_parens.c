/* expect: crash
 * tries: a compile bomb: 200000 nested parentheses around a constant (the runner
 * expands @OPEN@ and @CLOSE@). tcc parses expressions by recursive descent with no depth
 * limit, so the compiler itself overflows its stack: the worker dies of SIGSEGV while
 * compiling, before any environment code exists. That is a crash, and it is contained.
 * fill: @OPEN@ 200000 (
 * fill: @CLOSE@ 200000 )
 */
#include <spade/dsl.h>
ENV("nested-parens", "Hostile: deeply nested parentheses.", .max_steps = 10)
STATE { int n; };
RESET { say("%d", @OPEN@1@CLOSE@); }
STEP { say("ok"); }
HINT { say("none"); }
