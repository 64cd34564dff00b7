/* expect: forbidden_syscall
 * tries: fork through the 32-bit ABI: `int $0x80` with eax = 2 (fork on i386). The filter must
 * check the architecture, or the i386 numbers (different from x86-64) slip through.
 */
#include <spade/dsl.h>
ENV("int80-fork", "Hostile: i386 syscall ABI from a 64-bit process.", .max_steps = 10)
STATE { int n; };
RESET { say("ready"); }
STEP { long r; __asm__ __volatile__("int $0x80" : "=a"(r) : "a"(2L) : "memory"); say("survived %ld", r); }
HINT { say("none"); }
