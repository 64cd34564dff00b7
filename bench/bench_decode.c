/* bench_decode.c — what the decoding batch buys: tokens/s of N episodes
 * decoded together in one spade_decoder against the same N decoded one at a
 * time, measured in the same run on the same policy.
 *
 * What it is: N slots, each an "episode" of turns (an observation of OBS
 * tokens appended, then ACT tokens sampled; the first observation is the
 * prompt), all slots' appends batched in one pass and all slots sampled in
 * one call per turn; then the same episodes one slot at a time (append,
 * sample, next). Both paths do the same work and draw the same tokens (same
 * seeds; the run checks it on the token counts). Reported: sampled tokens/s
 * of each and the ratio (issue 8 asks >= 8x at 32 live episodes).
 * What it is not: a correctness test (tests/test_decode.c), nor a measure of
 * prefill alone. Run by `make bench`, never by make check.
 *
 * Usage: bench_decode [--quick] [--backend cpu|cuda|cpu_ref|auto] [--slots N]
 *                     [--reps R] [--layers L --width C --heads NH --context T]
 * Each side runs R times (3; --quick: 1), alternating; the best of each counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"

static char err[512];

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "bench_decode: ");                                                                             \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        exit(1);                                                                                                       \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    int slots, turns, obs, act;
} shape;

static void obs_tokens(int *t, int n, int slot, int turn) {
    uint64_t s = (uint64_t)slot * 1000003u + (uint64_t)turn * 7919u + 1;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = 3 + (int)((s >> 33) % 250);
    }
}

/* Runs the episodes; together = 1: one batched append and one sample call
 * per turn for all slots; 0: slot by slot. Returns seconds; *sampled gets
 * the number of tokens drawn. */
static double run(spade_decoder *d, const shape *sh, int together, long *sampled) {
    int S = sh->slots;
    int *obs = malloc((size_t)S * sh->obs * sizeof(int)), *slots = malloc(S * sizeof(int));
    int *n = malloc(S * sizeof(int)), *out = malloc((size_t)S * sh->act * sizeof(int));
    int *len = malloc(S * sizeof(int));
    const int **tp = malloc(S * sizeof(int *));
    uint64_t *seeds = malloc(S * sizeof(uint64_t));
    spade_sample_opts o;
    spade_sample_opts_default(&o);
    o.max_tokens = sh->act;
    o.n_stop = 0; /* fixed length: both paths draw exactly act tokens a turn */
    o.temperature = 1.0f;
    *sampled = 0;
    for (int s = 0; s < S; s++) {
        slots[s] = s;
        n[s] = sh->obs;
        tp[s] = obs + (size_t)s * sh->obs;
        if (spade_decoder_reset(d, s, err, sizeof err)) DIE("%s", err);
    }
    double t0 = now();
    for (int turn = 0; turn < sh->turns; turn++) {
        for (int s = 0; s < S; s++) {
            obs_tokens(obs + (size_t)s * sh->obs, sh->obs, s, turn);
            seeds[s] = (uint64_t)s * 31 + turn;
        }
        if (together) {
            if (spade_decoder_append_batch(d, slots, tp, n, S, NULL, err, sizeof err)) DIE("%s", err);
            if (spade_decoder_sample(d, slots, S, &o, seeds, NULL, out, NULL, len, NULL, err, sizeof err))
                DIE("%s", err);
            for (int s = 0; s < S; s++) *sampled += len[s];
        } else {
            for (int s = 0; s < S; s++) {
                if (spade_decoder_append(d, s, tp[s], n[s], err, sizeof err)) DIE("%s", err);
                if (spade_decoder_sample(d, &slots[s], 1, &o, &seeds[s], NULL, out, NULL, len, NULL, err, sizeof err))
                    DIE("%s", err);
                *sampled += len[0];
            }
        }
    }
    double dt = now() - t0;
    free(obs);
    free(slots);
    free(n);
    free(out);
    free(len);
    free(tp);
    free(seeds);
    return dt;
}

int main(int argc, char **argv) {
    int quick = 0, reps = 3;
    spade_gpt_config c;
    spade_gpt_config_default(&c); /* L4 C128 NH4 context 256: the default policy */
    snprintf(c.backend, sizeof c.backend, "cpu");
    shape sh = {.slots = 32, .turns = 4, .obs = 16, .act = 32};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick"))
            quick = 1;
        else if (v && !strcmp(a, "--backend"))
            snprintf(c.backend, sizeof c.backend, "%s", argv[++i]);
        else if (v && !strcmp(a, "--slots"))
            sh.slots = atoi(argv[++i]);
        else if (v && !strcmp(a, "--reps"))
            reps = atoi(argv[++i]);
        else if (v && !strcmp(a, "--layers"))
            c.layers = atoi(argv[++i]);
        else if (v && !strcmp(a, "--width"))
            c.width = atoi(argv[++i]);
        else if (v && !strcmp(a, "--heads"))
            c.heads = atoi(argv[++i]);
        else if (v && !strcmp(a, "--context"))
            c.context = atoi(argv[++i]);
        else
            DIE("unknown or incomplete argument '%s'", a);
    }
    if (quick) sh.turns = 2, reps = 1;
    if (reps < 1) reps = 1;
    if (sh.slots < 1 || sh.turns * (sh.obs + sh.act) > c.context)
        DIE("%d slots of %d turns x (%d + %d) tokens do not fit context %d", sh.slots, sh.turns, sh.obs, sh.act,
            c.context);
    spade_policy *p;
    if (spade_policy_new(&p, &c, err, sizeof err)) DIE("%s", err);
    spade_decoder *d;
    if (spade_decoder_new(&d, p, sh.slots, err, sizeof err)) DIE("%s", err);
    printf("bench_decode: %s backend (%s), L%d C%d NH%d context %d, %.2fM params\n", spade_policy_backend_name(p),
           spade_policy_backend_note(p), c.layers, c.width, c.heads, c.context, spade_policy_num_params(p) / 1e6);
    printf("  %d episodes x %d turns: append %d observation tokens, sample %d; decoder %.1f MiB\n", sh.slots, sh.turns,
           sh.obs, sh.act, spade_decoder_bytes(d) / 1048576.0);
    long n1, nb;
    shape warm = sh;
    warm.turns = 1;
    run(d, &warm, 1, &n1); /* warm-up: page faults, first-touch of the caches */
    /* alternated, best of reps each: on a shared machine a burst of other
     * work lands on one run, not on one side of the ratio */
    double tb = 1e30, t1 = 1e30;
    for (int r = 0; r < reps; r++) {
        double x = run(d, &sh, 1, &nb), y = run(d, &sh, 0, &n1);
        if (nb != n1) DIE("together drew %ld tokens, one at a time %ld", nb, n1);
        if (x < tb) tb = x;
        if (y < t1) t1 = y;
    }
    printf("  best of %d alternated runs each:\n", reps);
    printf("  together:       %ld tokens in %.3fs, %.0f sampled tokens/s\n", nb, tb, nb / tb);
    printf("  one at a time:  %ld tokens in %.3fs, %.0f sampled tokens/s\n", n1, t1, n1 / t1);
    printf("RATIO decode: %d episodes together is %.1fx one at a time (target >= 8x at 32)\n", sh.slots,
           (nb / tb) / (n1 / t1));
    spade_decoder_free(d);
    spade_policy_free(p);
    return 0;
}
