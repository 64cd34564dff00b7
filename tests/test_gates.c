/* test_gates.c — Check suite for the designer's validation gates
 * (designer/gates.h) and the paired plays that regret is measured from
 * (designer/plays.h).
 *
 * What it is: every gate rejects the environment crafted to fail it, with
 * its reason, and the gates before it pass (so each rejection is that gate's
 * doing), issue 14's classes included (constant answers, echoes, every hint
 * piece, nothing can win it, copies by text and by behaviour, a hanging
 * STEP, the seeds); a good environment passes all of them; stop_at_first
 * skips the rest;
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
#include "designer/corpus.h"
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
    ck_assert_msg(strstr(rep.detail[want], why), "%s: %s failed for another reason:\n%s", env, spade_gate_name(want),
                  text);
    for (int g = 0; g < (int)want; g++) ck_assert_int_eq(rep.status[g], SPADE_GATE_PASS);
}

START_TEST(each_gate_rejects_its_environment) {
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9; /* only gate_slow tests the time budget */
    size_t len;
    char *bad = strdup("#include <spade/dsl.h>\nENV(\"x\", \"d\")\nSTATE { int a; };\nRESET { say(\"a\") }\n"),
         err[1024];
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
    fails_at("gate_hintanswer.c", SPADE_GATE_HINT_ECHO, "echoing the hint", &o);
    /* issue 14's classes: each crafted environment fails its gate with its reason */
    fails_at("gate_const7.c", SPADE_GATE_CONSTANT, "constant answer \"7\" won 8 of 8", &o);
    fails_at("gate_yes_or.c", SPADE_GATE_CONSTANT, "constant answer \"yes\" won 8 of 8", &o);
    fails_at("gate_mulzero.c", SPADE_GATE_CONSTANT, "constant answer \"0\" won 8 of 8", &o);
    fails_at("gate_echo.c", SPADE_GATE_OBS_ECHO, "echoing the observation", &o);
    fails_at("gate_hintpieces.c", SPADE_GATE_HINT_ECHO, "echoing the hint", &o);
    fails_at("gate_hintmoves.c", SPADE_GATE_HINT_ECHO, "words in order", &o);
    fails_at("gate_unwinnable.c", SPADE_GATE_WINNABLE, "nothing won a seed", &o);
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
    /* the direction environment's hint says the way in a sentence whose first piece is not it: the
     * hint-echo gate plays each piece alone too, so it fails (it passed when only the first was tried) */
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9;
    spade_gate_report rep;
    gates("gate_direction.c", &o, &rep);
    ck_assert_int_eq(rep.status[SPADE_GATE_HINT_ECHO], SPADE_GATE_FAIL);
    ck_assert_msg(strstr(rep.detail[SPADE_GATE_HINT_ECHO], "hint's piece"), "%s", rep.detail[SPADE_GATE_HINT_ECHO]);
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
    fails_at("hint_fixed.c", SPADE_GATE_HINT_ECHO, "echoing the hint", &o);
    o.hint = harmless;
    o.hint_len = sizeof harmless - 1;
    gates("gate_hintanswer.c", &o, &rep); /* its own HINT says the answer; the given one does not */
    ck_assert_int_eq(rep.status[SPADE_GATE_HINT_ECHO], SPADE_GATE_PASS);
}
END_TEST

/* The hand-written environments are what a valid one looks like: every
 * stdenv and held-out file passes every gate (novelty against the others is
 * the loop's business, not tested here). */
START_TEST(every_stdenv_environment_passes) {
    char dir[4096], err[1024], text[8192];
    snprintf(dir, sizeof dir, "%s/%s", tu_srcdir(), _i ? "eval/heldout" : "stdenv");
    char **paths;
    int n;
    ck_assert_int_eq(spade_heldout_files(dir, &paths, &n, err, sizeof err), 0); /* any directory's *.c, sorted */
    ck_assert_int_ge(n, 12);
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

/* Class 6: a STEP that never returns fails at the first timeout, naming the
 * deadline, and nothing after it is played (each play would wait it out
 * again). The sandbox's 2 s call deadline; no time is measured. */
START_TEST(a_hanging_step_fails_at_the_first_timeout) {
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    spade_gate_report rep;
    gates("gate_hang.c", &o, &rep);
    char text[8192];
    spade_gate_report_text(&rep, text, sizeof text);
    ck_assert_msg(rep.first_failed == SPADE_GATE_LIMITS && rep.timed_out, "%s", text);
    ck_assert_msg(strstr(rep.detail[SPADE_GATE_LIMITS], "timeout") && strstr(rep.detail[SPADE_GATE_LIMITS], "deadline"),
                  "%s", text);
    for (int g = SPADE_GATE_LIMITS + 1; g < SPADE_GATE_COUNT; g++) {
        ck_assert_int_eq(rep.status[g], SPADE_GATE_SKIP);
        ck_assert_msg(strstr(rep.detail[g], "timed out"), "%s", text);
    }
}
END_TEST

/* Class 7: the seeds come from the source and the run seed: the same file
 * and seed give the same report, another run seed other seeds. */
START_TEST(the_seeds_come_from_the_source_and_the_run_seed) {
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9;
    size_t len, l2;
    char *a = tu_read_env("gate_coin.c", &len), *b = tu_read_env("gate_direction.c", &l2);
    uint64_t s0 = spade_gate_seed(&o, a, len, 3, 0);
    ck_assert(s0 != 9000);
    ck_assert(s0 == spade_gate_seed(&o, a, len, 3, 0));
    ck_assert(s0 != spade_gate_seed(&o, b, l2, 3, 0));
    ck_assert(s0 != spade_gate_seed(&o, a, len, 3, 1));
    o.run_seed = 5;
    ck_assert(s0 != spade_gate_seed(&o, a, len, 3, 0));
    static spade_gate_report r1, r2;
    char t1[8192], t2[8192];
    gates("gate_coin.c", &o, &r1);
    gates("gate_coin.c", &o, &r2);
    spade_gate_report_text(&r1, t1, sizeof t1);
    spade_gate_report_text(&r2, t2, sizeof t2);
    ck_assert_int_eq(r1.first_failed, r2.first_failed);
    ck_assert_str_eq(r1.detail[SPADE_GATE_RANDOM], r2.detail[SPADE_GATE_RANDOM]);
    free(a);
    free(b);
}
END_TEST

/* Class 5: a copy fails novelty by behaviour whatever its text (carry_add
 * renamed and reworded, below the text threshold), a real variant does not,
 * and what the prompt showed counts as a reference. */
START_TEST(a_copy_fails_novelty_by_behaviour_and_by_what_the_prompt_showed) {
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 1e9;
    size_t len, ml;
    char *carry = read_stdenv("carry_add", &len), *maze = read_stdenv("maze", &ml), err[1024];
    static double refs[SPADE_VENDI_DIM];
    spade_vendi_embed(carry, len, refs, SPADE_VENDI_DIM);
    const char *names[1] = {"stdenv/carry_add.c"}, *srcs[1] = {carry};
    size_t lens[1] = {len};
    o.refs = refs;
    o.ref_names = names;
    o.ref_src = srcs;
    o.ref_len = lens;
    o.n_refs = 1;
    fails_at("gate_copy_carry.c", SPADE_GATE_NOVELTY, "behaves like stdenv/carry_add.c", &o);
    spade_gate_report rep;
    gates("gate_copy_carry.c", &o, &rep);
    ck_assert_msg(rep.max_cosine < o.novelty_max, "the text alone would have caught it: %.3f", rep.max_cosine);
    ck_assert_double_eq(rep.behave_match, 1);
    /* the prompt's example with one word changed, shown but not among the refs */
    char *copy = malloc(ml + 64);
    snprintf(copy, ml + 64, "%s", maze);
    char *w = strstr(copy, "maze");
    ck_assert_ptr_nonnull(w);
    memcpy(w, "mazy", 4);
    const char *shown[1] = {maze}, *shown_names[1] = {"the grounding excerpt"};
    size_t shown_len[1] = {ml};
    o.n_refs = 0;
    o.shown = shown;
    o.shown_len = shown_len;
    o.shown_names = shown_names;
    o.n_shown = 1;
    ck_assert_int_eq(spade_gates_run(sb, "mazy.c", copy, strlen(copy), &o, &rep, err, sizeof err), 0);
    ck_assert_int_eq(rep.first_failed, SPADE_GATE_NOVELTY);
    ck_assert_msg(strstr(rep.detail[SPADE_GATE_NOVELTY], "the grounding excerpt (shown in the prompt)"), "%s",
                  rep.detail[SPADE_GATE_NOVELTY]);
    free(copy);
    free(carry);
    free(maze);
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
    tcase_add_loop_test(c, every_stdenv_environment_passes, 0, 2);
    tcase_add_test(c, a_hanging_step_fails_at_the_first_timeout);
    tcase_add_test(c, the_seeds_come_from_the_source_and_the_run_seed);
    tcase_add_test(c, a_copy_fails_novelty_by_behaviour_and_by_what_the_prompt_showed);
    suite_add_tcase(s, c);
    return tu_run(s);
}
