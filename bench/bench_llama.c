/* bench_llama.c — spade's side of the pretrained-model speed table
 * (bench/bench_llama.sh, BENCHMARKS.md "Pretrained models"): load time,
 * prefill and decoding tokens/s, the shared-prefix saving and a training
 * step, on a GGUF model (a Llama or a Qwen2) through the decoding batch.
 *
 * What it is: one measurement per invocation, printed as "key value" lines
 * on stdout so that bench_llama.sh can interleave it with llama.cpp and
 * PyTorch runs (the references live in bench/llama_cpp_ref.py and
 * bench/torch_llama.py). Token ids are a fixed pseudo-random stream inside
 * the vocabulary (speed does not depend on which tokens they are); decoding
 * is greedy with no stop token, so every slot draws exactly N tokens.
 * What it is not: a correctness check (tests/test_pretrained.sh and
 * tests/test_decode.c compare spade with llama.cpp and the backends), nor a
 * ratio by itself: the ratio is the script's, against a reference measured
 * in the same run.
 *
 * Usage: bench_llama MODEL MODE ARGS [--backend B] [--context N] [--sample-weights f32|q8_0|q4_1]
 *   [--lora R] [--prompt-file F] [--shared]
 *   (--lora R: adapters of rank R, alpha R, on every target; the base frozen)
 *   trainvs T STEPS R    full and rank-R LoRA training steps alternated in one
 *                        process (the same load on both): min and median step
 *   load                 seconds to load the model (load_s)
 *   prefill T            one slot, a T-token prompt (prefill_tps; prefill_cpu_s,
 *                        the CPU seconds of every thread, for a loaded machine)
 *   decode S P N         S slots, each its own P-token prompt, then N greedy
 *                        tokens each (decode_tps: S*N / the sampling time);
 *                        --shared: the prompts share all but their last 8
 *                        tokens, prefilled once (a long context, one prefill)
 *   prefix S P Q N       S slots whose prompts share P tokens and differ in Q:
 *                        prefilled separately and through the shared prefix
 *                        (separate_s, shared_s), then N greedy tokens from each
 *                        path; prints whether the tokens and log-probs agree
 *   grpo T K             one spade_grpo_update (micro_batch 1) of one masked
 *                        sample of T+1 tokens whose last K are trained (a
 *                        designer's prompt, then its answer): wall and CPU
 *                        seconds, the stats, and the peak RSS
 *   train T STEPS        B = 1, T tokens: forward, backward and AdamW
 *                        (train_tps) and the peak RSS of the process (peak_rss_mib)
 *   q8check N            sample_weights q8_0 (q4_1 with --sample-weights q4_1)
 *                        against f32: greedy N tokens of an
 *                        English prompt under each (q8_greedy_same_prefix), and
 *                        the largest |delta log-softmax| along the f32 path and the
 *                        mean KL(f32 || quantized) of the next token every 8 tokens;
 *                        --prompt-file F: F's first 256 tokens as the prompt instead
 *                        (a C source: what the designer writes)
 *   lookahead P N REPS   (with --lora R) the learning-potential look-ahead's
 *                        copy: the source samples once (a P-token prompt, N
 *                        greedy tokens: its quantized copies, if any, built),
 *                        then REPS times spade_policy_clone_adapters and the
 *                        copy's first sampling of the same prompt: the copy's
 *                        time (clone_s), its first sampling (sample_s, which
 *                        quantizes the base when the copy builds its own
 *                        copies), the resident memory the live copy adds
 *                        (rss_add_mib, from /proc/self/statm) and its
 *                        quantizations (copy_builds); min and median
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "policy/policy.h"
#include "policy/pretrained.h"
#include "policy/tokenizer.h"

static char err[1024];

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "bench_llama: ");                                                                              \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        exit(1);                                                                                                       \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
/* CPU seconds of the whole process (every thread, spinning ones included):
 * what a pass costs the machine, whoever else is on it. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Ids in [256, V - 256): clear of byte tokens at the start and of the
 * special tokens a vocabulary usually keeps at its ends. */
static void fill_tokens(int *t, int n, int V, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 12345;
    int span = V > 1024 ? V - 512 : V;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = (V > 1024 ? 256 : 0) + (int)((s >> 33) % (uint64_t)span);
    }
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

static int *xmalloc_int(size_t n) {
    int *p = malloc(n * sizeof(int));
    if (!p) DIE("out of memory");
    return p;
}

static void greedy_opts(spade_sample_opts *so, int n) {
    spade_sample_opts_default(so);
    so->temperature = 0;
    so->max_tokens = n;
    so->n_stop = 0;
    so->stop = NULL;
}

static void mode_prefill(spade_policy *p, int T) {
    int V = spade_policy_config(p)->vocab, *t = xmalloc_int(T);
    fill_tokens(t, T, V, 1);
    spade_decoder *d;
    if (spade_decoder_new(&d, p, 1, err, sizeof err)) DIE("%s", err);
    /* a short warm-up pass, so that first-touch page faults of the cache and
     * the backend's one-time set-up are not counted */
    if (spade_decoder_append(d, 0, t, 16, err, sizeof err)) DIE("%s", err);
    spade_decoder_reset(d, 0, err, sizeof err);
    double t0 = now(), c0 = cpu_s();
    if (spade_decoder_append(d, 0, t, T, err, sizeof err)) DIE("%s", err);
    double dt = now() - t0, dc = cpu_s() - c0;
    printf("prefill_tokens %d\nprefill_s %.4f\nprefill_tps %.1f\nprefill_cpu_s %.4f\nprefill_tokens_per_cpu_s %.1f\n",
           T, dt, T / dt, dc, T / dc);
    spade_decoder_free(d);
    free(t);
}

/* --shared: decode's prompts share all but their last 8 tokens, prefilled
 * once (spade_decoder_append_shared, as the designer's card is): a long
 * context per slot without S long prefills. */
static int shared_prompt;

static void mode_decode(spade_policy *p, int S, int P, int N) {
    int V = spade_policy_config(p)->vocab;
    int *prompt = xmalloc_int((size_t)S * P), *slots = xmalloc_int(S), *n = xmalloc_int(S);
    int *out = xmalloc_int((size_t)S * N), *len = xmalloc_int(S);
    const int **tp = malloc(S * sizeof *tp);
    if (!tp) DIE("out of memory");
    int own = shared_prompt && P > 8 ? 8 : P;
    for (int i = 0; i < S; i++) {
        fill_tokens(prompt + (size_t)i * P, P - own, V, 7); /* the shared part (none without --shared) */
        fill_tokens(prompt + (size_t)i * P + (P - own), own, V, 100 + i);
        slots[i] = i;
        n[i] = P;
        tp[i] = prompt + (size_t)i * P;
    }
    spade_decoder *d;
    if (spade_decoder_new(&d, p, S, err, sizeof err)) DIE("%s", err);
    double t0 = now();
    if ((shared_prompt ? spade_decoder_append_shared : spade_decoder_append_batch)(d, slots, tp, n, S, NULL, err,
                                                                                   sizeof err))
        DIE("%s", err);
    double t1 = now(), c1 = cpu_s();
    spade_sample_opts so;
    greedy_opts(&so, N);
    if (spade_decoder_sample(d, slots, S, &so, NULL, NULL, out, NULL, len, NULL, err, sizeof err)) DIE("%s", err);
    double t2 = now(), c2 = cpu_s();
    long drawn = 0;
    for (int i = 0; i < S; i++) drawn += len[i];
    printf("decode_slots %d\ndecode_prompt %d\ndecode_tokens %ld\nprompt_s %.4f\ndecode_s %.4f\ndecode_tps %.2f\n"
           "decode_cpu_s %.4f\ndecode_tokens_per_cpu_s %.2f\n",
           S, P, drawn, t1 - t0, t2 - t1, drawn / (t2 - t1), c2 - c1, drawn / (c2 - c1));
    spade_decoder_free(d);
    free(prompt), free(slots), free(n), free(out), free(len), free(tp);
}

/* Separate prefill of every slot's whole prompt against the shared path
 * (spade_decoder_append_shared), then the same greedy draw from both. */
static void mode_prefix(spade_policy *p, int S, int P, int Q, int N) {
    int V = spade_policy_config(p)->vocab, W = P + Q;
    int *prompt = xmalloc_int((size_t)S * W), *slots = xmalloc_int(S), *n = xmalloc_int(S);
    int *out[2] = {xmalloc_int((size_t)S * N), xmalloc_int((size_t)S * N)}, *len = xmalloc_int(S);
    float *lp[2] = {malloc((size_t)S * N * sizeof(float)), malloc((size_t)S * N * sizeof(float))};
    const int **tp = malloc(S * sizeof *tp);
    if (!tp || !lp[0] || !lp[1]) DIE("out of memory");
    for (int i = 0; i < S; i++) {
        fill_tokens(prompt + (size_t)i * W, P, V, 7); /* the same prefix */
        fill_tokens(prompt + (size_t)i * W + P, Q, V, 200 + i);
        slots[i] = i;
        n[i] = W;
        tp[i] = prompt + (size_t)i * W;
    }
    double secs[2];
    for (int shared = 0; shared < 2; shared++) {
        spade_decoder *d;
        if (spade_decoder_new(&d, p, S, err, sizeof err)) DIE("%s", err);
        double t0 = now();
        int rc = shared ? spade_decoder_append_shared(d, slots, tp, n, S, NULL, err, sizeof err)
                        : spade_decoder_append_batch(d, slots, tp, n, S, NULL, err, sizeof err);
        if (rc) DIE("%s", err);
        secs[shared] = now() - t0;
        if (N > 0) {
            spade_sample_opts so;
            spade_sample_opts_default(&so);
            so.max_tokens = N;
            so.temperature = 0.7f;
            so.seed = 42;
            if (spade_decoder_sample(d, slots, S, &so, NULL, NULL, out[shared], lp[shared], len, NULL, err, sizeof err))
                DIE("%s", err);
        }
        spade_decoder_free(d);
    }
    int same_tok = 1;
    double maxd = 0;
    for (size_t i = 0; i < (size_t)S * N; i++) {
        if (out[0][i] != out[1][i]) same_tok = 0;
        double dd = lp[0][i] > lp[1][i] ? lp[0][i] - lp[1][i] : lp[1][i] - lp[0][i];
        if (dd > maxd) maxd = dd;
    }
    printf("prefix_slots %d\nprefix_shared %d\nprefix_own %d\nseparate_s %.4f\nshared_s %.4f\nsaving %.2f\n", S, P, Q,
           secs[0], secs[1], secs[0] / secs[1]);
    if (N > 0) printf("same_tokens %d\nmax_logprob_diff %.3g\n", same_tok, maxd);
    free(prompt), free(slots), free(n), free(out[0]), free(out[1]), free(len), free(lp[0]), free(lp[1]), free(tp);
}

/* The next-token log-softmax of slot 0 after the P prompt tokens and every
 * 8th token after them, of toks[0..n), fed one token a pass: the decoding
 * passes the 8-bit weights serve (a pass of more rows runs F32). */
static void logsoftmax_path(spade_policy *p, const int *toks, int P, int n, float *out, int V) {
    spade_decoder *d;
    if (spade_decoder_new(&d, p, 1, err, sizeof err)) DIE("%s", err);
    for (int t = 0, k = 0; t < n; t++) {
        if (t >= P && (t - P) % 8 == 0 && spade_decoder_next_logprobs(d, 0, out + (size_t)k++ * V, err, sizeof err))
            DIE("%s", err);
        if (spade_decoder_append(d, 0, toks + t, 1, err, sizeof err)) DIE("%s", err);
    }
    spade_decoder_free(d);
}

/* q8check N: sample_weights = q8_0 (or the --sample-weights kind given,
 * q4_1) against f32 on an English prompt: greedy
 * N tokens under each (how many agree before the first difference), and the
 * largest |delta| of the next-token log-softmax (and of the chosen token's)
 * every 8 tokens along the f32 greedy path. */
static void mode_q8check(spade_policy *p, int N, const char *kind, const char *prompt_file) {
    static const char english[] = "The history of the printing press begins in the fifteenth century, when";
    const char *text = english;
    size_t tlen = sizeof english - 1;
    char *file = NULL;
    if (prompt_file) { /* e.g. a C source: the designer's kind of text */
        FILE *f = fopen(prompt_file, "rb");
        if (!f) DIE("--prompt-file %s: cannot open", prompt_file);
        file = malloc(1 << 20);
        if (!file) DIE("out of memory");
        tlen = fread(file, 1, 1 << 20, f);
        fclose(f);
        text = file;
    }
    int V = spade_policy_config(p)->vocab, *enc = xmalloc_int(tlen + 16), ids[256];
    int P = (int)spade_tokenizer_encode(spade_policy_tokenizer(p), text, tlen, enc);
    if (P > 256) P = 256; /* the prompt's first 256 tokens */
    memcpy(ids, enc, (size_t)P * sizeof(int));
    free(enc), free(file);
    int *path = xmalloc_int((size_t)P + N), *g[2] = {xmalloc_int(N), xmalloc_int(N)}, len[2];
    memcpy(path, ids, (size_t)P * sizeof(int));
    const char *const kinds[2] = {"f32", kind && strcmp(kind, "f32") ? kind : "q8_0"};
    for (int k = 0; k < 2; k++) {
        if (spade_policy_set_sample_weights(p, kinds[k], err, sizeof err)) DIE("%s", err);
        spade_decoder *d;
        spade_sample_opts so;
        greedy_opts(&so, N);
        if (spade_decoder_new(&d, p, 1, err, sizeof err) || spade_decoder_append(d, 0, ids, P, err, sizeof err) ||
            spade_decoder_sample(d, (int[]){0}, 1, &so, NULL, NULL, g[k], NULL, &len[k], NULL, err, sizeof err))
            DIE("%s", err);
        spade_decoder_free(d);
    }
    int same = 0;
    while (same < len[0] && same < len[1] && g[0][same] == g[1][same]) same++;
    memcpy(path + P, g[0], (size_t)len[0] * sizeof(int));
    int n = P + len[0], rows = (len[0] + 7) / 8;
    float *lp[2] = {malloc((size_t)rows * V * sizeof(float)), malloc((size_t)rows * V * sizeof(float))};
    if (!lp[0] || !lp[1]) DIE("out of memory");
    for (int k = 0; k < 2; k++) {
        if (spade_policy_set_sample_weights(p, kinds[k], err, sizeof err)) DIE("%s", err);
        logsoftmax_path(p, path, P, n, lp[k], V);
    }
    double all = 0, chosen = 0, likely = 0, kl = 0;
    for (int r = 0; r < rows; r++) {
        for (int v = 0; v < V; v++) {
            double a0 = lp[0][(size_t)r * V + v], dd = fabs(a0 - lp[1][(size_t)r * V + v]);
            if (dd > all) all = dd;
            if (a0 > log(1e-3) && dd > likely) likely = dd; /* tokens with p >= 0.001 */
            kl += exp(a0) * (a0 - lp[1][(size_t)r * V + v]);
        }
        int c = path[P + 8 * r];
        double dc = fabs((double)lp[0][(size_t)r * V + c] - lp[1][(size_t)r * V + c]);
        if (dc > chosen) chosen = dc;
    }
    printf("q8_prompt_tokens %d\nq8_greedy_tokens %d\nq8_greedy_same_prefix %d\nq8_max_dlogsoftmax %.4f\n"
           "q8_max_dlogsoftmax_p_ge_0.001 %.4f\nq8_max_dlogprob_chosen %.4f\nq8_mean_kl %.5f\n",
           P, len[0], same, all, likely, chosen, kl / rows);
    printf("q8_path");
    for (int i = 0; i < n; i++) printf(" %d", path[i]);
    printf("\n");
    free(path), free(g[0]), free(g[1]), free(lp[0]), free(lp[1]);
}

static void mode_train(spade_policy *p, int T, int steps) {
    int V = spade_policy_config(p)->vocab, *t = xmalloc_int(T + 1);
    fill_tokens(t, T + 1, V, 3);
    spade_adamw_opts ao;
    spade_adamw_opts_default(&ao);
    double t0 = 0, fb = 0, st = 0;
    float loss = 0;
    for (int s = 0; s <= steps; s++) { /* step 0 is a warm-up: allocations, first touches */
        if (s == 1) t0 = now();
        double a = now();
        if (spade_policy_forward(p, t, t + 1, NULL, 1, T, &loss, NULL, err, sizeof err) ||
            spade_policy_backward(p, 1.0f, err, sizeof err))
            DIE("%s", err);
        double b = now();
        if (spade_policy_step(p, &ao, NULL, err, sizeof err)) DIE("%s", err);
        if (s >= 1) fb += b - a, st += now() - b;
    }
    double dt = now() - t0;
    /* the forward+backward and the AdamW step apart: a GRPO update is the
     * first over every sample's tokens, then one step per minibatch */
    printf("train_T %d\ntrain_steps %d\ntrain_s %.3f\ntrain_tps %.1f\nfwd_bwd_s %.3f\nadamw_s %.3f\nloss %.3f\n"
           "trainable %zu\npeak_rss_mib %.0f\n",
           T, steps, dt, (double)T * steps / dt, fb / steps, st / steps, loss, spade_policy_num_trainable(p),
           peak_rss_mib());
    free(t);
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Full and LoRA steps alternated in one process, so that both meet the same
 * load: p trains every weight, q (the same model) only rank-R adapters. Prints
 * the min and median of each one's step (forward + backward + AdamW). */
static void mode_trainvs(spade_policy *p, spade_policy *q, int T, int steps) {
    int V = spade_policy_config(p)->vocab, *t = xmalloc_int(T + 1);
    fill_tokens(t, T + 1, V, 3);
    spade_adamw_opts ao;
    spade_adamw_opts_default(&ao);
    double *d[2] = {calloc((size_t)steps, sizeof(double)), calloc((size_t)steps, sizeof(double))};
    /* and the process's CPU time of each step (all threads): on a machine
     * busier than its cores the wall time is mostly the share the scheduler
     * gave, the CPU time closer to the work done */
    double *c[2] = {calloc((size_t)steps, sizeof(double)), calloc((size_t)steps, sizeof(double))};
    spade_policy *pp[2] = {p, q};
    for (int s = 0; s <= steps; s++) /* step 0 of each is a warm-up */
        for (int k = 0; k < 2; k++) {
            double a = now(), ca = cpu_now();
            if (spade_policy_forward(pp[k], t, t + 1, NULL, 1, T, NULL, NULL, err, sizeof err) ||
                spade_policy_backward(pp[k], 1.0f, err, sizeof err) ||
                spade_policy_step(pp[k], &ao, NULL, err, sizeof err))
                DIE("%s", err);
            if (s) d[k][s - 1] = now() - a, c[k][s - 1] = cpu_now() - ca;
        }
    for (int k = 0; k < 2; k++) {
        qsort(d[k], (size_t)steps, sizeof(double), cmp_d);
        qsort(c[k], (size_t)steps, sizeof(double), cmp_d);
        printf("%s_cpu_min_s %.3f\n%s_cpu_median_s %.3f\n", k ? "lora" : "full", c[k][0], k ? "lora" : "full",
               c[k][steps / 2]);
        printf("%s_step_min_s %.3f\n%s_step_median_s %.3f\n%s_tps_best %.1f\n", k ? "lora" : "full", d[k][0],
               k ? "lora" : "full", d[k][steps / 2], k ? "lora" : "full", T / d[k][0]);
    }
    printf("steps %d\npeak_rss_mib %.0f\n", steps, peak_rss_mib());
    free(d[0]), free(d[1]), free(c[0]), free(c[1]), free(t);
}

/* One GRPO update as self-play makes it for a designer sample: T+1 tokens,
 * the last K trained, drawn at temperature 1 (old log-probs 0: every ratio
 * r = p < 1 stays on the unclipped branch, so every trained token has a
 * gradient), its advantage given as 1, micro_batch 1. */
static void mode_grpo(spade_policy *p, int T, int K) {
    int V = spade_policy_config(p)->vocab, *t = xmalloc_int(T + 1);
    fill_tokens(t, T + 1, V, 5);
    unsigned char *mask = calloc((size_t)T + 1, 1);
    float *old = calloc((size_t)T + 1, sizeof(float));
    if (!mask || !old) DIE("out of memory");
    for (int i = T + 1 - K; i <= T; i++) mask[i] = 1;
    spade_grpo_sample s = {0};
    s.tokens = t;
    s.len = T + 1;
    s.mask = mask;
    s.old_logprobs = old;
    s.advantage = 1.0f;
    spade_grpo_opts o;
    spade_grpo_opts_default(&o);
    o.micro_batch = 1;
    o.adv_mode = SPADE_GRPO_ADV_GIVEN;
    spade_adamw_opts ao;
    spade_adamw_opts_default(&ao);
    spade_grpo_stats st;
    double a = now(), ca = cpu_now();
    if (spade_grpo_update(p, NULL, &s, 1, &o, &ao, &st, err, sizeof err)) DIE("%s", err);
    printf("grpo_T %d\ngrpo_trained %d\ngrpo_s %.3f\ngrpo_cpu_s %.3f\nloss %.6f\ngrad_norm %.6f\n"
           "mean_ratio %.6f\nn_tokens %ld\npeak_rss_mib %.0f\n",
           T, K, now() - a, cpu_now() - ca, st.loss, st.grad_norm, st.mean_ratio, st.n_tokens, peak_rss_mib());
    free(t), free(mask), free(old);
}

/* Resident set now (not the peak): what a live copy adds is read before and after. */
static double rss_now_mib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) DIE("cannot read /proc/self/statm");
    fclose(f);
    return resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void mode_lookahead(spade_policy *p, int P, int N, int reps) {
    int V = spade_policy_config(p)->vocab, *t = xmalloc_int(P), *out = xmalloc_int(N), n = 0;
    fill_tokens(t, P, V, 7);
    spade_sample_opts so;
    greedy_opts(&so, N);
    if (spade_policy_sample(p, t, P, 1, &so, out, NULL, &n, err, sizeof err)) DIE("%s", err);
    double *m = malloc(3 * (size_t)reps * sizeof *m);
    if (!m) DIE("out of memory");
    long builds = 0;
    for (int r = 0; r < reps; r++) {
        double rss0 = rss_now_mib(), a = now();
        spade_policy *q;
        if (spade_policy_clone_adapters(&q, p, err, sizeof err)) DIE("%s", err);
        double b = now();
        if (spade_policy_sample(q, t, P, 1, &so, out, NULL, &n, err, sizeof err)) DIE("%s", err);
        m[r] = b - a, m[reps + r] = now() - b, m[2 * reps + r] = rss_now_mib() - rss0;
        builds += spade_policy_sample_weights_builds(q);
        spade_policy_free(q);
    }
    static const char *const key[3] = {"clone_s", "sample_s", "rss_add_mib"};
    printf("lookahead_prompt %d\nlookahead_tokens %d\nreps %d\nsample_weights %s\ncopy_builds %ld\nsource_builds %ld\n",
           P, N, reps, spade_policy_config(p)->sample_weights, builds, spade_policy_sample_weights_builds(p));
    for (int k = 0; k < 3; k++) {
        printf("%s_each", key[k]);
        for (int r = 0; r < reps; r++) printf(" %.4f", m[(size_t)k * reps + r]);
        printf("\n");
        qsort(m + (size_t)k * reps, reps, sizeof *m, cmp_double);
        printf("%s_min %.4f\n%s_median %.4f\n", key[k], m[(size_t)k * reps], key[k], m[(size_t)k * reps + reps / 2]);
    }
    printf("peak_rss_mib %.0f\n", peak_rss_mib());
    free(m), free(t), free(out);
}

int main(int argc, char **argv) {
    const char *backend = NULL, *sample_weights = NULL, *prompt_file = NULL;
    int context = 0, pos = 0, lora = 0;
    char *args[8];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            backend = argv[++i];
        } else if (!strcmp(argv[i], "--sample-weights") && i + 1 < argc) {
            sample_weights = argv[++i];
        } else if (!strcmp(argv[i], "--context") && i + 1 < argc) {
            context = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--lora") && i + 1 < argc) {
            lora = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--shared")) {
            shared_prompt = 1;
        } else if (!strcmp(argv[i], "--prompt-file") && i + 1 < argc) {
            prompt_file = argv[++i];
        } else if (pos < 8) {
            args[pos++] = argv[i];
        } else {
            DIE("too many arguments");
        }
    }
    if (pos < 2) {
        fprintf(stderr, "usage: bench_llama MODEL load|prefill T|decode S P N|prefix S P Q N|grpo T K|train T STEPS|"
                        "trainvs T STEPS R|lookahead P N REPS [--backend B] [--context N] [--sample-weights "
                        "f32|q8_0|q4_1] [--lora R] "
                        "[--prompt-file F] [--shared]\n");
        return 2;
    }
    const char *mode = args[1];
    int a[4] = {0};
    for (int i = 0; i < 4 && i + 2 < pos; i++) a[i] = atoi(args[i + 2]);
    spade_model_opts mo = {.backend = backend, .context = context, .lora_rank = lora}; /* alpha = R */
    spade_policy *p;
    double t0 = now();
    if (spade_policy_from_model(&p, args[0], &mo, err, sizeof err)) DIE("%s", err);
    double load = now() - t0;
    if (sample_weights && spade_policy_set_sample_weights(p, sample_weights, err, sizeof err)) DIE("%s", err);
    printf("backend %s\nload_s %.3f\n", spade_policy_backend_name(p), load);
    fprintf(stderr, "bench_llama: %s\n", spade_policy_backend_note(p));
    if (!strcmp(mode, "load")) {
        printf("load_rss_mib %.0f\n", peak_rss_mib());
    } else if (!strcmp(mode, "prefill") && a[0] > 0) {
        mode_prefill(p, a[0]);
    } else if (!strcmp(mode, "decode") && a[0] > 0 && a[1] > 0 && a[2] > 0) {
        mode_decode(p, a[0], a[1], a[2]);
    } else if (!strcmp(mode, "prefix") && a[0] > 0 && a[1] > 0 && a[2] >= 0) {
        mode_prefix(p, a[0], a[1], a[2], a[3]);
    } else if (!strcmp(mode, "q8check") && a[0] > 0) {
        mode_q8check(p, a[0], sample_weights, prompt_file);
    } else if (!strcmp(mode, "grpo") && a[0] > 1 && a[1] > 0 && a[1] <= a[0]) {
        mode_grpo(p, a[0], a[1]);
    } else if (!strcmp(mode, "train") && a[0] > 1 && a[1] > 0) {
        mode_train(p, a[0], a[1]);
    } else if (!strcmp(mode, "lookahead") && a[0] > 0 && a[1] > 0 && a[2] > 0 && lora) {
        mode_lookahead(p, a[0], a[1], a[2]);
    } else if (!strcmp(mode, "trainvs") && a[0] > 1 && a[1] > 0 && a[2] > 0 && !lora) {
        spade_model_opts mq = mo;
        mq.lora_rank = a[2];
        spade_policy *q;
        if (spade_policy_from_model(&q, args[0], &mq, err, sizeof err)) DIE("%s", err);
        mode_trainvs(p, q, a[0], a[1]);
        spade_policy_free(q);
    } else {
        DIE("mode '%s' with these arguments is not one of load, prefill T, decode S P N, prefix S P Q N, train T "
            "STEPS, "
            "lookahead P N REPS (with --lora R)",
            mode);
    }
    spade_policy_free(p);
    return 0;
}
