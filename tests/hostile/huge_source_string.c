/* expect: ok
 * tries: a 10 MB source that is one 10 MB string literal (adjacent literals joined),
 * kept in the code image: real work for the compiler, still within the deadline.
 * fill: @PAD@ 160000 "stringstringstringstringstringstringstringstringstringstring"\n
 */
#include <spade/dsl.h>
ENV("huge-string", "Hostile: a 10 MB string literal.", .max_steps = 10)
STATE { int n; };
static const char blob[] =
@PAD@;
RESET { say("ready %lu", (unsigned long)sizeof blob); }
STEP { say("%c", blob[rand_range(0, (long)sizeof blob - 2)]); }
HINT { say("none"); }
