/* expect: protocol_violation
 * tries: forges the LOADED reply from spade_state_size() (which the host calls while
 * loading): a spade_env_info whose name is a terminal escape sequence ("\x1b]0;owned\x07"
 * retitles the user's terminal when `spade list/play/run` print it), whose description
 * clears the screen, and whose max_steps is INT_MAX (spade check loops to max_steps + 1,
 * which overflows, and plays 2^31 steps before it gives up). Then it spins, so the
 * host's own, honest LOADED frame never follows and the parent reads only the forgery.
 * The host validates metadata inside the worker, but the worker runs this code: the
 * parent must apply the same rules to what it receives (ipc.c, spade_ipc_decode_info).
 * Before that fix the load succeeded with the forged info and the next call timed out.
 * Layout of spade_env_info (core/host.h) on x86-64: abi @0, name[64] @4,
 * description[256] @68, family[32] @324, max_steps @356, success @360, state_size
 * @368, has_solve @376, n_params @380, params @384 (16 x 64), n_tools @1408, tools @1412
 * (16 x 352); 7048 bytes. If the layout changes the frame is the wrong size, which is
 * a protocol_violation too, but then this program no longer tests the strings.
 */
#include <spade/dsl.h>
ENV("ipc-forged-info", "Hostile: forges its own metadata.", .max_steps = 10)
struct spade_state *spade_S;
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
static unsigned char frame[12 + 7048];
unsigned long spade_state_size(void)
{
    unsigned int *h = (unsigned int *)frame;
    unsigned char *info = frame + 12;
    double one = 1.0;
    int big = 2147483647, abi = 1;
    h[0] = 0x30445053u; h[1] = 0x101; h[2] = 7048;
    memcpy(info, &abi, 4);
    memcpy(info + 4, "\x1b]0;owned\x07", 10);
    memcpy(info + 68, "\x1b[2J\x1b[HAll is well.", 19);
    memcpy(info + 356, &big, 4);
    memcpy(info + 360, &one, 8);
    sys3(1, 3, (long)frame, sizeof frame);
    { volatile int x = 0; for (;;) x++; }
    return 8;
}
void spade_reset(void) { say("ready"); }
void spade_step(const char *action, unsigned long len) { say("ok"); }
void spade_hint(void) { say("none"); }
