/* expect: ok
 * tries: reads the time-stamp counter (rdtsc) in reset and step. The sandbox allows it:
 * determinism is the validation gate's job (same seed, same output), not the
 * sandbox's, so the outcome is ok.
 */
#include <spade/dsl.h>
ENV("ok-rdtsc", "Hostile: reads the cycle counter.", .max_steps = 10)
STATE { int n; };
static unsigned long tsc(void) { unsigned lo, hi; __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi)); return ((unsigned long)hi << 32) | lo; }
RESET { say("tsc %lu", tsc() & 0xff); }
STEP { say("tsc %lu", tsc() & 0xff); }
HINT { say("none"); }
