/* bench_crn.c — what common random numbers buy the paired plays' regret:
 * one fixed environment (bench/envs/crn_bit.c unless another is named),
 * REPS replications of designer/plays.h's paired plays (8 seeds x 2 repeats
 * = 16 plays an arm, the same environment seeds in every replication; a
 * replication is another agent seed), each played twice by the same policy:
 * with both arms on one sampling stream per (seed, repeat) (the default,
 * spade_policy_agent_opts.arm_streams = 0) and with the hint arm on its own
 * stream (arm_streams = 1, as before). Prints the mean and the variance of
 * regret over the replications for each, and their ratio with a bootstrap 95%
 * interval (replications resampled, both columns together).
 * Policies: an untrained one (tu_tiny_policy's sizes: 1 layer, width 32,
 * bytes), the same with its weights x10 (sharper, so the hint moves its
 * distribution more), or a checkpoint given with --ckpt.
 * What it is not: a speed benchmark, nor a claim about a trained agent that
 * reads the hint (with one, the arms differ where the hint matters and the
 * shared stream cancels only the rest).
 * Run: ./bench/bench_crn [REPS] [--ckpt FILE] [--env FILE.c]   (REPS 100)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/policy_agent.h"
#include "designer/plays.h"
#include "registry.h"
#include "sandbox/sandbox.h"

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "bench_crn: " __VA_ARGS__);                                                                    \
        fprintf(stderr, "\n");                                                                                         \
        exit(1);                                                                                                       \
    } while (0)

enum { SEEDS = 8, REPEATS = 2, PLAYS = SEEDS * REPEATS };

static double var_of(const double *x, int n) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i] / n;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m) / (n - 1);
    return v;
}

static double mean_of(const double *x, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m += x[i] / n;
    return m;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One policy: regret of every replication with one stream and with two. */
static void measure(const char *what, spade_policy *p, spade_sandbox *sb, const spade_ep_spec *spec, int reps) {
    char err[2048];
    double *r[2] = {malloc((size_t)reps * sizeof(double)), malloc((size_t)reps * sizeof(double))};
    double pass[2][2] = {{0, 0}, {0, 0}};
    if (!r[0] || !r[1]) DIE("out of memory");
    uint64_t seeds[SEEDS];
    for (int k = 0; k < SEEDS; k++) seeds[k] = 1000 + (uint64_t)k;
    for (int rep = 0; rep < reps; rep++)
        for (int arms = 0; arms < 2; arms++) {
            spade_policy_agent_opts ao;
            spade_policy_agent_opts_default(&ao);
            ao.max_live = 2 * PLAYS;
            ao.max_action_tokens = 4;
            ao.seed = 0x63726e00ULL + (uint64_t)rep;
            ao.arm_streams = arms;
            spade_agent *a = spade_agent_policy(p, &ao, err, sizeof err);
            if (!a) DIE("%s", err);
            spade_episodes_opts eo;
            spade_episodes_opts_default(&eo);
            eo.max_live = ao.max_live;
            spade_ep_outcome out[2 * PLAYS];
            spade_paired m;
            if (spade_paired_play(sb, spec, a, seeds, SEEDS, REPEATS, &eo, out, &m, err, sizeof err) < 0)
                DIE("%s", err);
            spade_agent_free(a);
            r[arms][rep] = m.regret;
            pass[arms][0] += m.pass_nohint / reps;
            pass[arms][1] += m.pass_hint / reps;
        }
    double v0 = var_of(r[0], reps), v1 = var_of(r[1], reps);
    /* bootstrap of the ratio: replications resampled (the same indices for both columns) */
    enum { B = 2000 };
    double *ratio = malloc(B * sizeof(double)), *x0 = malloc((size_t)reps * sizeof(double)),
           *x1 = malloc((size_t)reps * sizeof(double));
    if (!ratio || !x0 || !x1) DIE("out of memory");
    uint64_t s = 12345;
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < reps; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int j = (int)((s >> 33) % (uint64_t)reps);
            x0[i] = r[0][j], x1[i] = r[1][j];
        }
        double a = var_of(x0, reps), c = var_of(x1, reps);
        ratio[b] = c > 0 ? a / c : NAN;
    }
    qsort(ratio, B, sizeof *ratio, cmp_d);
    printf("%-22s %6.3f / %5.3f  %8.4f %10.5f   %6.3f / %5.3f  %8.4f %10.5f   %6.3f [%.3f, %.3f]\n", what, pass[0][0],
           pass[0][1], mean_of(r[0], reps), v0, pass[1][0], pass[1][1], mean_of(r[1], reps), v1, v1 > 0 ? v0 / v1 : NAN,
           ratio[B / 40], ratio[B - 1 - B / 40]);
    free(ratio);
    free(x0);
    free(x1);
    free(r[0]);
    free(r[1]);
}

static spade_policy *tiny(float scale) {
    char err[512];
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = 1, c.heads = 2, c.width = 32, c.context = 256, c.seed = 3;
    snprintf(c.backend, sizeof c.backend, "cpu");
    spade_policy *p;
    if (spade_policy_new(&p, &c, err, sizeof err) < 0) DIE("%s", err);
    if (scale != 1.0f) {
        size_t P = spade_policy_num_params(p);
        float *w = malloc(P * sizeof(float));
        if (!w || spade_policy_get_params(p, w, err, sizeof err) < 0) DIE("%s", w ? err : "out of memory");
        for (size_t i = 0; i < P; i++) w[i] *= scale;
        if (spade_policy_set_params(p, w, err, sizeof err) < 0) DIE("%s", err);
        free(w);
    }
    return p;
}

int main(int argc, char **argv) {
    int reps = 100;
    const char *ckpt = NULL, *env = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ckpt") && i + 1 < argc)
            ckpt = argv[++i];
        else if (!strcmp(argv[i], "--env") && i + 1 < argc)
            env = argv[++i];
        else if ((reps = atoi(argv[i])) < 3)
            DIE("usage: bench_crn [REPS >= 3] [--ckpt FILE] [--env FILE.c]");
    }
    char err[2048], path[4096], *src = NULL;
    size_t len;
    if (env)
        snprintf(path, sizeof path, "%s", env);
    else {
        spade_data_path("bench/envs", path, sizeof path);
        snprintf(path + strlen(path), sizeof path - strlen(path), "/crn_bit.c");
    }
    if (spade_read_source(path, &src, &len, err, sizeof err) < 0) DIE("%s", err);
    spade_sandbox *sb;
    if (spade_sandbox_new(&sb, NULL, err, sizeof err) < 0) DIE("%s", err);
    spade_ep_spec spec = {path, src, len, NULL, 2 * PLAYS};
    printf("bench_crn: %s, %d replications of %d seeds x %d repeats an arm\n", path, reps, SEEDS, REPEATS);
    printf("%-22s %-42s %-42s %s\n", "", "one stream per (seed, repeat) (CRN)", "hint arm on its own stream",
           "variance ratio");
    printf("%-22s %14s %8s %10s   %14s %8s %10s   %s\n", "policy", "pass no/hint", "regret", "var", "pass no/hint",
           "regret", "var", "CRN / own [95%]");
    if (ckpt) {
        spade_policy *p;
        if (spade_policy_load(&p, ckpt, NULL, err, sizeof err) < 0) DIE("%s", err);
        measure(ckpt, p, sb, &spec, reps);
        spade_policy_free(p);
    } else {
        const float scale[2] = {1.0f, 10.0f};
        const char *name[2] = {"untrained", "untrained, weights x10"};
        for (int k = 0; k < 2; k++) {
            spade_policy *p = tiny(scale[k]);
            measure(name[k], p, sb, &spec, reps);
            spade_policy_free(p);
        }
    }
    spade_sandbox_free(sb);
    free(src);
    return 0;
}
