/* bench_gemm.c — spade's own SGEMM (core/policy/gemm.h) against OpenBLAS's
 * sgemm at the training shapes, with OPENBLAS_CORETYPE unset, =Prescott and
 * =Haswell, all in one run; then training steps with each.
 *
 * What it is: OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded, so the
 * parent runs itself as a child once per setting, the settings interleaved in
 * rounds (load on a shared machine hits them alike), and each child measures
 * spade's kernel and OpenBLAS's (spade_gemm_force(SPADE_GEMM_OPENBLAS)) on
 * the same buffers. The products are threaded as the cpu backend threads
 * them: one OpenMP team, each thread one single-threaded product on its
 * share (forward and dinp split the rows, dweight the output channels).
 * Shapes: the rows of one training step through each weight matrix of
 * SmolLM2-135M (C 576, KV 192, F 1536, V 49152) and of the GPT default
 * (L4 C128, bytes vocabulary), forward (x W^T), dinp (dy W), dweight
 * (dy^T x). The training steps go through the public policy API: the GPT
 * default at B 4, T 256 and SmolLM2-135M (its GGUF, when it is there) at
 * T 128. Prints GFLOP/s (median over rounds) and tokens/s, and the ratio of
 * spade to each OpenBLAS setting. Run by hand or by `make bench`, never by
 * make check.
 * What it is not: a correctness test (tests/test_gemm.c).
 *
 * Usage: bench_gemm [--quick] [--rounds R] [--model NAME|PATH] [--no-train]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef SPADE_HAVE_CBLAS
#include <cblas.h>
#endif

#include "policy/gemm.h"
#include "policy/policy.h"
#include "policy/pretrained.h"

static char err[1024];

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "bench_gemm: ");                                                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        exit(1);                                                                                                       \
    } while (0)

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

/* One weight matrix: rows R of activations, IC in, OC out. */
typedef struct shape {
    const char *model, *name;
    int R, IC, OC;
} shape;

/* SmolLM2-135M at 512 rows, as llama.c multiplies (q, k and v fused: 576 + 2 x
 * 192; gate and up fused: 2 x 1536); the GPT default at B 4 x T 256 rows (Vp
 * 320 for the 263 byte tokens). */
static const shape shapes[] = {
    {"smollm2", "qkv", 512, 576, 960},   {"smollm2", "attn_out", 512, 576, 576}, {"smollm2", "gate_up", 512, 576, 3072},
    {"smollm2", "down", 512, 1536, 576}, {"smollm2", "head", 512, 576, 49152},   {"gpt", "qkv", 1024, 128, 384},
    {"gpt", "attn_out", 1024, 128, 128}, {"gpt", "fc", 1024, 128, 512},          {"gpt", "fc_proj", 1024, 512, 128},
    {"gpt", "head", 1024, 128, 320},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))
static const char *passes[] = {"forward", "dinp", "dweight"};

static float *buf(size_t n) {
    float *p = malloc(n * sizeof(float));
    if (!p) DIE("out of memory (%zu floats)", n);
    for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    return p;
}

static inline void split(int n, int *a, int *b) {
#ifdef _OPENMP
    int nt = omp_get_num_threads(), id = omp_get_thread_num();
#else
    int nt = 1, id = 0;
#endif
    *a = (int)((long)n * id / nt);
    *b = (int)((long)n * (id + 1) / nt);
}

/* One pass of one shape, threaded as backend_cpu.c threads it (team 1: the
 * calling thread alone, the whole product in one call). */
static void run_pass(const shape *s, int pass, const float *x, const float *w, const float *dy, float *y, float *dx,
                     float *dw, int team) {
    int R = s->R, IC = s->IC, OC = s->OC;
#pragma omp parallel if (team)
    {
        int a, b;
        if (pass == 0) {
            split(R, &a, &b);
            spade_sgemm(0, 1, b - a, OC, IC, 1.0f, x + (size_t)a * IC, IC, w, IC, 0.0f, y + (size_t)a * OC, OC);
        } else if (pass == 1) {
            split(R, &a, &b);
            spade_sgemm(0, 0, b - a, IC, OC, 1.0f, dy + (size_t)a * OC, OC, w, IC, 0.0f, dx + (size_t)a * IC, IC);
        } else {
            split(OC, &a, &b);
            spade_sgemm(1, 0, b - a, IC, R, 1.0f, dy + a, OC, x, IC, 1.0f, dw + (size_t)a * IC, IC);
        }
    }
}

/* GFLOP/s of one pass on the current kernel: after a warm-up, the best of
 * reps samples, each as many passes as fill 40 ms (a small GPT product is
 * under a millisecond: one pass alone would time the clock). team 1: the
 * backend's OpenMP team, wall clock; team 0: one thread, its CPU time (what
 * the kernel does when it has a core, whoever else wants it). */
static double rate(const shape *s, int pass, int reps, int team) {
    clockid_t clk = team ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
    size_t R = s->R, IC = s->IC, OC = s->OC;
    float *x = buf(R * IC), *w = buf(OC * IC), *dy = buf(R * OC), *y = buf(R * OC), *dx = buf(R * IC),
          *dw = buf(OC * IC);
    run_pass(s, pass, x, w, dy, y, dx, dw, team);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = clock_s(clk), dt;
        int n = 0;
        do {
            run_pass(s, pass, x, w, dy, y, dx, dw, team);
            n++;
        } while ((dt = clock_s(clk) - t0) < 0.04);
        if (dt / n < best) best = dt / n;
    }
    free(x), free(w), free(dy), free(y), free(dx), free(dw);
    return 2.0 * R * IC * OC / best / 1e9;
}

/* Training tokens/s of one policy on the current kernel: steps after a warm-up. */
static double train_tps(spade_policy *p, int B, int T, int steps) {
    int V = spade_policy_config(p)->vocab, N = B * T;
    int *tok = malloc((N + 1) * sizeof(int));
    uint64_t r = 5;
    for (int i = 0; i <= N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int)((r >> 33) % (uint64_t)V);
    }
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    double t0 = 0;
    float loss;
    for (int s = 0; s <= steps; s++) {
        if (s == 1) t0 = now();
        if (spade_policy_forward(p, tok, tok + 1, NULL, B, T, &loss, NULL, err, sizeof err) ||
            spade_policy_backward(p, 1.0f, err, sizeof err) || spade_policy_step(p, &o, NULL, err, sizeof err))
            DIE("%s", err);
    }
    free(tok);
    return (double)N * steps / (now() - t0);
}

/* The child: every shape and pass with spade's kernel and with OpenBLAS's,
 * then the training steps, one "kind what kernel value" line each. */
static int child(int quick, const char *model, int train) {
    int mine = spade_gemm_kernel(), reps = quick ? 2 : 3;
    int ks[2] = {mine, SPADE_GEMM_OPENBLAS};
    if (!spade_gemm_supported(SPADE_GEMM_OPENBLAS)) DIE("this build has no cblas to compare against");
#if defined(SPADE_HAVE_CBLAS) && defined(OPENBLAS_VERSION)
    /* one thread per call, as the cpu backend sets it: OpenBLAS's own threads
     * would oversubscribe the OpenMP team (and escape the one-thread CPU clock) */
    openblas_set_num_threads(1);
#endif
    for (int s = 0; s < NSHAPES; s++)
        for (int pass = 0; pass < 3; pass++)
            for (int k = 0; k < 2; k++) {
                spade_gemm_force(ks[k]);
                for (int team = 0; team < 2; team++)
                    printf("gemm%d %d.%d %s %.2f\n", team, s, pass, k ? "openblas" : "spade",
                           rate(&shapes[s], pass, reps, team));
                fflush(stdout);
            }
    if (!train) return 0;
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    snprintf(c.backend, sizeof c.backend, "cpu");
    spade_policy *p;
    if (spade_policy_new(&p, &c, err, sizeof err)) DIE("%s", err);
    for (int k = 0; k < 2; k++) {
        spade_gemm_force(ks[k]);
        printf("train gpt %s %.1f\n", k ? "openblas" : "spade", train_tps(p, 4, 256, quick ? 1 : 3));
        fflush(stdout);
    }
    spade_policy_free(p);
    spade_model_opts mo = {.backend = "cpu", .context = 256};
    if (!model || spade_policy_from_model(&p, model, &mo, err, sizeof err)) {
        fprintf(stderr, "bench_gemm: no SmolLM2 training step: %s\n", model ? err : "no --model");
        return 0;
    }
    for (int k = 0; k < 2; k++) {
        spade_gemm_force(ks[k]);
        printf("train smollm2 %s %.1f\n", k ? "openblas" : "spade", train_tps(p, 1, 128, quick ? 1 : 2));
        fflush(stdout);
    }
    spade_policy_free(p);
    return 0;
}

/* ---- the parent ---- */

#define NCT 3
static const char *coretypes[NCT] = {NULL, "Prescott", "Haswell"}; /* NULL: unset */
#define MAXR 16
/* [coretype][round] per measurement: gemm [shape][pass][spade|openblas], train [gpt|smollm2][spade|openblas] */
static double g[2][NCT][MAXR][NSHAPES][3][2], tr[NCT][MAXR][2][2];

static void run_child(const char *self, int ct, int round, int quick, const char *model, int train) {
    int fd[2];
    if (pipe(fd)) DIE("pipe");
    pid_t pid = fork();
    if (pid < 0) DIE("fork");
    if (!pid) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (coretypes[ct])
            setenv("OPENBLAS_CORETYPE", coretypes[ct], 1);
        else
            unsetenv("OPENBLAS_CORETYPE");
        char *args[8];
        int n = 0;
        args[n++] = (char *)self;
        args[n++] = (char *)"--child";
        if (quick) args[n++] = (char *)"--quick";
        if (!train) args[n++] = (char *)"--no-train";
        if (model) args[n++] = (char *)"--model", args[n++] = (char *)model;
        args[n] = NULL;
        execv(self, args);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[256], kind[16], what[32], kern[16];
    double v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%15s %31s %15s %lf", kind, what, kern, &v) != 4) continue;
        int k = strcmp(kern, "spade") != 0, s, pass;
        int team = !strcmp(kind, "gemm1");
        if ((team || !strcmp(kind, "gemm0")) && sscanf(what, "%d.%d", &s, &pass) == 2 && s >= 0 && s < NSHAPES &&
            pass >= 0 && pass < 3)
            g[team][ct][round][s][pass][k] = v;
        else if (!strcmp(kind, "train"))
            tr[ct][round][strcmp(what, "gpt") != 0][k] = v;
    }
    fclose(f);
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        DIE("the child for coretype %s failed", coretypes[ct] ? coretypes[ct] : "unset");
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(const double *v, int n, size_t stride) {
    double t[MAXR];
    for (int i = 0; i < n; i++) t[i] = v[i * stride];
    qsort(t, n, sizeof *t, cmp);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* One row: spade (median over every child, whatever its coretype) and
 * OpenBLAS per coretype, and spade / each. */
static void row(const char *label, const double *base, size_t ct_stride, size_t round_stride, int rounds,
                const char *unit) {
    double all[NCT * MAXR], ob[NCT];
    int n = 0;
    for (int ct = 0; ct < NCT; ct++) {
        for (int r = 0; r < rounds; r++) all[n++] = base[ct * ct_stride + r * round_stride];
        ob[ct] = median(base + ct * ct_stride + 1, rounds, round_stride);
    }
    double sp = median(all, n, 1);
    printf("%-26s %8.1f %8.1f %8.1f %8.1f   %5.2fx %5.2fx %5.2fx  %s\n", label, sp, ob[0], ob[1], ob[2], sp / ob[0],
           sp / ob[1], sp / ob[2], unit);
}

int main(int argc, char **argv) {
    int quick = 0, rounds = 2, train = 1, is_child = 0;
    const char *model = "smollm2-135m-instruct";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--child"))
            is_child = 1;
        else if (!strcmp(argv[i], "--no-train"))
            train = 0;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model = argv[++i];
        else
            DIE("usage: bench_gemm [--quick] [--rounds R] [--model NAME|PATH] [--no-train]");
    }
    if (is_child) return child(quick, model, train);
    if (quick) rounds = 1;
    if (rounds < 1 || rounds > MAXR) DIE("--rounds %d: expected 1..%d", rounds, MAXR);
    if (!spade_gemm_supported(SPADE_GEMM_OPENBLAS)) {
        printf("bench_gemm: built without cblas, nothing to compare spade's %s kernel against\n",
               spade_gemm_kernel_name(spade_gemm_kernel()));
        return 0;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) DIE("cannot find /proc/self/exe");
    self[n] = 0;
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    printf("bench_gemm: spade's %s kernel against OpenBLAS sgemm, %d OpenMP threads, %d round%s interleaved\n",
           spade_gemm_kernel_name(spade_gemm_kernel()), threads, rounds, rounds == 1 ? "" : "s");
    for (int r = 0; r < rounds; r++)
        for (int ct = 0; ct < NCT; ct++) run_child(self, ct, r, quick, model, train);
    size_t cts = sizeof g[0][0] / sizeof(double), rs = sizeof g[0][0][0] / sizeof(double);
    for (int team = 1; team >= 0; team--) {
        printf("%s\n%-26s %8s %8s %8s %8s   %6s %6s %6s\n",
               team ? "GFLOP/s, the backend's OpenMP team, wall clock:"
                    : "GFLOP/s, one thread, its CPU time (the kernels alone, load aside):",
               "shape", "spade", "OB", "OB-Pres", "OB-Hasw", "/OB", "/Pres", "/Hasw");
        for (int s = 0; s < NSHAPES; s++)
            for (int pass = 0; pass < 3; pass++) {
                char label[64];
                snprintf(label, sizeof label, "%s %s %s", shapes[s].model, shapes[s].name, passes[pass]);
                row(label, &g[team][0][0][s][pass][0], cts, rs, rounds, "GFLOP/s");
            }
    }
    if (train) {
        size_t tcs = sizeof tr[0] / sizeof(double), trs = sizeof tr[0][0] / sizeof(double);
        row("train gpt default B4 T256", &tr[0][0][0][0], tcs, trs, rounds, "tokens/s");
        if (tr[0][0][1][0] > 0) row("train smollm2 B1 T128", &tr[0][0][1][0], tcs, trs, rounds, "tokens/s");
    }
    printf("OB: OpenBLAS with OPENBLAS_CORETYPE unset; OB-Pres, OB-Hasw: =Prescott, =Haswell. spade: the median "
           "over all %d children (it reads no variable).\n",
           NCT * rounds);
    return 0;
}
