/* bench_policy.c — how fast the policy trains and samples on this machine, as
 * ratios against references measured in the same run.
 *
 * What it is: (1) the cblas sgemm rate on the model's largest GEMM shape, the
 * reference; (2) training tokens/s (forward + backward + AdamW) at ~1M and
 * ~10M parameters on the cpu backend, with achieved GFLOP/s as a fraction of
 * (1) — the target is >= 50% at 10M; (3) the same step on cpu_ref, to show
 * what BLAS buys; (4) sampling tokens/s with the KV cache vs full recompute.
 * Training FLOPs per token = 6 * (matmul weights incl. the tied head) +
 * 12 * L * C * T (attention scores and values, forward + backward, full T x T
 * square as computed). Run by `make bench`, never by make check.
 * What it is not: a correctness test (tests/test_policy.c).
 *
 * Usage: bench_policy [--quick]     (--quick: fewer steps, for smoke runs)
 *        bench_policy --long [ROUNDS]  (tiled vs T x T attention at T = 2048)
 *        bench_policy --train BACKEND L C NH T B STEPS  (one training figure)
 *        bench_policy --note  (the cpu backend's note)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/backend.h"
#include "policy/policy.h"
#ifdef SPADE_HAVE_CBLAS
#include <cblas.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char err[512];

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "bench_policy: ");                                                                             \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        exit(1);                                                                                                       \
    } while (0)

/* GFLOP/s of C(M,N) = A(M,K) B(K,N)^T, best of reps (the same shape as
 * matmul_forward of the MLP's first layer). */
static double sgemm_rate(int M, int N, int K, int reps) {
#ifdef SPADE_HAVE_CBLAS
#if defined(OPENBLAS_VERSION) && defined(_OPENMP)
    /* the reference uses every core, as OpenBLAS would on its own (the cpu
     * backend pins OpenBLAS to one thread per OpenMP thread; undo that here) */
    openblas_set_num_threads(omp_get_max_threads());
#endif
    float *a = malloc((size_t)M * K * 4), *b = malloc((size_t)N * K * 4), *c = malloc((size_t)M * N * 4);
    for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < (size_t)N * K; i++) b[i] = (float)(i % 5) * 0.1f;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N);
        double dt = now() - t0, g = 2.0 * M * N * K / dt / 1e9;
        if (g > best) best = g;
    }
    free(a);
    free(b);
    free(c);
#if defined(OPENBLAS_VERSION) && defined(_OPENMP)
    openblas_set_num_threads(1);
#endif
    return best;
#else
    (void)M;
    (void)N;
    (void)K;
    (void)reps;
    return 0;
#endif
}

static double train_flops_per_token(const spade_gpt_config *c, int T) {
    double L = c->layers, C = c->width;
    double matmul = L * 12 * C * C + (double)SPADE_VOCAB_PADDED * C;
    return 6 * matmul + 12 * L * C * T;
}

typedef struct {
    double tok_s, gflops;
    size_t params;
} train_result;

static train_result bench_train(const char *backend, int L, int C, int NH, int T, int B, int steps) {
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = L;
    c.width = C;
    c.heads = NH;
    c.context = T;
    snprintf(c.backend, sizeof c.backend, "%s", backend);
    spade_policy *p;
    if (spade_policy_new(&p, &c, err, sizeof err)) DIE("%s", err);
    int N = B * T;
    int *tok = malloc(N * sizeof(int)), *tg = malloc(N * sizeof(int));
    uint64_t s = 1;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1;
        tok[i] = (int)((s >> 33) % 256);
    }
    for (int i = 0; i < N; i++) tg[i] = (i + 1) % T ? tok[i + 1] : -1;
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    double t0 = 0;
    float loss = 0;
    for (int it = 0; it <= steps; it++) {
        if (it == 1) t0 = now(); /* step 0 warms up (allocations, page faults) */
        if (spade_policy_forward(p, tok, tg, NULL, B, T, &loss, NULL, err, sizeof err) ||
            spade_policy_backward(p, 1.0f, err, sizeof err) || spade_policy_step(p, &o, NULL, err, sizeof err))
            DIE("%s", err);
    }
    double dt = now() - t0;
    train_result r;
    r.params = spade_policy_num_params(p);
    r.tok_s = (double)N * steps / dt;
    r.gflops = r.tok_s * train_flops_per_token(&c, T) / 1e9;
    printf("  %-7s L=%d C=%d NH=%d T=%d B=%d: %.2fM params, %d steps in %.2fs, %.0f tokens/s, "
           "%.1f GFLOP/s (loss %.3f)\n",
           backend, L, C, NH, T, B, r.params / 1e6, steps, dt, r.tok_s, r.gflops, loss);
    free(tok);
    free(tg);
    spade_policy_free(p);
    return r;
}

static double bench_sample(spade_policy *p, int no_kv, int G, int plen, int ntok) {
    int *prompt = malloc(plen * sizeof(int)), *out = malloc((size_t)G * ntok * sizeof(int)), len[64];
    for (int i = 0; i < plen; i++) prompt[i] = 'a' + i % 26;
    spade_sample_opts o;
    spade_sample_opts_default(&o);
    o.max_tokens = ntok;
    o.n_stop = 0; /* fixed length: every completion produces ntok tokens */
    o.seed = 5;
    o.no_kv_cache = no_kv;
    double t0 = now();
    if (spade_policy_sample(p, prompt, plen, G, &o, out, NULL, len, err, sizeof err)) DIE("%s", err);
    double dt = now() - t0;
    long total = 0;
    for (int g = 0; g < G; g++) total += len[g];
    free(prompt);
    free(out);
    return total / dt;
}

/* --long: the tiled attention (cpu) against the T x T attention it replaced
 * (cpu_tt), side by side at T = 2048, L4 C128 NH4, one sequence per step:
 * rounds alternate the two so that load on a shared machine hits both alike. */
static int bench_long(int rounds, int steps) {
    double a = 0, b = 0;
    for (int r = 0; r < rounds; r++) {
        a += bench_train("cpu", 4, 128, 4, 2048, 1, steps).tok_s;
        b += bench_train("cpu_tt", 4, 128, 4, 2048, 1, steps).tok_s;
    }
    printf("RATIO long context T=2048: tiled attention (cpu) %.0f tokens/s, T x T attention (cpu_tt) %.0f "
           "tokens/s: %.2fx (target >= 0.70)\n",
           a / rounds, b / rounds, a / b);
    return 0;
}

int main(int argc, char **argv) {
    /* --train BACKEND L C NH T B STEPS: one training measurement, one line
     * (bench/bench_vs_torch.sh and the long-context memory figure use it). */
    if (argc == 9 && !strcmp(argv[1], "--train")) {
        bench_train(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), atoi(argv[7]), atoi(argv[8]));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--note")) { /* the cpu backend's note, one line */
        spade_backend be;
        char note[512];
        if (spade_backend_open("cpu", &be, note, sizeof note, err, sizeof err)) DIE("%s", err);
        printf("%s\n", note);
        spade_backend_close(&be);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--long")) return bench_long(argc > 2 ? atoi(argv[2]) : 2, 2);
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    /* 1. reference first, before any backend pins OpenBLAS's threads:
     * sgemm at the 10M model's MLP shape (B*T x 4C x C), all cores */
    int T10 = 256, B10 = 8, C10 = 384;
    double ref = sgemm_rate(B10 * T10, 4 * C10, C10, quick ? 3 : 8);
    printf("bench_policy: backend auto -> ");
    {
        spade_backend be;
        char note[512];
        if (spade_backend_open("auto", &be, note, sizeof note, err, sizeof err)) DIE("%s", err);
        printf("%s\n", note);
        spade_backend_close(&be);
    }

    printf("cblas sgemm %dx%dx%d, all threads: %.1f GFLOP/s (reference)\n", B10 * T10, 4 * C10, C10, ref);

    /* 2. training throughput */
    printf("training (forward + backward + AdamW):\n");
    train_result r1 = bench_train("cpu", 5, 128, 4, 128, 8, quick ? 2 : 10);
    train_result r10 = bench_train("cpu", 6, C10, 6, T10, B10, quick ? 1 : 4);
    train_result rr = bench_train("cpu_ref", 5, 128, 4, 128, 8, 1);
    if (ref > 0) {
        printf("RATIO train ~1M  params: %.2f of the sgemm rate (%.1f / %.1f GFLOP/s)\n", r1.gflops / ref, r1.gflops,
               ref);
        printf("RATIO train ~10M params: %.2f of the sgemm rate (%.1f / %.1f GFLOP/s; target >= 0.50)\n",
               r10.gflops / ref, r10.gflops, ref);
    }
    printf("RATIO train ~1M  params: cpu is %.1fx cpu_ref\n", r1.tok_s / rr.tok_s);

    /* 3. sampling: KV cache vs full recompute, ~1M model, 8 completions */
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = 5;
    c.width = 128;
    c.heads = 4;
    c.context = 256;
    snprintf(c.backend, sizeof c.backend, "cpu");
    spade_policy *p;
    if (spade_policy_new(&p, &c, err, sizeof err)) DIE("%s", err);
    int G = 8, plen = 32, ntok = quick ? 64 : 192;
    bench_sample(p, 0, G, plen, 8); /* warm-up */
    double kv = bench_sample(p, 0, G, plen, ntok);
    double full = bench_sample(p, 1, G, plen, ntok);
    printf("sampling %.2fM params, G=%d, prompt %d, %d new tokens each:\n", spade_policy_num_params(p) / 1e6, G, plen,
           ntok);
    printf("  KV cache: %.0f tokens/s; full recompute: %.0f tokens/s\n", kv, full);
    printf("RATIO sampling: KV cache is %.1fx full recompute\n", kv / full);
    spade_policy_free(p);
    return 0;
}
