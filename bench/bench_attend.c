/* bench_attend.c — the decoding attention alone: one pass of S rows (slots
 * at positions near P) through attention_forward_kv_at_gqa for L layers,
 * each layer its own cache, as a decoding pass of a Llama runs it.
 *
 * What it is: the op on the backend named, at a model's head shape, every
 * cache allocated and written before the timing (the layers' caches together
 * are as large as a real decoder's, so they are read from memory, not from
 * cache). Reported: wall and CPU milliseconds a pass (the mean of R - 1
 * passes after the first, and the best), and a checksum of the outputs.
 * What it is not: a correctness test (tests/test_decode.c compares the
 * backends), nor a whole decoding step (bench_llama decode is).
 *
 * Usage: bench_attend [P [NH [KVH [L [BACKEND [R]]]]]]
 *   defaults 1024 9 3 30 cpu 20: SmolLM2-135M's heads and layers, 4 slots;
 *   Qwen2.5-0.5B's are 14 2 24. The head size is 64.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "policy/backend.h"

static double seconds(clockid_t clk) {
    struct timespec t;
    clock_gettime(clk, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int P = argc > 1 ? atoi(argv[1]) : 1024, NH = argc > 2 ? atoi(argv[2]) : 9, KVH = argc > 3 ? atoi(argv[3]) : 3;
    int L = argc > 4 ? atoi(argv[4]) : 30, R = argc > 6 ? atoi(argv[6]) : 20;
    const char *backend = argc > 5 ? argv[5] : "cpu";
    enum { S = 4, hs = 64 };
    if (P < 8 || NH < 1 || KVH < 1 || NH % KVH || L < 1 || R < 2) {
        fprintf(stderr, "bench_attend: usage: bench_attend [P>=8 [NH [KVH dividing NH [L [BACKEND [R>=2]]]]]]\n");
        return 2;
    }
    int C = NH * hs, KW = KVH * hs, W = C + 2 * KW, maxT = P + 64;
    char err[256], note[256];
    spade_backend be;
    if (spade_backend_open(backend, &be, note, sizeof note, err, sizeof err)) {
        fprintf(stderr, "bench_attend: %s\n", err);
        return 1;
    }
    size_t per = (size_t)S * maxT * KW;
    float *kc = malloc(per * L * sizeof(float)), *vc = malloc(per * L * sizeof(float));
    float *rows = malloc((size_t)S * W * sizeof(float)), *out = malloc((size_t)S * C * sizeof(float));
    if (!kc || !vc || !rows || !out) {
        fprintf(stderr, "bench_attend: out of memory for %zu MiB of caches\n", 2 * per * L * sizeof(float) >> 20);
        return 1;
    }
    for (size_t i = 0; i < per * L; i++) {
        kc[i] = (float)((i * 2654435761u) >> 20 & 1023) / 512.0f - 1.0f;
        vc[i] = (float)((i * 40503u) >> 7 & 1023) / 512.0f - 1.0f;
    }
    for (int i = 0; i < S * W; i++) rows[i] = (float)(i % 17) / 8.0f - 1.0f;
    int slot[S] = {0, 1, 2, 3}, pos[S] = {P, P - 3, P - 7, P - 1};
    double wall = 0, cpu = 0, best = 1e30;
    for (int r = 0; r < R; r++) {
        double t = seconds(CLOCK_MONOTONIC), c = seconds(CLOCK_PROCESS_CPUTIME_ID);
        for (int l = 0; l < L; l++)
            if (be.vt->attention_forward_kv_at_gqa(be.ctx, out, rows, kc + l * per, vc + l * per, slot, pos, S, C, NH,
                                                   KVH, S, maxT, P + 1)) {
                fprintf(stderr, "bench_attend: %s\n", be.vt->last_error(be.ctx));
                return 1;
            }
        t = seconds(CLOCK_MONOTONIC) - t;
        c = seconds(CLOCK_PROCESS_CPUTIME_ID) - c;
        if (r) wall += t, cpu += c; /* the first pass warms the caches' pages and the team */
        if (t < best) best = t;
    }
    double sum = 0;
    for (int i = 0; i < S * C; i++) sum += out[i];
    printf("attend_backend %s\nattend_P %d\nattend_heads %d/%d\nattend_layers %d\nattend_cache_mib %zu\n"
           "attend_ms %.2f\nattend_best_ms %.2f\nattend_cpu_ms %.2f\nattend_checksum %.6f\n",
           backend, P, NH, KVH, L, 2 * per * L * sizeof(float) >> 20, wall / (R - 1) * 1e3, best * 1e3,
           cpu / (R - 1) * 1e3, sum);
    spade_backend_close(&be);
    free(kc), free(vc), free(rows), free(out);
    return 0;
}
