/* cli_broken.c — test environment for the checker and the CLI: a syntax error
 * on line 7 (compile must fail and name the line). Not part of stdenv. */
#include <spade/dsl.h>
ENV("cli_broken", "Does not compile.", .max_steps = 1, .family = "test")
STATE { long n; };
RESET { say("Hello."); }
STEP { finish(1) }
HINT { say("None."); }
