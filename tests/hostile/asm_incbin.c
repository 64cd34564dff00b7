/* expect: compile_error
 * tries: tcc's assembler: .incbin "/etc/passwd" to embed the file in the code. libtcc 0.9.27
 * has no .incbin (it rejects the directive: compile error); should a later tcc add it,
 * the open is still denied (EACCES). Either way no byte of the file may show.
 */
__asm__(".data\nspade_passwd: .incbin \"/etc/passwd\"\n.byte 0\n.text\n");
#include <spade/dsl.h>
ENV("asm-incbin", "Hostile: embeds /etc/passwd with .incbin.", .max_steps = 10)
STATE { int n; };
extern char spade_passwd[];
RESET { say("ready"); }
STEP { say("%s", spade_passwd); }
HINT { say("none"); }
