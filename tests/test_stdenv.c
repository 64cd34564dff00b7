/* test_stdenv.c — Check suite for the hand-written environments of stdenv/ and
 * the example plugins of plugins/: every one passes the checker (core/check.h)
 * with no warning, its SOLVE wins on 100 seeds spread over its param range (the
 * defaults, every param at its min and at its max, all at min, all at max, and
 * random mixes), scripted agents do not win at the defaults (random at most 15%,
 * no-op and hint-echo never: the designer's gate asks the same of its
 * environments), and stdenv/ is the grounding corpus it is meant to be (at least
 * 40 environments, at least 4 in each of the nine families below, each 15-60
 * lines of code under a header comment that names the file).
 *
 * The files are the ones stdenv/local.mk and plugins/local.mk install
 * (SPADE_ENV_FILES, passed by the build), so the test covers exactly what ships;
 * a .c file of stdenv/ missing from that list fails too (it would not be installed).
 * What it is not: a test of the checker, the sandbox or the host themselves.
 */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host.h"
#include "jit/jit.h"
#include "registry.h"
#include "testutil.h"

#ifndef SPADE_ENV_FILES
#error "SPADE_ENV_FILES (the installed environment sources) must come from the build"
#endif

#define MAX_FILES 96
#define SOLVE_EPISODES 100
#define GATE_SEEDS 20 /* episodes each scripted agent plays at the defaults */

static char files[MAX_FILES][256]; /* relative to the source tree: "stdenv/maze.c" */
static int n_files;

static void list_files(void) {
    char all[] = SPADE_ENV_FILES;
    for (char *tok = strtok(all, " \t\n"); tok && n_files < MAX_FILES; tok = strtok(NULL, " \t\n"))
        snprintf(files[n_files++], sizeof files[0], "%s", tok);
}

static char *read_env(int i, size_t *len, char *path, size_t pathcap) {
    char err[1024];
    char *src = NULL;
    snprintf(path, pathcap, "%s/%s", tu_srcdir(), files[i]);
    ck_assert_msg(spade_read_source(path, &src, len, err, sizeof err) == 0, "%s", err);
    return src;
}

/* ---- the checker ----------------------------------------------------------- */

static spade_sandbox *sb;

static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 10.0, .call_timeout_s = 5.0}); }
static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

/* Every check passes and none warns: a random agent wins at most 15%, seeds
 * vary the episode, and there is a SOLVE. */
START_TEST(passes_the_checker) {
    char path[4096];
    size_t len;
    char *src = read_env(_i, &len, path, sizeof path);
    spade_check_opts o;
    spade_check_opts_default(&o);
    static spade_check_report rep;
    int rc = spade_check(sb, path, src, len, NULL, &o, &rep);
    free(src);
    ck_assert_msg(rc == 0 && rep.failed == 0, "%s fails the checker:\n%s", files[_i], rep.text);
    ck_assert_msg(rep.warned == 0, "%s draws a warning:\n%s", files[_i], rep.text);
    ck_assert_int_ge(rep.passed, 10);
}
END_TEST

/* ---- SOLVE across the param range (in process, compiled by the JIT) -------- */

typedef struct env {
    spade_jit *jit;
    spade_host *h;
} env;

static void env_open(int i, env *e) {
    char path[4096], err[1024];
    size_t len;
    char *src = read_env(i, &len, path, sizeof path);
    int line = 0;
    spade_jit_status kind;
    ck_assert_msg(spade_jit_compile(path, src, len, &e->jit, err, sizeof err, &line, &kind) == 0, "%s", err);
    free(src);
    ck_assert_msg(spade_host_new(&e->h, spade_jit_symbol, e->jit, err, sizeof err) == 0, "%s", err);
}

static void env_close(env *e) {
    spade_host_free(e->h);
    spade_jit_free(e->jit);
}

/* Plays one episode with the reference actions; 1 if it succeeded. why says
 * how it ended otherwise. */
static int solve_episode(spade_host *h, int inst, uint64_t seed, char *why, size_t whycap) {
    const spade_env_info *info = spade_host_info(h);
    spade_step_result r;
    ck_assert_int_eq(spade_host_reset(h, inst, seed, &r), SPADE_HOST_OK);
    for (int t = 0; t < info->max_steps && !r.terminated && !r.truncated; t++) {
        const char *a;
        size_t n;
        ck_assert_int_eq(spade_host_solve(h, inst, &a, &n), SPADE_HOST_OK);
        char action[4096];
        snprintf(action, sizeof action, "%.*s", (int)n, a);
        ck_assert_int_eq(spade_host_step(h, inst, action, strlen(action), &r), SPADE_HOST_OK);
        if (r.terminated || r.truncated)
            snprintf(why, whycap, "step %d, action '%s': return %g, %s; last observation: %.300s", t + 1, action,
                     r.episode_return, r.terminated ? "terminated" : "truncated", r.obs);
    }
    return r.success && (r.terminated || r.truncated);
}

/* The param vectors to try: defaults, every param alone at min and at max, all
 * at min, all at max, then random mixes (seeded: the test is reproducible). */
static int param_sets(const spade_env_info *info, double sets[][SPADE_INFO_MAX_PARAMS], int cap) {
    int n = 0, p = info->n_params;
    uint64_t rng = 0x57de57de;
    for (int kind = 0; kind < 4 + 2 * p + 5 && n < cap; kind++, n++) {
        for (int k = 0; k < p; k++) {
            const spade_param_info *pi = &info->params[k];
            double v = pi->def;
            if (kind == 1 || kind == 4 + 2 * k) v = pi->min;
            if (kind == 2 || kind == 5 + 2 * k) v = pi->max;
            if (kind == 3 || kind >= 4 + 2 * p) { /* a random mix */
                double u = (double)(spade_splitmix64(&rng) >> 11) / 9007199254740992.0;
                v = pi->min + u * (pi->max - pi->min);
                if (pi->type == SPADE_PARAM_INT) v = floor(v + 0.5);
            }
            sets[n][k] = v;
        }
    }
    return n;
}

static void describe_set(const spade_env_info *info, const double *v, char *out, size_t cap) {
    size_t off = 0;
    out[0] = 0;
    for (int k = 0; k < info->n_params && off < cap; k++)
        off += snprintf(out + off, cap - off, "%s%s=%g", k ? "," : "", info->params[k].name, v[k]);
}

START_TEST(solve_wins_across_params) {
    env e;
    env_open(_i, &e);
    const spade_env_info *info = spade_host_info(e.h);
    ck_assert_msg(info->has_solve, "%s has no SOLVE", files[_i]);
    static double sets[64][SPADE_INFO_MAX_PARAMS];
    int n_sets = param_sets(info, sets, 64);
    int per_set = (SOLVE_EPISODES + n_sets - 1) / n_sets, played = 0;
    for (int s = 0; s < n_sets; s++) {
        int inst = spade_host_add_instance(e.h, sets[s]);
        ck_assert_int_ge(inst, 0);
        for (int k = 0; k < per_set; k++, played++) {
            char why[1024] = "", params[512];
            uint64_t seed = 1000 + (uint64_t)s * 97 + (uint64_t)k;
            if (!solve_episode(e.h, inst, seed, why, sizeof why)) {
                describe_set(info, sets[s], params, sizeof params);
                ck_abort_msg("%s:%s seed %llu: SOLVE did not win (%s)", files[_i], params, (unsigned long long)seed,
                             why);
            }
        }
    }
    ck_assert_int_ge(played, SOLVE_EPISODES);
    env_close(&e);
}
END_TEST

/* ---- scripted agents that must not win ------------------------------------ */

/* The hint-echo agent's actions: each line, each word and each number of the
 * hint, in that order (then round again). An environment whose hint gives the
 * answer away loses nothing to this agent. Returns how many. */
static int hint_pieces(const char *hint, size_t len, char pieces[][128], int cap) {
    int n = 0;
    for (size_t i = 0; i < len && n < cap;) { /* lines */
        size_t k = 0;
        while (i + k < len && hint[i + k] != '\n') k++;
        if (k) snprintf(pieces[n++], 128, "%.*s", (int)(k < 127 ? k : 127), hint + i);
        i += k + 1;
    }
    for (int digits = 0; digits < 2; digits++) /* words, then numbers */
        for (size_t i = 0; i < len && n < cap;) {
            size_t k = 0;
            while (i + k < len && (digits ? isdigit((unsigned char)hint[i + k]) : isalpha((unsigned char)hint[i + k])))
                k++;
            if (k) snprintf(pieces[n++], 128, "%.*s", (int)(k < 127 ? k : 127), hint + i);
            i += k ? k : 1;
        }
    return n;
}

/* Plays one episode at the defaults: agent 0 random, 1 no-op (empty actions),
 * 2 hint-echo. 1 if it succeeded. */
static int scripted_episode(spade_host *h, int inst, int agent, uint64_t seed) {
    const spade_env_info *info = spade_host_info(h);
    static char pieces[512][128];
    int n_pieces = 0;
    spade_step_result r;
    ck_assert_int_eq(spade_host_reset(h, inst, seed, &r), SPADE_HOST_OK);
    if (agent == 2) {
        const char *hint;
        size_t n;
        ck_assert_int_eq(spade_host_hint(h, inst, &hint, &n), SPADE_HOST_OK);
        n_pieces = hint_pieces(hint, n, pieces, 512);
        ck_assert_int_gt(n_pieces, 0);
    }
    uint64_t rng = seed ^ 0x5eed5eedULL;
    for (int t = 0; t < info->max_steps && !r.terminated && !r.truncated; t++) {
        char action[128] = "";
        if (agent == 0) spade_random_action(&rng, action, sizeof action);
        if (agent == 2) snprintf(action, sizeof action, "%s", pieces[t % n_pieces]);
        ck_assert_int_eq(spade_host_step(h, inst, action, strlen(action), &r), SPADE_HOST_OK);
    }
    return r.success && (r.terminated || r.truncated);
}

START_TEST(scripted_agents_do_not_win) {
    static const char *const names[] = {"random", "no-op", "hint-echo"};
    static const int most[] = {GATE_SEEDS * 15 / 100, 0, 0};
    env e;
    env_open(_i, &e);
    int inst = spade_host_add_instance(e.h, NULL);
    ck_assert_int_ge(inst, 0);
    for (int agent = 0; agent < 3; agent++) {
        int wins = 0;
        for (int k = 0; k < GATE_SEEDS; k++) wins += scripted_episode(e.h, inst, agent, 5000 + (uint64_t)k);
        ck_assert_msg(wins <= most[agent], "%s: the %s agent won %d of %d episodes at the defaults (at most %d)",
                      files[_i], names[agent], wins, GATE_SEEDS, most[agent]);
    }
    env_close(&e);
}
END_TEST

/* ---- the corpus ------------------------------------------------------------ */

/* Lines after the header comment (the code a model imitates). */
static int code_lines(const char *src, size_t len) {
    const char *end = strstr(src, "*/");
    int n = 0;
    if (!end) return -1;
    for (const char *p = strchr(end, '\n'); p && (size_t)(p - src) < len; p = strchr(p + 1, '\n'))
        if (p[1]) n++;
    return n;
}

START_TEST(stdenv_is_a_corpus) {
    static const char *const families[] = {"grid",         "tools",     "math",   "logic",   "pattern",
                                           "optimization", "deduction", "memory", "strategy"};
    enum { N_FAMILIES = sizeof families / sizeof *families };
    int per_family[N_FAMILIES] = {0}, n_stdenv = 0;
    for (int i = 0; i < n_files; i++) {
        if (strncmp(files[i], "stdenv/", 7)) continue;
        n_stdenv++;
        char path[4096], head[300];
        size_t len;
        char *src = read_env(i, &len, path, sizeof path);
        snprintf(head, sizeof head, "/* %s — ", files[i] + 7);
        ck_assert_msg(!strncmp(src, head, strlen(head)), "%s must open with \"%s<what it teaches>\"", files[i], head);
        ck_assert_msg(strstr(src, "Params:") || strstr(src, "Params "),
                      "%s: the header comment must say what the params scale", files[i]);
        int lines = code_lines(src, len);
        ck_assert_msg(lines >= 15 && lines <= 60, "%s has %d lines of code under its header (15-60)", files[i], lines);
        free(src);

        env e;
        env_open(i, &e);
        const spade_env_info *info = spade_host_info(e.h);
        int f = 0;
        while (f < N_FAMILIES && strcmp(info->family, families[f])) f++;
        ck_assert_msg(f < N_FAMILIES,
                      "%s: family '%s' is not one of the nine (grid, tools, math, logic, pattern, "
                      "optimization, deduction, memory, strategy)",
                      files[i], info->family);
        per_family[f]++;
        ck_assert_msg(info->n_params >= 2, "%s: %d params; difficulty needs at least two knobs", files[i],
                      info->n_params);
        for (int k = 0; k < info->n_params; k++)
            ck_assert_msg(info->params[k].max > info->params[k].min, "%s: param %s has no range", files[i],
                          info->params[k].name);
        if (f == 1) ck_assert_msg(info->n_tools >= 2, "%s: a tools environment with %d tools", files[i], info->n_tools);
        env_close(&e);
    }
    ck_assert_int_ge(n_stdenv, 40);
    for (int f = 0; f < N_FAMILIES; f++)
        ck_assert_msg(per_family[f] >= 4, "family %s has %d environments (at least 4)", families[f], per_family[f]);
}
END_TEST

/* Every .c file of stdenv/ in the source tree is installed (listed in stdenv/local.mk). */
START_TEST(every_stdenv_file_is_installed) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/stdenv", tu_srcdir());
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int seen = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t n = strlen(de->d_name);
        if (n < 3 || strcmp(de->d_name + n - 2, ".c")) continue;
        char rel[300];
        snprintf(rel, sizeof rel, "stdenv/%s", de->d_name);
        int listed = 0;
        for (int i = 0; i < n_files; i++) listed |= !strcmp(files[i], rel);
        ck_assert_msg(listed, "%s is not in stdenv_DATA (stdenv/local.mk): it would not be installed", rel);
        seen++;
    }
    closedir(d);
    ck_assert_int_ge(seen, 40);
}
END_TEST

int main(void) {
    list_files();
    Suite *s = suite_create("stdenv");
    TCase *c = tcase_create("checker");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_set_timeout(c, 120);
    tcase_add_loop_test(c, passes_the_checker, 0, n_files);
    suite_add_tcase(s, c);
    TCase *v = tcase_create("solve");
    tcase_set_timeout(v, 120);
    tcase_add_loop_test(v, solve_wins_across_params, 0, n_files);
    suite_add_tcase(s, v);
    TCase *g = tcase_create("gate");
    tcase_set_timeout(g, 120);
    tcase_add_loop_test(g, scripted_agents_do_not_win, 0, n_files);
    suite_add_tcase(s, g);
    TCase *k = tcase_create("corpus");
    tcase_set_timeout(k, 60);
    tcase_add_test(k, stdenv_is_a_corpus);
    tcase_add_test(k, every_stdenv_file_is_installed);
    suite_add_tcase(s, k);
    return tu_run(s);
}
