/* test_ipc.c — the parent's side of the sandbox protocol against lying workers.
 *
 * What it is: Check tests that feed the parent-side decoders (core/sandbox/ipc.c)
 * crafted bytes — truncated frames, oversized lengths, garbage magic, wrong
 * types, counts that lie, strings without their NUL — first directly, then
 * through a socketpair, then from fake worker processes this test forks and
 * hands to the worker handle (spade_worker_adopt), so that the whole path from
 * a frame to a classified outcome, a killed and reaped process and a closed fd
 * is exercised without a real worker.
 * What it is not: a test of the real worker or the zygote (test_sandbox.c).
 */
#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "sandbox/ipc.h"
#include "testutil.h"

/* ---- building payloads ---------------------------------------------------------- */
typedef struct bytes {
    unsigned char p[1 << 17];
    size_t n;
} bytes;

static void put(bytes *b, const void *p, size_t n) {
    ck_assert_uint_le(b->n + n, sizeof b->p);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_u32(bytes *b, uint32_t v) { put(b, &v, sizeof v); }

static void put_result(bytes *b, double reward, uint32_t obs_len, int term, int trunc, int succ, int status) {
    spade_wire_result r;
    memset(&r, 0, sizeof r);
    r.reward = reward;
    r.episode_return = reward;
    r.obs_len = obs_len;
    r.terminated = (uint8_t)term;
    r.truncated = (uint8_t)trunc;
    r.success = (uint8_t)succ;
    r.status = (uint8_t)status;
    put(b, &r, sizeof r);
}

/* A well-formed RESULTS payload with two observations. */
static void good_results(bytes *b) {
    b->n = 0;
    put_u32(b, 2);
    put_result(b, 1.5, 2, 1, 0, 1, SPADE_HOST_OK);
    put_result(b, -0.25, 0, 0, 1, 0, SPADE_HOST_OK);
    put(b, "ab", 3);
    put(b, "", 1);
}

static char err[512];

START_TEST(results_good) {
    bytes b;
    good_results(&b);
    spade_step_result r[2];
    int bad, st;
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 2, r, &bad, &st, err, sizeof err), 0);
    ck_assert_int_eq(bad, -1);
    ck_assert_str_eq(r[0].obs, "ab");
    ck_assert_uint_eq(r[0].obs_len, 2);
    ck_assert(r[0].reward == 1.5 && r[0].terminated == 1 && r[0].success == 1);
    ck_assert_str_eq(r[1].obs, "");
    ck_assert(r[1].reward == -0.25 && r[1].truncated == 1 && r[1].terminated == 0);
}
END_TEST

START_TEST(results_count_lies) {
    bytes b;
    good_results(&b);
    spade_step_result r[3];
    int bad, st;
    /* The frame says 2; we asked for 3 (and for 1). */
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 3, r, &bad, &st, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "count"));
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), -1);
    /* A count that matches the request but not the records present. */
    b.n = 0;
    put_u32(&b, 3);
    put_result(&b, 0, 0, 0, 0, 0, 0);
    put(&b, "", 1);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 3, r, &bad, &st, err, sizeof err), -1);
    /* A huge count cannot overflow the size arithmetic. */
    b.n = 0;
    put_u32(&b, 0xffffffffu);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 0xffffffffu, r, &bad, &st, err, sizeof err), -1);
}
END_TEST

START_TEST(results_truncated) {
    bytes b;
    good_results(&b);
    spade_step_result r[2];
    int bad, st;
    for (size_t cut = 0; cut < b.n; cut++)
        ck_assert_msg(spade_ipc_decode_results(b.p, cut, 2, r, &bad, &st, err, sizeof err) == -1,
                      "accepted a frame cut at %zu of %zu bytes", cut, b.n);
    /* One byte more than the observations need: left over. */
    put(&b, "x", 1);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 2, r, &bad, &st, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "left over"));
}
END_TEST

START_TEST(results_bad_fields) {
    spade_step_result r[1];
    int bad, st;
    bytes b;
    /* observation longer than the frame */
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, 0, 100, 0, 0, 0, 0);
    put(&b, "short", 6);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), -1);
    /* observation without its NUL */
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, 0, 3, 0, 0, 0, 0);
    put(&b, "abcd", 4);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "NUL"));
    /* flags that are not booleans */
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, 0, 0, 2, 0, 0, 0);
    put(&b, "", 1);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), -1);
    /* unknown status */
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, 0, 0, 0, 0, 0, 9);
    put(&b, "", 1);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), -1);
    /* a failed item may not carry an observation */
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, 0, 2, 0, 0, 0, SPADE_HOST_BAD_CALL);
    put(&b, "no", 3);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), -1);
    /* an observation over SPADE_OBS_MAX, even when the frame holds it */
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, 0, SPADE_OBS_MAX + 1, 0, 0, 0, 0);
    static char big[SPADE_OBS_MAX + 2];
    memset(big, 'a', SPADE_OBS_MAX + 1);
    big[SPADE_OBS_MAX + 1] = '\0';
    put(&b, big, sizeof big);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "SPADE_OBS_MAX"));
    /* a reward or a return that is not finite, on any item (the host never
     * returns one), however well-formed the rest */
    static const struct {
        double reward, ret;
        int status;
    } nonfinite[] = {
        {NAN, 0.0, SPADE_HOST_OK},
        {-NAN, 0.0, SPADE_HOST_OK},
        {INFINITY, 1.0, SPADE_HOST_OK},
        {-INFINITY, 1.0, SPADE_HOST_OK},
        {1.0, INFINITY, SPADE_HOST_OK},
        {0.0, NAN, SPADE_HOST_OK},
        {0.0, -INFINITY, SPADE_HOST_OK},
        {NAN, 0.0, SPADE_HOST_BAD_CALL},
        {0.0, INFINITY, SPADE_HOST_OUTPUT_TOO_LARGE},
        /* finite but beyond what the host can return (core/env.h SPADE_REWARD_MAX) */
        {DBL_MAX, 0.0, SPADE_HOST_OK},
        {-SPADE_REWARD_MAX * 2, 0.0, SPADE_HOST_OK},
        {0.0, 1e16, SPADE_HOST_OK},
    };
    for (size_t k = 0; k < sizeof nonfinite / sizeof *nonfinite; k++) {
        spade_step_result two[2];
        b.n = 0;
        put_u32(&b, 2);
        put_result(&b, SPADE_REWARD_MAX, 2, 0, 0, 0, SPADE_HOST_OK); /* the largest values pass */
        spade_wire_result w;
        memset(&w, 0, sizeof w);
        w.reward = nonfinite[k].reward;
        w.episode_return = nonfinite[k].ret;
        w.status = (uint8_t)nonfinite[k].status;
        put(&b, &w, sizeof w);
        put(&b, "ok", 3);
        put(&b, "", 1);
        err[0] = '\0';
        ck_assert_msg(spade_ipc_decode_results(b.p, b.n, 2, two, &bad, &st, err, sizeof err) == -1,
                      "case %zu: accepted", k);
        ck_assert_msg(strstr(err, "result 1:") && strstr(err, "not finite or out of bounds"), "case %zu: '%s'", k, err);
    }
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, -SPADE_REWARD_MAX, 0, 0, 0, 0, SPADE_HOST_OK);
    put(&b, "", 1);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), 0);
    ck_assert(r[0].reward == -SPADE_REWARD_MAX && r[0].episode_return == -SPADE_REWARD_MAX);
    /* a failed item is reported, not rejected */
    b.n = 0;
    put_u32(&b, 1);
    put_result(&b, 0, 0, 0, 0, 0, SPADE_HOST_OUTPUT_TOO_LARGE);
    put(&b, "", 1);
    ck_assert_int_eq(spade_ipc_decode_results(b.p, b.n, 1, r, &bad, &st, err, sizeof err), 0);
    ck_assert_int_eq(bad, 0);
    ck_assert_int_eq(st, SPADE_HOST_OUTPUT_TOO_LARGE);
}
END_TEST

START_TEST(text_and_fail_and_added) {
    bytes b;
    int status;
    const char *t;
    size_t tl;
    b.n = 0;
    put_u32(&b, SPADE_HOST_OK);
    put_u32(&b, 4);
    put(&b, "hint", 5);
    ck_assert_int_eq(spade_ipc_decode_text(b.p, b.n, &status, &t, &tl, err, sizeof err), 0);
    ck_assert_str_eq(t, "hint");
    ck_assert_int_eq(spade_ipc_decode_text(b.p, b.n - 1, &status, &t, &tl, err, sizeof err), -1);
    b.p[0] = 7; /* unknown status */
    ck_assert_int_eq(spade_ipc_decode_text(b.p, b.n, &status, &t, &tl, err, sizeof err), -1);
    b.n = 0;
    put_u32(&b, 0);
    put_u32(&b, SPADE_OBS_MAX + 1);
    ck_assert_int_eq(spade_ipc_decode_text(b.p, b.n, &status, &t, &tl, err, sizeof err), -1);

    spade_failure f;
    b.n = 0;
    put_u32(&b, SPADE_OUT_COMPILE);
    put_u32(&b, 7);
    put_u32(&b, 14);
    put(&b, "bad\nthing\r\x1b[2J", 14);
    ck_assert_int_eq(spade_ipc_decode_fail(b.p, b.n, &f, err, sizeof err), 0);
    ck_assert_int_eq(f.outcome, SPADE_OUT_COMPILE);
    ck_assert_int_eq(f.line, 7);
    /* control bytes blanked, newlines kept (a compile error carries a source excerpt) */
    ck_assert_str_eq(f.message, "bad\nthing  [2J");
    ck_assert_int_eq(spade_ipc_decode_fail(b.p, b.n - 1, &f, err, sizeof err), -1);
    /* A worker may not claim the outcomes only the parent can see. */
    int forbidden[] = {SPADE_OUT_OK, SPADE_OUT_TIMEOUT, SPADE_OUT_CRASH, SPADE_OUT_SYSCALL, SPADE_OUT_PROTOCOL, 999};
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++) {
        memcpy(b.p, &forbidden[i], 4);
        ck_assert_int_eq(spade_ipc_decode_fail(b.p, b.n, &f, err, sizeof err), -1);
    }
    int32_t neg = -3, oc = SPADE_OUT_LINK;
    memcpy(b.p, &oc, 4);
    memcpy(b.p + 4, &neg, 4);
    ck_assert_int_eq(spade_ipc_decode_fail(b.p, b.n, &f, err, sizeof err), -1);
    /* A message longer than the failure holds is cut, NUL-terminated. */
    static char longmsg[5000];
    memset(longmsg, 'm', sizeof longmsg);
    b.n = 0;
    put_u32(&b, SPADE_OUT_INVALID);
    put_u32(&b, 0);
    put_u32(&b, sizeof longmsg);
    put(&b, longmsg, sizeof longmsg);
    ck_assert_int_eq(spade_ipc_decode_fail(b.p, b.n, &f, err, sizeof err), 0);
    ck_assert_uint_eq(strlen(f.message), sizeof f.message - 1);

    int first;
    int32_t id = 5;
    ck_assert_int_eq(spade_ipc_decode_added((unsigned char *)&id, 4, 3, &first, err, sizeof err), 0);
    ck_assert_int_eq(first, 5);
    ck_assert_int_eq(spade_ipc_decode_added((unsigned char *)&id, 3, 3, &first, err, sizeof err), -1);
    id = -1;
    ck_assert_int_eq(spade_ipc_decode_added((unsigned char *)&id, 4, 3, &first, err, sizeof err), -1);
    id = 0x7ffffffe;
    ck_assert_int_eq(spade_ipc_decode_added((unsigned char *)&id, 4, 3, &first, err, sizeof err), -1);
}
END_TEST

static spade_env_info fake_info(void) {
    spade_env_info in;
    memset(&in, 0, sizeof in);
    in.abi = SPADE_ENV_ABI;
    snprintf(in.name, sizeof in.name, "fake");
    snprintf(in.description, sizeof in.description, "A fake environment.");
    in.max_steps = 5;
    in.success = 1.0;
    in.state_size = 8;
    in.n_params = 1;
    snprintf(in.params[0].name, sizeof in.params[0].name, "k");
    in.params[0].type = SPADE_PARAM_INT;
    in.params[0].def = 1;
    in.params[0].min = 0;
    in.params[0].max = 9;
    return in;
}

START_TEST(info_checked) {
    spade_env_info in = fake_info(), out;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&in, sizeof in, &out, err, sizeof err), 0);
    ck_assert_str_eq(out.name, "fake");
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&in, sizeof in - 1, &out, err, sizeof err), -1);
    /* An unterminated string is not something the host wrote: refused, and
     * nothing of it is left in out. */
    spade_env_info bad = in;
    memset(bad.name, 'x', sizeof bad.name);
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    ck_assert_int_eq(out.name[0], 0);
    bad = in;
    memset(bad.description, 'y', sizeof bad.description);
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.n_params = 1;
    memset(bad.params[0].name, 'k', sizeof bad.params[0].name);
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    /* Garbage past the counts is not an error (nobody reads it) but is zeroed. */
    bad = in;
    memset(bad.tools[3].signature, 'z', sizeof bad.tools[3].signature);
    memset(bad.params[5].name, 'q', sizeof bad.params[5].name);
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), 0);
    ck_assert_uint_eq(strlen(out.tools[3].signature), 0);
    ck_assert_uint_eq(strlen(out.params[5].name), 0);
    /* Counts and values that lie. */
    bad = in;
    bad.n_params = SPADE_INFO_MAX_PARAMS + 1;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.n_tools = -1;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.abi = 99;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.params[0].min = 5; /* min > def */
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.params[0].max = NAN;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.state_size = (uint64_t)SPADE_STATE_MAX + 1;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.max_steps = 0;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
}
END_TEST

/* What the host refuses at load, the parent refuses again: a worker runs the
 * environment's code, so a LOADED frame may say anything. These strings reach
 * terminals (spade list, play, run) and loops (max_steps, spade check). */
START_TEST(info_host_rules) {
    spade_env_info in = fake_info(), out, bad;
    in.n_tools = 1;
    snprintf(in.tools[0].name, sizeof in.tools[0].name, "probe");
    snprintf(in.tools[0].signature, sizeof in.tools[0].signature, "int (int x)");
    snprintf(in.tools[0].description, sizeof in.tools[0].description, "Looks.");
    ck_assert_msg(spade_ipc_decode_info((unsigned char *)&in, sizeof in, &out, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(out.tools[0].name, "probe");
    static const char *const bad_names[] = {"", "../../etc", "Fake", "a b", "x\x1b[2J", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        bad = in;
        snprintf(bad.name, sizeof bad.name, "%s", bad_names[i]);
        if (i == 4) bad.name[1] = 0x1b;
        ck_assert_msg(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err) == -1,
                      "name %zu accepted", i);
    }
    bad = in;
    snprintf(bad.description, sizeof bad.description, "Clears \x1b[2J the screen.");
    bad.description[7] = 0x1b;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.description[0] = '\0';
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    snprintf(bad.description, sizeof bad.description, "two\nlines");
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    snprintf(bad.family, sizeof bad.family, "Logic!");
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.max_steps = INT_MAX; /* spade check loops to max_steps + 1 */
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.max_steps = SPADE_MAX_STEPS_LIMIT; /* the host's own limit is fine, one more is not */
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), 0);
    bad.max_steps = SPADE_MAX_STEPS_LIMIT + 1;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "max_steps 1000001 outside [1, 1000000]"));
    bad = in;
    snprintf(bad.params[0].name, sizeof bad.params[0].name, "9lives");
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.n_params = 2;
    bad.params[1] = bad.params[0]; /* declared twice */
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.params[0].def = 1.5; /* an int param */
    bad.params[0].max = 1e12;
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.params[0].max = 1e12; /* beyond int */
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    snprintf(bad.tools[0].signature, sizeof bad.tools[0].signature, "int (struct evil *p)");
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.tools[0].description[2] = '\r';
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    snprintf(bad.tools[0].name, sizeof bad.tools[0].name, "rm -rf");
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
    bad = in;
    bad.n_tools = 2;
    bad.tools[1] = bad.tools[0];
    ck_assert_int_eq(spade_ipc_decode_info((unsigned char *)&bad, sizeof bad, &out, err, sizeof err), -1);
}
END_TEST

/* ---- frames through a socket ------------------------------------------------------- */
static void pair(int sv[2]) { ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0); }

static void write_frame(int fd, uint32_t magic, uint32_t type, uint32_t len, const void *payload, size_t n) {
    uint32_t h[3] = {magic, type, len};
    ck_assert_int_eq(write(fd, h, sizeof h), (ssize_t)sizeof h);
    if (n) ck_assert_int_eq(write(fd, payload, n), (ssize_t)n);
}

START_TEST(recv_frames) {
    int sv[2];
    spade_ipc_buf buf = {0};
    uint32_t type;
    size_t len;
    double t0;

    /* A good frame. */
    pair(sv);
    write_frame(sv[1], SPADE_IPC_MAGIC, SPADE_MSG_ADDED, 4, "\1\0\0\0", 4);
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, spade_ipc_now() + 1, &type, &len, err, sizeof err),
                     SPADE_IO_OK);
    ck_assert_uint_eq(type, SPADE_MSG_ADDED);
    ck_assert_uint_eq(len, 4);
    /* Nothing more: a timeout, on time. */
    t0 = spade_ipc_now();
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, t0 + 0.1, &type, &len, err, sizeof err), SPADE_IO_TIMEOUT);
    /* not early; the upper bound only tells "on time" from "never" (a loaded machine can wake
     * the poll late) */
    ck_assert(spade_ipc_now() - t0 >= 0.09 && spade_ipc_now() - t0 < 5.0);
    /* Garbage magic. */
    write_frame(sv[1], 0xdeadbeef, SPADE_MSG_ADDED, 4, "\1\0\0\0", 4);
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, spade_ipc_now() + 1, &type, &len, err, sizeof err),
                     SPADE_IO_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(err, "magic"));
    close(sv[0]);
    close(sv[1]);

    /* A length over the cap is refused from the header alone. */
    pair(sv);
    write_frame(sv[1], SPADE_IPC_MAGIC, SPADE_MSG_RESULTS, (1u << 20) + 1, NULL, 0);
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, spade_ipc_now() + 1, &type, &len, err, sizeof err),
                     SPADE_IO_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(err, "cap"));
    close(sv[0]);
    close(sv[1]);

    /* Bytes after the frame. */
    pair(sv);
    {
        unsigned char two[32];
        uint32_t h[3] = {SPADE_IPC_MAGIC, SPADE_MSG_ADDED, 4};
        memcpy(two, h, 12);
        memset(two + 12, 0, 4);
        memcpy(two + 16, h, 12);
        memset(two + 28, 0, 4);
        ck_assert_int_eq(write(sv[1], two, sizeof two), (ssize_t)sizeof two);
    }
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, spade_ipc_now() + 1, &type, &len, err, sizeof err),
                     SPADE_IO_PROTOCOL);
    close(sv[0]);
    close(sv[1]);

    /* A truncated frame, then the worker goes away. */
    pair(sv);
    write_frame(sv[1], SPADE_IPC_MAGIC, SPADE_MSG_TEXT, 100, "only a little", 13);
    close(sv[1]);
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, spade_ipc_now() + 1, &type, &len, err, sizeof err),
                     SPADE_IO_CLOSED);
    close(sv[0]);

    /* A truncated header. */
    pair(sv);
    ck_assert_int_eq(write(sv[1], "SPD", 3), 3);
    close(sv[1]);
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, spade_ipc_now() + 1, &type, &len, err, sizeof err),
                     SPADE_IO_CLOSED);
    close(sv[0]);

    /* A frame that arrives one byte at a time from another process. */
    pair(sv);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        unsigned char fr[12 + 300];
        uint32_t h[3] = {SPADE_IPC_MAGIC, SPADE_MSG_TEXT, 300};
        memcpy(fr, h, 12);
        memset(fr + 12, 'q', 300);
        for (size_t i = 0; i < sizeof fr; i++) {
            if (write(sv[1], fr + i, 1) != 1) _exit(1);
            if (i % 50 == 0) usleep(1000);
        }
        _exit(0);
    }
    close(sv[1]);
    ck_assert_int_eq(spade_ipc_recv(sv[0], &buf, 1 << 20, spade_ipc_now() + 5, &type, &len, err, sizeof err),
                     SPADE_IO_OK);
    ck_assert_uint_eq(len, 300);
    ck_assert_int_eq(buf.p[12 + 299], 'q');
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    close(sv[0]);
    spade_ipc_buf_free(&buf);

    /* Sending to a closed peer is a value, not a SIGPIPE. */
    pair(sv);
    close(sv[1]);
    ck_assert_int_eq(spade_ipc_send(sv[0], "x", 1, spade_ipc_now() + 1, err, sizeof err), SPADE_IO_CLOSED);
    close(sv[0]);
}
END_TEST

/* ---- fake workers ---------------------------------------------------------------------- */
typedef enum fake {
    FAKE_WRONG_COUNT,
    FAKE_WRONG_TYPE,
    FAKE_SILENT,
    FAKE_EXIT,
    FAKE_SEGV,
    FAKE_SIGSYS,
    FAKE_SIGKILL,
    FAKE_HUGE_LEN,
    FAKE_BAD_CALL_THEN_OK,
    FAKE_FORGED_OUTCOME,
    FAKE_TRUNCATED_THEN_EXIT,
    FAKE_FAIL_COMPILE, /* a compile error in reply to a step */
    FAKE_FAIL_OOM, /* out of memory in reply to a step: honest */
    FAKE_EXIT_LOCKDOWN, /* exits with SPADE_WORKER_EXIT_LOCKDOWN after it was handed out */
    FAKE_EXIT_COMPILER, /* exits with SPADE_WORKER_EXIT_COMPILER after the load */
} fake;

/* Reads one request (so that the parent's send completes), or returns -1. */
static int fake_read_request(int fd) {
    uint32_t h[3];
    size_t got = 0;
    while (got < sizeof h) {
        ssize_t r = read(fd, (char *)h + got, sizeof h - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    size_t left = h[2];
    char sink[4096];
    while (left) {
        ssize_t r = read(fd, sink, left < sizeof sink ? left : sizeof sink);
        if (r <= 0) return -1;
        left -= (size_t)r;
    }
    return 0;
}

static void fake_results(int fd, uint32_t n) {
    bytes b;
    b.n = 0;
    put_u32(&b, n);
    for (uint32_t i = 0; i < n; i++) put_result(&b, 0.5, 2, 0, 0, 0, SPADE_HOST_OK);
    for (uint32_t i = 0; i < n; i++) put(&b, "ok", 3);
    write_frame(fd, SPADE_IPC_MAGIC, SPADE_MSG_RESULTS, (uint32_t)b.n, b.p, b.n);
}

static void fake_main(int fd, fake kind) {
    /* Default deaths, whatever the test binary installed (ASan catches SEGV). */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGSEGV, SIG_DFL);
    signal(SIGSYS, SIG_DFL);
    if (fake_read_request(fd) < 0) _exit(0);
    switch (kind) {
    case FAKE_WRONG_COUNT:
        fake_results(fd, 3); /* the parent asked for 1 */
        break;
    case FAKE_WRONG_TYPE: write_frame(fd, SPADE_IPC_MAGIC, SPADE_MSG_ADDED, 4, "\0\0\0\0", 4); break;
    case FAKE_SILENT: break;
    case FAKE_EXIT: _exit(0);
    case FAKE_SEGV: raise(SIGSEGV); break;
    case FAKE_SIGSYS: raise(SIGSYS); break;
    case FAKE_SIGKILL: raise(SIGKILL); break;
    case FAKE_HUGE_LEN: write_frame(fd, SPADE_IPC_MAGIC, SPADE_MSG_RESULTS, 0xfffffff0u, NULL, 0); break;
    case FAKE_BAD_CALL_THEN_OK: {
        bytes b;
        b.n = 0;
        put_u32(&b, SPADE_OUT_BAD_CALL);
        put_u32(&b, 0);
        put_u32(&b, 5);
        put(&b, "nope!", 5);
        write_frame(fd, SPADE_IPC_MAGIC, SPADE_MSG_FAIL, (uint32_t)b.n, b.p, b.n);
        if (fake_read_request(fd) < 0) _exit(0);
        fake_results(fd, 1);
        break;
    }
    case FAKE_FORGED_OUTCOME: {
        bytes b;
        b.n = 0;
        put_u32(&b, SPADE_OUT_OK);
        put_u32(&b, 0);
        put_u32(&b, 0);
        write_frame(fd, SPADE_IPC_MAGIC, SPADE_MSG_FAIL, (uint32_t)b.n, b.p, b.n);
        break;
    }
    case FAKE_EXIT_LOCKDOWN: _exit(SPADE_WORKER_EXIT_LOCKDOWN);
    case FAKE_EXIT_COMPILER: _exit(SPADE_WORKER_EXIT_COMPILER);
    case FAKE_FAIL_COMPILE:
    case FAKE_FAIL_OOM: {
        bytes b;
        b.n = 0;
        put_u32(&b, kind == FAKE_FAIL_COMPILE ? SPADE_OUT_COMPILE : SPADE_OUT_OOM);
        put_u32(&b, 3);
        put_u32(&b, 4);
        put(&b, "lies", 4);
        write_frame(fd, SPADE_IPC_MAGIC, SPADE_MSG_FAIL, (uint32_t)b.n, b.p, b.n);
        break;
    }
    case FAKE_TRUNCATED_THEN_EXIT: {
        uint32_t h[3] = {SPADE_IPC_MAGIC, SPADE_MSG_RESULTS, 500};
        if (write(fd, h, sizeof h) != sizeof h || write(fd, "abc", 3) != 3) _exit(1);
        _exit(3);
    }
    }
    /* Stay until killed (or the parent closes the socket). */
    for (;;) {
        char c;
        if (read(fd, &c, 1) <= 0) _exit(0);
    }
}

static spade_worker *fake_worker(fake kind, double call_timeout, pid_t *pid_out) {
    int sv[2];
    pair(sv);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(sv[0]);
        fake_main(sv[1], kind);
        _exit(0);
    }
    close(sv[1]);
    spade_sandbox_opts o;
    memset(&o, 0, sizeof o);
    o.call_timeout_s = call_timeout;
    spade_env_info info = fake_info();
    spade_worker *w = NULL;
    ck_assert_int_eq(spade_worker_adopt(sv[0], pid, &o, &info, &w), 0);
    *pid_out = pid;
    return w;
}

/* After free: the fake process is reaped (no zombie) and our fd is closed. */
static void assert_gone(spade_worker *w, pid_t pid, int fds_before) {
    spade_worker_free(w);
    tu_assert_reaped(pid);
    ck_assert_int_eq(tu_count_fds(), fds_before);
}

/* One step on a fake worker; returns the outcome. */
static spade_outcome step_fake(spade_worker *w, spade_failure *f) {
    int id = 0;
    const char *a = "x";
    spade_step_result r;
    if (spade_worker_step(w, 1, &id, &a, NULL, &r, f) == 0) return SPADE_OUT_OK;
    return f->outcome;
}

static const struct {
    fake kind;
    spade_outcome want;
    int signal;
} fake_cases[] = {
    {FAKE_WRONG_COUNT, SPADE_OUT_PROTOCOL, 0},    {FAKE_WRONG_TYPE, SPADE_OUT_PROTOCOL, 0},
    {FAKE_SILENT, SPADE_OUT_TIMEOUT, SIGKILL},    {FAKE_EXIT, SPADE_OUT_PROTOCOL, 0},
    {FAKE_SEGV, SPADE_OUT_CRASH, SIGSEGV},        {FAKE_SIGSYS, SPADE_OUT_SYSCALL, SIGSYS},
    {FAKE_SIGKILL, SPADE_OUT_OOM, SIGKILL},       {FAKE_HUGE_LEN, SPADE_OUT_PROTOCOL, 0},
    {FAKE_FORGED_OUTCOME, SPADE_OUT_PROTOCOL, 0}, {FAKE_TRUNCATED_THEN_EXIT, SPADE_OUT_PROTOCOL, 0},
    {FAKE_FAIL_COMPILE, SPADE_OUT_PROTOCOL, 0},   {FAKE_FAIL_OOM, SPADE_OUT_OOM, 0},
    {FAKE_EXIT_LOCKDOWN, SPADE_OUT_PROTOCOL, 0}, /* not internal_error: the environment chose the status */
    {FAKE_EXIT_COMPILER, SPADE_OUT_PROTOCOL, 0}, /* not out_of_memory: no compiler runs after a load */
};

START_TEST(fake_worker_outcome) {
    int fds = tu_count_fds();
    pid_t pid;
    /* A short deadline only for the fake that is meant to time out: the others must answer
     * (or die) before theirs, and a freshly forked fake on a loaded machine can take longer
     * than 0.3 s to be scheduled, which turned their outcome into a timeout. */
    int silent = fake_cases[_i].want == SPADE_OUT_TIMEOUT;
    double timeout = silent ? 0.3 : 10.0;
    spade_worker *w = fake_worker(fake_cases[_i].kind, timeout, &pid);
    spade_failure f;
    double t0 = spade_ipc_now();
    spade_outcome got = step_fake(w, &f);
    double took = spade_ipc_now() - t0;
    ck_assert_msg(got == fake_cases[_i].want, "case %d: expected %s, got %s (%s)", _i,
                  spade_outcome_name(fake_cases[_i].want), spade_outcome_name(got), f.message);
    ck_assert_int_eq(f.signal, fake_cases[_i].signal);
    if (silent) /* on time: not early, and not much after it (killing and reaping the fake) */
        ck_assert_msg(took >= timeout * 0.9 && took < timeout + 5.0, "case %d timed out after %.3f s", _i, took);
    else /* seen as it happened, not found when the deadline ran out */
        ck_assert_msg(took < timeout, "case %d took %.3f s, its whole deadline", _i, took);
    ck_assert(!spade_worker_alive(w));
    /* Sticky: the same failure again, without touching the dead worker. */
    spade_failure g;
    ck_assert_int_eq(step_fake(w, &g), fake_cases[_i].want);
    ck_assert_str_eq(g.message, f.message);
    assert_gone(w, pid, fds);
}
END_TEST

/* A worker that answers a checked request with bad_call is lying (the parent
 * checks every request before it sends it): protocol_violation, worker gone,
 * and the reply it would have sent next can never answer another request. */
START_TEST(fake_bad_call_is_a_lie) {
    int fds = tu_count_fds();
    pid_t pid;
    spade_worker *w = fake_worker(FAKE_BAD_CALL_THEN_OK, 10.0, &pid);
    spade_failure f;
    ck_assert_int_eq(step_fake(w, &f), SPADE_OUT_PROTOCOL);
    ck_assert_msg(strstr(f.message, "bad_call") != NULL, "%s", f.message);
    ck_assert(!spade_worker_alive(w));
    ck_assert_int_eq(step_fake(w, &f), SPADE_OUT_PROTOCOL); /* sticky */
    assert_gone(w, pid, fds);
}
END_TEST

START_TEST(outcome_names) {
    const char *words[] = {"ok",       "compile_error",     "link_error",    "invalid_env",        "timeout",
                           "crash",    "forbidden_syscall", "out_of_memory", "protocol_violation", "output_too_large",
                           "bad_call", "internal_error"};
    ck_assert_int_eq(sizeof words / sizeof words[0], SPADE_OUT_COUNT_);
    for (int i = 0; i < SPADE_OUT_COUNT_; i++) {
        ck_assert_str_eq(spade_outcome_name((spade_outcome)i), words[i]);
        ck_assert_int_eq(spade_outcome_from_name(words[i]), i);
    }
    ck_assert_int_eq(spade_outcome_from_name("crashed"), -1);
    ck_assert_int_eq(spade_outcome_from_name(NULL), -1);
    ck_assert_str_eq(spade_outcome_name(SPADE_OUT_COUNT_), "unknown");
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("ipc");
    TCase *t = tcase_create("decode");
    tcase_add_test(t, results_good);
    tcase_add_test(t, results_count_lies);
    tcase_add_test(t, results_truncated);
    tcase_add_test(t, results_bad_fields);
    tcase_add_test(t, text_and_fail_and_added);
    tcase_add_test(t, info_checked);
    tcase_add_test(t, info_host_rules);
    tcase_add_test(t, outcome_names);
    suite_add_tcase(s, t);
    TCase *io = tcase_create("socket");
    tcase_set_timeout(io, 30);
    tcase_add_test(io, recv_frames);
    tcase_add_loop_test(io, fake_worker_outcome, 0, (int)(sizeof fake_cases / sizeof fake_cases[0]));
    tcase_add_test(io, fake_bad_call_is_a_lie);
    suite_add_tcase(s, io);
    return s;
}

int main(void) { return tu_run(suite()); }
