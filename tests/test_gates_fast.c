/* test_gates_fast.c — what makes the designer's gates cheap, checked against
 * what it replaced.
 *
 * What it is: Check tests that (1) the gates (designer/gates.c: two workers
 * for all of them, param corners as instance blocks, the gates sharing runs)
 * give the lines the slow reference gives (tests/gates_ref.c: a vector env
 * per play and per corner, one play per gate) for the gates both judge, on stdenv environments and
 * on every crafted gate_*.c (gate_bigstate's 16 MiB state too, whose corners
 * do not fit the shared workers), with and without stop_at_first; (2) a block of
 * instances added to a vector env plays with its own params, in one worker
 * or several, and a revive gives each env its own params back; (3) hints and
 * SOLVE's actions fetched in one batch equal those fetched one at a time,
 * and leave the episodes as they were; (4) two workers made with one poison
 * seed give an instance of the other parity different garbage (the
 * determinism gates' premise), the poison can be switched off and on again,
 * and on again it gives the same garbage; (5) the episode layer on a
 * caller's vector env (places) plays exactly what it plays on its own, and
 * per-episode wants fetch SOLVE only where asked, and a vector that comes
 * failed (sticky) from an earlier call is revived before the run plays on it.
 * What it is not: a benchmark (bench/bench_gates measures the speed).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "designer/gates.h"
#include "episodes.h"
#include "registry.h"
#include "testutil.h"

int gates_run_reference(spade_sandbox *sb, const char *filename, const char *src, size_t len, const spade_gate_opts *o,
                        spade_gate_report *rep, char *err, size_t errlen);

static spade_sandbox *sb;
/* No call here is meant to time out: 30 s, not 2 s. A batch of gate_bigstate's 16 MiB
 * states took over 2 s with the machine loaded (11 runnable on 2 cores), and a timeout
 * in the fast gates but not in the reference (or the other way round) is a report that
 * differs for no reason of the gates'. */
static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 10.0, .call_timeout_s = 30.0}); }
static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

static char *env_src(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s.c", name);
    if (!strncmp(name, "stdenv/", 7)) {
        char *p = NULL;
        snprintf(path, sizeof path, "%s/%s.c", tu_srcdir(), name);
        char err[256];
        ck_assert_msg(spade_read_source(path, &p, len, err, sizeof err) == 0, "%s", err);
        return p;
    }
    return tu_read_env(path, len);
}

/* The report as text, the measured time per step cut out (it is a timing). */
static void report(const spade_gate_report *r, char *out, size_t cap) {
    spade_gate_report_text(r, out, cap);
    char *p;
    while ((p = strstr(out, " ms per step"))) {
        char *q = p;
        while (q > out && q[-1] != ' ' && q[-1] != '(') q--;
        memmove(q, p + 12, strlen(p + 12) + 1);
    }
}

START_TEST(the_fast_gates_report_what_the_reference_reports) {
    static const char *const envs[] = {
        "stdenv/carry_add", "stdenv/nim",    "stdenv/maze",     "stdenv/bank",     "stdenv/tictactoe",
        "gate_badsolve",    "gate_bigret",   "gate_coin",       "gate_crashmax",   "gate_direction",
        "gate_emptywin",    "gate_global",   "gate_hintanswer", "gate_impossible", "gate_probecrash",
        "gate_stepglobal",  "check_extreme", "gate_bigstate",
    };
    for (size_t e = 0; e < sizeof envs / sizeof *envs; e++)
        for (int stop = 0; stop < 2; stop++) {
            if (stop && (strncmp(envs[e], "gate_", 5) || !strcmp(envs[e], "gate_bigstate"))) continue;
            size_t len;
            char *src = env_src(envs[e], &len), err[1024], ta[8192], tb[8192];
            spade_gate_opts o;
            spade_gate_opts_default(&o);
            o.max_step_ms = 1e9;
            o.stop_at_first = stop;
            o.require_solve = !strcmp(envs[e], "gate_impossible");
            spade_gate_report a, b;
            ck_assert_msg(gates_run_reference(sb, envs[e], src, len, &o, &a, err, sizeof err) == 0, "%s", err);
            ck_assert_msg(spade_gates_run(sb, envs[e], src, len, &o, &b, err, sizeof err) == 0, "%s", err);
            report(&a, ta, sizeof ta);
            report(&b, tb, sizeof tb);
            /* the gates the reference judges as the gates do: each line the same where both ran it */
            static const spade_gate same[] = {SPADE_GATE_COMPILE,    SPADE_GATE_LIMITS, SPADE_GATE_RESET_DET,
                                              SPADE_GATE_REPLAY_DET, SPADE_GATE_PROBE,  SPADE_GATE_RANDOM,
                                              SPADE_GATE_NOOP,       SPADE_GATE_SOLVE,  SPADE_GATE_NOVELTY};
            int compared = 0;
            for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
                spade_gate g = same[k];
                if (a.status[g] == SPADE_GATE_SKIP || b.status[g] == SPADE_GATE_SKIP) continue;
                compared++;
                ck_assert_msg(
                    (a.status[g] == b.status[g] && !strcmp(a.detail[g], b.detail[g])) ||
                        (g == SPADE_GATE_LIMITS && a.status[g] == b.status[g] && a.status[g] == SPADE_GATE_PASS),
                    "%s (stop_at_first %d), %s: the reference says\n%s\nthe gates say\n%s", envs[e], stop,
                    spade_gate_name(g), ta, tb);
            }
            ck_assert_int_ge(compared, 1);
            if (a.status[SPADE_GATE_RANDOM] == SPADE_GATE_PASS && b.status[SPADE_GATE_RANDOM] == SPADE_GATE_PASS)
                ck_assert(a.random_rate == b.random_rate && a.noop_rate == b.noop_rate);
            if (a.status[SPADE_GATE_SOLVE] == SPADE_GATE_PASS && b.status[SPADE_GATE_SOLVE] == SPADE_GATE_PASS)
                ck_assert(a.solve_rate == b.solve_rate);
            /* a gate of both that the reference fails, the gates fail (or a newer gate before it did) */
            if (a.first_failed >= 0)
                ck_assert_msg(b.first_failed >= 0 && b.first_failed <= a.first_failed, "%s: %d vs %d\n%s\n%s", envs[e],
                              a.first_failed, b.first_failed, ta, tb);
            free(src);
        }
}
END_TEST

/* The first observations of envs[0..n) of v reset with seeds 40 + j. */
static void first_obs(spade_vecenv *v, int n, const int *envs, char (*obs)[512]) {
    uint64_t seeds[16];
    spade_step_result r[16];
    spade_failure f;
    for (int j = 0; j < n; j++) seeds[j] = 40 + (uint64_t)j;
    ck_assert_msg(spade_vecenv_reset_some(v, n, envs, seeds, r, &f) == 0, "%s", f.message);
    for (int j = 0; j < n; j++) snprintf(obs[j], 512, "%s", r[j].obs);
}

START_TEST(a_block_plays_with_its_own_params) {
    size_t len;
    char *src = env_src("stdenv/carry_add", &len);
    for (int workers = 1; workers <= 2; workers++) {
        spade_vecenv *v, *ref, *def;
        spade_failure f;
        int first;
        ck_assert_msg(
            spade_vecenv_new(sb, "carry_add.c", src, len, NULL, 3, workers, SPADE_AUTORESET_DISABLED, &v, &f) == 0,
            "%s", f.message);
        ck_assert_msg(spade_vecenv_add_block(v, "digits=17,terms=9", 3, &first, &f) == 0, "%s", f.message);
        ck_assert_int_eq(first, 3);
        ck_assert_int_eq(spade_vecenv_num_envs(v), 6);
        ck_assert_int_eq(spade_vecenv_add_block(v, "digits=99", 1, &first, &f), -1);
        ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
        ck_assert_int_eq(spade_vecenv_new(sb, "carry_add.c", src, len, "digits=17,terms=9", 3, 1,
                                          SPADE_AUTORESET_DISABLED, &ref, &f),
                         0);
        ck_assert_int_eq(spade_vecenv_new(sb, "carry_add.c", src, len, NULL, 3, 1, SPADE_AUTORESET_DISABLED, &def, &f),
                         0);
        char a[6][512], b[3][512], c[3][512];
        first_obs(v, 6, (int[]){0, 1, 2, 3, 4, 5}, a);
        first_obs(def, 3, (int[]){0, 1, 2}, c);
        /* seeds 40.. went to envs 0..5: the block's are seeds 43..45 */
        uint64_t seeds[3] = {43, 44, 45};
        spade_step_result r[3];
        ck_assert_int_eq(spade_vecenv_reset_some(ref, 3, (int[]){0, 1, 2}, seeds, r, &f), 0);
        for (int j = 0; j < 3; j++) snprintf(b[j], 512, "%s", r[j].obs);
        for (int j = 0; j < 3; j++) {
            ck_assert_str_eq(a[j], c[j]);
            ck_assert_str_eq(a[3 + j], b[j]);
            ck_assert_str_ne(a[3 + j], a[j]);
        }
        spade_vecenv_free(v);
        spade_vecenv_free(ref);
        spade_vecenv_free(def);
    }
    free(src);
    /* a revive gives every env its own params back: the block at n = 9 crashes again */
    src = env_src("gate_crashmax", &len);
    spade_vecenv *v;
    spade_failure f;
    int first;
    ck_assert_int_eq(spade_vecenv_new(sb, "gate_crashmax.c", src, len, NULL, 2, 1, SPADE_AUTORESET_DISABLED, &v, &f),
                     0);
    ck_assert_int_eq(spade_vecenv_add_block(v, "n=9", 1, &first, &f), 0);
    char o[3][512];
    for (int round = 0; round < 2; round++) {
        uint64_t seed = 1;
        spade_step_result r;
        ck_assert_int_eq(spade_vecenv_reset_some(v, 1, &first, &seed, &r, &f), -1);
        ck_assert_int_eq(f.outcome, SPADE_OUT_CRASH);
        ck_assert_msg(spade_vecenv_revive(v, &f) == 0, "%s", f.message);
        first_obs(v, 2, (int[]){0, 1}, o);
        ck_assert_str_eq(o[0], "Say a number.");
    }
    spade_vecenv_free(v);
    free(src);
}
END_TEST

START_TEST(hints_and_solves_in_one_batch) {
    size_t len;
    char *src = env_src("stdenv/maze", &len);
    spade_vecenv *v;
    spade_failure f;
    ck_assert_int_eq(spade_vecenv_new(sb, "maze.c", src, len, NULL, 5, 2, SPADE_AUTORESET_DISABLED, &v, &f), 0);
    int envs[4] = {4, 0, 3, 1};
    char o[4][512];
    first_obs(v, 4, envs, o);
    for (int t = 0; t < 6; t++) {
        char one[2][4][512];
        for (int solve = 0; solve < 2; solve++)
            for (int j = 0; j < 4; j++) {
                const char *text;
                size_t n;
                ck_assert_int_eq(solve ? spade_vecenv_solve(v, envs[j], &text, &n, &f)
                                       : spade_vecenv_hint(v, envs[j], &text, &n, &f),
                                 0);
                snprintf(one[solve][j], 512, "%s", text);
            }
        spade_step_result r[4];
        for (int solve = 0; solve < 2; solve++) {
            ck_assert_msg(spade_vecenv_text_some(v, 4, envs, solve, r, &f) == 0, "%s", f.message);
            for (int j = 0; j < 4; j++) {
                ck_assert_str_eq(r[j].obs, one[solve][j]);
                ck_assert_uint_eq(r[j].obs_len, strlen(one[solve][j]));
                ck_assert(!r[j].terminated && !r[j].truncated && r[j].reward == 0);
            }
        }
        /* the episodes go on: SOLVE's moves step them */
        const char *acts[4];
        for (int j = 0; j < 4; j++) acts[j] = one[1][j];
        ck_assert_msg(spade_vecenv_step_some(v, 4, envs, acts, NULL, r, &f) == 0, "%s", f.message);
    }
    /* an env never reset is the caller's mistake, and the vector stays usable */
    spade_step_result r;
    ck_assert_int_eq(spade_vecenv_text_some(v, 1, (int[]){2}, 1, &r, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    ck_assert_int_eq(spade_vecenv_text_some(v, 1, envs, 0, &r, &f), 0);
    spade_vecenv_free(v);
    free(src);
}
END_TEST

START_TEST(two_poisoned_workers_hold_different_garbage) {
    size_t len;
    char *src = env_src("check_uninit", &len);
    spade_vecenv *x, *y;
    spade_failure f;
    uint64_t P = 0x5eed0001ULL;
    ck_assert_int_eq(spade_vecenv_new_poisoned(sb, "u.c", src, len, NULL, 2, 1, SPADE_AUTORESET_DISABLED, P, &x, &f),
                     0);
    ck_assert_int_eq(spade_vecenv_new_poisoned(sb, "u.c", src, len, NULL, 2, 1, SPADE_AUTORESET_DISABLED, P, &y, &f),
                     0);
    /* one seed on instance 0 of x and instance 1 of y: what the gates' opposite orders arrange */
    uint64_t seed = 7;
    spade_step_result r;
    char x0[3][512], y1[512];
    ck_assert_int_eq(spade_vecenv_reset_some(x, 1, (int[]){0}, &seed, &r, &f), 0);
    snprintf(x0[0], 512, "%s", r.obs);
    ck_assert_int_eq(spade_vecenv_reset_some(y, 1, (int[]){1}, &seed, &r, &f), 0);
    snprintf(y1, 512, "%s", r.obs);
    ck_assert_str_ne(x0[0], y1);
    /* off, then on again: the same garbage as at the start */
    ck_assert_int_eq(spade_vecenv_set_poison(x, -1, 0, &f), 0);
    ck_assert_int_eq(spade_vecenv_reset_some(x, 1, (int[]){0}, &seed, &r, &f), 0);
    ck_assert_int_eq(spade_vecenv_set_poison(x, 0, P, &f), 0);
    ck_assert_int_eq(spade_vecenv_reset_some(x, 1, (int[]){0}, &seed, &r, &f), 0);
    snprintf(x0[1], 512, "%s", r.obs);
    ck_assert_str_eq(x0[1], x0[0]);
    ck_assert_int_eq(spade_vecenv_reset_some(x, 1, (int[]){1}, &seed, &r, &f), 0);
    ck_assert_str_eq(r.obs, y1);
    /* the gates' pair: one vector of two workers (seeds P and P + 1), worker 1 given worker 0's */
    spade_vecenv *z;
    ck_assert_int_eq(spade_vecenv_new_poisoned(sb, "u.c", src, len, NULL, 4, 2, SPADE_AUTORESET_DISABLED, P, &z, &f),
                     0);
    ck_assert_int_eq(spade_vecenv_set_poison(z, 1, P, &f), 0);
    uint64_t seeds[4] = {7, 7, 7, 7};
    spade_step_result rs[4];
    ck_assert_int_eq(spade_vecenv_reset_some(z, 4, (int[]){0, 1, 2, 3}, seeds, rs, &f), 0);
    ck_assert_str_eq(rs[0].obs, x0[0]); /* worker 0, instance 0 */
    ck_assert_str_eq(rs[1].obs, x0[0]); /* worker 1, instance 0: the same garbage */
    ck_assert_str_eq(rs[3].obs, y1); /* worker 1, instance 1: the other parity's */
    ck_assert_str_ne(rs[0].obs, rs[3].obs);
    spade_vecenv_free(z);
    spade_vecenv_free(x);
    spade_vecenv_free(y);
    free(src);
}
END_TEST

START_TEST(places_play_what_own_vectors_play) {
    size_t len;
    char *src = env_src("stdenv/maze", &len), err[1024];
    spade_ep_spec specs[2] = {{.filename = "maze.c", .source = src, .len = len},
                              {.filename = "maze.c", .source = src, .len = len, .params = "size=9,slack=0"}};
    enum { N = 24 };
    spade_ep_request req[N];
    for (int i = 0; i < N; i++) req[i] = (spade_ep_request){.spec = i % 3 == 0, .seed = 300 + (uint64_t)i};
    spade_ep_outcome own[N], placed[N];
    spade_agent *a = spade_agent_random(5);
    ck_assert_msg(spade_episodes_play(sb, specs, 2, req, N, a, NULL, own, err, sizeof err) == 0, "%s", err);
    spade_agent_free(a);
    spade_vecenv *v;
    spade_failure f;
    int first;
    ck_assert_int_eq(spade_vecenv_new(sb, "maze.c", src, len, NULL, 5, 2, SPADE_AUTORESET_DISABLED, &v, &f), 0);
    ck_assert_int_eq(spade_vecenv_add_block(v, "size=9,slack=0", 3, &first, &f), 0);
    spade_ep_place places[2] = {{.vec = v, .count = 5}, {.vec = v, .first = first, .count = 3}};
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.places = places;
    eo.max_live = 6;
    for (int rep = 0; rep < 2; rep++) { /* a second run reuses the vector */
        a = spade_agent_random(5);
        ck_assert_msg(spade_episodes_play(sb, specs, 2, req, N, a, &eo, placed, err, sizeof err) == 0, "%s", err);
        spade_agent_free(a);
        for (int i = 0; i < N; i++) {
            ck_assert_int_eq(placed[i].end, own[i].end);
            ck_assert_int_eq(placed[i].steps, own[i].steps);
            ck_assert(placed[i].ret == own[i].ret && placed[i].success == own[i].success);
        }
    }
    /* per-episode wants: SOLVE is fetched for the even episodes only, so the odd ones stop at once */
    unsigned char wants[N];
    for (int i = 0; i < N; i++) wants[i] = i % 2 ? 0 : SPADE_AGENT_WANTS_SOLVE;
    eo.wants = wants;
    eo.n_wants = N;
    a = spade_agent_solve();
    ck_assert_msg(spade_episodes_play(sb, specs, 2, req, N, a, &eo, placed, err, sizeof err) == 0, "%s", err);
    spade_agent_free(a);
    for (int i = 0; i < N; i++) {
        if (i % 2) {
            ck_assert_int_eq(placed[i].end, SPADE_EP_AGENT_STOP);
            ck_assert_str_eq(placed[i].stop_reason, "no_solve");
        } else {
            ck_assert_msg(placed[i].success, "episode %d: SOLVE did not win", i);
        }
    }
    /* a place outside the vector is refused */
    places[1].count = 99;
    a = spade_agent_random(5);
    eo.wants = NULL;
    ck_assert_int_eq(spade_episodes_play(sb, specs, 2, req, N, a, &eo, placed, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "spec 1"));
    spade_agent_free(a);
    spade_vecenv_free(v);
    free(src);
}
END_TEST

START_TEST(a_failed_vector_is_revived_before_a_run) {
    size_t len;
    char *src = env_src("gate_crashmax", &len), err[1024];
    spade_vecenv *v;
    spade_failure f;
    int first;
    ck_assert_int_eq(spade_vecenv_new(sb, "gate_crashmax.c", src, len, NULL, 4, 2, SPADE_AUTORESET_DISABLED, &v, &f),
                     0);
    ck_assert_int_eq(spade_vecenv_add_block(v, "n=9", 2, &first, &f), 0);
    /* env first + 1 is worker 1's: it crashes, worker 0 lives, and the vector is failed */
    uint64_t seed = 1;
    spade_step_result r;
    int env = first + 1;
    ck_assert_int_eq(spade_vecenv_reset_some(v, 1, &env, &seed, &r, &f), -1);
    ck_assert(spade_vecenv_env_lost(v, 1) && !spade_vecenv_env_lost(v, 0));
    spade_ep_spec spec = {.filename = "gate_crashmax.c", .source = src, .len = len};
    spade_ep_place place = {.vec = v, .count = 4};
    spade_ep_request req[6];
    for (int i = 0; i < 6; i++) req[i] = (spade_ep_request){.spec = 0, .seed = 10 + (uint64_t)i};
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.places = &place;
    spade_ep_outcome out[6];
    spade_agent *a = spade_agent_noop();
    ck_assert_msg(spade_episodes_play(sb, &spec, 1, req, 6, a, &eo, out, err, sizeof err) == 0, "%s", err);
    spade_agent_free(a);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(out[i].end == SPADE_EP_TERMINATED, "episode %d: %s", i, spade_ep_end_name(out[i].end));
    spade_vecenv_free(v);
    free(src);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gates_fast");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 240);
    tcase_add_test(t, the_fast_gates_report_what_the_reference_reports);
    tcase_add_test(t, a_block_plays_with_its_own_params);
    tcase_add_test(t, hints_and_solves_in_one_batch);
    tcase_add_test(t, two_poisoned_workers_hold_different_garbage);
    tcase_add_test(t, places_play_what_own_vectors_play);
    tcase_add_test(t, a_failed_vector_is_revived_before_a_run);
    suite_add_tcase(s, t);
    return tu_run(s);
}
