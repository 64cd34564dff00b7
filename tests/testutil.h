/* testutil.h — helpers the Check suites share (tests/testutil.c).
 *
 * What it is: finding the source tree and its test environments, sandboxes for
 * a fixture, counting open fds and child processes (leak and zombie checks),
 * scratch directories under mkdtemp(), two gradients compared tensor by
 * tensor, and the one way a suite is run. Each
 * helper fails the running test (ck_assert) rather than returning an error.
 * What it is not: part of the library, nor a place for a single suite's
 * helpers (those stay in their test file). tests/test_hostile.c keeps its own
 * copies for now.
 */
#ifndef SPADE_TESTUTIL_H
#define SPADE_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "sandbox/sandbox.h"

/* The source tree: $srcdir when make check sets it, else the configured one. */
const char *tu_srcdir(void);

/* tests/envs/NAME read whole into a NUL-terminated malloc()ed buffer (at most
 * 1 MiB - 1 bytes); *len is its length. Looks in tu_srcdir(), then in
 * SPADE_SRCDIR. */
char *tu_read_env(const char *name, size_t *len);

/* The compile deadline of tu_sandbox when o leaves it 0 (the library's own
 * default is 2 s). */
#define TU_COMPILE_TIMEOUT_S 30.0

/* A sandbox with options o (NULL: the defaults), started in the calling
 * (test) process; compile_timeout_s 0 means TU_COMPILE_TIMEOUT_S. */
spade_sandbox *tu_sandbox(const spade_sandbox_opts *o);

/* Open file descriptors of this process. */
int tu_count_fds(void);

/* Live processes whose parent is pid (read from /proc); *first, when not
 * NULL, gets the first one found. */
int tu_children_of(pid_t pid, pid_t *first);

/* Processes below root (children, their children, ...), zombies included, or
 * -1 if /proc cannot be read; *lowest_child (may be NULL) gets root's
 * lowest-numbered direct child, or 0. */
int tu_descendants(pid_t root, pid_t *lowest_child);

/* No child pid (pid -1: no child at all) is left, not even a zombie:
 * waitpid(WNOHANG) fails with ECHILD. */
#define tu_assert_reaped(pid) tu_assert_reaped_at((pid), __FILE__, __LINE__)
void tu_assert_reaped_at(pid_t pid, const char *file, int line);

/* Makes a fresh directory $TMPDIR/spade-test-TAG-XXXXXX (TMPDIR defaults to
 * /tmp) and writes its path into dir. */
void tu_mkdtemp(char *dir, size_t cap, const char *tag);

/* Removes dir and everything below it (links are removed, never followed).
 * Returns 0 when all of it is gone. */
int tu_rm_rf(const char *dir);

/* A fresh 1-layer, 2-head, width-32 policy on the cpu backend with this
 * context and seed: the untrained player of the agent and designer suites. */
spade_policy *tu_tiny_policy(int context, uint64_t seed);

/* The test's own reference of the distribution a draw samples from: given
 * the model's log-probs at temperature 1 (V of them, e.g.
 * spade_decoder_next_logprobs), the log-prob of tok under softmax(l / temp)
 * restricted to the smallest most-likely-first set of mass >= top_p (ties by
 * token id) and renormalised there; -INFINITY when tok is outside that set.
 * Written apart from core/policy/decode.c, so the two can disagree. */
double tu_sampled_logprob(const float *lp1, int V, double temp, double top_p, int tok);
/* spade_decoder_next_logprobs of the sequence h[0..n) prefilled in a fresh
 * one-slot decoder of p: the temperature-1 distribution after it (V floats). */
void tu_next_logprobs(spade_policy *p, const int *h, int n, float *out);

/* Two gradient vectors of p's parameters agree tensor by tensor
 * (spade_policy_tensor's order and offsets): within each tensor the largest
 * |ref - got| is at most rel times the largest |ref| there (plus 1e-12, for
 * an all-zero tensor); a NaN in either fails. On failure the test fails with
 * the caller's file and line, the label (printf's fmt and arguments; "" for
 * none), the tensor's name, the index in it of the largest difference, both
 * values there, the difference and the tensor's largest |ref|. ref is the
 * reference (cpu_ref, say), got the path under test. */
#define tu_assert_grads_close(p, ref, got, rel, ...)                                                                   \
    tu_assert_grads_close_at(__FILE__, __LINE__, (p), (ref), (got), (rel), __VA_ARGS__)
void tu_assert_grads_close_at(const char *file, int line, const spade_policy *p, const float *ref, const float *got,
                              double rel, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* A loss at parameters w, for the finite-difference gradient checks. */
typedef double (*tu_loss_fn)(void *ctx, const float *w);

/* The directional derivative of loss at w along d, Richardson-extrapolated:
 * (4 D(h/2) - D(h)) / 3 with D(h) = (loss(w + h d) - loss(w - h d)) / 2h, so
 * D's O(h^2) error cancels and h can stay above float32's rounding of the
 * loss (wd: P floats of scratch). Every gradient check of the suites. */
double tu_richardson_diff(tu_loss_fn loss, void *ctx, const float *w, float *wd, const float *d, size_t P, double h);

/* The GRPO loss of spade_grpo_batch on samples s[0..n) with p's parameters
 * set to w, and tu_richardson_diff of it along d from step h: the GRPO
 * gradient checks of test_policy and test_grpo. */
double tu_grpo_loss(spade_policy *p, spade_policy *ref, const float *w, const spade_grpo_sample *s, int n,
                    const spade_grpo_opts *o);
double tu_grpo_richardson(spade_policy *p, spade_policy *ref, const float *w, float *wd, const float *d, size_t P,
                          double h, const spade_grpo_sample *s, int n, const spade_grpo_opts *o);

/* Runs every test of s; the exit status for main. With SPADE_TEST_ONLY set, fails (saying so) unless
 * every name it lists was added: a misspelt name cannot pass by running nothing. */
int tu_run(Suite *s);

/* Every suite adds its tests through tu_add_test (tcase_add_test is redefined to it): with
 * SPADE_TEST_ONLY=NAME[,NAME...] in the environment only the tests of those START_TEST names are
 * added (tests/test_baseline_isa.sh runs a few under an emulated CPU without AVX); unset or empty,
 * every one, as Check would (tcase_add_loop_test is not filtered). A testing knob of the suites, not
 * of spade. */
void tu_add_test(TCase *tc, const TTest *tf);

/* The start state of a suite's file-static RNG: SPADE_TEST_RNG_SEED (a decimal number) when set and
 * not empty, else dflt. A testing knob for measuring how many start states a randomised check fails
 * from (for s in $(seq 1 200); do SPADE_TEST_RNG_SEED=$s SPADE_TEST_ONLY=NAME tests/test_x; done);
 * an unparsable value fails the test that asks. */
unsigned long long tu_rng_seed(unsigned long long dflt);
#undef tcase_add_test
#define tcase_add_test(tc, tf) tu_add_test((tc), (tf))

#endif /* SPADE_TESTUTIL_H */
