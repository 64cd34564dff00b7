/* test_vecenv.c — batched stepping and the vector env.
 *
 * What it is: Check tests that (1) stepping many instances in one batch gives
 * exactly what stepping them one call at a time gives — 1, 16 and 256
 * instances over 1 and 4 workers, same seeds and actions, auto-resets
 * included, byte for byte and bit for bit; (2) the two auto-reset modes behave
 * as Gymnasium's (next-step: the step after the end resets, ignoring its
 * action, with the documented seeds; disabled: stepping a finished env is a
 * bad_call until reset_one); (3) async send/wait equals a sync step; (4) a
 * failure in one worker is reported and sticky, and a reset batch that times
 * out on one worker leaves the other worker's envs reset.
 * What it is not: a benchmark (bench/ measures speed).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/internal.h"
#include "sandbox/sandbox.h"
#include "testutil.h"

static spade_sandbox *sb;

static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.call_timeout_s = 5.0}); }

static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

/* What one transition looked like, comparable exactly. */
typedef struct seen {
    uint64_t obs_hash;
    size_t obs_len;
    double reward, ret;
    int terminated, truncated, success;
} seen;

static uint64_t fnv(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static seen see(const spade_step_result *r) {
    ck_assert_uint_eq(strlen(r->obs), r->obs_len);
    seen s = {.obs_hash = fnv(r->obs, r->obs_len),
              .obs_len = r->obs_len,
              .reward = r->reward,
              .ret = r->episode_return,
              .terminated = r->terminated,
              .truncated = r->truncated,
              .success = r->success};
    return s;
}

static void assert_same(const seen *a, const seen *b, int env, int t) {
    ck_assert_msg(a->obs_hash == b->obs_hash && a->obs_len == b->obs_len, "env %d step %d: observation differs", env,
                  t);
    /* Exactly the same bits: the same code ran on the same state. */
    ck_assert_msg(memcmp(&a->reward, &b->reward, sizeof a->reward) == 0, "env %d step %d: reward %.17g vs %.17g", env,
                  t, a->reward, b->reward);
    ck_assert_msg(memcmp(&a->ret, &b->ret, sizeof a->ret) == 0, "env %d step %d: return differs", env, t);
    ck_assert_msg(a->terminated == b->terminated && a->truncated == b->truncated && a->success == b->success,
                  "env %d step %d: flags differ", env, t);
}

static const char *action_for(int env, int t) {
    static const char *const moves[] = {"L", "R", "R", "stay", "<answer>L</answer>", "r", "l", "\\boxed{R}"};
    uint64_t h = (uint64_t)env * 2654435761u + (uint64_t)t * 40503u + 17;
    return moves[(h >> 7) % (sizeof moves / sizeof moves[0])];
}

enum { STEPS = 30 };
static const uint64_t SEED = 1000;

/* The reference: one worker, each instance reset or stepped in its own call,
 * with the vector env's auto-reset rule and seeds applied by hand. */
static seen *reference(const char *src, size_t len, int n) {
    seen *ref = calloc((size_t)(STEPS + 1) * (size_t)n, sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    spade_worker *w;
    spade_failure f;
    ck_assert_msg(spade_worker_load(sb, "sb_walk.c", src, len, &w, &f) == 0, "%s", f.message);
    int first;
    ck_assert_int_eq(spade_worker_add_instances(w, n, NULL, &first, &f), 0);
    int *ended = calloc((size_t)n, sizeof *ended);
    uint64_t *episode = calloc((size_t)n, sizeof *episode);
    for (int i = 0; i < n; i++) {
        int id = first + i;
        uint64_t seed = SEED + (uint64_t)i;
        spade_step_result r;
        ck_assert_int_eq(spade_worker_reset(w, 1, &id, &seed, &r, &f), 0);
        ref[i] = see(&r);
    }
    for (int t = 1; t <= STEPS; t++)
        for (int i = 0; i < n; i++) {
            int id = first + i;
            spade_step_result r;
            if (ended[i]) {
                uint64_t seed = SEED + (uint64_t)i + (++episode[i]) * (uint64_t)n;
                ck_assert_int_eq(spade_worker_reset(w, 1, &id, &seed, &r, &f), 0);
            } else {
                const char *a = action_for(i, t);
                ck_assert_msg(spade_worker_step(w, 1, &id, &a, NULL, &r, &f) == 0, "%s", f.message);
            }
            ended[i] = r.terminated || r.truncated;
            ref[(size_t)t * (size_t)n + (size_t)i] = see(&r);
        }
    free(ended);
    free(episode);
    spade_worker_free(w);
    return ref;
}

static const int sizes[] = {1, 16, 256};

START_TEST(batched_equals_unbatched) {
    int n = sizes[_i];
    size_t len;
    char *src = tu_read_env("sb_walk.c", &len);
    seen *ref = reference(src, len, n);
    int ends = 0;
    for (int t = 1; t <= STEPS; t++)
        for (int i = 0; i < n; i++)
            ends +=
                ref[(size_t)t * (size_t)n + (size_t)i].terminated || ref[(size_t)t * (size_t)n + (size_t)i].truncated;
    ck_assert_msg(ends > 0, "the walk never ended an episode: the test would not cover auto-reset");

    const int workers[] = {1, 4};
    spade_step_result *res = calloc((size_t)n, sizeof *res);
    const char **acts = calloc((size_t)n, sizeof *acts);
    for (size_t wi = 0; wi < sizeof workers / sizeof workers[0]; wi++) {
        spade_vecenv *v;
        spade_failure f;
        ck_assert_msg(
            spade_vecenv_new(sb, "sb_walk.c", src, len, NULL, n, workers[wi], SPADE_AUTORESET_NEXT_STEP, &v, &f) == 0,
            "%s", f.message);
        ck_assert_int_eq(spade_vecenv_num_envs(v), n);
        ck_assert_str_eq(spade_vecenv_info(v)->name, "sb-walk");
        ck_assert_int_eq(spade_vecenv_reset(v, SEED, res, &f), 0);
        for (int i = 0; i < n; i++) {
            seen s = see(&res[i]);
            assert_same(&s, &ref[i], i, 0);
        }
        for (int t = 1; t <= STEPS; t++) {
            for (int i = 0; i < n; i++) acts[i] = action_for(i, t);
            /* Alternate the sync call and the split one: they must agree. */
            if (t % 2) {
                ck_assert_msg(spade_vecenv_step(v, acts, NULL, res, &f) == 0, "%s", f.message);
            } else {
                ck_assert_int_eq(spade_vecenv_step_async(v, acts, NULL, &f), 0);
                ck_assert_int_eq(spade_vecenv_step_async(v, acts, NULL, &f), -1); /* one in flight at a time */
                ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
                ck_assert_int_eq(spade_vecenv_step_wait(v, res, &f), 0);
            }
            for (int i = 0; i < n; i++) {
                seen s = see(&res[i]);
                assert_same(&s, &ref[(size_t)t * (size_t)n + (size_t)i], i, t);
            }
        }
        spade_vecenv_free(v);
    }
    free(res);
    free(acts);
    free(ref);
    free(src);
}
END_TEST

/* A worker stepping a batch of instances gives what it gives one at a time,
 * also when the batch repeats an instance or mixes resets and steps. */
START_TEST(worker_batch_mixed) {
    size_t len;
    char *src = tu_read_env("sb_walk.c", &len);
    spade_worker *a, *b;
    spade_failure f;
    ck_assert_int_eq(spade_worker_load(sb, "sb_walk.c", src, len, &a, &f), 0);
    ck_assert_int_eq(spade_worker_load(sb, "sb_walk.c", src, len, &b, &f), 0);
    int fa, fb;
    ck_assert_int_eq(spade_worker_add_instances(a, 3, NULL, &fa, &f), 0);
    ck_assert_int_eq(spade_worker_add_instances(b, 3, NULL, &fb, &f), 0);
    uint64_t seeds[3] = {5, 6, 7};
    int ids[3] = {fa, fa + 1, fa + 2};
    spade_step_result ra[3], rb;
    ck_assert_int_eq(spade_worker_reset(a, 3, ids, seeds, ra, &f), 0);
    for (int i = 0; i < 3; i++) {
        int id = fb + i;
        ck_assert_int_eq(spade_worker_reset(b, 1, &id, &seeds[i], &rb, &f), 0);
        ck_assert_str_eq(ra[i].obs, rb.obs);
    }
    /* One batch: reset 0 (seed 9), step 1, step 1 again, step 2. */
    int bid[4] = {fa, fa + 1, fa + 1, fa + 2};
    uint32_t ops[4] = {SPADE_OP_RESET, SPADE_OP_STEP, SPADE_OP_STEP, SPADE_OP_STEP};
    uint64_t bseed[4] = {9, 0, 0, 0};
    const char *acts[4] = {NULL, "L", "R", "stay"};
    spade_step_result rr[4];
    ck_assert_int_eq(spade_worker_batch_send(a, 4, bid, ops, bseed, acts, NULL, &f), 0);
    ck_assert_int_eq(spade_worker_batch_recv(a, rr, &f), 0);
    seen got[4];
    for (int i = 0; i < 4; i++) got[i] = see(&rr[i]);
    /* The same, one call each, on the twin worker. */
    int tid[4] = {fb, fb + 1, fb + 1, fb + 2};
    for (int i = 0; i < 4; i++) {
        if (ops[i] == SPADE_OP_RESET)
            ck_assert_int_eq(spade_worker_reset(b, 1, &tid[i], &bseed[i], &rb, &f), 0);
        else
            ck_assert_int_eq(spade_worker_step(b, 1, &tid[i], &acts[i], NULL, &rb, &f), 0);
        seen s = see(&rb);
        assert_same(&got[i], &s, i, 1);
    }
    spade_worker_free(a);
    spade_worker_free(b);
    free(src);
}
END_TEST

/* Steps (env 0 left, env 1 right, if there is one) until env 0's episode
 * ends; returns the step. */
static int run_to_end(spade_vecenv *v, spade_step_result *res, int max) {
    spade_failure f;
    const char *acts[2] = {"L", "R"};
    for (int t = 1; t <= max; t++) {
        ck_assert_msg(spade_vecenv_step(v, acts, NULL, res, &f) == 0, "%s", f.message);
        if (res[0].terminated || res[0].truncated) return t;
    }
    return -1;
}

START_TEST(autoreset_next_step) {
    size_t len;
    char *src = tu_read_env("sb_walk.c", &len);
    spade_vecenv *v;
    spade_failure f;
    /* width 99: the goal is far, so episodes end by truncation (max_steps 12). */
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_walk.c", src, len, "width=99", 2, 2, SPADE_AUTORESET_NEXT_STEP, &v, &f),
                     0);
    spade_step_result res[2];
    ck_assert_int_eq(spade_vecenv_reset(v, 40, res, &f), 0);
    int end = run_to_end(v, res, 12);
    ck_assert_int_gt(end, 0);
    /* The step after the end: env 0 resets with seed 40 + 0 + 1 * 2; its
     * action is ignored; reward 0, not done. */
    const char *acts[2] = {"R", "R"};
    ck_assert_int_eq(spade_vecenv_step(v, acts, NULL, res, &f), 0);
    ck_assert_ptr_nonnull(strstr(res[0].obs, "luck"));
    ck_assert(res[0].reward == 0 && !res[0].terminated && !res[0].truncated);
    char after[256];
    snprintf(after, sizeof after, "%s", res[0].obs);
    /* Compare with a worker reset by hand with the documented seed. */
    spade_worker *w;
    ck_assert_int_eq(spade_worker_load(sb, "sb_walk.c", src, len, &w, &f), 0);
    int id;
    double width = 99;
    ck_assert_int_eq(spade_worker_add_instances(w, 1, &width, &id, &f), 0);
    uint64_t seed = 40 + 0 + 1 * 2;
    spade_step_result r;
    ck_assert_int_eq(spade_worker_reset(w, 1, &id, &seed, &r, &f), 0);
    ck_assert_str_eq(after, r.obs);
    spade_worker_free(w);
    /* And the env goes on normally afterwards. */
    ck_assert_int_eq(spade_vecenv_step(v, acts, NULL, res, &f), 0);
    ck_assert_ptr_nonnull(strstr(res[0].obs, "after 1 steps"));
    spade_vecenv_free(v);
    free(src);
}
END_TEST

START_TEST(autoreset_disabled) {
    size_t len;
    char *src = tu_read_env("sb_walk.c", &len);
    spade_vecenv *v;
    spade_failure f;
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_walk.c", src, len, "width=99", 1, 1, SPADE_AUTORESET_DISABLED, &v, &f),
                     0);
    spade_step_result res[2];
    const char *acts[2] = {"L", "R"};
    ck_assert_int_eq(spade_vecenv_step(v, acts, NULL, res, &f), -1); /* before reset */
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    ck_assert_int_eq(spade_vecenv_reset(v, 3, res, &f), 0);
    ck_assert_int_gt(run_to_end(v, res, 12), 0);
    ck_assert_int_eq(spade_vecenv_step(v, acts, NULL, res, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    ck_assert_ptr_nonnull(strstr(f.message, "env 0"));
    spade_step_result one;
    ck_assert_int_eq(spade_vecenv_reset_one(v, 1, 77, &one, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    ck_assert_int_eq(spade_vecenv_reset_one(v, 0, 77, &one, &f), 0);
    ck_assert(!one.terminated && !one.truncated && one.reward == 0);
    ck_assert_msg(spade_vecenv_step(v, acts, NULL, res, &f) == 0, "%s", f.message);
    ck_assert_ptr_nonnull(strstr(res[0].obs, "after 1 steps"));
    spade_vecenv_free(v);
    free(src);
}
END_TEST

START_TEST(vecenv_bad_params_and_failures) {
    size_t len;
    char *src = tu_read_env("sb_moody.c", &len);
    spade_vecenv *v = (spade_vecenv *)1;
    spade_failure f;
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_moody.c", src, len, "nope=3", 4, 2, SPADE_AUTORESET_NEXT_STEP, &v, &f),
                     -1);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    ck_assert_ptr_nonnull(strstr(f.message, "nope"));
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_moody.c", src, len, NULL, 4, 2, SPADE_AUTORESET_NEXT_STEP, &v, &f), 0);
    spade_step_result res[4];
    ck_assert_int_eq(spade_vecenv_reset(v, 1, res, &f), 0);
    /* env 3 (worker 1) crashes: the vector reports it and stays failed. */
    const char *acts[4] = {"ok", "ok", "ok", "crash"};
    ck_assert_int_eq(spade_vecenv_step(v, acts, NULL, res, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_CRASH);
    const char *fine[4] = {"ok", "ok", "ok", "ok"};
    spade_failure g;
    ck_assert_int_eq(spade_vecenv_step(v, fine, NULL, res, &g), -1);
    ck_assert_int_eq(g.outcome, SPADE_OUT_CRASH);
    spade_vecenv_free(v);
    free(src);
}
END_TEST

/* A subset reset that times out in one worker: the other worker's envs did
 * reset (their results are filled), so after a revive they step. They used
 * to be left "never reset" by the vector though their results came back,
 * and the episode layer's next step of them was a bad_call (seen as the
 * gates' "internal error: env N: step before its reset" under load). */
START_TEST(a_partly_failed_reset_keeps_the_live_workers_envs) {
    size_t len;
    char *src = tu_read_env("vec_resethang.c", &len);
    /* 2 s: the hang always reaches it, and a fine reset never does, whatever
     * share of the CPU a loaded machine leaves the worker */
    spade_sandbox *quick = tu_sandbox(&(spade_sandbox_opts){.call_timeout_s = 2.0});
    spade_vecenv *v;
    spade_failure f;
    /* envs 0, 1 (workers 0, 1) at the defaults; envs 2, 3 (workers 0, 1) hang in RESET */
    ck_assert_int_eq(spade_vecenv_new(quick, "vec_resethang.c", src, len, NULL, 2, 2, SPADE_AUTORESET_DISABLED, &v, &f),
                     0);
    int first;
    ck_assert_msg(spade_vecenv_add_block(v, "hang=1", 2, &first, &f) == 0, "%s", f.message);
    ck_assert_int_eq(first, 2);
    int envs[2] = {2, 1};
    uint64_t seeds[2] = {5, 6};
    spade_step_result r[2];
    memset(r, 0, sizeof r);
    ck_assert_int_eq(spade_vecenv_reset_some(v, 2, envs, seeds, r, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_TIMEOUT);
    ck_assert_int_eq(spade_vecenv_env_lost(v, 2), 1);
    ck_assert_int_eq(spade_vecenv_env_lost(v, 1), 0);
    ck_assert_ptr_nonnull(r[1].obs);
    ck_assert_msg(!strncmp(r[1].obs, "ready ", 6), "env 1's reset result: %s", r[1].obs);
    ck_assert_int_eq(spade_vecenv_revive(v, &f), 0);
    int one = 1;
    const char *act = "x";
    spade_step_result s1;
    ck_assert_msg(spade_vecenv_step_some(v, 1, &one, &act, NULL, &s1, &f) == 0, "%s", f.message);
    ck_assert_msg(!strncmp(s1.obs, "got ", 4), "env 1 stepped: %s", s1.obs);
    /* the revived worker's envs were not reset: stepping one is the caller's mistake */
    int zero = 0;
    ck_assert_int_eq(spade_vecenv_step_some(v, 1, &zero, &act, NULL, &s1, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    spade_vecenv_free(v);
    spade_sandbox_free(quick);
    free(src);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("vecenv");
    TCase *t = tcase_create("vecenv");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, batched_equals_unbatched, 0, (int)(sizeof sizes / sizeof sizes[0]));
    tcase_add_test(t, worker_batch_mixed);
    tcase_add_test(t, autoreset_next_step);
    tcase_add_test(t, autoreset_disabled);
    tcase_add_test(t, vecenv_bad_params_and_failures);
    tcase_add_test(t, a_partly_failed_reset_keeps_the_live_workers_envs);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(suite()); }
