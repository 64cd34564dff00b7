/* expect: ok
 * tries: says bytes that are not UTF-8 (0xff, 0xfe, a lone continuation byte, an overlong
 * NUL 0xc0 0x80, a truncated sequence): text is bytes to the sandbox; ok.
 */
#include <spade/dsl.h>
ENV("utf8-output", "Hostile: invalid UTF-8 output.", .max_steps = 10)
STATE { int n; };
RESET { say("bad: \xff\xfe \x80 \xc0\x80 \xe2\x82"); }
STEP { say("again \xff"); }
HINT { say("\xfe hint"); }
