/* expect: output_too_large
 * tries: say("%.*d", 1000000, 7): one conversion that formats a megabyte of zeros.
 */
#include <spade/dsl.h>
ENV("say-precision", "Hostile: a huge precision.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { say("%.*d", 1000000, 7); }
HINT { say("none"); }
