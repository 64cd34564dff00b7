/* test_gates.c — Check suite for the designer's validation gates
 * (designer/gates.h) and the paired plays that regret is measured from
 * (designer/plays.h).
 *
 * What it is: every gate rejects the environment crafted to fail it, with
 * its reason, and the gates before it pass (so each rejection is that gate's
 * doing); a good environment passes all ten; stop_at_first skips the rest;
 * regret with scripted agents on hand-made environments: a coin flip fails
 * the random-agent gate, an impossible environment gets regret 0, one whose
 * hint tells the way gets a high regret, and a hint that contains the answer
 * fails the hint-echo gate, and so does a given (self-written) one.
 * What it is not: the loop that calls them.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "designer/gates.h"
#include "designer/plays.h"
#include "heldout.h"
#include "registry.h"
#include "testutil.h"
#include "vendi.h"

static spade_sandbox *sb;
static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 10.0, .call_timeout_s = 2.0}); }
static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

static void gates(const char *env, const spade_gate_opts *o, spade_gate_report *rep) {
    size_t len;
    char *src = tu_read_env(env, &len), err[1024];
    ck_assert_msg(spade_gates_run(sb, env, src, len, o, rep, err, sizeof err) == 0, "%s", err);
    free(src);
}

/* env must fail `want` (with `why` in the reason) and pass every gate before it. */
static void fails_at(const char *env, spade_gate want, const char *why, const spade_gate_opts *o) {
    spade_gate_report rep;
    gates(env, o, &rep);
    char text[8192];
    spade_gate_report_text(&rep, text, sizeof text);
    ck_assert_msg(rep.first_failed == (int)want, "%s: first failure %d, wanted %s:\n%s", env, rep.first_failed,
                  spade_gate_name(want), text);
    ck_assert_msg(strstr(rep.detail[want], why), "%s: %s failed for another reason:\n%s", env, spade_gate_name(want), text);
    for (int g = 0; g < (int)want; g++) ck_assert_int_eq(rep.status[g], SPADE_GATE_PASS);
}

START_TEST(each_gate_rejects_its_environment) {
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9; /* only gate_slow tests the time budget */
    size_t len;
    char *bad = strdup("#include <spade/dsl.h>\nENV(\"x\", \"d\")\nSTATE { int a; };\nRESET { say(\"a\") }\n"), err[1024];
    spade_gate_report rep;
    ck_assert_int_eq(spade_gates_run(sb, "broken.c", bad, strlen(bad), &o, &rep, err, sizeof err), 0);
    ck_assert_int_eq(rep.first_failed, SPADE_GATE_COMPILE);
    ck_assert_msg(strstr(rep.detail[0], "compile_error") && strstr(rep.detail[0], "broken.c:4"), "%s", rep.detail[0]);
    for (int g = 1; g < SPADE_GATE_COUNT; g++) ck_assert_int_eq(rep.status[g], SPADE_GATE_SKIP);
    free(bad);
    fails_at("gate_bigret.c", SPADE_GATE_LIMITS, "outside [-1, 1]", &o);
    fails_at("gate_crashmax.c", SPADE_GATE_LIMITS, "n=9", &o);
    fails_at("gate_global.c", SPADE_GATE_RESET_DET, "second worker", &o);
    fails_at("gate_stepglobal.c", SPADE_GATE_REPLAY_DET, "second worker", &o);
    fails_at("check_uninit.c", SPADE_GATE_RESET_DET, "uninitialised", &o); /* the two workers' garbage differs */
    fails_at("gate_probecrash.c", SPADE_GATE_PROBE, "\"test\"", &o);
    fails_at("gate_coin.c", SPADE_GATE_RANDOM, "random agent won", &o);
    fails_at("gate_emptywin.c", SPADE_GATE_NOOP, "empty action won", &o);
    fails_at("gate_hintanswer.c", SPADE_GATE_HINT_ECHO, "echoing the hint won", &o);
    fails_at("gate_badsolve.c", SPADE_GATE_SOLVE, "SOLVE won only 0", &o);
    o.require_solve = 1;
    fails_at("gate_impossible.c", SPADE_GATE_SOLVE, "no SOLVE", &o);
    o.require_solve = 0;
    o.max_step_ms = 0.5;
    fails_at("gate_slow.c", SPADE_GATE_LIMITS, "ms per step", &o);
    (void)len;
}
END_TEST

static char *read_stdenv(const char *name, size_t *len) {
    char path[4096], err[256], *src;
    snprintf(path, sizeof path, "%s/stdenv/%s.c", tu_srcdir(), name);
    ck_assert_msg(spade_read_source(path, &src, len, err, sizeof err) == 0, "%s", err);
    return src;
}

START_TEST(a_good_environment_passes_and_a_copy_is_not_novel) {
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9;
    size_t len, l2;
    char *maze = read_stdenv("maze", &len), *nim = read_stdenv("nim", &l2), err[1024], text[8192];
    static double refs[2 * SPADE_VENDI_DIM];
    spade_vendi_embed(nim, l2, refs, SPADE_VENDI_DIM);
    const char *names[2] = {"stdenv/nim.c", "stdenv/maze.c"};
    o.refs = refs;
    o.ref_names = names;
    o.n_refs = 1;
    o.dim = SPADE_VENDI_DIM;
    spade_gate_report rep;
    ck_assert_int_eq(spade_gates_run(sb, "maze.c", maze, len, &o, &rep, err, sizeof err), 0);
    spade_gate_report_text(&rep, text, sizeof text);
    ck_assert_msg(rep.first_failed == -1, "maze fails a gate:\n%s", text);
    ck_assert_ptr_nonnull(strstr(text, "PASS novelty: nearest stdenv/nim.c"));
    ck_assert_double_eq(rep.solve_rate, 1);
    /* the same maze with a comment and other spacing is a near-duplicate */
    spade_vendi_embed(maze, len, refs + SPADE_VENDI_DIM, SPADE_VENDI_DIM);
    o.n_refs = 2;
    char *copy = malloc(len + 64);
    snprintf(copy, len + 64, "// my new maze\n%s\n\n", maze);
    ck_assert_int_eq(spade_gates_run(sb, "mine.c", copy, strlen(copy), &o, &rep, err, sizeof err), 0);
    ck_assert_int_eq(rep.first_failed, SPADE_GATE_NOVELTY);
    ck_assert_msg(strstr(rep.detail[SPADE_GATE_NOVELTY], "near-duplicate of stdenv/maze.c"), "%s",
                  rep.detail[SPADE_GATE_NOVELTY]);
    /* stop_at_first: nothing after the first failure runs */
    size_t cl;
    char *coin = tu_read_env("gate_coin.c", &cl);
    o.stop_at_first = 1;
    o.n_refs = 0;
    ck_assert_int_eq(spade_gates_run(sb, "gate_coin.c", coin, cl, &o, &rep, err, sizeof err), 0);
    ck_assert_int_eq(rep.first_failed, SPADE_GATE_RANDOM);
    for (int g = SPADE_GATE_RANDOM + 1; g < SPADE_GATE_COUNT; g++) ck_assert_int_eq(rep.status[g], SPADE_GATE_SKIP);
    free(coin);
    free(copy);
    free(maze);
    free(nim);
}
END_TEST

/* An agent that follows a hint when it has one: the last word of the hint,
 * else "north". */
static int follow_act(void *ctx, int n, const spade_ep_view *v, spade_ep_act *acts, char *err, size_t errlen) {
    static char buf[64][32];
    (void)ctx, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) {
        const char *h = strstr(v[i].obs, "Hint: ");
        snprintf(buf[i % 64], sizeof buf[0], "north");
        if (h) {
            static const char *const w[] = {"north", "south", "east", "west"};
            for (int k = 0; k < 4; k++)
                if (strstr(h, w[k])) snprintf(buf[i % 64], sizeof buf[0], "%s", w[k]);
        }
        acts[i] = (spade_ep_act){.text = buf[i % 64], .len = strlen(buf[i % 64])};
    }
    return 0;
}

static void regret_of(const char *env, spade_agent *a, spade_paired *m) {
    size_t len;
    char *src = tu_read_env(env, &len), err[1024];
    spade_ep_spec spec = {.filename = env, .source = src, .len = len};
    uint64_t seeds[40];
    static spade_ep_outcome out[80];
    for (int i = 0; i < 40; i++) seeds[i] = 300 + (uint64_t)i;
    ck_assert_msg(spade_paired_play(sb, &spec, a, seeds, 40, 1, NULL, out, m, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < 40; i++) {
        ck_assert(out[i].seed == seeds[i] && !out[i].hint);
        ck_assert(out[40 + i].seed == seeds[i] && out[40 + i].hint);
    }
    free(src);
}

START_TEST(regret_with_scripted_agents) {
    spade_agent follow = {.name = "follow", .act = follow_act};
    spade_paired m;
    regret_of("gate_direction.c", &follow, &m);
    ck_assert_double_eq(m.pass_hint, 1);
    ck_assert_msg(m.pass_nohint > 0.05 && m.pass_nohint < 0.5, "no-hint pass %.2f", m.pass_nohint);
    ck_assert_msg(m.regret > 0.5, "a hint that tells the way: regret %.2f", m.regret);
    ck_assert_double_eq_tol(m.regret, m.pass_hint - m.pass_nohint, 1e-12);
    regret_of("gate_impossible.c", &follow, &m);
    ck_assert_double_eq(m.regret, 0);
    ck_assert_double_eq(m.pass_hint, 0);
    /* the direction environment passes the hint-echo gate: its hint's first piece is not the way */
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9;
    spade_gate_report rep;
    gates("gate_direction.c", &o, &rep);
    ck_assert_int_eq(rep.status[SPADE_GATE_HINT_ECHO], SPADE_GATE_PASS);
}
END_TEST

/* designer.hint = self: the hint_echo gate echoes the hint it is given, not
 * the environment's HINT, so an answer-leaking self-written hint still fails
 * it and a harmless one rescues nothing but itself. */
START_TEST(a_given_hint_is_the_one_echoed) {
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9;
    spade_gate_report rep;
    gates("hint_fixed.c", &o, &rep);
    ck_assert_int_eq(rep.first_failed, -1);
    static const char leak[] = "The password is marmalade.", harmless[] = "Think of breakfast.";
    o.hint = leak;
    o.hint_len = sizeof leak - 1;
    fails_at("hint_fixed.c", SPADE_GATE_HINT_ECHO, "echoing the hint won", &o);
    o.hint = harmless;
    o.hint_len = sizeof harmless - 1;
    gates("gate_hintanswer.c", &o, &rep); /* its own HINT says the answer; the given one does not */
    ck_assert_int_eq(rep.status[SPADE_GATE_HINT_ECHO], SPADE_GATE_PASS);
}
END_TEST

/* The hand-written environments are what a valid one looks like: every
 * stdenv file passes every gate (novelty against the others is the loop's
 * business, not tested here). */
START_TEST(every_stdenv_environment_passes) {
    char dir[4096], err[1024], text[8192];
    snprintf(dir, sizeof dir, "%s/stdenv", tu_srcdir());
    char **paths;
    int n;
    ck_assert_int_eq(spade_heldout_files(dir, &paths, &n, err, sizeof err), 0); /* any directory's *.c, sorted */
    ck_assert_int_ge(n, 16);
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 50; /* a loaded 2-core machine; the loop's default is stricter */
    for (int i = 0; i < n; i++) {
        size_t len;
        char *src;
        ck_assert_int_eq(spade_read_source(paths[i], &src, &len, err, sizeof err), 0);
        spade_gate_report rep;
        ck_assert_int_eq(spade_gates_run(sb, paths[i], src, len, &o, &rep, err, sizeof err), 0);
        spade_gate_report_text(&rep, text, sizeof text);
        ck_assert_msg(rep.first_failed == -1, "%s fails a gate:\n%s", paths[i], text);
        free(src);
        free(paths[i]);
    }
    free(paths);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gates");
    TCase *c = tcase_create("gates");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_set_timeout(c, 120);
    tcase_add_test(c, each_gate_rejects_its_environment);
    tcase_add_test(c, a_good_environment_passes_and_a_copy_is_not_novel);
    tcase_add_test(c, regret_with_scripted_agents);
    tcase_add_test(c, a_given_hint_is_the_one_echoed);
    tcase_add_test(c, every_stdenv_environment_passes);
    suite_add_tcase(s, c);
    return tu_run(s);
}
