/* test_host.c — Check suite for the in-process host (core/host.c), the native
 * loader (core/native.c) and the DSL runtime helpers (dsl/runtime.c).
 *
 * What it is: tests on the environments in tests/envs/, compiled by gcc into
 * shared objects next to this program in the build tree (core/local.mk), plus
 * direct tests of the helpers. What it is not: a sandbox test (no fork, no JIT;
 * tests/hostile and core/sandbox's tests do that) — except one test that
 * compiles the same environments with the JIT in-process (trusted sources) and
 * checks they play byte for byte as the gcc-built ones.
 *
 * Links with -Wl,--export-dynamic: the environments resolve spade_say & co.
 * from this executable.
 */
#include <check.h>
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "host.h"
#include "jit/jit.h"
#include "native.h"
#include "runtime.h"
#include "testutil.h"
#include "tools/tools.h"

#ifndef SPADE_BUILDDIR
#error "SPADE_BUILDDIR must name the build tree (core/local.mk sets it)"
#endif

/* The helpers, without the DSL's short macro names. */
void spade_say(const char *fmt, ...);
void spade_act(const char *fmt, ...);
void spade_reward(double r);
void spade_finish(int success);
long spade_steps(void);
long spade_rand_range(long lo, long hi);
double spade_rand_real(void);
int spade_chance(double p);
void spade_shuffle(void *base, long n, long size);
const char *spade_answer(const char *text);
long spade_parse_int(const char *text);
double spade_parse_real(const char *text);
int spade_parse_word(const char *text, char *out, long cap);
int spade_parse_ints(const char *text, long *out, int cap);
int spade_str_ieq(const char *a, const char *b);
#define NO_INT LONG_MIN

/* ---- helpers -------------------------------------------------------------- */

static void env_path(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/tests/envs/%s.so", SPADE_BUILDDIR, name);
}

static spade_host *open_env(const char *name, void **dl) {
    char path[4096], err[512] = "";
    env_path(name, path, sizeof path);
    spade_host *h = NULL;
    int rc = spade_native_open(path, &h, dl, err, sizeof err);
    ck_assert_msg(rc == 0, "open %s: %s", name, err);
    ck_assert_ptr_nonnull(h);
    return h;
}

/* Opens an environment that must fail validation; returns the message. */
static const char *open_bad(const char *name) {
    static char err[512];
    char path[4096];
    env_path(name, path, sizeof path);
    spade_host *h = (spade_host *)1;
    void *dl = (void *)1;
    err[0] = '\0';
    int rc = spade_native_open(path, &h, &dl, err, sizeof err);
    ck_assert_msg(rc == -1, "%s should fail validation", name);
    ck_assert_ptr_null(h);
    ck_assert_ptr_null(dl);
    ck_assert_msg(strstr(err, path) != NULL, "message names the file: %s", err);
    return err;
}

/* Plays one episode with the environment's own SOLVE; returns the result of the
 * last step. With ask_hint, asks for the hint before every step. */
static spade_step_result play_solved(spade_host *h, int inst, uint64_t seed, int ask_hint, char *transcript,
                                     size_t cap) {
    spade_step_result r;
    size_t used = 0;
    ck_assert_int_eq(spade_host_reset(h, inst, seed, &r), SPADE_HOST_OK);
    if (transcript) used += (size_t)snprintf(transcript + used, cap - used, "%s|", r.obs);
    for (int guard = 0; guard < 1000; guard++) {
        const char *text;
        size_t len;
        if (ask_hint) ck_assert_int_eq(spade_host_hint(h, inst, &text, &len), SPADE_HOST_OK);
        ck_assert_int_eq(spade_host_solve(h, inst, &text, &len), SPADE_HOST_OK);
        char action[256];
        ck_assert_uint_lt(len, sizeof action);
        memcpy(action, text, len + 1);
        ck_assert_int_eq(spade_host_step(h, inst, action, len, &r), SPADE_HOST_OK);
        if (transcript && used < cap)
            used += (size_t)snprintf(transcript + used, cap - used, "%s>%s/%g|", action, r.obs, r.reward);
        if (r.terminated || r.truncated) return r;
    }
    ck_abort_msg("episode never ended");
    return r;
}

/* ---- reset and step determinism ------------------------------------------- */

START_TEST(test_reset_determinism) {
    static const char *envs[] = {"add", "counter", "bank", "echo"};
    for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
        void *dl;
        spade_host *h = open_env(envs[e], &dl);
        int a = spade_host_add_instance(h, NULL), b = spade_host_add_instance(h, NULL);
        ck_assert_int_eq(a, 0);
        ck_assert_int_eq(b, 1);
        ck_assert_int_eq(spade_host_num_instances(h), 2);
        int differ = 0;
        for (uint64_t seed = 0; seed < 50; seed++) {
            spade_step_result r;
            ck_assert_int_eq(spade_host_reset(h, a, seed, &r), SPADE_HOST_OK);
            char first[SPADE_OBS_MAX + 1];
            size_t first_len = r.obs_len;
            memcpy(first, r.obs, r.obs_len + 1);
            ck_assert_uint_eq(strlen(first), first_len);
            ck_assert_int_eq(spade_host_reset(h, b, seed, &r), SPADE_HOST_OK);
            ck_assert_uint_eq(r.obs_len, first_len);
            ck_assert_mem_eq(r.obs, first, first_len);
            ck_assert_int_eq(spade_host_reset(h, b, seed + 1000, &r), SPADE_HOST_OK);
            differ += r.obs_len != first_len || memcmp(r.obs, first, first_len) != 0;
        }
        if (strcmp(envs[e], "echo") != 0)
            ck_assert_msg(differ >= 25, "%s: only %d of 50 seed pairs gave different observations", envs[e], differ);
        else
            ck_assert_int_eq(differ, 0); /* echo's first observation does not depend on the seed */
        spade_native_close(h, dl);
    }
}
END_TEST

START_TEST(test_step_determinism) {
    void *dl;
    spade_host *h = open_env("counter", &dl);
    int a = spade_host_add_instance(h, NULL), b = spade_host_add_instance(h, NULL);
    static const char *actions[] = {"+", "-", "hmm", "+", "+", "\\boxed{-}", "", "+", "-", "-"};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        spade_step_result ra, rb;
        ck_assert_int_eq(spade_host_reset(h, a, seed, &ra), SPADE_HOST_OK);
        ck_assert_int_eq(spade_host_reset(h, b, seed, &rb), SPADE_HOST_OK);
        for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
            spade_host_status sa = spade_host_step(h, a, actions[i], strlen(actions[i]), &ra);
            char obs[SPADE_OBS_MAX + 1];
            memcpy(obs, ra.obs, ra.obs_len + 1);
            spade_host_status sb = spade_host_step(h, b, actions[i], strlen(actions[i]), &rb);
            ck_assert_int_eq(sa, sb);
            if (sa != SPADE_HOST_OK) break; /* both ended */
            ck_assert_str_eq(obs, rb.obs);
            ck_assert(ra.reward == rb.reward);
            ck_assert_int_eq(ra.terminated, rb.terminated);
            ck_assert_int_eq(ra.truncated, rb.truncated);
            ck_assert(ra.episode_return == rb.episode_return);
        }
    }
    spade_native_close(h, dl);
}
END_TEST

/* ---- solve, hint, truncation ---------------------------------------------- */

START_TEST(test_solve_wins) {
    static const char *envs[] = {"add", "counter", "bank"};
    for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
        void *dl;
        spade_host *h = open_env(envs[e], &dl);
        ck_assert_int_eq(spade_host_info(h)->has_solve, 1);
        int inst = spade_host_add_instance(h, NULL);
        for (uint64_t seed = 0; seed < 100; seed++) {
            spade_step_result r = play_solved(h, inst, seed, 0, NULL, 0);
            ck_assert_msg(r.terminated && !r.truncated && r.success, "%s seed %llu: solve did not win", envs[e],
                          (unsigned long long)seed);
            ck_assert(r.episode_return >= spade_host_info(h)->success);
            spade_step_result again;
            ck_assert_int_eq(spade_host_step(h, inst, "1", 1, &again), SPADE_HOST_BAD_CALL);
        }
        spade_native_close(h, dl);
    }
}
END_TEST

START_TEST(test_hint_and_solve_leave_episode_alone) {
    /* counter draws its target with chance() in RESET only; asking for hints
     * and solves must not move the RNG or the state. */
    void *dl;
    spade_host *h = open_env("counter", &dl);
    int inst = spade_host_add_instance(h, NULL);
    for (uint64_t seed = 0; seed < 20; seed++) {
        char with[8192], without[8192];
        play_solved(h, inst, seed, 1, with, sizeof with);
        play_solved(h, inst, seed, 0, without, sizeof without);
        ck_assert_str_eq(with, without);
    }
    const char *text;
    size_t len;
    ck_assert_int_eq(spade_host_hint(h, inst, &text, &len), SPADE_HOST_OK);
    ck_assert_uint_eq(len, strlen(text));
    ck_assert_ptr_nonnull(strstr(text, "toward the target"));
    spade_native_close(h, dl);
}
END_TEST

START_TEST(test_truncation) {
    void *dl;
    spade_host *h = open_env("counter", &dl);
    const spade_env_info *info = spade_host_info(h);
    ck_assert_int_eq(info->max_steps, 20);
    int inst = spade_host_add_instance(h, NULL);
    spade_step_result r;
    ck_assert_int_eq(spade_host_reset(h, inst, 7, &r), SPADE_HOST_OK);
    for (int i = 1; i <= info->max_steps; i++) {
        ck_assert_int_eq(spade_host_step(h, inst, "wait", 4, &r), SPADE_HOST_OK);
        ck_assert_int_eq(r.terminated, 0);
        ck_assert_int_eq(r.truncated, i == info->max_steps);
    }
    ck_assert_int_eq(r.success, 0);
    ck_assert(r.episode_return == 0.0);
    ck_assert_int_eq(spade_host_step(h, inst, "+", 1, &r), SPADE_HOST_BAD_CALL);
    /* a reset starts over */
    ck_assert_int_eq(spade_host_reset(h, inst, 7, &r), SPADE_HOST_OK);
    ck_assert_int_eq(spade_host_step(h, inst, "+", 1, &r), SPADE_HOST_OK);
    ck_assert_ptr_nonnull(strstr(r.obs, "Value 1."));
    spade_native_close(h, dl);
}
END_TEST

START_TEST(test_steps_and_rewards_accumulate) {
    void *dl;
    spade_host *h = open_env("echo", &dl);
    int inst = spade_host_add_instance(h, NULL);
    spade_step_result r;
    ck_assert_int_eq(spade_host_reset(h, inst, 1, &r), SPADE_HOST_OK);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(spade_host_step(h, inst, "x 12", 4, &r), SPADE_HOST_OK);
        char want[128];
        snprintf(want, sizeof want, "strlen 4 len 4 int 12 steps %d", i);
        ck_assert_str_eq(r.obs, want);
        ck_assert(r.reward == 0.5);
        ck_assert(fabs(r.episode_return - 0.5 * (i + 1)) < 1e-12);
    }
    ck_assert_int_eq(r.success, 1); /* 2.5 >= the default success 1.0 */
    spade_native_close(h, dl);
}
END_TEST

/* ---- info and params ------------------------------------------------------ */

START_TEST(test_info) {
    void *dl;
    spade_host *h = open_env("add", &dl);
    const spade_env_info *info = spade_host_info(h);
    ck_assert_int_eq(info->abi, SPADE_ENV_ABI);
    ck_assert_str_eq(info->name, "add");
    ck_assert_str_eq(info->family, "math");
    ck_assert_str_eq(info->description, "Add two numbers drawn from a range.");
    ck_assert_int_eq(info->max_steps, 1);
    ck_assert(info->success == SPADE_DEFAULT_SUCCESS);
    ck_assert_uint_eq(info->state_size, 2 * sizeof(long));
    ck_assert_int_eq(info->n_params, 2);
    ck_assert_str_eq(info->params[0].name, "lo");
    ck_assert_str_eq(info->params[1].name, "hi");
    ck_assert_int_eq(info->params[0].type, SPADE_PARAM_INT);
    ck_assert(info->params[1].def == 99 && info->params[1].max == 1000000);
    ck_assert_int_eq(info->n_tools, 0);
    spade_native_close(h, dl);

    h = open_env("echo", &dl);
    ck_assert_int_eq(spade_host_info(h)->has_solve, 0);
    ck_assert_str_eq(spade_host_info(h)->family, "");
    int inst = spade_host_add_instance(h, NULL);
    spade_step_result r;
    const char *text;
    size_t len;
    ck_assert_int_eq(spade_host_solve(h, inst, &text, &len), SPADE_HOST_BAD_CALL);
    ck_assert_int_eq(spade_host_reset(h, inst, 0, &r), SPADE_HOST_OK);
    ck_assert_int_eq(spade_host_solve(h, inst, &text, &len), SPADE_HOST_BAD_CALL);
    spade_native_close(h, dl);
}
END_TEST

START_TEST(test_params_parse) {
    void *dl;
    spade_host *h = open_env("add", &dl);
    const spade_env_info *info = spade_host_info(h);
    double v[2];
    char err[256];

    ck_assert_int_eq(spade_params_parse(info, NULL, v, err, sizeof err), 0);
    ck_assert(v[0] == 10 && v[1] == 99);
    ck_assert_int_eq(spade_params_parse(info, "", v, err, sizeof err), 0);
    ck_assert(v[0] == 10 && v[1] == 99);
    ck_assert_int_eq(spade_params_parse(info, "hi=5", v, err, sizeof err), 0);
    ck_assert(v[0] == 10 && v[1] == 5);
    ck_assert_int_eq(spade_params_parse(info, " lo = 3 , hi=+1000,", v, err, sizeof err), 0);
    ck_assert(v[0] == 3 && v[1] == 1000);

    static const struct {
        const char *spec, *needle;
    } bad[] = {
        {"size=3", "unknown key 'size' for 'add' (its params: lo, hi)"},
        /* an int param is a decimal integer (issue 10: 0x10 and 1e1 were taken) */
        {"lo=0x10", "param 'lo': '0x10' is not a decimal integer"},
        {"lo=1e1", "param 'lo': '1e1' is not a decimal integer"},
        {"lo=7.0", "not a decimal integer"},
        {"lo=-", "not a decimal integer"},
        {"lo=-1", "param 'lo': -1 outside [0, 1e+06]"},
        {"hi=1000001", "param 'hi'"},
        {"lo=1.5", "param 'lo': '1.5' is not a decimal integer"},
        {"lo=abc", "param 'lo': 'abc' is not"},
        {"lo=5x", "param 'lo': '5x' is not"},
        {"lo=", "param 'lo': bad number"},
        {"lo=nan", "param 'lo'"},
        {"lo=inf", "param 'lo'"},
        {"lo=1e400", "param 'lo'"},
        {"lo", "not key=value"},
        {"=5", "unknown key ''"},
        {"lo=1,lo=2", "given twice"},
        {"lo=1;hi=2", "param 'lo'"},
        {"\xff\xfe=\x01", "unknown key"},
        {"lo=99999999999999999999999999999999999999999999999999999999999999999999999999", "param 'lo'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        ck_assert_msg(spade_params_parse(info, bad[i].spec, v, err, sizeof err) == -1, "'%s' accepted", bad[i].spec);
        ck_assert_msg(strstr(err, bad[i].needle) != NULL, "'%s': message '%s' lacks '%s'", bad[i].spec, err,
                      bad[i].needle);
    }

    /* Values reach the environment: lo = hi = 7 gives 7 + 7. */
    ck_assert_int_eq(spade_params_parse(info, "lo=7,hi=7", v, err, sizeof err), 0);
    int inst = spade_host_add_instance(h, v);
    ck_assert_int_ge(inst, 0);
    spade_step_result r;
    ck_assert_int_eq(spade_host_reset(h, inst, 123, &r), SPADE_HOST_OK);
    ck_assert_str_eq(r.obs, "Compute 7 + 7. Answer with the number.");
    ck_assert_int_eq(spade_host_step(h, inst, "14", 2, &r), SPADE_HOST_OK);
    ck_assert(r.terminated && r.success && r.reward == 1.0);
    /* and each instance keeps its own values */
    int dflt = spade_host_add_instance(h, NULL);
    ck_assert_int_eq(spade_host_reset(h, dflt, 123, &r), SPADE_HOST_OK);
    ck_assert_str_ne(r.obs, "Compute 7 + 7. Answer with the number.");
    ck_assert_int_eq(spade_host_reset(h, inst, 124, &r), SPADE_HOST_OK);
    ck_assert_str_eq(r.obs, "Compute 7 + 7. Answer with the number.");
    /* add_instance refuses values the parser would */
    double out_of_range[2] = {-5, 10}, fractional[2] = {1.5, 10}, nan_value[2] = {NAN, 10};
    ck_assert_int_eq(spade_host_add_instance(h, out_of_range), -1);
    ck_assert_int_eq(spade_host_add_instance(h, fractional), -1);
    ck_assert_int_eq(spade_host_add_instance(h, nan_value), -1);
    spade_native_close(h, dl);
}
END_TEST

/* ---- validation ----------------------------------------------------------- */

START_TEST(test_validation_failures) {
    static const struct {
        const char *env, *needle;
    } cases[] = {
        {"bad_abi", "meta: abi 99"},
        {"bad_nostep", "spade_step: missing"},
        {"bad_param", "param 'size': default 50 outside [1, 30]"},
        {"bad_intparam", "param 'size': int param with default 2.5"},
        {"bad_name", "meta: name 'Bad Name'"},
        {"bad_dupparam", "param 'n': declared twice"},
        {"bad_bigstate", "state_size:"},
        {"bad_tool", "tool 'zap': tool signature \"int (struct foo x)\""},
        {"no_such_env", "no_such_env.so"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *err = open_bad(cases[i].env);
        ck_assert_msg(strstr(err, cases[i].needle) != NULL, "%s: '%s' lacks '%s'", cases[i].env, err, cases[i].needle);
        /* the signature is quoted once, not twice (issue 10) */
        const char *sig = strstr(err, "(struct foo x)");
        ck_assert_msg(!sig || !strstr(sig + 1, "(struct foo x)"), "%s: signature twice in '%s'", cases[i].env, err);
    }
}
END_TEST

/* A resolver over a table, for metadata the DSL cannot express badly. */
typedef struct {
    const char *name;
    void *addr;
} fake_sym;

static void *fake_resolve(void *ctx, const char *name) {
    for (const fake_sym *s = ctx; s->name; s++)
        if (strcmp(s->name, name) == 0) return s->addr;
    return NULL;
}

static int fake_state;
static void *fake_S;
static unsigned long fake_state_size(void) { return sizeof fake_state; }
static void fake_reset(void) { spade_say("hello"); }
static void fake_step(const char *a, unsigned long n) { spade_finish(1); }
static void fake_hint(void) {}

START_TEST(test_validation_meta) {
    static const struct {
        spade_env_meta meta;
        const char *needle;
    } cases[] = {
        {{.abi = SPADE_ENV_ABI, .name = "", .description = "d"}, "meta: name ''"},
        {{.abi = SPADE_ENV_ABI, .name = NULL, .description = "d"}, "meta: name '(null)'"},
        {{.abi = SPADE_ENV_ABI, .name = "ok", .description = ""}, "description of 'ok' is empty"},
        {{.abi = SPADE_ENV_ABI, .name = "ok", .description = "two\nlines"}, "one line"},
        {{.abi = SPADE_ENV_ABI, .name = "ok", .description = "d", .max_steps = -1}, "max_steps -1"},
        {{.abi = SPADE_ENV_ABI, .name = "ok", .description = "d", .max_steps = SPADE_MAX_STEPS_LIMIT + 1},
         "max_steps 1000001 outside [1, 1000000]"},
        {{.abi = SPADE_ENV_ABI, .name = "ok", .description = "d", .success = NAN}, "success"},
        {{.abi = SPADE_ENV_ABI, .name = "ok", .description = "d", .family = "Has Space"}, "family"},
        {{.abi = SPADE_ENV_ABI,
          .name = "a_name_that_is_far_too_long_for_the_info_field_of_sixty_four_bytes_x",
          .description = "d"},
         "name longer"},
        {{.abi = 0, .name = "ok", .description = "d"}, "abi 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_sym syms[] = {{"spade_meta", (void *)&cases[i].meta},
                           {"spade_S", &fake_S},
                           {"spade_state_size", (void *)fake_state_size},
                           {"spade_reset", (void *)fake_reset},
                           {"spade_step", (void *)fake_step},
                           {"spade_hint", (void *)fake_hint},
                           {NULL, NULL}};
        spade_host *h = (spade_host *)1;
        char err[256] = "";
        ck_assert_int_eq(spade_host_new(&h, fake_resolve, syms, err, sizeof err), -1);
        ck_assert_ptr_null(h);
        ck_assert_msg(strstr(err, cases[i].needle) != NULL, "case %zu: '%s' lacks '%s'", i, err, cases[i].needle);
    }
    /* the same table with a good meta works, and defaults apply */
    spade_env_meta good = {.abi = SPADE_ENV_ABI, .name = "ok", .description = "d"};
    fake_sym syms[] = {{"spade_meta", &good},
                       {"spade_S", &fake_S},
                       {"spade_state_size", (void *)fake_state_size},
                       {"spade_reset", (void *)fake_reset},
                       {"spade_step", (void *)fake_step},
                       {"spade_hint", (void *)fake_hint},
                       {NULL, NULL}};
    spade_host *h;
    char err[256] = "";
    ck_assert_msg(spade_host_new(&h, fake_resolve, syms, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(spade_host_info(h)->max_steps, SPADE_DEFAULT_MAX_STEPS);
    ck_assert(spade_host_info(h)->success == SPADE_DEFAULT_SUCCESS);
    int inst = spade_host_add_instance(h, NULL);
    spade_step_result r;
    ck_assert_int_eq(spade_host_reset(h, inst, 0, &r), SPADE_HOST_OK);
    ck_assert_str_eq(r.obs, "hello");
    spade_host_free(h);
    /* a missing hint is named */
    syms[5].name = "not_the_hint";
    ck_assert_int_eq(spade_host_new(&h, fake_resolve, syms, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "spade_hint: missing"));
    syms[5].name = "spade_hint";
    syms[0].name = "not_meta";
    ck_assert_int_eq(spade_host_new(&h, fake_resolve, syms, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "spade_meta: missing"));
}
END_TEST

/* A reward of NaN, an infinity or beyond +-SPADE_REWARD_MAX, or rewards that
 * sum past it, fail the step (BAD_REWARD, episode over); one just within
 * passes. Before, NaN was silently dropped and DBL_MAX saturated, so the run
 * summary printed `mean return inf`. */
static double huge_sign = 1.0;
static double huge_value = DBL_MAX;
static int huge_calls = 2;
static void huge_reward_step(const char *a, unsigned long n) {
    for (int i = 0; i < huge_calls; i++) spade_reward(huge_sign * huge_value);
    spade_say("r");
}

START_TEST(test_reward_refused) {
    spade_env_meta meta = {.abi = SPADE_ENV_ABI, .name = "huge", .description = "d", .max_steps = 10};
    fake_sym syms[] = {{"spade_meta", &meta},
                       {"spade_S", &fake_S},
                       {"spade_state_size", (void *)fake_state_size},
                       {"spade_reset", (void *)fake_reset},
                       {"spade_step", (void *)huge_reward_step},
                       {"spade_hint", (void *)fake_hint},
                       {NULL, NULL}};
    spade_host *h;
    char err[256] = "";
    ck_assert_msg(spade_host_new(&h, fake_resolve, syms, err, sizeof err) == 0, "%s", err);
    int inst = spade_host_add_instance(h, NULL);
    spade_step_result r;
    const struct {
        double v;
        int calls;
        spade_host_status want;
    } cases[] = {{DBL_MAX, 1, SPADE_HOST_BAD_REWARD},
                 {NAN, 1, SPADE_HOST_BAD_REWARD},
                 {INFINITY, 1, SPADE_HOST_BAD_REWARD},
                 {SPADE_REWARD_MAX * 1.5, 1, SPADE_HOST_BAD_REWARD},
                 {SPADE_REWARD_MAX * 0.75, 2, SPADE_HOST_BAD_REWARD},
                 {SPADE_REWARD_MAX, 1, SPADE_HOST_OK}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int sign = 1; sign >= -1; sign -= 2) {
            huge_sign = sign;
            huge_value = cases[c].v;
            huge_calls = cases[c].calls;
            ck_assert_int_eq(spade_host_reset(h, inst, 0, &r), SPADE_HOST_OK);
            ck_assert_msg(spade_host_step(h, inst, "a", 1, &r) == cases[c].want, "case %zu sign %d", c, sign);
            if (cases[c].want == SPADE_HOST_OK) {
                ck_assert(r.reward == sign * SPADE_REWARD_MAX && r.episode_return == sign * SPADE_REWARD_MAX);
                ck_assert_int_eq(spade_host_step(h, inst, "a", 1, &r), SPADE_HOST_OK);
            } else {
                /* the episode is over: the next step is the caller's mistake */
                ck_assert_int_eq(spade_host_step(h, inst, "a", 1, &r), SPADE_HOST_BAD_CALL);
            }
        }
    spade_host_free(h);
    /* A success threshold no episode can reach is refused at load. */
    meta.success = 1e300;
    ck_assert_int_eq(spade_host_new(&h, fake_resolve, syms, err, sizeof err), -1);
    ck_assert_msg(strstr(err, ".success = 1e+300") != NULL, "%s", err);
}
END_TEST

/* The random stream itself, pinned: the archive, every "same seed, same
 * episode" promise and the checker's determinism checks rest on it, and a
 * changed rotation constant or seeding left every other test green (issue 10).
 * The values are xoshiro256** seeded by splitmix64, as the reference
 * implementation (prng.di.unimi.it) computes them. */
START_TEST(test_rng_stream_pinned) {
    static const struct {
        uint64_t seed, out[4];
    } pins[] = {
        {0, {0x99ec5f36cb75f2b4ULL, 0xbf6e1f784956452aULL, 0x1a5f849d4933e6e0ULL, 0x6aa594f1262d2d2cULL}},
        {42, {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL, 0xae17533239e499a1ULL, 0xecb8ad4703b360a1ULL}},
    };
    for (size_t k = 0; k < sizeof pins / sizeof pins[0]; k++) {
        uint64_t s[4];
        spade_rng_seed(s, pins[k].seed);
        for (int i = 0; i < 4; i++) {
            uint64_t got = spade_rng_next(s);
            ck_assert_msg(got == pins[k].out[i], "seed %llu output %d: 0x%016llx, pinned 0x%016llx",
                          (unsigned long long)pins[k].seed, i, (unsigned long long)got,
                          (unsigned long long)pins[k].out[i]);
        }
    }
}
END_TEST

/* shuffle draws every permutation equally often (Fisher-Yates), not only
 * that it returns a permutation: Sattolo's variant (j in [0, i) instead of
 * [0, i]) makes only the (n-1)! cyclic ones and passed every other test. Chi
 * square over the 24 permutations of 4, 24000 shuffles (df 23; 60 is far past
 * p = 1e-4), and the identity must occur. */
static void begin_rt(uint64_t seed, int sink);
START_TEST(test_shuffle_distribution) {
    begin_rt(99, SPADE_RT_SAY);
    long counts[24] = {0};
    for (int t = 0; t < 24000; t++) {
        int a[4] = {0, 1, 2, 3};
        spade_shuffle(a, 4, sizeof a[0]);
        /* the permutation's rank (Lehmer code) */
        int rank = 0, used[4] = {0};
        for (int i = 0; i < 4; i++) {
            int smaller = 0;
            for (int j = 0; j < a[i]; j++) smaller += !used[j];
            used[a[i]] = 1;
            rank = rank * (4 - i) + smaller;
        }
        ck_assert(rank >= 0 && rank < 24);
        counts[rank]++;
    }
    ck_assert_msg(counts[0] > 0, "the identity never came out (Sattolo's algorithm?)");
    double chi2 = 0;
    for (int k = 0; k < 24; k++) chi2 += (counts[k] - 1000.0) * (counts[k] - 1000.0) / 1000.0;
    ck_assert_msg(chi2 < 60.0, "chi-square %.1f over the 24 permutations of 4", chi2);
}
END_TEST

/* ---- bad calls, output cap, hostile actions -------------------------------- */

START_TEST(test_bad_calls) {
    void *dl;
    spade_host *h = open_env("add", &dl);
    spade_step_result r;
    const char *text;
    size_t len;
    ck_assert_int_eq(spade_host_reset(h, 0, 1, &r), SPADE_HOST_BAD_CALL); /* no instance yet */
    int inst = spade_host_add_instance(h, NULL);
    ck_assert_int_eq(spade_host_step(h, inst, "1", 1, &r), SPADE_HOST_BAD_CALL); /* before reset */
    ck_assert_int_eq(spade_host_hint(h, inst, &text, &len), SPADE_HOST_BAD_CALL);
    ck_assert_int_eq(spade_host_reset(h, -1, 1, &r), SPADE_HOST_BAD_CALL);
    ck_assert_int_eq(spade_host_reset(h, inst + 1, 1, &r), SPADE_HOST_BAD_CALL);
    ck_assert_int_eq(spade_host_reset(h, inst, 1, &r), SPADE_HOST_OK);
    ck_assert_int_eq(spade_host_step(h, inst, NULL, 3, &r), SPADE_HOST_BAD_CALL);
    char *big = malloc(SPADE_ACTION_MAX + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, '7', SPADE_ACTION_MAX + 1);
    ck_assert_int_eq(spade_host_step(h, inst, big, SPADE_ACTION_MAX + 1, &r), SPADE_HOST_BAD_CALL);
    ck_assert_int_eq(spade_host_step(h, inst, big, SPADE_ACTION_MAX, &r), SPADE_HOST_OK); /* the cap itself is fine */
    free(big);
    ck_assert_int_eq(spade_host_reset(h, inst, 1, &r), SPADE_HOST_OK);
    ck_assert_int_eq(spade_host_step(h, inst, NULL, 0, &r), SPADE_HOST_OK);
    ck_assert_str_eq(r.obs, "Wrong.");
    ck_assert_int_eq(spade_host_num_instances(NULL), 0);
    ck_assert_int_eq(spade_host_add_instance(NULL, NULL), -1);
    spade_native_close(h, dl);
}
END_TEST

START_TEST(test_output_cap) {
    void *dl;
    spade_host *h = open_env("chatty", &dl);
    const spade_env_info *info = spade_host_info(h);
    double v[2];
    char err[256], spec[128];
    spade_step_result r;

    snprintf(spec, sizeof spec, "bytes=%d,hint_bytes=%d", SPADE_OBS_MAX, SPADE_OBS_MAX);
    ck_assert_int_eq(spade_params_parse(info, spec, v, err, sizeof err), 0);
    int exact = spade_host_add_instance(h, v);
    ck_assert_int_eq(spade_host_reset(h, exact, 1, &r), SPADE_HOST_OK);
    ck_assert_uint_eq(r.obs_len, SPADE_OBS_MAX);
    ck_assert_uint_eq(strlen(r.obs), SPADE_OBS_MAX);
    ck_assert_int_eq(r.obs[0], 'x');
    const char *text;
    size_t len;
    ck_assert_int_eq(spade_host_hint(h, exact, &text, &len), SPADE_HOST_OK);
    ck_assert_uint_eq(len, SPADE_OBS_MAX);
    ck_assert_int_eq(spade_host_step(h, exact, "go", 2, &r), SPADE_HOST_OK);
    ck_assert_uint_eq(r.obs_len, SPADE_OBS_MAX);
    ck_assert_int_eq(r.obs[SPADE_OBS_MAX - 1], 'y');

    snprintf(spec, sizeof spec, "bytes=%d,hint_bytes=%d", SPADE_OBS_MAX + 1, SPADE_OBS_MAX + 1);
    ck_assert_int_eq(spade_params_parse(info, spec, v, err, sizeof err), 0);
    int over = spade_host_add_instance(h, v);
    ck_assert_int_eq(spade_host_reset(h, over, 1, &r), SPADE_HOST_OUTPUT_TOO_LARGE);
    ck_assert_uint_le(r.obs_len, SPADE_OBS_MAX);
    ck_assert_uint_eq(strlen(r.obs), r.obs_len);
    ck_assert_int_eq(spade_host_step(h, over, "go", 2, &r), SPADE_HOST_BAD_CALL); /* the episode failed */
    ck_assert_int_eq(spade_host_hint(h, over, &text, &len), SPADE_HOST_OUTPUT_TOO_LARGE);
    ck_assert_uint_le(len, SPADE_OBS_MAX);

    /* a huge output (1 MB) is contained the same way */
    ck_assert_int_eq(spade_params_parse(info, "bytes=1000000", v, err, sizeof err), 0);
    int huge = spade_host_add_instance(h, v);
    ck_assert_int_eq(spade_host_reset(h, huge, 1, &r), SPADE_HOST_OUTPUT_TOO_LARGE);
    /* and an instance that fits is not affected by its neighbours */
    ck_assert_int_eq(spade_host_reset(h, exact, 2, &r), SPADE_HOST_OK);
    ck_assert_uint_eq(r.obs_len, SPADE_OBS_MAX);
    spade_native_close(h, dl);
}
END_TEST

/* Actions an agent (or an adversary) might send. */
typedef struct {
    char *buf;
    size_t len;
} blob;

static blob make_action(int kind, uint64_t *rng) {
    size_t big = SPADE_ACTION_MAX;
    blob b = {malloc(big + 1), 0};
    ck_assert_ptr_nonnull(b.buf);
    switch (kind) {
    case 0: b.len = 0; break;
    case 1: /* 1 MB of random bytes, NULs included */
        b.len = big;
        for (size_t i = 0; i < big; i++) b.buf[i] = (char)(spade_rng_next(rng) & 0xff);
        break;
    case 2:
        memcpy(b.buf,
               "12\0"
               "34\0\0+",
               8);
        b.len = 8;
        break;
    case 3:
        memcpy(b.buf,
               "\xff\xfe\xc3\x28\xe2\x82\xa1\xe2\x88\x92"
               "5 \xf0\x28\x8c\x28 \xed\xa0\x80",
               20);
        b.len = 20;
        break;
    case 4: /* an unclosed \boxed{ over and over: the worst case of the answer scan */
        for (b.len = 0; b.len + 7 <= big; b.len += 7) memcpy(b.buf + b.len, "\\boxed{", 7);
        break;
    case 5: /* a megabyte number with separators */
        for (b.len = 0; b.len + 4 <= big; b.len += 4) memcpy(b.buf + b.len, b.len ? ",999" : "9999", 4);
        break;
    case 6:
        for (b.len = 0; b.len + 8 <= big; b.len += 8) memcpy(b.buf + b.len, "<answer>", 8);
        break;
    case 7:
        for (b.len = 0; b.len + 9 <= big; b.len += 9) memcpy(b.buf + b.len, "</answer>", 9);
        break;
    case 8:
        memset(b.buf, '}', big);
        b.len = big;
        break;
    case 9:
        memset(b.buf, '-', big);
        b.len = big;
        break;
    case 10:
        memset(b.buf, '.', big);
        b.buf[big - 1] = '5';
        b.len = big;
        break;
    case 11: {
        const char *s = "deposit(99999999999999999999) withdraw(\"x\" balance((((";
        b.len = strlen(s);
        memcpy(b.buf, s, b.len);
        break;
    }
    case 12: {
        const char *s = "%n%n%s%s%s%x deposit(-5)";
        b.len = strlen(s);
        memcpy(b.buf, s, b.len);
        break;
    }
    }
    b.buf[b.len] = 'Z'; /* not NUL-terminated: the host must not rely on it */
    return b;
}
#define N_ACTION_KINDS 13

START_TEST(test_hostile_actions) {
    static const char *envs[] = {"add", "counter", "bank", "echo"};
    uint64_t rng[4];
    spade_rng_seed(rng, 42);
    for (int kind = 0; kind < N_ACTION_KINDS; kind++) {
        blob b = make_action(kind, rng);
        for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
            void *dl;
            spade_host *h = open_env(envs[e], &dl);
            int inst = spade_host_add_instance(h, NULL);
            spade_step_result r;
            ck_assert_int_eq(spade_host_reset(h, inst, (uint64_t)kind, &r), SPADE_HOST_OK);
            ck_assert_int_eq(spade_host_step(h, inst, b.buf, b.len, &r), SPADE_HOST_OK);
            ck_assert_uint_eq(strlen(r.obs), r.obs_len);
            ck_assert_int_eq(r.success, 0);
            if (strcmp(envs[e], "echo") == 0) {
                char want[64];
                snprintf(want, sizeof want, " len %zu ", b.len);
                ck_assert_msg(strstr(r.obs, want) != NULL, "kind %d: %s", kind, r.obs);
                snprintf(want, sizeof want, "strlen %zu ", strnlen(b.buf, b.len));
                ck_assert_msg(strncmp(r.obs, want, strlen(want)) == 0, "kind %d: %s", kind, r.obs);
            }
            spade_native_close(h, dl);
        }
        free(b.buf);
    }
}
END_TEST

/* ---- tools ---------------------------------------------------------------- */

START_TEST(test_bank_tools) {
    void *dl;
    spade_host *h = open_env("bank", &dl);
    const spade_env_info *info = spade_host_info(h);
    ck_assert_int_eq(info->n_tools, 3);
    ck_assert_str_eq(info->tools[0].name, "deposit");
    ck_assert_str_eq(info->tools[2].name, "balance");
    ck_assert_ptr_nonnull(strstr(info->tools[0].signature, "int amount"));
    int inst = spade_host_add_instance(h, NULL);
    spade_step_result r;
    ck_assert_int_eq(spade_host_reset(h, inst, 5, &r), SPADE_HOST_OK);
    long amount;
    ck_assert_int_eq(sscanf(r.obs, "Deposit %ld into the account", &amount), 1);
    /* the first observation lists the tools after what reset said */
    const char *tools_at = strstr(r.obs, "Tools");
    ck_assert_ptr_nonnull(tools_at);
    ck_assert_ptr_nonnull(strstr(tools_at, "deposit"));
    ck_assert_ptr_nonnull(strstr(tools_at, "withdraw"));
    ck_assert_ptr_nonnull(strstr(tools_at, "balance"));
    ck_assert_ptr_nonnull(strstr(tools_at, "The current balance."));

    ck_assert_int_eq(spade_host_step(h, inst, "let me look: balance()", 22, &r), SPADE_HOST_OK);
    long start = atol(r.obs);
    ck_assert_int_ge(start, 0);
    ck_assert_int_le(start, 1000);
    ck_assert(r.reward == 0.25); /* reward from inside a tool */
    ck_assert_int_eq(r.terminated, 0);
    ck_assert_int_eq(spade_host_step(h, inst, "balance()", 9, &r), SPADE_HOST_OK);
    ck_assert(r.reward == 0.0);

    ck_assert_int_eq(spade_host_step(h, inst, "withdraw(100000)", 16, &r), SPADE_HOST_OK);
    ck_assert_ptr_nonnull(strstr(r.obs, "Insufficient funds."));
    ck_assert_ptr_nonnull(strstr(r.obs, "-1"));

    char call[64];
    snprintf(call, sizeof call, "deposit(%ld)", amount);
    ck_assert_int_eq(spade_host_step(h, inst, call, strlen(call), &r), SPADE_HOST_OK);
    ck_assert_int_eq(atol(r.obs), start + amount);

    char answer[64];
    snprintf(answer, sizeof answer, "<answer>%ld</answer>", start + amount);
    ck_assert_int_eq(spade_host_step(h, inst, answer, strlen(answer), &r), SPADE_HOST_OK);
    ck_assert(r.terminated && r.success);
    ck_assert(fabs(r.episode_return - 1.25) < 1e-12);

    /* a wrong call is an error observation, and still a step: ten of them truncate */
    ck_assert_int_eq(spade_host_reset(h, inst, 6, &r), SPADE_HOST_OK);
    for (int i = 1; i <= spade_host_info(h)->max_steps; i++) {
        ck_assert_int_eq(spade_host_step(h, inst, "deposit()", 9, &r), SPADE_HOST_OK);
        ck_assert_msg(strstr(r.obs, "error") != NULL, "%s", r.obs);
        ck_assert_int_eq(r.terminated, 0);
        ck_assert_int_eq(r.truncated, i == spade_host_info(h)->max_steps);
    }
    ck_assert_int_eq(spade_host_step(h, inst, "balance()", 9, &r), SPADE_HOST_BAD_CALL);

    /* text that is no call goes to STEP, here a wrong final answer */
    ck_assert_int_eq(spade_host_reset(h, inst, 5, &r), SPADE_HOST_OK);
    ck_assert_int_eq(spade_host_step(h, inst, "nosuchtool(1)", 13, &r), SPADE_HOST_OK);
    ck_assert(r.terminated && !r.success && r.reward == 0.0);
    ck_assert_uint_eq(r.obs_len, 0);
    spade_native_close(h, dl);
}
END_TEST

/* ---- the helpers directly ------------------------------------------------- */

/* Runs the helpers inside a context of their own. */
static spade_rt test_rt;
static char test_out[SPADE_OBS_MAX + 1];
static uint64_t test_rng[4];

static void begin_rt(uint64_t seed, int sink) {
    spade_rng_seed(test_rng, seed);
    spade_rt_begin(&test_rt, test_out, SPADE_OBS_MAX, test_rng, 3, sink);
    spade_rt_current = &test_rt;
}

START_TEST(test_answer_and_parse) {
    static const struct {
        const char *text, *answer;
        long i;
        double real; /* NAN: none */
    } cases[] = {
        {"42", "42", 42, 42},
        {"", "", NO_INT, NAN},
        {"  \n\t ", "", NO_INT, NAN},
        {"no numbers here", "no numbers here", NO_INT, NAN},
        {"The answer is 7.", "The answer is 7.", 7, 7},
        {"x=-5", "x=-5", -5, -5},
        {"(-12)", "(-12)", -12, -12},
        {"+8", "+8", 8, 8},
        {"3-5", "3-5", 5, 5},
        {"it is \xe2\x88\x92"
         "9",
         "it is \xe2\x88\x92"
         "9",
         -9, -9},
        {"1,234", "1,234", 1234, 1234},
        {"total: 12,345,678 coins", "total: 12,345,678 coins", 12345678, 12345678},
        {"1,2,3", "1,2,3", 3, 3},
        {"1234,567", "1234,567", 567, 567},
        {"1,23", "1,23", 23, 23},
        {"12.5", "12.5", NO_INT, 12.5},
        {"42.0", "42.0", 42, 42},
        {"-0.25", "-0.25", NO_INT, -0.25},
        {"1e3", "1e3", NO_INT, 1000},
        {"2.5e-3 eggs", "2.5e-3 eggs", NO_INT, 0.0025},
        {"2eggs", "2eggs", 2, 2},
        {".5", ".5", NO_INT, 0.5},
        {"9223372036854775807", "9223372036854775807", LONG_MAX, 9223372036854775807.0},
        {"9223372036854775808", "9223372036854775808", NO_INT, 9223372036854775808.0},
        {"-9223372036854775807", "-9223372036854775807", -LONG_MAX, -9223372036854775807.0},
        {"99999999999999999999999", "99999999999999999999999", NO_INT, 1e23},
        {"\\boxed{17}", "17", 17, 17},
        {"first \\boxed{1} then \\boxed{2}", "2", 2, 2},
        {"\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", 2, 2},
        {"\\boxed{ {a{b}c} 5 }", "{a{b}c} 5", 5, 5},
        {"\\boxed{3} and an unclosed \\boxed{4", "3", 3, 3},
        {"\\boxed{\\boxed{6}}", "6", 6, 6},
        {"\\boxed{}", "", NO_INT, NAN},
        {"\\boxed{8", "\\boxed{8", 8, 8},
        {"<answer>12</answer>", "12", 12, 12},
        {"<answer>1</answer> no, <answer> 2 </answer>", "2", 2, 2},
        {"<ANSWER>3</Answer>", "3", 3, 3},
        {"<answer>1</answer> tail </answer>", "1", 1, 1},
        {"<answer>5", "<answer>5", 5, 5},
        {"</answer>7<answer>", "</answer>7<answer>", 7, 7},
        {"<answer>\\boxed{9}</answer> \\boxed{10}", "10", 10, 10},
        {"Reasoning 1, 2, 3... <answer>-4</answer>", "-4", -4, -4},
        {"v1.2.3", "v1.2.3", 3, 3}, /* 1.2, then 3: ".3" glued to a digit is no fraction */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *t = cases[i].text;
        ck_assert_msg(strcmp(spade_answer(t), cases[i].answer) == 0, "answer(%s) = '%s', want '%s'", t, spade_answer(t),
                      cases[i].answer);
        long got = spade_parse_int(t);
        ck_assert_msg(got == cases[i].i, "parse_int(%s) = %ld, want %ld", t, got, cases[i].i);
        double real = spade_parse_real(t);
        if (isnan(cases[i].real))
            ck_assert_msg(isnan(real), "parse_real(%s) = %g, want NaN", t, real);
        else
            ck_assert_msg(real == cases[i].real, "parse_real(%s) = %.17g, want %.17g", t, real, cases[i].real);
    }
    /* answer's buffer may be fed back to it */
    const char *a = spade_answer("\\boxed{ <answer>x</answer> }");
    ck_assert_str_eq(a, "<answer>x</answer>");
    ck_assert_str_eq(spade_answer(a), "x");
    ck_assert_int_eq(spade_parse_int(spade_answer("\\boxed{ 31 }")), 31);
    ck_assert_str_eq(spade_answer(NULL), "");
    ck_assert_int_eq(spade_parse_int(NULL), NO_INT);
    ck_assert(isnan(spade_parse_real(NULL)));

    long v[8];
    ck_assert_int_eq(spade_parse_ints("1, -2, 3.5, 4,000 and 99999999999999999999 then 6", v, 8), 4);
    ck_assert(v[0] == 1 && v[1] == -2 && v[2] == 4000 && v[3] == 6);
    ck_assert_int_eq(spade_parse_ints("\\boxed{7 8 9} 10", v, 2), 2);
    ck_assert(v[0] == 7 && v[1] == 8);
    ck_assert_int_eq(spade_parse_ints("none", v, 8), 0);
    ck_assert_int_eq(spade_parse_ints("1 2", v, 0), 0);
    ck_assert_int_eq(spade_parse_ints("1 2", NULL, 4), 0);

    char w[8];
    ck_assert_int_eq(spade_parse_word("I will go North-west.", w, sizeof w), 0); /* 10 bytes do not fit in 8 */
    ck_assert_str_eq(w, "");
    char wide[32];
    ck_assert_int_eq(spade_parse_word("I will go North-west.", wide, sizeof wide), 10);
    ck_assert_str_eq(wide, "North-west");
    ck_assert_int_eq(spade_parse_word("answer: \\boxed{left} ... ", wide, sizeof wide), 4);
    ck_assert_str_eq(wide, "left");
    ck_assert_int_eq(spade_parse_word("--- !!! ---", wide, sizeof wide), 0);
    ck_assert_int_eq(spade_parse_word("\xe2\x80\x9cnorth\xe2\x80\x9d", wide, sizeof wide), 5);
    ck_assert_str_eq(wide, "north");
    ck_assert_int_eq(spade_parse_word("abc", wide, 4), 3);
    ck_assert_int_eq(spade_parse_word("abcd", wide, 4), 0);
    ck_assert_int_eq(spade_parse_word("abc", NULL, 4), 0);
    ck_assert_int_eq(spade_parse_word("abc", wide, 0), 0);

    ck_assert_int_eq(spade_str_ieq("  North ", "north"), 1);
    ck_assert_int_eq(spade_str_ieq("north", "northwest"), 0);
    ck_assert_int_eq(spade_str_ieq("", "  \n"), 1);
    ck_assert_int_eq(spade_str_ieq("\xc3\xa9", "\xc3\x89"), 0); /* ASCII folding only */
    ck_assert_int_eq(spade_str_ieq(NULL, ""), 0);
}
END_TEST

/* The plain quadratic reading of the answer rule, to check the linear one. */
static void naive_answer_span(const char *t, size_t len, size_t *start, size_t *n) {
    size_t s = 0, e = len;
    int found = 0;
    for (size_t i = len; i-- > 0 && !found;) {
        if (len - i < 7 || memcmp(t + i, "\\boxed{", 7) != 0) continue;
        int depth = 1;
        for (size_t q = i + 7; q < len; q++) {
            depth += t[q] == '{';
            depth -= t[q] == '}';
            if (depth == 0) {
                s = i + 7, e = q, found = 1;
                break;
            }
        }
    }
    if (!found) {
        size_t c = (size_t)-1, o = (size_t)-1;
        for (size_t i = 0; i + 9 <= len; i++)
            if (strncasecmp(t + i, "</answer>", 9) == 0) c = i;
        for (size_t i = 0; c != (size_t)-1 && i + 8 <= c; i++)
            if (strncasecmp(t + i, "<answer>", 8) == 0) o = i;
        if (o != (size_t)-1) {
            size_t first = o + 8;
            while (strncasecmp(t + first, "</answer>", 9) != 0) first++;
            s = o + 8, e = first;
        }
    }
    while (s < e && strchr(" \t\n\r\v\f", t[s]) && t[s]) s++;
    while (e > s && strchr(" \t\n\r\v\f", t[e - 1]) && t[e - 1]) e--;
    *start = s;
    *n = e - s;
}

START_TEST(test_answer_span_matches_naive) {
    static const char *pieces[] = {"\\boxed{", "{", "}", "<answer>", "</ANSWER>", "</answer>",
                                   "7",        "-", " ", "\n",       "x"};
    uint64_t rng[4];
    spade_rng_seed(rng, 5);
    char t[256];
    for (int round = 0; round < 200000; round++) {
        size_t len = 0;
        int k = (int)(spade_rng_next(rng) % 24);
        while (k-- > 0) {
            const char *p = pieces[spade_rng_next(rng) % (sizeof pieces / sizeof pieces[0])];
            size_t pl = strlen(p);
            if (len + pl >= sizeof t) break;
            memcpy(t + len, p, pl);
            len += pl;
        }
        t[len] = '\0';
        size_t s1, n1, s2, n2;
        spade_answer_span(t, len, &s1, &n1);
        naive_answer_span(t, len, &s2, &n2);
        ck_assert_msg(s1 == s2 && n1 == n2, "'%s': span %zu+%zu, naive %zu+%zu", t, s1, n1, s2, n2);
    }
}
END_TEST

START_TEST(test_helpers_on_huge_inputs) {
    /* Every kind of hostile action through every parser, timed: all linear. The time is this
     * process's CPU time, not the wall clock: a loaded machine stretches the wall clock by
     * whatever else runs, while a quadratic parser on a megabyte costs minutes of CPU. */
    uint64_t rng[4];
    spade_rng_seed(rng, 7);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (int kind = 0; kind < N_ACTION_KINDS; kind++) {
        blob b = make_action(kind, rng);
        b.buf[b.len] = '\0';
        size_t n = strlen(b.buf);
        size_t s, sl;
        spade_answer_span(b.buf, n, &s, &sl);
        ck_assert_uint_le(s + sl, n);
        const char *a = spade_answer(b.buf);
        ck_assert_uint_eq(strlen(a), sl);
        (void)spade_parse_int(b.buf);
        (void)spade_parse_real(b.buf);
        long v[16];
        ck_assert_int_le(spade_parse_ints(b.buf, v, 16), 16);
        char w[64];
        ck_assert_int_lt(spade_parse_word(b.buf, w, sizeof w), 64);
        ck_assert_int_eq(spade_str_ieq(b.buf, b.buf), 1);
        free(b.buf);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(secs < 5.0, "parsing 13 hostile megabytes took %.2f s of CPU", secs);
    /* the megabyte number overflows; a megabyte of dots ends in .5 */
    blob b = make_action(5, rng);
    b.buf[b.len] = '\0';
    ck_assert_int_eq(spade_parse_int(b.buf), NO_INT);
    ck_assert(isinf(spade_parse_real(b.buf)));
    free(b.buf);
    b = make_action(10, rng);
    b.buf[b.len] = '\0';
    ck_assert(spade_parse_real(b.buf) == 0.5);
    free(b.buf);
}
END_TEST

START_TEST(test_output_helpers) {
    begin_rt(1, SPADE_RT_SAY);
    spade_say("a%d", 1);
    spade_act("ignored in SAY");
    spade_say("%s", "b");
    spade_say("%n", (int *)NULL); /* refused, not crashed */
    spade_say(NULL);
    ck_assert_str_eq(test_out, "a1b");
    ck_assert_uint_eq(test_rt.out_len, 3);
    ck_assert_int_eq(test_rt.overflow, 0);
    ck_assert_int_eq(spade_steps(), 3);

    spade_reward(0.5);
    ck_assert_int_eq(test_rt.bad_reward, 0);
    spade_reward(NAN);
    spade_reward(INFINITY);
    ck_assert(test_rt.reward == 0.5);
    ck_assert_int_eq(test_rt.bad_reward, 1); /* flagged for the host to fail the step */
    spade_finish(1);
    spade_finish(1); /* counted once */
    spade_finish(0);
    ck_assert(test_rt.reward == 1.5);
    ck_assert_int_eq(test_rt.terminated, 1);
    ck_assert_int_eq(test_rt.success, 1);

    begin_rt(1, SPADE_RT_ACT);
    spade_say("ignored in ACT");
    spade_act("deposit(%d)", 5);
    ck_assert_str_eq(test_out, "deposit(5)");
    spade_finish(0);
    ck_assert(test_rt.reward == 0.0 && test_rt.terminated && !test_rt.success);

    /* the cap: exactly full is fine, one byte more is dropped and flagged */
    begin_rt(1, SPADE_RT_SAY);
    static char chunk[SPADE_OBS_MAX + 1];
    memset(chunk, 'q', SPADE_OBS_MAX);
    spade_say("%.*s", SPADE_OBS_MAX - 1, chunk);
    spade_say("r");
    ck_assert_int_eq(test_rt.overflow, 0);
    ck_assert_uint_eq(test_rt.out_len, SPADE_OBS_MAX);
    spade_say("s");
    ck_assert_int_eq(test_rt.overflow, 1);
    ck_assert_uint_eq(test_rt.out_len, SPADE_OBS_MAX);
    ck_assert_int_eq(test_out[SPADE_OBS_MAX - 1], 'r');
    ck_assert_int_eq(test_out[SPADE_OBS_MAX], '\0');
    ck_assert_int_eq(spade_rt_append(&test_rt, "t", 1), -1);

    /* no context: nothing happens, nothing breaks */
    spade_rt_current = NULL;
    spade_say("nowhere");
    spade_reward(1);
    spade_finish(1);
    ck_assert_int_eq(spade_steps(), 0);
    long x = spade_rand_range(1, 6);
    ck_assert(x >= 1 && x <= 6);
}
END_TEST

/* ---- say()/act() against snprintf ----------------------------------------- */

/* say() and act() format literal text and %d %i %u %s %c %% themselves and
 * hand any other format to vsnprintf (runtime.c, fast_format). Whichever path
 * runs, the bytes must be snprintf's; what each path does not own is pinned by
 * the documented rules: a call whose output does not fit in what is left of
 * SPADE_OBS_MAX says nothing and sets overflow; a format with %n says nothing
 * and is not an overflow; a NULL %s is vsnprintf's ("(null)" on glibc); either
 * way the output stays NUL-terminated where it was. */

typedef enum { FA_NONE, FA_INT, FA_UINT, FA_LONG, FA_ULONG, FA_LL, FA_ULL, FA_SIZE, FA_STR, FA_DBL } fa_kind;

/* One argument, passed to both printers with its exact C type. */
typedef struct {
    fa_kind kind;
    int i;
    unsigned u;
    long l;
    unsigned long ul;
    long long ll;
    unsigned long long ull;
    size_t z;
    const char *s;
    double d;
} fmt_arg;

static char fmt_expect[16384];
static long long fmt_nsink; /* the pointee of a %n, which must never be written */

/* ck_assert_msg, without the mark it leaves when it passes (100000 cases x
 * several checks: that mark would be most of the test's time). */
#define said_ok(cond, ...)                                                                                             \
    do {                                                                                                               \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);                                                                        \
    } while (0)

/* Checks the call just made on test_rt, which held `before` bytes: snprintf
 * produced en bytes in fmt_expect (en < 0: it failed); refused: fmt has %n. */
static void check_said(const char *fmt, size_t before, char canary, int en, int refused) {
    const size_t cap = SPADE_OBS_MAX;
    said_ok(test_out[test_rt.out_len] == '\0', "[%s]: output not NUL-terminated", fmt);
    if (before) said_ok(test_out[before - 1] == canary, "[%s]: text said before was overwritten", fmt);
    said_ok(fmt_nsink == -7, "[%s]: %%n wrote through its pointer", fmt);
    if (refused || en < 0) {
        said_ok(test_rt.out_len == before && !test_rt.overflow, "[%s]: %s said %zu bytes (overflow %d)", fmt,
                refused ? "a %n format" : "a failed format", test_rt.out_len - before, test_rt.overflow);
        return;
    }
    said_ok((size_t)en < sizeof fmt_expect, "[%s]: case too long for the test's buffer", fmt);
    if ((size_t)en > cap - before) {
        said_ok(test_rt.overflow == 1 && test_rt.out_len == before,
                "[%s]: %d bytes with %zu left: overflow %d, said %zu bytes", fmt, en, cap - before, test_rt.overflow,
                test_rt.out_len - before);
        return;
    }
    said_ok(!test_rt.overflow, "[%s]: overflow with %d bytes of %zu left", fmt, en, cap - before);
    said_ok(test_rt.out_len == before + (size_t)en && memcmp(test_out + before, fmt_expect, (size_t)en) == 0,
            "[%s]: said %zu bytes [%.*s], snprintf %d [%s]", fmt, test_rt.out_len - before,
            (int)(test_rt.out_len - before), test_out + before, en, fmt_expect);
}

/* Starts a context for out (spade_say or spade_act) whose output already holds
 * `before` bytes ending in canary (the bytes before are not looked at). */
static void begin_said(void (*out)(const char *, ...), size_t before, char canary) {
    spade_rt_begin(&test_rt, test_out, SPADE_OBS_MAX, test_rng, 0, out == spade_act ? SPADE_RT_ACT : SPADE_RT_SAY);
    spade_rt_current = &test_rt;
    if (before) {
        test_out[before - 1] = canary;
        test_out[before] = '\0';
        test_rt.out_len = before;
    }
    fmt_nsink = -7;
}

/* Calls snprintf (unless refused) and out with fmt and the arguments in a[]
 * (up to three, FA_NONE ends them), each with its own type, then &fmt_nsink
 * for a trailing %n. Three levels of the same switch, because a macro cannot
 * expand inside itself. */
#define FA_LEAF(...)                                                                                                   \
    do {                                                                                                               \
        if (!refused) en = snprintf(fmt_expect, sizeof fmt_expect, __VA_ARGS__, &fmt_nsink);                           \
        out(__VA_ARGS__, &fmt_nsink);                                                                                  \
    } while (0)
#define FA_ARG2(...)                                                                                                   \
    switch (a[2].kind) {                                                                                               \
    case FA_NONE: FA_LEAF(__VA_ARGS__); break;                                                                         \
    case FA_INT: FA_LEAF(__VA_ARGS__, a[2].i); break;                                                                  \
    case FA_UINT: FA_LEAF(__VA_ARGS__, a[2].u); break;                                                                 \
    case FA_LONG: FA_LEAF(__VA_ARGS__, a[2].l); break;                                                                 \
    case FA_ULONG: FA_LEAF(__VA_ARGS__, a[2].ul); break;                                                               \
    case FA_LL: FA_LEAF(__VA_ARGS__, a[2].ll); break;                                                                  \
    case FA_ULL: FA_LEAF(__VA_ARGS__, a[2].ull); break;                                                                \
    case FA_SIZE: FA_LEAF(__VA_ARGS__, a[2].z); break;                                                                 \
    case FA_STR: FA_LEAF(__VA_ARGS__, a[2].s); break;                                                                  \
    case FA_DBL: FA_LEAF(__VA_ARGS__, a[2].d); break;                                                                  \
    }
#define FA_ARG1(...)                                                                                                   \
    switch (a[1].kind) {                                                                                               \
    case FA_NONE: FA_LEAF(__VA_ARGS__); break;                                                                         \
    case FA_INT: FA_ARG2(__VA_ARGS__, a[1].i); break;                                                                  \
    case FA_UINT: FA_ARG2(__VA_ARGS__, a[1].u); break;                                                                 \
    case FA_LONG: FA_ARG2(__VA_ARGS__, a[1].l); break;                                                                 \
    case FA_ULONG: FA_ARG2(__VA_ARGS__, a[1].ul); break;                                                               \
    case FA_LL: FA_ARG2(__VA_ARGS__, a[1].ll); break;                                                                  \
    case FA_ULL: FA_ARG2(__VA_ARGS__, a[1].ull); break;                                                                \
    case FA_SIZE: FA_ARG2(__VA_ARGS__, a[1].z); break;                                                                 \
    case FA_STR: FA_ARG2(__VA_ARGS__, a[1].s); break;                                                                  \
    case FA_DBL: FA_ARG2(__VA_ARGS__, a[1].d); break;                                                                  \
    }
#define FA_ARG0(...)                                                                                                   \
    switch (a[0].kind) {                                                                                               \
    case FA_NONE: FA_LEAF(__VA_ARGS__); break;                                                                         \
    case FA_INT: FA_ARG1(__VA_ARGS__, a[0].i); break;                                                                  \
    case FA_UINT: FA_ARG1(__VA_ARGS__, a[0].u); break;                                                                 \
    case FA_LONG: FA_ARG1(__VA_ARGS__, a[0].l); break;                                                                 \
    case FA_ULONG: FA_ARG1(__VA_ARGS__, a[0].ul); break;                                                               \
    case FA_LL: FA_ARG1(__VA_ARGS__, a[0].ll); break;                                                                  \
    case FA_ULL: FA_ARG1(__VA_ARGS__, a[0].ull); break;                                                                \
    case FA_SIZE: FA_ARG1(__VA_ARGS__, a[0].z); break;                                                                 \
    case FA_STR: FA_ARG1(__VA_ARGS__, a[0].s); break;                                                                  \
    case FA_DBL: FA_ARG1(__VA_ARGS__, a[0].d); break;                                                                  \
    }

static void say_vs_snprintf(void (*out)(const char *, ...), const char *fmt, const fmt_arg a[3], size_t before,
                            char canary, int refused) {
    int en = 0;
    begin_said(out, before, canary);
    FA_ARG0(fmt)
    check_said(fmt, before, canary, en, refused);
}

/* The fixed cases: say(F, ...) must say what snprintf(F, ...) writes, on an
 * empty output and on one that already holds text. */
#define SAME_AS_SNPRINTF(F, ...)                                                                                       \
    do {                                                                                                               \
        const char *f_ = (F);                                                                                          \
        for (size_t before_ = 0; before_ <= 3; before_ += 3) {                                                         \
            begin_said(spade_say, before_, 'p');                                                                       \
            int en_ = snprintf(fmt_expect, sizeof fmt_expect, f_, __VA_ARGS__);                                        \
            spade_say(f_, __VA_ARGS__);                                                                                \
            check_said(f_, before_, 'p', en_, 0);                                                                      \
        }                                                                                                              \
    } while (0)

START_TEST(test_say_matches_snprintf) {
    /* each supported form, at its extremes */
    SAME_AS_SNPRINTF("", 0);
    SAME_AS_SNPRINTF("plain text", 0);
    SAME_AS_SNPRINTF("%%", 0);
    SAME_AS_SNPRINTF("100%% sure: %d%%", 7);
    SAME_AS_SNPRINTF("%d|%i|%d|%d", INT_MIN, INT_MAX, 0, -1);
    SAME_AS_SNPRINTF("%ld|%li|%ld", LONG_MIN, LONG_MAX, 0L);
    SAME_AS_SNPRINTF("%lld|%lli", LLONG_MIN, LLONG_MAX);
    SAME_AS_SNPRINTF("%u|%u|%lu|%lu", 0U, UINT_MAX, 0UL, ULONG_MAX);
    SAME_AS_SNPRINTF("%llu|%llu", 0ULL, ULLONG_MAX);
    SAME_AS_SNPRINTF("%zu|%zu", (size_t)0, SIZE_MAX);
    SAME_AS_SNPRINTF("[%c%c%c%c]", 'a', 255, 300, -1);
    SAME_AS_SNPRINTF("[%c]", 0); /* a NUL byte inside the output, counted */
    SAME_AS_SNPRINTF("%c%s", 0, "after the NUL");
    SAME_AS_SNPRINTF("%s|%s|%s", "", "x", "\xe2\x88\x92 UTF-8 and \x01 control");
    SAME_AS_SNPRINTF("%s", "%d %s %n: a string is not a format");
    SAME_AS_SNPRINTF("%.0s|%.s|%.3s|%.20s", "abcdef", "abcdef", "abcdef", "abcdef");
    SAME_AS_SNPRINTF("%.*s|%.*s|%.*s", 0, "abc", 2, "abc", 9, "abc");
    SAME_AS_SNPRINTF("%.*s|%.*s", -1, "negative: as if omitted", INT_MIN, "INT_MIN too");
    static const char unterminated[3] = {'x', 'y', 'z'}; /* a precision stops before the missing NUL */
    SAME_AS_SNPRINTF("%.3s|%.*s", unterminated, 2, unterminated);
    SAME_AS_SNPRINTF("%.999999999s|%.2000000000s", "under the parse cap", "over it: vsnprintf");
    const char *volatile null_str = NULL; /* documented: vsnprintf's text */
    SAME_AS_SNPRINTF("%s|%.2s|%.6s|%.*s", null_str, null_str, null_str, 1, null_str);
    ck_assert_str_eq(fmt_expect, "(null)||(null)|"); /* glibc's, which a NULL %s falls back to */

    /* and snprintf itself is what we think it is */
    SAME_AS_SNPRINTF("%lld %llu %zu", LLONG_MIN, ULLONG_MAX, (size_t)0);
    ck_assert_str_eq(fmt_expect, "-9223372036854775808 18446744073709551615 0");

    /* literal runs: the byte loop (< 16), both sides of its limit, and the strchrnul/memcpy path */
    static char lit[3000];
    for (size_t n = 0; n < sizeof lit - 1; n = n < 40 ? n + 1 : n * 3) {
        for (size_t k = 0; k < n; k++) lit[k] = (char)('a' + k % 26);
        lit[n] = '\0';
        SAME_AS_SNPRINTF(lit, 0);
        if (n >= 3) { /* split by a conversion */
            lit[n / 2] = '%';
            lit[n / 2 + 1] = 'd';
            SAME_AS_SNPRINTF(lit, 42);
        }
    }
    static char longstr[5000];
    memset(longstr, 'L', sizeof longstr - 1);
    SAME_AS_SNPRINTF("<%s>", longstr);
    SAME_AS_SNPRINTF("<%.4000s|%.*s>", longstr, 17, longstr);

    /* anything else falls back to vsnprintf, after the fast path used some arguments */
    SAME_AS_SNPRINTF("%d %x %s", -5, 255U, "tail");
    SAME_AS_SNPRINTF("%s %5d|%-3s|%f", "head", 42, "a", 2.5);
    SAME_AS_SNPRINTF("%zu %lx %llX %o", SIZE_MAX, ULONG_MAX, ULLONG_MAX, 8U);
    SAME_AS_SNPRINTF("%5s|%-5s|%05d|%+d|% d|%#x", "ab", "ab", -3, 3, 3, 15U);
    SAME_AS_SNPRINTF("%hd|%hhu|%zd|%.5d|%.0d", 70000, 300U, (size_t)-1, 42, 0);
    SAME_AS_SNPRINTF("%e|%.3g|%g", 1e300, -0.0, 1.0 / 3);
    SAME_AS_SNPRINTF("%p|%p", (void *)lit, (void *)NULL);
    SAME_AS_SNPRINTF("%s%c%.*s%lu then %5.2s", "a", 'b', 1, "cd", 9UL, "xyz");
    SAME_AS_SNPRINTF("trailing lone %", 0);
    SAME_AS_SNPRINTF("%.*d", 4, 7);

    /* overflow partway through the fast path, and through vsnprintf: nothing
     * of the call is kept, the flag is set, the output ends where it was */
    const size_t cap = SPADE_OBS_MAX;
    const char *over[] = {"%s", "ok %s", "%s%s", "%5s%s", "%s%-3s", "%.4s%s"};
    for (size_t i = 0; i < sizeof over / sizeof *over; i++)
        for (size_t left = 0; left <= 12; left++) {
            begin_said(spade_say, cap - left, 'p');
            int en = snprintf(fmt_expect, sizeof fmt_expect, over[i], "abcdef", "abcdef");
            spade_say(over[i], "abcdef", "abcdef");
            check_said(over[i], cap - left, 'p', en, 0);
            ck_assert_int_eq(test_rt.overflow, (size_t)en > left);
        }
    begin_said(spade_say, 0, 'p');
    spade_say("%s", longstr); /* 4999 bytes */
    for (int i = 0; i < 20; i++) spade_say("%s%s%s", longstr, longstr, longstr);
    ck_assert_int_eq(test_rt.overflow, 1);
    ck_assert_uint_eq(test_rt.out_len, 4999 + 4 * 3 * 4999); /* the fifth block does not fit */
    ck_assert_int_eq(test_out[test_rt.out_len], '\0');

    /* %n: refused whole, even after the fast path wrote text it then gave up */
#define REFUSED(F, ...)                                                                                                \
    do {                                                                                                               \
        begin_said(spade_say, 2, 'b');                                                                                 \
        spade_say((F), __VA_ARGS__);                                                                                   \
        check_said((F), 2, 'b', 0, 1);                                                                                 \
        ck_assert_int_eq(test_out[2], '\0');                                                                           \
        spade_say("c");                                                                                                \
        ck_assert_uint_eq(test_rt.out_len, 3); /* the next call appends where it should */                             \
    } while (0)
    REFUSED("%n", &fmt_nsink);
    REFUSED("%s%n", longstr, &fmt_nsink);
    REFUSED("%d%s%n", 5, longstr, &fmt_nsink);
    REFUSED("%s%s%hhn", "x", longstr, &fmt_nsink);
    REFUSED("%s%5d%n", longstr, 5, &fmt_nsink);
    REFUSED("%ln%s", &fmt_nsink, "x");
    REFUSED("%s%s%n", longstr, longstr, &fmt_nsink); /* would overflow too: refused, not an overflow */
#undef REFUSED

    /* act() shares the path */
    begin_said(spade_act, 0, 'p');
    spade_act("move(%d, %s)%%", -12, "north");
    ck_assert_str_eq(test_out, "move(-12, north)%");
    spade_rt_current = NULL;
}
END_TEST

/* A small deterministic generator of our own, so the cases do not depend on
 * the runtime's. */
static uint64_t fmt_rand(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* An integer that is often at an edge of 64 bits. */
static uint64_t fmt_edgy(uint64_t *x) {
    static const uint64_t edge[] = {0,
                                    1,
                                    9,
                                    10,
                                    UINT64_MAX,
                                    (uint64_t)INT64_MAX,
                                    (uint64_t)INT64_MIN,
                                    (uint64_t)INT_MAX,
                                    (uint64_t)INT_MIN,
                                    (uint64_t)UINT_MAX,
                                    0x80000000u};
    uint64_t r = fmt_rand(x);
    switch (r % 4) {
    case 0: return edge[(r >> 8) % (sizeof edge / sizeof *edge)];
    case 1: return (r >> 8) % 2000 - 1000;
    default: return fmt_rand(x);
    }
}

START_TEST(test_say_random_formats) {
    static const char *strs[] = {"",
                                 "a",
                                 "hello world",
                                 "sixteen chars ab",
                                 "seventeen chars ab",
                                 "#####.@..E###\n#...#",
                                 "%d%s%n%",
                                 "\xe2\x88\x92\xff\x01",
                                 "a string longer than the byte loop's sixteen and than most literal runs",
                                 NULL};
    static const struct {
        const char *spec;
        fa_kind kind[2]; /* what it takes, in order */
    } forms[] = {
        /* the first NFAST: the fast path's */
        {"%d", {FA_INT}},
        {"%i", {FA_INT}},
        {"%ld", {FA_LONG}},
        {"%li", {FA_LONG}},
        {"%lld", {FA_LL}},
        {"%lli", {FA_LL}},
        {"%u", {FA_UINT}},
        {"%lu", {FA_ULONG}},
        {"%llu", {FA_ULL}},
        {"%zu", {FA_SIZE}},
        {"%c", {FA_INT}},
        {"%s", {FA_STR}},
        {"%.0s", {FA_STR}},
        {"%.3s", {FA_STR}},
        {"%.17s", {FA_STR}},
        {"%.s", {FA_STR}},
        {"%.*s", {FA_INT, FA_STR}},
        {"%%", {FA_NONE}},
        /* vsnprintf's */
        {"%x", {FA_UINT}},
        {"%lx", {FA_ULONG}},
        {"%5d", {FA_INT}},
        {"%-3s", {FA_STR}},
        {"%f", {FA_DBL}},
        {"%.3g", {FA_DBL}},
        {"%05i", {FA_INT}},
        {"%+d", {FA_INT}},
        {"%hd", {FA_INT}},
        {"%zd", {FA_SIZE}},
        {"%.5d", {FA_INT}},
        {"%5s", {FA_STR}},
        {"%o", {FA_UINT}},
        {"%e", {FA_DBL}},
        {"%lc", {FA_INT}},
        {"%.*d", {FA_INT, FA_INT}},
        {"%5.1s", {FA_STR}},
    };
    const size_t nforms = sizeof forms / sizeof *forms, NFAST = 18;
    ck_assert_str_eq(forms[NFAST - 1].spec, "%%");
    uint64_t x = 20240611;
    long fast_only = 0, refused_n = 0, overflowed = 0;
    for (int iter = 0; iter < 100000; iter++) {
        char fmt[2048];
        size_t fl = 0;
        fmt_arg a[3] = {{.kind = FA_NONE}, {.kind = FA_NONE}, {.kind = FA_NONE}};
        int na = 0, refused = 0, lone = 0, fast = 1, pieces = (int)(fmt_rand(&x) % 7);
        for (int k = 0; k < pieces; k++) {
            uint64_t r = fmt_rand(&x);
            if (r % 3 == 0) { /* literal text: any byte but NUL and %, sometimes a long run */
                size_t n = (r >> 8) % 8 == 0 ? (r >> 16) % 300 : (r >> 16) % 24;
                for (size_t i = 0; i < n; i++)
                    fmt[fl++] = (char)(fmt_rand(&x) % 2 ? ' ' + fmt_rand(&x) % 95 : 1 + fmt_rand(&x) % 255);
                for (size_t i = fl - n; i < fl; i++)
                    if (fmt[i] == '%') fmt[i] = '#';
                continue;
            }
            size_t f = (r >> 8) % nforms;
            int need = (forms[f].kind[0] != FA_NONE) + (forms[f].kind[1] != FA_NONE);
            if (na + need > 3) continue;
            fl += (size_t)snprintf(fmt + fl, sizeof fmt - fl, "%s", forms[f].spec);
            fast &= f < NFAST;
            for (int j = 0; j < need; j++) {
                fmt_arg *v = &a[na++];
                uint64_t e = fmt_edgy(&x);
                v->kind = forms[f].kind[j];
                v->i = (int)(int64_t)e;
                if (j == 0 && need == 2) v->i = (int)(e % 24) - 4; /* a precision: small, sometimes negative */
                v->u = (unsigned)e;
                v->l = (long)e;
                v->ul = (unsigned long)e;
                v->ll = (long long)e;
                v->ull = e;
                v->z = (size_t)e;
                v->s = strs[e % (sizeof strs / sizeof *strs)];
                v->d = (double)(int64_t)e / 7.0;
            }
        }
        uint64_t r = fmt_rand(&x);
        if (r % 50 == 0) { /* %n at the end, after whatever the fast path could write */
            fl += (size_t)snprintf(fmt + fl, sizeof fmt - fl, "%s", (r >> 8) % 2 ? "%n" : "%hhn");
            refused = 1;
        } else if (r % 50 == 1) {
            fmt[fl++] = '%'; /* a lone % at the end */
            lone = 1;
        }
        fmt[fl] = '\0';
        /* mostly an empty output; sometimes some text; sometimes so little room
         * left that the call overflows partway */
        size_t before = r % 8 < 4 ? 0 : r % 8 < 6 ? 1 + (r >> 16) % 100 : SPADE_OBS_MAX - (r >> 16) % 200;
        void (*out)(const char *, ...) = (r >> 32) % 8 == 0 ? spade_act : spade_say;
        say_vs_snprintf(out, fmt, a, before, (char)('A' + iter % 26), refused);
        refused_n += refused;
        overflowed += test_rt.overflow;
        fast_only += fast && !refused && !lone;
    }
    spade_rt_current = NULL;
    /* the mix reached every outcome */
    ck_assert_int_gt(refused_n, 1000);
    ck_assert_int_gt(overflowed, 1000);
    ck_assert_int_gt(fast_only, 10000);
}
END_TEST

START_TEST(test_rand) {
    /* determinism of the generator itself */
    uint64_t a[4], b[4];
    spade_rng_seed(a, 99);
    spade_rng_seed(b, 99);
    for (int i = 0; i < 100; i++) ck_assert_uint_eq(spade_rng_next(a), spade_rng_next(b));
    spade_rng_seed(b, 100);
    ck_assert_uint_ne(spade_rng_next(a), spade_rng_next(b));

    begin_rt(2024, SPADE_RT_SAY);
    /* bounds, including swapped and extreme ranges */
    for (int i = 0; i < 20000; i++) {
        long v = spade_rand_range(-3, 3);
        ck_assert(v >= -3 && v <= 3);
        v = spade_rand_range(5, 1);
        ck_assert(v >= 1 && v <= 5);
        ck_assert_int_eq(spade_rand_range(4, 4), 4);
        v = spade_rand_range(LONG_MAX - 1, LONG_MAX);
        ck_assert(v >= LONG_MAX - 1);
        v = spade_rand_range(LONG_MIN, LONG_MIN + 1);
        ck_assert(v <= LONG_MIN + 1);
        v = spade_rand_range(LONG_MAX, LONG_MIN); /* the full range, swapped */
        (void)v;
        double u = spade_rand_real();
        ck_assert(u >= 0.0 && u < 1.0);
    }
    /* both ends of the full range's halves show up */
    int neg = 0, pos = 0;
    for (int i = 0; i < 1000; i++) {
        long v = spade_rand_range(LONG_MIN, LONG_MAX);
        neg += v < 0;
        pos += v > 0;
    }
    ck_assert(neg > 400 && pos > 400);
    /* rough uniformity: chi-square over 7 bins, 70000 draws (df 6; 30 is far past p = 1e-4) */
    long counts[7] = {0};
    for (int i = 0; i < 70000; i++) counts[spade_rand_range(10, 16) - 10]++;
    double chi2 = 0;
    for (int k = 0; k < 7; k++) chi2 += (counts[k] - 10000.0) * (counts[k] - 10000.0) / 10000.0;
    ck_assert_msg(chi2 < 30.0, "chi-square %.1f", chi2);
    /* 3 * 2^62 values: plain x % n would draw the lowest quarter of them twice
     * as often (half the draws instead of a third); rejection keeps thirds. */
    long low = 0;
    for (int i = 0; i < 30000; i++) low += spade_rand_range(LONG_MIN, (1L << 62) - 1) < -(1L << 62);
    ck_assert_msg(low > 9000 && low < 11000, "lowest third drawn %ld of 30000", low);

    ck_assert_int_eq(spade_chance(0.0), 0);
    ck_assert_int_eq(spade_chance(1.0), 1);
    ck_assert_int_eq(spade_chance(NAN), 0);
    int heads = 0;
    for (int i = 0; i < 10000; i++) heads += spade_chance(0.3);
    ck_assert(heads > 2700 && heads < 3300);

    int perm[50], seen[50] = {0};
    for (int i = 0; i < 50; i++) perm[i] = i;
    spade_shuffle(perm, 50, sizeof perm[0]);
    int moved = 0;
    for (int i = 0; i < 50; i++) {
        ck_assert(perm[i] >= 0 && perm[i] < 50);
        seen[perm[i]]++;
        moved += perm[i] != i;
    }
    for (int i = 0; i < 50; i++) ck_assert_int_eq(seen[i], 1);
    ck_assert_int_gt(moved, 25);
    spade_shuffle(NULL, 5, 4);
    spade_shuffle(perm, -1, 4);
    spade_shuffle(perm, 5, 0);
    spade_rt_current = NULL;
}
END_TEST

/* ---- the allowlist -------------------------------------------------------- */

/* The identifier right before the first '(' of a declaration line, or "". */
static void decl_name(const char *line, char *name, size_t cap) {
    name[0] = '\0';
    const char *paren = strchr(line, '(');
    if (!paren) return;
    const char *e = paren;
    while (e > line && e[-1] == ' ') e--;
    const char *s = e;
    while (s > line && (isalnum((unsigned char)s[-1]) || s[-1] == '_')) s--;
    size_t n = (size_t)(e - s);
    if (n == 0 || n >= cap) return;
    memcpy(name, s, n);
    name[n] = '\0';
}

START_TEST(test_allowlist_covers_dsl_h) {
    char path[4096];
    snprintf(path, sizeof path, "%s/dsl/spade/dsl.h", SPADE_SRCDIR);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    char line[1024], name[128];
    int in_jit = 0, continued = 0, n_libc = 0, n_helpers = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        int this_continues = len >= 2 && line[len - 2] == '\\';
        int skip = continued; /* inside a multi-line #define */
        continued = this_continues;
        if (skip) continue;
        if (strncmp(line, "#ifdef SPADE_JIT", 16) == 0) {
            in_jit = 1;
            continue;
        }
        if (in_jit && strncmp(line, "#else", 5) == 0) {
            in_jit = 0;
            continue;
        }
        if (line[0] == '#' || line[0] == ' ' || line[0] == '/' || !strchr(line, '(') || !strstr(line, ");")) continue;
        decl_name(line, name, sizeof name);
        if (!name[0]) continue;
        if (in_jit)
            n_libc++;
        else if (strncmp(name, "spade_", 6) == 0)
            n_helpers++;
        else
            continue;
        ck_assert_msg(spade_dsl_symbol_lookup(name) != NULL, "dsl.h declares %s, the allowlist lacks it", name);
    }
    fclose(f);
    /* the parse itself found what dsl.h has today (and more is fine) */
    ck_assert_int_ge(n_libc, 33);
    ck_assert_int_ge(n_helpers, 15);
    static const char *emitted_by_tcc[] = {"memset", "memcpy", "memmove"};
    for (int i = 0; i < 3; i++) ck_assert_ptr_nonnull(spade_dsl_symbol_lookup(emitted_by_tcc[i]));
    /* no duplicates, no holes */
    for (size_t i = 0; i < spade_dsl_nsymbols; i++) {
        ck_assert_ptr_nonnull(spade_dsl_symbols[i].addr);
        for (size_t j = i + 1; j < spade_dsl_nsymbols; j++)
            ck_assert_str_ne(spade_dsl_symbols[i].name, spade_dsl_symbols[j].name);
    }
    ck_assert_ptr_null(spade_dsl_symbol_lookup("system"));
    ck_assert_ptr_null(spade_dsl_symbol_lookup("fopen"));
    ck_assert_ptr_null(spade_dsl_symbol_lookup(NULL));
    /* the ctype entries take any int */
    int (*isdig)(int), (*up)(int);
    void *p = spade_dsl_symbol_lookup("isdigit");
    memcpy(&isdig, &p, sizeof p);
    p = spade_dsl_symbol_lookup("toupper");
    memcpy(&up, &p, sizeof p);
    ck_assert_int_eq(isdig(1 << 30), 0);
    ck_assert_int_eq(isdig(-100000), 0);
    ck_assert_int_ne(isdig('7'), 0);
    ck_assert_int_eq(up('a'), 'A');
    ck_assert_int_eq(up(0xe9), 0xe9);
}
END_TEST

/* ---- the same file, natively and under the JIT ---------------------------- */

/* Plays seeds 0..n-1 with SOLVE (or fixed actions when there is none), asking
 * for the hint as well, and writes everything seen into t. */
static void transcript(spade_host *h, int seeds, char *t, size_t cap) {
    size_t used = 0;
    int inst = spade_host_add_instance(h, NULL);
    ck_assert_int_ge(inst, 0);
    static const char *fixed[] = {"12", "\\boxed{-3}", "", "+"};
    for (int seed = 0; seed < seeds && used < cap; seed++) {
        spade_step_result r;
        ck_assert_int_eq(spade_host_reset(h, inst, (uint64_t)seed, &r), SPADE_HOST_OK);
        used += (size_t)snprintf(t + used, cap - used, "R%s|", r.obs);
        for (int k = 0; k < 50 && used < cap; k++) {
            const char *text;
            size_t len;
            char action[256];
            ck_assert_int_eq(spade_host_hint(h, inst, &text, &len), SPADE_HOST_OK);
            used += (size_t)snprintf(t + used, cap - used, "H%.200s|", text);
            if (used >= cap) break;
            if (spade_host_info(h)->has_solve) {
                ck_assert_int_eq(spade_host_solve(h, inst, &text, &len), SPADE_HOST_OK);
                snprintf(action, sizeof action, "%s", text);
            } else {
                snprintf(action, sizeof action, "%s", fixed[k % 4]);
            }
            ck_assert_int_eq(spade_host_step(h, inst, action, strlen(action), &r), SPADE_HOST_OK);
            used += (size_t)snprintf(t + used, cap - used, "A%s>%.200s/%.17g/%d%d%d|", action, r.obs, r.reward,
                                     r.terminated, r.truncated, r.success);
            if (r.terminated || r.truncated) break;
        }
    }
}

START_TEST(test_jit_matches_native) {
    static const char *envs[] = {"add", "counter", "bank", "chatty", "echo"};
    static char native_t[1 << 18], jit_t[1 << 18];
    for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
        void *dl;
        spade_host *h = open_env(envs[e], &dl);
        transcript(h, 20, native_t, sizeof native_t);
        spade_native_close(h, dl);

        char path[4096], err[1024] = "";
        snprintf(path, sizeof path, "%s/tests/envs/%s.c", SPADE_SRCDIR, envs[e]);
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f != NULL, "cannot read %s", path);
        static char src[1 << 16];
        size_t n = fread(src, 1, sizeof src, f);
        fclose(f);
        spade_jit *jit = NULL;
        int line = 0;
        spade_jit_status kind;
        ck_assert_msg(spade_jit_compile(path, src, n, &jit, err, sizeof err, &line, &kind) == 0, "jit %s: %s", envs[e],
                      err);
        ck_assert_msg(spade_host_new(&h, spade_jit_symbol, jit, err, sizeof err) == 0, "jit host %s: %s", envs[e], err);
        transcript(h, 20, jit_t, sizeof jit_t);
        spade_host_free(h);
        spade_jit_free(jit);
        ck_assert_uint_gt(strlen(native_t), 100);
        ck_assert_msg(strcmp(native_t, jit_t) == 0, "%s plays differently under the JIT", envs[e]);
    }
}
END_TEST

static Suite *host_suite(void) {
    Suite *s = suite_create("host");
    TCase *t = tcase_create("host");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_reset_determinism);
    tcase_add_test(t, test_step_determinism);
    tcase_add_test(t, test_solve_wins);
    tcase_add_test(t, test_hint_and_solve_leave_episode_alone);
    tcase_add_test(t, test_truncation);
    tcase_add_test(t, test_steps_and_rewards_accumulate);
    tcase_add_test(t, test_info);
    tcase_add_test(t, test_params_parse);
    tcase_add_test(t, test_validation_failures);
    tcase_add_test(t, test_validation_meta);
    tcase_add_test(t, test_reward_refused);
    tcase_add_test(t, test_bad_calls);
    tcase_add_test(t, test_output_cap);
    tcase_add_test(t, test_hostile_actions);
    tcase_add_test(t, test_bank_tools);
    tcase_add_test(t, test_jit_matches_native);
    suite_add_tcase(s, t);
    TCase *r = tcase_create("runtime");
    tcase_set_timeout(r, 60);
    tcase_add_test(r, test_answer_and_parse);
    tcase_add_test(r, test_answer_span_matches_naive);
    tcase_add_test(r, test_helpers_on_huge_inputs);
    tcase_add_test(r, test_output_helpers);
    tcase_add_test(r, test_say_matches_snprintf);
    tcase_add_test(r, test_say_random_formats);
    tcase_add_test(r, test_rand);
    tcase_add_test(r, test_rng_stream_pinned);
    tcase_add_test(r, test_shuffle_distribution);
    tcase_add_test(r, test_allowlist_covers_dsl_h);
    suite_add_tcase(s, r);
    return s;
}

int main(void) { return tu_run(host_suite()); }
