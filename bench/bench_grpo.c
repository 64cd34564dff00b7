/* bench_grpo.c — what masked multi-turn GRPO costs, as ratios measured in
 * the same run on the cpu backend.
 *
 * What it is: spade_grpo_batch over 8 episodes of 256 tokens (a prompt, then
 * 6 action turns with observations between them; 43% of the tokens trained)
 * at L4 C128 NH4, timed (process CPU time, least of reps) four ways: (1) one role, a zero
 * gradient on entry — the baseline; (2) two roles, so the per-role norms
 * need the scratch buffer and a host add; (3) one role on top of a gradient
 * already there (the scratch path for the only role); (4) the same episodes
 * given as their 48 turns, each a single-completion sample whose prompt is
 * the whole history before it — what training an episode costs without the
 * mask; (5) and (6) the baseline's episodes as drawn at temperature 0.8,
 * and at 0.8 with top_p 0.95: their log-probs and gradient under that
 * distribution, computed on the host from the logits of every trained row
 * (docs/policy.md, "What the loss optimises"). Prints RATIO lines. Run by
 * `make bench`, never by make check.
 * What it is not: a correctness test (tests/test_grpo.c).
 *
 * Usage: bench_grpo [--quick]     (--quick: one repetition)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static char err[512];

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "bench_grpo: ");                                                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        exit(1);                                                                                                       \
    } while (0)

/* Process CPU time, one thread: on a shared, loaded machine wall time
 * measures the neighbours and a second OpenMP thread's spinning would count
 * as work; these figures are ratios of work. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define NEP 8
#define LEN 256
#define NTURN 6

/* Least CPU seconds of one spade_grpo_batch over reps (noise only adds); prefill: run one batch first and
 * keep its gradient (the accumulate case), else zero the gradient each time. */
static double time_batch(spade_policy *p, const spade_grpo_sample *s, int n, const spade_grpo_opts *o, int reps,
                         int prefill) {
    double t[16];
    for (int r = 0; r < reps; r++) {
        if (spade_policy_zero_grad(p, err, sizeof err)) DIE("%s", err);
        if (prefill && spade_grpo_batch(p, NULL, s, n, o, NULL, err, sizeof err)) DIE("%s", err);
        double t0 = now();
        if (spade_grpo_batch(p, NULL, s, n, o, NULL, err, sizeof err)) DIE("%s", err);
        t[r] = now() - t0;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_d);
    return t[0];
}

int main(int argc, char **argv) {
    int reps = argc > 1 && !strcmp(argv[1], "--quick") ? 1 : 5;
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = 4;
    c.heads = 4;
    c.width = 128;
    c.context = LEN;
    snprintf(c.backend, sizeof c.backend, "cpu");
    spade_policy *p = NULL;
    if (spade_policy_new(&p, &c, err, sizeof err)) DIE("%s", err);
    printf("bench_grpo: backend %s (%s), %zu parameters\n", spade_policy_backend_name(p), spade_policy_backend_note(p),
           spade_policy_num_params(p));

    /* episode layout: prompt 40, then 6 x (action 18, observation 18) */
    static int tok[NEP][LEN];
    static unsigned char mask[NEP][LEN];
    static float old[NEP][LEN];
    int ts[NTURN], te[NTURN];
    uint64_t rng = 1;
    for (int e = 0; e < NEP; e++)
        for (int t = 0; t < LEN; t++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            tok[e][t] = (int)((rng >> 33) % 256);
        }
    for (int k = 0; k < NTURN; k++) {
        ts[k] = 40 + 36 * k;
        te[k] = ts[k] + 18;
    }
    long ntrain = 0;
    for (int e = 0; e < NEP; e++) {
        float lp[LEN];
        if (spade_policy_logprobs(p, tok[e], 1, LEN, lp, err, sizeof err)) DIE("%s", err);
        for (int k = 0; k < NTURN; k++)
            for (int t = ts[k]; t < te[k]; t++) {
                mask[e][t] = 1;
                old[e][t] = lp[t - 1];
                ntrain++;
            }
    }
    spade_grpo_sample one[NEP], two[NEP], turns[NEP * NTURN];
    for (int e = 0; e < NEP; e++) {
        one[e] = (spade_grpo_sample){.tokens = tok[e],
                                     .len = LEN,
                                     .mask = mask[e],
                                     .old_logprobs = old[e],
                                     .reward = (float)(e % 4),
                                     .group = e / 4,
                                     .role = 0};
        two[e] = one[e];
        two[e].role = e / 4;
        for (int k = 0; k < NTURN; k++)
            turns[e * NTURN + k] = (spade_grpo_sample){.prompt = tok[e],
                                                       .prompt_len = ts[k],
                                                       .completion = tok[e] + ts[k],
                                                       .completion_len = te[k] - ts[k],
                                                       .old_logprobs = old[e] + ts[k],
                                                       .advantage = 0.5f,
                                                       .group = e,
                                                       .role = 0};
        one[e].advantage = two[e].advantage = 0.5f;
    }
    printf("bench_grpo: %d episodes x %d tokens, %ld trained (%.0f%%), %d turns each\n", NEP, LEN, ntrain,
           100.0 * ntrain / (NEP * LEN), NTURN);
    spade_grpo_opts o;
    spade_grpo_opts_default(&o);
    /* micro-batches of 4 everywhere: two roles of 4 episodes then run the
     * same shapes as one role, and the difference is the norm measurement */
    o.micro_batch = 4;
    double t1 = time_batch(p, one, NEP, &o, reps, 0);
    double t2 = time_batch(p, two, NEP, &o, reps, 0);
    double t3 = time_batch(p, one, NEP, &o, reps, 1);
    o.adv_mode = SPADE_GRPO_ADV_GIVEN;
    double tg = time_batch(p, one, NEP, &o, reps, 0);
    double t4 = time_batch(p, turns, NEP * NTURN, &o, reps, 0);
    o.adv_mode = SPADE_GRPO_ADV_GROUP_MEAN;
    spade_grpo_sample hot[NEP];
    for (int e = 0; e < NEP; e++) hot[e] = one[e], hot[e].temperature = 0.8f;
    double t5 = time_batch(p, hot, NEP, &o, reps, 0);
    for (int e = 0; e < NEP; e++) hot[e].top_p = 0.95f;
    double t6 = time_batch(p, hot, NEP, &o, reps, 0);
    printf("CPU seconds per spade_grpo_batch (least of %d):\n", reps);
    printf("one role, zero gradient on entry:   %.3f s  (%.0f sequence tokens/s)\n", t1, NEP * LEN / t1);
    printf("two roles (per-role norm scratch):  %.3f s\n", t2);
    printf("one role on a nonzero gradient:     %.3f s\n", t3);
    printf("given advantages, masked episodes:  %.3f s\n", tg);
    printf("the same as %d single-completion turns: %.3f s\n", NEP * NTURN, t4);
    printf("RATIO grpo two roles / one role: %.3f (the cost of measuring each role's norm)\n", t2 / t1);
    printf("RATIO grpo accumulate on a nonzero gradient / zero: %.3f\n", t3 / t1);
    printf("RATIO grpo masked episode is %.2fx faster than its turns as separate samples\n", t4 / tg);
    printf("at temperature 0.8:                 %.3f s\n", t5);
    printf("at temperature 0.8, top_p 0.95:     %.3f s\n", t6);
    printf("RATIO grpo at temperature 0.8 / at 1: %.3f (the sampling distribution on the host)\n", t5 / t1);
    printf("RATIO grpo at temperature 0.8 with top_p 0.95 / at 1: %.3f\n", t6 / t1);
    spade_policy_free(p);
    return 0;
}
