/* expect: protocol_violation
 * tries: on its first step writes a well-formed RESULTS frame for the two instances the
 * parent stepped (right count, flags, statuses and observations) whose first reward is
 * NaN and whose second episode return is +inf, then spins so that the host's honest
 * frame never follows. The host never returns a non-finite value (a reward() of NaN or
 * inf fails the step: SPADE_REWARD_MAX, core/env.h), so the parent must refuse one
 * (core/sandbox/ipc.c, spade_ipc_decode_results): a NaN return would reach every mean,
 * advantage and gradient of the trainer. Without that check the parent takes the
 * forgery, and the next call times out on the spinning worker.
 * The IPC socket is fd 3 in every worker (SPADE_WORKER_FD, core/sandbox/internal.h).
 * Layout of spade_wire_result (core/sandbox/ipc.h) on x86-64: reward @0,
 * episode_return @8, obs_len @16, terminated, truncated, success, status @20..23;
 * 24 bytes.
 */
#include <spade/dsl.h>
ENV("ipc-forged-nan", "Hostile: forges a NaN reward on the IPC socket.", .max_steps = 10)
STATE { int n; };
/* A raw system call, bypassing the runtime: the seccomp filter lets write through on fd 3. */
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
static unsigned char frame[12 + 4 + 2 * 24 + 3 + 3];
RESET { say("ready"); }
STEP {
    unsigned int *h = (unsigned int *)frame, two = 2, obs_len = 2;
    unsigned long long nan_bits = 0x7ff8000000000000ULL, inf_bits = 0x7ff0000000000000ULL;
    unsigned char *rec = frame + 16;
    volatile int spin = 1;
    h[0] = 0x30445053u; /* SPADE_IPC_MAGIC */
    h[1] = 0x103;       /* SPADE_MSG_RESULTS */
    h[2] = sizeof frame - 12;
    memcpy(frame + 12, &two, 4);
    memcpy(rec, &nan_bits, 8);          /* result 0: reward NaN, return 0 */
    memcpy(rec + 16, &obs_len, 4);
    memcpy(rec + 24 + 8, &inf_bits, 8); /* result 1: reward 0, return +inf */
    memcpy(rec + 24 + 16, &obs_len, 4);
    memcpy(frame + 16 + 2 * 24, "ok\0ok\0", 6);
    sys3(1, 3, (long)frame, sizeof frame);
    while (spin)
        ;
}
HINT { say("none"); }
