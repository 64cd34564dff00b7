/* expect: compile_error
 * tries: a 10 MB source of garbage after a valid start (the runner expands @PAD@):
 * fill: @PAD@ 400000 @#$ garbage ` tokens \\ \x01\x02 \n
 * the compiler stops at the first bad token; the parent must not wait for anything else.
 */
#include <spade/dsl.h>
ENV("huge-garbage", "Hostile: 10 MB of garbage.", .max_steps = 10)
@PAD@
