/* expect: link_error
 * tries: socket() then connect() to 127.0.0.1:22 as C calls.
 * A libc function outside the allowlist: tcc (-nostdlib) must fail to resolve it at relocation.
 */
#include <spade/dsl.h>
ENV("socket-call", "Hostile: calls a libc function outside the allowlist.", .max_steps = 10)
STATE { int n; };
int socket(int domain, int type, int protocol);
int connect(int fd, const void *addr, unsigned len);
RESET { say("ready"); }
STEP { unsigned char sa[16]; int fd; memset(sa, 0, sizeof sa); sa[0] = 2; sa[3] = 22; sa[4] = 127; sa[7] = 1; fd = socket(2, 1, 0); connect(fd, sa, 16); say("survived"); }
HINT { say("none"); }
