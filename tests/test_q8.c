/* test_q8.c — Check suite for the 8-bit and 4-bit sampling weights (core/policy/q8.h).
 *
 * What it is: quantization (every value within half a step of its block's
 * scale; rows that are not a multiple of 32 refused), and, for both forms, every dot-product
 * kernel this CPU runs (c, avx2, avx512vnni) at the decoding shapes (1 to 33
 * rows, weight rows not a multiple of the 4-row tile, an odd number of
 * blocks for the two-blocks-a-vector kernel, a bias) against a double
 * product of the unquantized values. The bound, per output: the sum over
 * blocks of 32 max|w| max|x| / 127 (each product w x is off by at most
 * (d_w / 2) |x| + |w| (d_x / 2) after rounding both to their steps), plus
 * float rounding. Kernels must also agree with the C kernel to float
 * rounding (their integer block sums are exact).
 * The team that splits a product among threads (team.h): every item run
 * once, by one worker at a time under each worker index, with two callers
 * at once and in a forked child; and a product's bits the same at 1 to 4 threads.
 * What it is not: the model-level check (tests/test_tiny_gguf.c,
 * "q8_sampling_close_to_f32").
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "policy/q8.h"
#include "policy/team.h"
#include "testutil.h"

/* Every test starts its draws from this state (rng_reset, a checked fixture), as in Check's fork
 * mode, also with CK_FORK=no where the tests share one process. */
#define RNG_SEED 11
static uint64_t rng = RNG_SEED;
static void rng_reset(void) { rng = RNG_SEED; }
static float urand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static float *rnd(size_t n) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = urand() * (i % 7 == 0 ? 3.0f : 1.0f); /* uneven magnitudes */
    return x;
}

static float block_amax(const float *v) {
    float a = 0.0f;
    for (int i = 0; i < SPADE_Q8_BLOCK; i++) a = fmaxf(a, fabsf(v[i]));
    return a;
}

START_TEST(test_quantize) {
    enum { R = 5, C = 96 };
    float *w = rnd(R * C);
    for (int i = 0; i < C; i++) w[2 * C + i] = 0.0f; /* an all-zero row: scale 0, no NaN */
    spade_q8mat m;
    ck_assert_int_eq(spade_q8_quantize(&m, w, R, C), 0);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            float d = m.d[r * (C / 32) + c / 32], back = d * m.q[r * C + c];
            ck_assert(isfinite(back));
            ck_assert_msg(fabsf(back - w[r * C + c]) <= 0.5f * d * 1.0001f + 1e-30f, "%d,%d: %g vs %g", r, c, back,
                          w[r * C + c]);
            ck_assert(m.q[r * C + c] >= -127 && m.q[r * C + c] <= 127);
        }
    spade_q8_free(&m);
    ck_assert_int_eq(spade_q8_quantize(&m, w, R, 95), -1);
    ck_assert_ptr_null(m.q);
    free(w);
}
END_TEST

static const int shapes[][3] = {{1, 1, 32},  {1, 37, 576}, {2, 5, 96},  {3, 64, 64},
                                {4, 7, 160}, {5, 9, 32},   {7, 33, 96}, {33, 70, 192}};

static float block_range(const float *v) {
    float lo = v[0], hi = v[0];
    for (int i = 1; i < SPADE_Q8_BLOCK; i++) lo = fminf(lo, v[i]), hi = fmaxf(hi, v[i]);
    return hi - lo;
}

/* The 4-bit form: every value within half a step of min + d q, q in 0..15,
 * an odd number of blocks (the last pair half empty), a constant block. */
START_TEST(test_quantize4) {
    enum { R = 4, C = 96 };
    float *w = rnd(R * C);
    for (int i = 0; i < 32; i++) w[C + 32 + i] = 0.25f; /* a constant block: d 0 */
    spade_q8mat m;
    ck_assert_int_eq(spade_q8_quantize4(&m, w, R, C), 0);
    ck_assert_int_eq(m.bits, 4);
    const uint8_t *q = (const uint8_t *)m.q;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            int b = c / 32, byte = q[r * SPADE_Q4_ROW_BYTES(C) + b / 2 * 32 + c % 32];
            int u = b % 2 ? byte >> 4 : byte & 15;
            float d = m.d[r * (C / 32) + b], back = m.m[r * (C / 32) + b] + d * u;
            ck_assert_msg(fabsf(back - w[r * C + c]) <= 0.5f * d * 1.0001f + 1e-6f, "%d,%d: %g vs %g", r, c, back,
                          w[r * C + c]);
        }
    for (int r = 0; r < R; r++) /* the odd block's pair has empty high nibbles */
        for (int e = 0; e < 32; e++) ck_assert_int_eq(q[r * SPADE_Q4_ROW_BYTES(C) + 32 + e] >> 4, 0);
    spade_q8_free(&m);
    ck_assert_int_eq(spade_q8_quantize4(&m, w, R, 95), -1);
    ck_assert_ptr_null(m.q);
    free(w);
}
END_TEST

/* Both forms through every kernel. The 4-bit bound per block: each w x is
 * off by at most (d_w / 2) |x| + |w| (d_x / 2) + d_w d_x / 4. */
START_TEST(test_kernels) {
    for (size_t s = 0; s < 2 * sizeof shapes / sizeof shapes[0]; s++) {
        int four = s % 2, sh = (int)(s / 2);
        int N = shapes[sh][0], OC = shapes[sh][1], IC = shapes[sh][2], nb = IC / 32;
        float *x = rnd((size_t)N * IC), *w = rnd((size_t)OC * IC), *bias = rnd(OC);
        float *out = malloc((size_t)N * OC * sizeof *out), *ref = malloc((size_t)N * OC * sizeof *ref);
        spade_q8mat m;
        ck_assert_int_eq(four ? spade_q8_quantize4(&m, w, OC, IC) : spade_q8_quantize(&m, w, OC, IC), 0);
        for (int k = 0; k < 3; k++) {
            if (spade_q8_force(k)) {
                fprintf(stderr, "test_q8: this CPU lacks kernel %d, not tested\n", k);
                continue;
            }
            const float *b = sh % 2 ? bias : NULL;
            ck_assert_int_eq(spade_q8_matmul(out, x, &m, b, N), 0);
            for (int i = 0; i < N; i++)
                for (int j = 0; j < OC; j++) {
                    double exact = b ? b[j] : 0.0, bound = 0.0, mag = 0.0;
                    for (int c = 0; c < IC; c++) {
                        exact += (double)x[(size_t)i * IC + c] * w[(size_t)j * IC + c];
                        mag += fabs((double)x[(size_t)i * IC + c] * w[(size_t)j * IC + c]);
                    }
                    for (int q = 0; q < nb; q++) {
                        double ax = block_amax(x + (size_t)i * IC + 32 * q),
                               aw = block_amax(w + (size_t)j * IC + 32 * q);
                        double dw = block_range(w + (size_t)j * IC + 32 * q) / 15.0, dx = ax / 127.0;
                        bound += four ? 32.0 * (dw / 2 * ax + aw * dx / 2 + dw * dx / 4) : 32.0 * ax * aw / 127.0;
                    }
                    bound += 1e-5 * (mag + fabs(exact));
                    float got = out[(size_t)i * OC + j];
                    ck_assert_msg(fabs(got - exact) <= bound,
                                  "%s %d bits N %d OC %d IC %d: out[%d,%d] = %g, exact %g, bound %g",
                                  spade_q8_kernel_name(), m.bits, N, OC, IC, i, j, got, exact, bound);
                    if (k == 0)
                        ref[(size_t)i * OC + j] = got;
                    else
                        ck_assert_msg(fabsf(got - ref[(size_t)i * OC + j]) <= 1e-5 * (mag + 1.0),
                                      "%s vs c at %d,%d: %g vs %g", spade_q8_kernel_name(), i, j, got,
                                      ref[(size_t)i * OC + j]);
                }
        }
        ck_assert_int_eq(spade_q8_force(-1), 0);
        spade_q8_free(&m);
        free(x), free(w), free(bias), free(out), free(ref);
    }
    ck_assert_int_eq(spade_q8_force(9), -1);
    fprintf(stderr, "test_q8: this CPU runs the %s kernel\n", spade_q8_kernel_name());
}
END_TEST

/* A team job that records who ran each item. */
enum { TEAM_ITEMS = 5000, TEAM_WORKERS = 64 };
typedef struct team_rec {
    int ran[TEAM_ITEMS], size;
    atomic_int busy[TEAM_WORKERS], bad;
} team_rec;

static void team_item(void *arg, int item, int worker) {
    team_rec *r = arg;
    if (worker < 0 || worker >= r->size || worker >= TEAM_WORKERS) {
        atomic_store(&r->bad, 1);
        return;
    }
    if (atomic_fetch_add(&r->busy[worker], 1)) atomic_store(&r->bad, 1); /* two threads, one worker index */
    r->ran[item]++;
    for (volatile int spin = 0; spin < item % 64; spin++) {}
    atomic_fetch_sub(&r->busy[worker], 1);
}

static void team_check(team_rec *r, int n) {
    memset(r, 0, sizeof *r);
    r->size = spade_team_size();
    spade_team_run(team_item, r, n);
    ck_assert_int_eq(atomic_load(&r->bad), 0);
    for (int i = 0; i < n; i++) ck_assert_msg(r->ran[i] == 1, "item %d of %d ran %d times", i, n, r->ran[i]);
}

static void *team_caller(void *arg) {
    team_rec *r = arg;
    for (int rep = 0; rep < 200; rep++) team_check(r, 1 + rep * 37 % TEAM_ITEMS);
    return NULL;
}

START_TEST(test_team) {
    static team_rec a, b;
    for (int rep = 0; rep < 300; rep++) team_check(&a, rep % 3 ? 1 + rep * 53 % TEAM_ITEMS : rep % 2);
    /* a second caller while jobs run: one of them runs its items alone */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, team_caller, &b), 0);
    team_caller(&a);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
}
END_TEST

/* A child forked while the team's helpers run (they may hold its mutex)
 * runs its jobs on its calling thread, every item once, and does not hang. */
START_TEST(test_team_fork) {
    static team_rec r;
    team_check(&r, 4000); /* the team is started in this process */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int ok = 1;
        for (int rep = 0; rep < 20 && ok; rep++) {
            memset(&r, 0, sizeof r);
            r.size = spade_team_size();
            spade_team_run(team_item, &r, 3000);
            ok = !atomic_load(&r.bad);
            for (int i = 0; i < 3000 && ok; i++) ok = r.ran[i] == 1;
        }
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the forked child's team jobs failed (status %d)", st);
    team_check(&r, 4000);
}
END_TEST

/* A product large enough for the team gives the same bits at every team size. */
START_TEST(test_team_bits) {
#ifdef _OPENMP
    enum { OC = 3000, IC = 576 };
    float *x = rnd(4 * IC), *w = rnd((size_t)OC * IC), *bias = rnd(OC);
    float *one = malloc(4 * OC * sizeof *one), *got = malloc(4 * OC * sizeof *got);
    spade_q8mat m8, m4, *ms[2] = {&m8, &m4};
    ck_assert_int_eq(spade_q8_quantize(&m8, w, OC, IC), 0);
    ck_assert_int_eq(spade_q8_quantize4(&m4, w, OC, IC), 0);
    int saved = omp_get_max_threads();
    for (int N = 1; N <= 4; N++) {
        const spade_q8mat *m = ms[N % 2]; /* 1 and 3 rows at 4 bits, 2 and 4 at 8 */
        omp_set_num_threads(1);
        ck_assert_int_eq(spade_q8_matmul(one, x, m, bias, N), 0);
        for (int th = 2; th <= 4; th++) {
            omp_set_num_threads(th);
            for (int rep = 0; rep < 3; rep++) {
                ck_assert_int_eq(spade_q8_matmul(got, x, m, bias, N), 0);
                ck_assert_msg(memcmp(one, got, (size_t)N * OC * sizeof *got) == 0, "%d rows, %d threads differ", N, th);
            }
        }
    }
    omp_set_num_threads(saved);
    spade_q8_free(&m8);
    spade_q8_free(&m4);
    free(x), free(w), free(bias), free(one), free(got);
#endif
}
END_TEST

int main(void) {
    Suite *s = suite_create("q8");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, rng_reset, NULL);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_quantize);
    tcase_add_test(t, test_quantize4);
    tcase_add_test(t, test_kernels);
    tcase_add_test(t, test_team);
    tcase_add_test(t, test_team_fork);
    tcase_add_test(t, test_team_bits);
    suite_add_tcase(s, t);
    return tu_run(s);
}
