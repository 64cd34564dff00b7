/* test_check.c — Check suite for the environment checker (core/check.h): a good
 * environment passes, and each way an environment can be wrong fails the check
 * that is meant to catch it, with a reason that says what happened.
 * Not a test of the sandbox itself (tests/test_sandbox, tests/test_hostile). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "registry.h"
#include "testutil.h"

static spade_sandbox *sb;

/* Checked fixture: the sandbox is started in the forked test process, so no
 * zygote is shared between tests. A call deadline no loaded machine misses:
 * only the two tests that hit a deadline on purpose use a short one
 * (short_deadline), so no other verdict depends on the load. */
static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 5.0, .call_timeout_s = 5.0}); }
static void short_deadline(void) {
    spade_sandbox_free(sb);
    sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 5.0, .call_timeout_s = 0.5});
}
static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

/* Runs the checker on tests/envs/NAME.c; returns its status, report in rep. */
static int check_env(const char *name, const char *params, const spade_check_opts *o, spade_check_report *rep) {
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/tests/envs/%s.c", tu_srcdir(), name);
    char *src;
    size_t len;
    ck_assert_msg(spade_read_source(path, &src, &len, err, sizeof err) == 0, "%s", err);
    int rc = spade_check(sb, path, src, len, params, o, rep);
    free(src);
    return rc;
}

static int has_line(const spade_check_report *rep, const char *prefix) {
    const char *p = rep->text;
    size_t n = strlen(prefix);
    while (p && *p) {
        if (!strncmp(p, prefix, n)) return 1;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return 0;
}

/* The line of the report that starts with prefix (for messages). */
static const char *line_of(const spade_check_report *rep, const char *prefix) {
    static char buf[2048];
    const char *p = strstr(rep->text, prefix);
    if (!p) return "(none)";
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return buf;
}

static spade_check_report rep;

static double tu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

START_TEST(good_env_passes) {
    /* Not counter: a random walk of + and - reaches its target in 4 of 20
     * episodes, which random_agent now fails (more than 15%). */
    const char *envs[] = {"add", "cli_good"};
    for (size_t i = 0; i < 2; i++) {
        int rc = check_env(envs[i], NULL, NULL, &rep);
        ck_assert_msg(rc == 0, "%s: rc %d\n%s", envs[i], rc, rep.text);
        ck_assert_int_eq(rep.failed, 0);
        ck_assert_msg(has_line(&rep, "PASS compile"), "%s", rep.text);
        ck_assert_msg(has_line(&rep, "PASS reset_deterministic"), "%s", rep.text);
        ck_assert_msg(has_line(&rep, "PASS step_deterministic"), "%s", rep.text);
        ck_assert_msg(has_line(&rep, "PASS arbitrary_actions"), "%s", rep.text);
        ck_assert_msg(has_line(&rep, "PASS max_steps"), "%s", rep.text);
        ck_assert_msg(has_line(&rep, "PASS hint"), "%s", rep.text);
        ck_assert_msg(has_line(&rep, "PASS solve (won 20 of 20"), "%s", rep.text);
        ck_assert_msg(has_line(&rep, "PASS obs_size"), "%s", rep.text);
        ck_assert_int_ge(rep.passed, 10);
    }
}
END_TEST

START_TEST(params_are_checked) {
    ck_assert_int_eq(check_env("add", "lo=1,hi=5", NULL, &rep), 0);
    ck_assert_msg(has_line(&rep, "PASS params (lo=1,hi=5)"), "%s", rep.text);
    ck_assert_int_eq(check_env("add", "nope=3", NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL params"), "%s", rep.text);
    ck_assert_msg(strstr(line_of(&rep, "FAIL params"), "nope"), "the message names the key: %s", rep.text);
    ck_assert_int_eq(check_env("add", "lo=-5", NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL params"), "%s", rep.text);
}
END_TEST

START_TEST(compile_error_names_the_line) {
    ck_assert_int_eq(check_env("cli_broken", NULL, NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL compile"), "%s", rep.text);
    ck_assert_msg(strstr(line_of(&rep, "FAIL compile"), ":7"), "line 7 named: %s", rep.text);
    ck_assert_msg(strstr(line_of(&rep, "FAIL compile"), "cli_broken.c"), "file named: %s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
}
END_TEST

START_TEST(empty_hint_fails) {
    ck_assert_int_eq(check_env("cli_nohint", NULL, NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL hint"), "%s", rep.text);
    ck_assert_msg(strstr(line_of(&rep, "FAIL hint"), "empty"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "PASS solve"), "only the hint is wrong: %s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
}
END_TEST

START_TEST(losing_solve_fails) {
    ck_assert_int_eq(check_env("cli_badsolve", NULL, NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL solve: SOLVE won 0 of 20"), "%s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
}
END_TEST

START_TEST(growing_observation_fails) {
    ck_assert_int_eq(check_env("cli_growobs", NULL, NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL obs_size"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "FAIL max_steps"), "the long episode is where it shows: %s", rep.text);
    ck_assert_msg(has_line(&rep, "PASS reset"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "WARN solve"), "no SOLVE is a warning: %s", rep.text);
}
END_TEST

START_TEST(crash_on_empty_action_fails) {
    ck_assert_int_eq(check_env("cli_crashempty", NULL, NULL, &rep), 1);
    const char *l = line_of(&rep, "FAIL arbitrary_actions");
    ck_assert_msg(strstr(l, "crash") && strstr(l, "empty action"), "%s", rep.text);
    /* the checker went on after the crash, with a fresh worker */
    ck_assert_msg(has_line(&rep, "PASS hint"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "PASS solve"), "%s", rep.text);
}
END_TEST

/* The first timeout stops the check (before, every later check waited out a
 * deadline per call: 28 s of silence), and its line names the deadline and
 * the option that sets it. */
static int progress_calls;
static void count_progress(const char *check, void *arg) {
    (void)check;
    (void)arg;
    progress_calls++;
}

START_TEST(infinite_loop_fails_and_checker_stops) {
    short_deadline();
    spade_check_opts o;
    spade_check_opts_default(&o);
    o.solve_seeds = 3;
    o.timeout_option = "--timeout S";
    o.progress = count_progress;
    progress_calls = 0;
    double t0 = tu_now();
    ck_assert_int_eq(check_env("cli_loop", NULL, &o, &rep), 1);
    double took = tu_now() - t0;
    const char *l = line_of(&rep, "FAIL arbitrary_actions");
    ck_assert_msg(strstr(l, "timeout") && strstr(l, "0.5 s call") && strstr(l, "--timeout S sets the deadline"), "%s",
                  rep.text);
    ck_assert_msg(strstr(l, "1 of 13"), "no odd action is tried after the timeout: %s", rep.text);
    ck_assert_msg(has_line(&rep, "SKIP solve: an earlier call timed out"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "SKIP param_extremes: an earlier call timed out"), "%s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
    ck_assert_msg(took < 5.0, "one deadline, not one per call: %.1f s", took);
    ck_assert_msg(progress_calls >= 4, "progress called %d times", progress_calls);
}
END_TEST

/* A timeout in the middle of a batch of episodes (SOLVE hangs on seeds 6 and
 * 9 of the solve check's 20): the episode that hung is blamed, not one the
 * stop left unfinished, and the checker stops there. */
START_TEST(timeout_mid_batch_blames_its_episode) {
    short_deadline();
    spade_check_opts o;
    spade_check_opts_default(&o);
    o.timeout_option = "--timeout S";
    double t0 = tu_now();
    ck_assert_int_eq(check_env("check_latehang", NULL, &o, &rep), 1);
    double took = tu_now() - t0;
    const char *l = line_of(&rep, "FAIL solve");
    ck_assert_msg(strstr(l, "seed 6: step 1: solve: timeout") && strstr(l, "--timeout S sets the deadline"), "%s",
                  rep.text);
    ck_assert_msg(has_line(&rep, "SKIP random_agent: an earlier call timed out (solve during the solve check)"), "%s",
                  rep.text);
    ck_assert_msg(has_line(&rep, "PASS hint"), "the checks before it ran: %s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
    ck_assert_msg(took < 5.0, "one or two deadlines, not one per episode: %.1f s", took);
}
END_TEST

/* A STEP that never returns: reset's replay step times out before any check
 * plays a step; that was "SKIP step_deterministic" and exit 0, now a FAIL
 * naming the deadline (issue 14, class 6). No time is measured. */
START_TEST(hanging_step_fails_naming_the_deadline) {
    short_deadline();
    spade_check_opts o;
    spade_check_opts_default(&o);
    o.timeout_option = "--timeout S";
    ck_assert_int_eq(check_env("gate_hang", NULL, &o, &rep), 1);
    const char *l = line_of(&rep, "FAIL step_deterministic");
    ck_assert_msg(strstr(l, "timed out") && strstr(l, "0.5 s call") && strstr(l, "--timeout S sets the deadline"), "%s",
                  rep.text);
    ck_assert_msg(!has_line(&rep, "SKIP step_deterministic"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "SKIP seeds_vary: an earlier call timed out"), "%s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
}
END_TEST

/* A hint that gives the answer passes the hint check (it works) with a
 * warning that points to the gates, which refuse it (issue 18, item 7); a
 * strategy hint gets none. */
START_TEST(hint_with_the_answer_warns) {
    ck_assert_int_eq(check_env("gate_hintanswer", NULL, NULL, &rep), 0);
    ck_assert_msg(has_line(&rep, "PASS hint"), "%s", rep.text);
    const char *l = line_of(&rep, "WARN hint");
    ck_assert_msg(strstr(l, "from the hint won seed") && strstr(l, "spade check --gates"), "%s", rep.text);
    ck_assert_int_eq(rep.warned, 1);
    ck_assert_int_eq(check_env("gate_direction", NULL, NULL, &rep), 0); /* "Travellers who went north": the word wins */
    ck_assert_int_eq(rep.warned, 1);
    ck_assert_int_eq(check_env("cli_good", NULL, NULL, &rep), 0);
    ck_assert_msg(!has_line(&rep, "WARN hint"), "%s", rep.text);
}
END_TEST

/* The blind spots of issue 10: each passed `spade check` before. */
START_TEST(param_extreme_crash_fails) {
    ck_assert_int_eq(check_env("check_extreme", NULL, NULL, &rep), 1);
    const char *l = line_of(&rep, "FAIL param_extremes");
    ck_assert_msg(strstr(l, "tries=100") && strstr(l, "crash"), "%s", rep.text);
    ck_assert_int_eq(rep.failed, 1); /* at the defaults it is fine */
    ck_assert_int_eq(check_env("add", NULL, NULL, &rep), 0);
    ck_assert_msg(has_line(&rep, "PASS param_extremes"), "%s", rep.text);
}
END_TEST

START_TEST(uninitialised_local_fails) {
    ck_assert_int_eq(check_env("check_uninit", NULL, NULL, &rep), 1);
    ck_assert_msg(strstr(line_of(&rep, "FAIL reset_deterministic"), "uninitialised local"), "%s", rep.text);
}
END_TEST

START_TEST(empty_action_win_fails) {
    ck_assert_int_eq(check_env("check_emptywin", NULL, NULL, &rep), 1);
    ck_assert_msg(strstr(line_of(&rep, "FAIL max_steps"), "the empty action wins"), "%s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
}
END_TEST

START_TEST(coin_flip_fails) {
    ck_assert_int_eq(check_env("check_coinflip", NULL, NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL random_agent: a random agent won"), "%s", rep.text);
    ck_assert_int_eq(rep.failed, 1);
}
END_TEST

START_TEST(hidden_global_state_fails) {
    ck_assert_int_eq(check_env("cli_global", NULL, NULL, &rep), 1);
    ck_assert_msg(has_line(&rep, "FAIL reset_deterministic"), "%s", rep.text);
}
END_TEST

START_TEST(options_are_used) {
    spade_check_opts o;
    spade_check_opts_default(&o);
    ck_assert_int_eq(o.seeds, 5);
    ck_assert_int_eq(o.solve_seeds, 20);
    o.seeds = 2;
    o.solve_seeds = 7;
    o.first_seed = 1000;
    o.verbose = 1;
    ck_assert_int_eq(check_env("add", NULL, &o, &rep), 0);
    ck_assert_msg(has_line(&rep, "PASS reset (2 seeds)"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "PASS solve (won 7 of 7"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "INFO first_observation (seed 1000): Compute"), "%s", rep.text);
    ck_assert_msg(has_line(&rep, "INFO hint"), "%s", rep.text);
}
END_TEST

START_TEST(random_action_is_seeded_and_bounded) {
    uint64_t a = 42, b = 42, c = 43;
    char x[64], y[64], z[64];
    int differ = 0;
    for (int i = 0; i < 200; i++) {
        size_t nx = spade_random_action(&a, x, sizeof x);
        size_t ny = spade_random_action(&b, y, sizeof y);
        size_t nz = spade_random_action(&c, z, sizeof z);
        ck_assert_uint_eq(nx, ny);
        ck_assert_str_eq(x, y);
        ck_assert_uint_eq(strlen(x), nx);
        ck_assert_uint_gt(nx, 0);
        ck_assert_uint_eq(strlen(z), nz);
        differ += strcmp(x, z) != 0;
    }
    ck_assert_int_gt(differ, 100);
    char tiny[3];
    for (int i = 0; i < 100; i++) ck_assert_uint_le(spade_random_action(&a, tiny, sizeof tiny), 2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("check");
    TCase *t = tcase_create("checker");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, good_env_passes);
    tcase_add_test(t, params_are_checked);
    tcase_add_test(t, compile_error_names_the_line);
    tcase_add_test(t, empty_hint_fails);
    tcase_add_test(t, losing_solve_fails);
    tcase_add_test(t, growing_observation_fails);
    tcase_add_test(t, crash_on_empty_action_fails);
    tcase_add_test(t, infinite_loop_fails_and_checker_stops);
    tcase_add_test(t, timeout_mid_batch_blames_its_episode);
    tcase_add_test(t, hanging_step_fails_naming_the_deadline);
    tcase_add_test(t, hint_with_the_answer_warns);
    tcase_add_test(t, param_extreme_crash_fails);
    tcase_add_test(t, uninitialised_local_fails);
    tcase_add_test(t, empty_action_win_fails);
    tcase_add_test(t, coin_flip_fails);
    tcase_add_test(t, hidden_global_state_fails);
    tcase_add_test(t, options_are_used);
    suite_add_tcase(s, t);
    TCase *u = tcase_create("random_agent");
    tcase_add_test(u, random_action_is_seeded_and_bounded);
    suite_add_tcase(s, u);
    return tu_run(s);
}
