/* expect: ok
 * tries: source bytes that are not UTF-8 (0xff 0xfe, a lone 0x80, an overlong 0xc0 0x80)
 * in a comment and in a string literal: tcc reads bytes, so this compiles and runs.
 */
/* junk: ÿþ € À€ â‚ */
#include <spade/dsl.h>
ENV("utf8-source", "Hostile: invalid UTF-8 in the source ÿ.", .max_steps = 10)
STATE { int n; };
RESET { say("ready ÿþ"); }
STEP { say("ok À€"); }
HINT { say("none"); }
