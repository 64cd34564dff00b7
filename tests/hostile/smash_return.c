/* expect: crash
 * tries: overwrites its own frame and return address with 0x41 bytes from a local array
 * (memset over 4 KiB above it); returning jumps to a non-canonical address (SIGSEGV).
 */
#include <spade/dsl.h>
ENV("smash-return", "Hostile: smashes its return address.", .max_steps = 10)
STATE { int n; };
static void smash(void) { volatile char buf[16]; memset((char *)buf, 0x41, 4096); }
RESET { say("ready"); }
STEP { smash(); say("survived"); }
HINT { say("none"); }
