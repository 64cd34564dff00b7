/* spade.h — the public C API of libspade, installed as <spade/spade.h>.
 *
 * What it is: what a C program needs to embed spade: start the sandbox, load
 * an environment into it (a name on the search path or a file, with params),
 * reset and step a vector of its instances, and run the environment checker.
 * Handles are opaque; every call that can fail returns -1 (or NULL) and writes
 * a message into the caller's err buffer. Link with `pkg-config --cflags --libs
 * spade`; docs/embed.c is a complete program (docs/embedding.md).
 * What it is not: the environment ABI (<spade/env.h>) nor the DSL environments
 * are written in (<spade/dsl.h>), and not the whole library: the engine's own
 * headers (core/) are not installed and may change.
 *
 * Threads: one thread per spade_env; the sandbox must be created on a thread
 * that outlives its use (the main thread): its zygote dies with that thread.
 * The sandbox's zygote is the installed spade-zygote program, started with an
 * empty environment (docs/embedding.md, docs/sandbox.md).
 */
#ifndef SPADE_SPADE_H
#define SPADE_SPADE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *spade_version(void);

/* ---- the sandbox --------------------------------------------------------- */
typedef struct spade_sandbox spade_sandbox;
struct spade_sandbox_opts; /* deadlines and limits: core/sandbox/sandbox.h; NULL = the defaults */

/* Starts the sandbox (its zygote process). Call it first, before the program
 * allocates much: every worker forks from the zygote. */
int spade_sandbox_new(spade_sandbox **out, const struct spade_sandbox_opts *opts, char *err, size_t errlen);
void spade_sandbox_free(spade_sandbox *sb);

/* ---- one environment, num_envs instances --------------------------------- */
typedef struct spade_env spade_env;

/* What one instance returned. obs points into the env's memory, valid until
 * the next call on it. */
typedef struct spade_result {
    const char *obs; /* observation text, NUL-terminated */
    size_t obs_len;
    double reward; /* this step's; finite, at most 1e9 in magnitude */
    double episode_return; /* so far */
    int terminated; /* the task ended */
    int truncated; /* max_steps reached */
    int success; /* episode_return >= the environment's success threshold */
} spade_result;

/* Loads spec ("maze", "maze:size=9", "plugins/lock.c:wheels=3") into the
 * sandbox as num_envs instances. The search path is $SPADE_PATH, ./plugins,
 * ./stdenv, then the installed stdenv. Episodes end by themselves: the step
 * after an episode ends starts the next one (its action is ignored). */
int spade_env_open(spade_sandbox *sb, const char *spec, int num_envs, spade_env **out, char *err, size_t errlen);
void spade_env_free(spade_env *e);
int spade_env_num(const spade_env *e);
const char *spade_env_name(const spade_env *e);

/* Resets every instance; instance i's first episode uses seed + i.
 * results: num_envs entries. */
int spade_env_reset(spade_env *e, uint64_t seed, spade_result *results, char *err, size_t errlen);
/* One action per instance (NUL-terminated text). A failure (the environment
 * crashed, timed out, ...) is -1 with the reason; the env is unusable after. */
int spade_env_step(spade_env *e, const char *const *actions, spade_result *results, char *err, size_t errlen);
/* ---- the checker --------------------------------------------------------- */
/* Runs every check of `spade check` on spec. Returns 0 when all passed, 1 when
 * one failed, -1 when it could not run; *report (may be NULL) gets the report,
 * one line per check, to be released with spade_free. */
int spade_check_spec(spade_sandbox *sb, const char *spec, char **report, char *err, size_t errlen);
void spade_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* SPADE_SPADE_H */
