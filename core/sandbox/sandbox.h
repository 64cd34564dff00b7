/* sandbox.h — runs untrusted environment source in isolated worker processes.
 *
 * What it is: the parent side of the sandbox. A zygote is forked once, early
 * (before the trainer allocates or touches CUDA); every worker forks from it, so
 * spawn cost does not grow with the parent. A worker locks itself down (rlimits,
 * no_new_privs, every fd closed but its socket, a seccomp allowlist) BEFORE it
 * reads the source, compiles it with libtcc (core/jit), and serves a host
 * (core/host.h) over framed IPC. The parent treats every byte from a worker as
 * hostile and classifies every failure; it never crashes, leaves no zombie and
 * leaks no fd, whatever the worker does.
 * What it is not: the environment API (env.h), the compiler (core/jit), or the
 * in-process host. Nothing outside core/sandbox forks.
 */
#ifndef SPADE_SANDBOX_H
#define SPADE_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"

/* Every way a call into a worker can end. Names (spade_outcome_name) are the
 * words tests/hostile/ files declare in their `expect:` line. */
typedef enum spade_outcome {
    SPADE_OUT_OK = 0, /* "ok" */
    SPADE_OUT_COMPILE, /* "compile_error": tcc rejected the source (message has the line) */
    SPADE_OUT_LINK, /* "link_error": calls a symbol outside the allowlist */
    SPADE_OUT_INVALID, /* "invalid_env": compiled, but not a valid environment (host validation) */
    SPADE_OUT_TIMEOUT, /* "timeout": wall-clock deadline or CPU limit */
    SPADE_OUT_CRASH, /* "crash": killed by a signal (SEGV, FPE, ABRT, ILL, BUS, TRAP) */
    SPADE_OUT_SYSCALL, /* "forbidden_syscall": killed by the seccomp filter (SIGSYS) */
    SPADE_OUT_OOM, /* "out_of_memory": address-space limit hit */
    SPADE_OUT_PROTOCOL, /* "protocol_violation": malformed frame from the worker */
    SPADE_OUT_OUTPUT, /* "output_too_large": observation/hint/action over the cap */
    SPADE_OUT_BAD_CALL, /* "bad_call": the caller's mistake (step before reset, ...) */
    SPADE_OUT_INTERNAL, /* "internal_error": the sandbox itself failed (spawn, socket) */
    SPADE_OUT_COUNT_
} spade_outcome;

const char *spade_outcome_name(spade_outcome o);
/* Inverse of spade_outcome_name; -1 for an unknown word. */
int spade_outcome_from_name(const char *name);

typedef struct spade_failure {
    spade_outcome outcome;
    int signal; /* for CRASH/SYSCALL/TIMEOUT kills, else 0 */
    int line; /* source line for COMPILE/LINK when known, else 0 */
    char message[1024]; /* human-readable; names the file and line when known */
} spade_failure;

typedef struct spade_sandbox_opts {
    double compile_timeout_s; /* wall clock for load (compile + validate), default 2.0 */
    double call_timeout_s; /* wall clock for one reset/step/hint/solve batch, default 1.0 */
    int cpu_limit_s; /* RLIMIT_CPU backstop of a worker, default 10: CPU seconds it may use beyond
                        the wall time of its calls so far plus the next deadline (the parent
                        raises the soft limit as a worker lives on); SIGXCPU -> timeout */
    size_t mem_limit; /* address space a worker may add to what it inherits, default 1 GiB
                         (RLIMIT_AS = inherited mappings + mem_limit: linked CUDA/BLAS libraries
                         alone map ~700 MiB) */
    size_t max_frame; /* largest frame accepted from a worker, default 64 MiB */
} spade_sandbox_opts;

typedef struct spade_sandbox spade_sandbox; /* the zygote */
typedef struct spade_worker spade_worker; /* one worker process, one environment */

/* Starts the zygote (a fresh exec of spade-zygote with an empty environment:
 * core/sandbox/zygote.c) and returns without waiting for it; the first spawn
 * does. Call it at start-up, before anything heavy. opts may be NULL.
 * The sandbox belongs to the calling process (a forked copy gets bad_call) and
 * lives as long as the calling thread: the zygote has PR_SET_PDEATHSIG, which
 * fires when the thread that forked it exits, so create it on the main thread
 * (or one that outlives its use). Workers of one sandbox may be driven from
 * different threads, one thread per worker. spade_sandbox_free may come before
 * the workers' frees: the zygote stays until the last worker is freed. */
int spade_sandbox_new(spade_sandbox **out, const spade_sandbox_opts *opts, char *err, size_t errlen);
void spade_sandbox_free(spade_sandbox *sb);

/* Spawns a worker and loads source into it (compile + validate). On failure
 * *out is NULL and f says why; the worker is already reaped. filename is used
 * in messages only. */
int spade_worker_load(spade_sandbox *sb, const char *filename, const char *source, size_t len, spade_worker **out,
                      spade_failure *f);
/* The same, with the worker's memory poisoned for uninitialised reads: before
 * every call into the environment the host fills the stack the call will use
 * (32 KiB below its frame) and the 256 bytes after the action's NUL with a
 * pattern derived from poison and the instance id (spade_host_set_poison), so
 * two instances that read uninitialised memory see different bytes and an
 * environment that depends on them fails a determinism check. poison 0 = off
 * (spade_worker_load). Used by the checker (core/check.c); costs ~2 us a call. */
int spade_worker_load_poisoned(spade_sandbox *sb, const char *filename, const char *source, size_t len, uint64_t poison,
                               spade_worker **out, spade_failure *f);
const spade_env_info *spade_worker_info(const spade_worker *w);
/* Kills (if alive) and reaps the worker, closes its socket. */
void spade_worker_free(spade_worker *w);
int spade_worker_alive(const spade_worker *w);

/* Adds n instances with the given param values ([n_params] each, shared by all
 * n; NULL = defaults); first id in *first_id. */
int spade_worker_add_instances(spade_worker *w, int n, const double *param_values, int *first_id, spade_failure *f);

/* Batched calls: one round trip for n instances. results[i] point into the
 * worker handle's buffer, valid until the next call on w. Any failure kills the
 * worker (it is not trusted afterwards) and every later call returns it again,
 * except bad_call (the caller's mistake: unknown id, step before reset or after
 * the end, a param out of range), which leaves the worker alive (in a batch,
 * the other items were carried out and their results filled). lens may be
 * NULL: the actions are then NUL-terminated strings. */
int spade_worker_reset(spade_worker *w, int n, const int *ids, const uint64_t *seeds, spade_step_result *results,
                       spade_failure *f);
int spade_worker_step(spade_worker *w, int n, const int *ids, const char *const *actions, const size_t *lens,
                      spade_step_result *results, spade_failure *f);
/* Split-phase stepping: send now, receive later (the vector env overlaps workers). */
int spade_worker_step_send(spade_worker *w, int n, const int *ids, const char *const *actions, const size_t *lens,
                           spade_failure *f);
int spade_worker_step_recv(spade_worker *w, spade_step_result *results, spade_failure *f);
/* A mixed batch, each item with its own op: ops[i] is SPADE_BATCH_RESET
 * (seeds[i]) or SPADE_BATCH_STEP (actions[i], lens[i]), or SPADE_BATCH_HINT /
 * SPADE_BATCH_SOLVE (the result's obs is the text; the state is unchanged).
 * A step request with autoresets is then one round trip per worker (the vector
 * env and spade serve use it). Failures as the batched calls above. */
typedef enum spade_batch_op {
    SPADE_BATCH_RESET = 1,
    SPADE_BATCH_STEP = 2,
    SPADE_BATCH_HINT = 3,
    SPADE_BATCH_SOLVE = 4,
} spade_batch_op;
int spade_worker_batch_send(spade_worker *w, int n, const int *ids, const uint32_t *ops, const uint64_t *seeds,
                            const char *const *actions, const size_t *lens, spade_failure *f);
int spade_worker_batch_recv(spade_worker *w, spade_step_result *results, spade_failure *f);
int spade_worker_hint(spade_worker *w, int id, const char **text, size_t *len, spade_failure *f);
int spade_worker_solve(spade_worker *w, int id, const char **text, size_t *len, spade_failure *f);

/* ---- vector environment: num_envs instances over num_workers workers ------ */
typedef enum spade_autoreset {
    SPADE_AUTORESET_NEXT_STEP = 0, /* Gymnasium's default: the step after an episode ends resets it
                                      (the action is ignored; reward 0, not done) */
    SPADE_AUTORESET_DISABLED = 1, /* the caller resets finished envs with spade_vecenv_reset_one */
} spade_autoreset;

typedef struct spade_vecenv spade_vecenv;

/* params: "key=value,..." or NULL. Seeds: env i's first episode uses seed + i;
 * later episodes of env i use seed + i + k * num_envs. */
int spade_vecenv_new(spade_sandbox *sb, const char *filename, const char *source, size_t len, const char *params,
                     int num_envs, int num_workers, spade_autoreset mode, spade_vecenv **out, spade_failure *f);
/* The same, each worker's fresh stack and heap poisoned by its own seed
 * (poison + worker index; 0: off): two vector envs with different poisons see
 * different garbage, so an environment that reads uninitialised memory plays
 * differently in them (the designer's determinism gates). */
int spade_vecenv_new_poisoned(spade_sandbox *sb, const char *filename, const char *source, size_t len,
                              const char *params, int num_envs, int num_workers, spade_autoreset mode, uint64_t poison,
                              spade_vecenv **out, spade_failure *f);
void spade_vecenv_free(spade_vecenv *v);
/* From now on the calls of worker `worker` are poisoned by exactly poison,
 * or (worker -1) those of every worker w by poison + w; 0: off. A revive
 * loads a worker with its poison as set. The designer's gates give their two
 * workers one seed (so the instances of opposite parity get complementary
 * garbage) for the determinism gates, then switch it off for the other gates
 * (it costs each call a 32 KiB fill). The instances keep their episodes. */
int spade_vecenv_set_poison(spade_vecenv *v, int worker, uint64_t poison, spade_failure *f);
/* Appends n envs whose instances take params ("key=value,...", NULL =
 * defaults) instead of the vector's: envs [*first_env, *first_env + n), laid
 * out as the others (env i in worker i % num_workers), with no episode yet
 * (reset them). One worker then holds instances of several settings of one
 * source, compiled once (the designer's limits gate plays every param's min
 * and max); a revive restores each env's own params. Not while a step is in
 * flight. A bad params string is a bad_call. */
int spade_vecenv_add_block(spade_vecenv *v, const char *params, int n, int *first_env, spade_failure *f);
int spade_vecenv_num_envs(const spade_vecenv *v);
const spade_env_info *spade_vecenv_info(const spade_vecenv *v);
int spade_vecenv_reset(spade_vecenv *v, uint64_t seed, spade_step_result *results /* [num_envs] */, spade_failure *f);
/* Resets env with exactly this seed (for SPADE_AUTORESET_DISABLED; the
 * documented seed of its k-th episode is seed + env + k * num_envs).
 * Auto-reset seeds always count from the last spade_vecenv_reset (0 if none). */
int spade_vecenv_reset_one(spade_vecenv *v, int env, uint64_t seed, spade_step_result *result, spade_failure *f);
int spade_vecenv_step(spade_vecenv *v, const char *const *actions, const size_t *lens,
                      spade_step_result *results /* [num_envs] */, spade_failure *f);
int spade_vecenv_step_async(spade_vecenv *v, const char *const *actions, const size_t *lens, spade_failure *f);
int spade_vecenv_step_wait(spade_vecenv *v, spade_step_result *results, spade_failure *f);

/* Subsets (what plays N paired seeds once each, episodes of different
 * lengths: auto-reset DISABLED, reset the chosen envs with the chosen seeds,
 * step only the envs whose episode goes on). envs[0..n) are distinct env
 * indices; results[j] (and actions[j], lens[j], seeds[j]) belong to envs[j].
 * Only the workers holding a chosen env get a batch; the other envs are left
 * alone. Stepping an env that was never reset (since its worker was loaded)
 * is a bad_call; an ended env resets under NEXT_STEP as in spade_vecenv_step.
 * On a failure (one worker's send or reply) the results of the envs whose
 * worker is alive (spade_vecenv_env_lost == 0) are still filled, and those a
 * reset reached may step after spade_vecenv_revive; a bad_call (the caller's
 * mistake) fills nothing. _step_some_async pairs with
 * spade_vecenv_step_wait (results then indexed as envs[]). */
int spade_vecenv_reset_some(spade_vecenv *v, int n, const int *envs, const uint64_t *seeds, spade_step_result *results,
                            spade_failure *f);
int spade_vecenv_step_some(spade_vecenv *v, int n, const int *envs, const char *const *actions, const size_t *lens,
                           spade_step_result *results, spade_failure *f);
int spade_vecenv_step_some_async(spade_vecenv *v, int n, const int *envs, const char *const *actions,
                                 const size_t *lens, spade_failure *f);
/* The same chosen by a mask: env i steps when mask[i]; actions, lens and
 * results are [num_envs] (entries of unmasked envs are neither read nor
 * written). */
int spade_vecenv_step_mask(spade_vecenv *v, const unsigned char *mask, const char *const *actions, const size_t *lens,
                           spade_step_result *results, spade_failure *f);
/* The hint / SOLVE's action for env's current state (one round trip; text is
 * valid until the next call on the vector). A failure is sticky as above. */
int spade_vecenv_hint(spade_vecenv *v, int env, const char **text, size_t *len, spade_failure *f);
int spade_vecenv_solve(spade_vecenv *v, int env, const char **text, size_t *len, spade_failure *f);
/* 1 when env's worker has died (timeout, crash, ...): its episode is gone. */
int spade_vecenv_env_lost(const spade_vecenv *v, int env);
/* The hints (solve 0) or SOLVE's actions (solve 1) of envs[0..n) (distinct,
 * each reset) for their current states, in one batch per worker:
 * results[j].obs is env envs[j]'s text (reward 0, not done; valid until the
 * next call on the vector). The episodes go on untouched. Failures as
 * spade_vecenv_step_some (a text over SPADE_OBS_MAX is output_too_large;
 * SOLVE of an environment without one is a bad_call). */
int spade_vecenv_text_some(spade_vecenv *v, int n, const int *envs, int solve, spade_step_result *results,
                           spade_failure *f);
/* After a failure: loads every dead worker again (same source, params and
 * instance layout) and clears the sticky failure. The envs of the revived
 * workers have no episode (reset them); the others keep theirs. Fails (and
 * the vector stays failed) when a worker cannot be loaded again. */
int spade_vecenv_revive(spade_vecenv *v, spade_failure *f);

/* ---- introspection (tests, diagnostics) ------------------------------------ */
/* Process ids: the zygote is the caller's child; workers are the zygote's. */
int spade_sandbox_zygote_pid(const spade_sandbox *sb);
int spade_worker_pid(const spade_worker *w);

#endif /* SPADE_SANDBOX_H */
