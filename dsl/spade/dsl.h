/* dsl.h — the macros spade environments are written in, installed as <spade/dsl.h>.
 *
 * What it is: a thin layer of macros over the ABI in <spade/env.h>, plus the
 * declarations of the runtime helpers an environment may call (say, reward,
 * rand_range, parse_int, ...). A whole environment is 15–60 lines:
 *
 *   #include <spade/dsl.h>
 *   ENV("add", "Add two numbers drawn from a range.", .max_steps = 1, .family = "math")
 *   PARAM(int, lo, 10, 0, 1000000)
 *   PARAM(int, hi, 99, 0, 1000000)
 *   STATE { long a, b; };
 *   RESET { S->a = rand_range(lo, hi); S->b = rand_range(lo, hi);
 *           say("Compute %ld + %ld. Answer with the number.", S->a, S->b); }
 *   STEP  { finish(parse_int(action) == S->a + S->b); }
 *   HINT  { say("Add the ones, carry, then add the tens."); }
 *   SOLVE { act("%ld", S->a + S->b); }
 *
 * Order matters only as C requires: ENV and PARAMs first, STATE before the
 * blocks that use S. Params are plain globals named as declared (lo, hi);
 * the state is S->field; in STEP the action text is `action` (NUL-terminated,
 * `action_len` bytes, may contain anything). TOOL declares a function the agent
 * can call (see <spade/env.h> for the types).
 *
 * What it is not: the runtime. The helpers are implemented once, natively, in
 * dsl/runtime.c; under the JIT they are the only symbols the code can reach.
 * The same file compiles three ways: libtcc in the sandbox (which defines
 * SPADE_JIT and has no system headers), gcc natively for tests, and gcc -O2
 * for the in-process benchmark reference.
 */
#ifndef SPADE_DSL_H
#define SPADE_DSL_H

#ifndef SPADE_ENV_H
#include <spade/env.h>
#endif

/* ---- the C library subset an environment may use ------------------------- */
#ifdef SPADE_JIT
#define NULL ((void *)0)
#define bool _Bool
#define true 1
#define false 0
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define LONG_MAX 9223372036854775807L
#define LONG_MIN (-LONG_MAX - 1L)
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *h, const char *n);
int memcmp(const void *a, const void *b, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
int snprintf(char *buf, size_t n, const char *fmt, ...);
int abs(int x);
long labs(long x);
int atoi(const char *s);
long strtol(const char *s, char **end, int base);
double strtod(const char *s, char **end);
int isdigit(int c);
int isalpha(int c);
int isalnum(int c);
int isspace(int c);
int isupper(int c);
int islower(int c);
int toupper(int c);
int tolower(int c);
double sqrt(double x);
double fabs(double x);
double floor(double x);
double ceil(double x);
double pow(double x, double y);
double exp(double x);
double log(double x);
double sin(double x);
double cos(double x);
#else
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif

/* ---- runtime helpers (dsl/runtime.c) -------------------------------------- */
/* Output. say() appends to the observation (in HINT: to the hint); act() to the
 * reference action (in SOLVE). Output past SPADE_OBS_MAX fails the environment. */
void spade_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void spade_act(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void spade_reward(double r); /* add r to this step's reward */
void spade_finish(int success); /* end the episode (terminated); success adds reward 1 */
long spade_steps(void); /* steps taken in this episode before the current one */
/* Seeded randomness: the only source an environment has. */
long spade_rand_range(long lo, long hi); /* uniform in [lo, hi] (inclusive) */
double spade_rand_real(void); /* uniform in [0, 1) */
int spade_chance(double p); /* 1 with probability p */
void spade_shuffle(void *base, long n, long size);
/* Parsing agent text. LLM agents think aloud, so these take the final answer:
 * the last \boxed{...}, else the last <answer>...</answer>, else the whole text. */
const char *spade_answer(const char *text); /* runtime-owned copy, valid until the next call */
long spade_parse_int(const char *text); /* last integer of the answer; SPADE_NO_INT if none */
double spade_parse_real(const char *text); /* last number of the answer; NaN if none */
int spade_parse_word(const char *text, char *out, long cap); /* last word (letters/digits/_-) -> length, 0 if none */
int spade_parse_ints(const char *text, long *out, int cap); /* every integer of the answer -> count */
int spade_str_ieq(const char *a, const char *b); /* equal ignoring case and surrounding blanks */
#define SPADE_NO_INT LONG_MIN

#define say spade_say
#define act spade_act
#define reward spade_reward
#define finish spade_finish
#define win() spade_finish(1)
#define lose() spade_finish(0)
#define steps spade_steps
#define rand_range spade_rand_range
#define rand_real spade_rand_real
#define chance spade_chance
#define shuffle spade_shuffle
#define answer spade_answer
#define parse_int spade_parse_int
#define parse_real spade_parse_real
#define parse_word spade_parse_word
#define parse_ints spade_parse_ints
#define str_ieq spade_str_ieq
#define NO_INT SPADE_NO_INT

/* ---- the environment macros ----------------------------------------------- */
#define SPADE_CAT_(a, b) a##b
#define SPADE_CAT(a, b) SPADE_CAT_(a, b)
#define SPADE_UNPAREN(...) __VA_ARGS__
#define SPADE_PTYPE_int SPADE_PARAM_INT
#define SPADE_PTYPE_double SPADE_PARAM_REAL

/* ENV(name, description, .max_steps = N, .success = R, .family = "...") */
#define ENV(name_, desc_, ...)                                                                                         \
    const spade_env_meta spade_meta = {.abi = SPADE_ENV_ABI, .name = name_, .description = desc_, __VA_ARGS__};

/* PARAM(int|double, name, default, min, max) — a global `name` the runtime sets. */
#define PARAM(type_, name_, def_, min_, max_)                                                                          \
    static type_ name_ = def_;                                                                                         \
    spade_param_def SPADE_CAT(spade_param_, __COUNTER__) = {#name_, SPADE_PTYPE_##type_, &name_, def_, min_, max_, ""};

/* STATE { fields }; — per-instance state, zeroed before reset; S points at it. */
#define STATE                                                                                                          \
    struct spade_state;                                                                                                \
    struct spade_state *spade_S;                                                                                       \
    struct spade_state

#define S spade_S

#define RESET                                                                                                          \
    size_t spade_state_size(void) { return sizeof(struct spade_state); }                                               \
    void spade_reset(void)

#define STEP void spade_step(__attribute__((unused)) const char *action, __attribute__((unused)) size_t action_len)
#define HINT void spade_hint(void)
#define SOLVE void spade_solve(void)

/* TOOL(name, "description", ret, (args)) { body } — args may be (void). The
 * body sees S like every block; the return value is printed as the result. */
#define TOOL(name_, desc_, ret_, args_)                                                                                \
    static ret_ name_ args_;                                                                                           \
    spade_tool_def SPADE_CAT(spade_tool_, __COUNTER__) = {#name_, #ret_ " " #args_, desc_, (void *)name_};             \
    static ret_ name_ args_

#endif /* SPADE_DSL_H */
