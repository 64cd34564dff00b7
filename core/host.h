/* host.h — runs one compiled environment in the current process: finds its
 * symbols, validates its metadata, parses params, and drives instances through
 * reset / step / hint / solve, capturing what they say.
 *
 * What it is not: a sandbox. The host trusts the code it calls; a crash in the
 * environment is a crash of this process. The sandbox worker (core/sandbox)
 * wraps a host in a forked, seccomp-filtered process; tests and the in-process
 * benchmark reference use a host directly on gcc-compiled environments
 * (core/native.h). Everything the host returns is plain data (no pointers into
 * environment memory), so the worker can send it over IPC as it is.
 */
#ifndef SPADE_HOST_H
#define SPADE_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "env.h"

/* Looks up an exported symbol of the compiled environment (tcc_get_symbol,
 * dlsym); NULL when absent. */
typedef void *(*spade_symbol_fn)(void *ctx, const char *name);

/* Fixed-size, pointer-free description of an environment (sent over IPC as bytes;
 * the receiver must force NUL termination of every string before use). */
typedef struct spade_param_info {
    char name[32];
    int type; /* spade_param_type */
    double def, min, max;
} spade_param_info;

typedef struct spade_tool_info {
    char name[32];
    char signature[160];
    char description[160];
} spade_tool_info;

#define SPADE_INFO_MAX_PARAMS 16
#define SPADE_INFO_MAX_TOOLS 16

/* The most max_steps an environment may declare: spade_host_new refuses more,
 * and the sandbox's parent refuses a worker that reports more (the worker runs
 * the environment's code, so the host's check in it proves nothing). Far below
 * INT_MAX, so loops to max_steps + 1 (spade check) cannot overflow. */
#define SPADE_MAX_STEPS_LIMIT 1000000

typedef struct spade_env_info {
    int abi;
    char name[64];
    char description[256];
    char family[32];
    int max_steps; /* defaults applied */
    double success; /* defaults applied */
    uint64_t state_size; /* bytes */
    int has_solve;
    int n_params;
    spade_param_info params[SPADE_INFO_MAX_PARAMS];
    int n_tools;
    spade_tool_info tools[SPADE_INFO_MAX_TOOLS];
} spade_env_info;

/* Status of one call into an environment. Faults the host can see itself;
 * crashes and timeouts are seen only from outside (core/sandbox). */
typedef enum spade_host_status {
    SPADE_HOST_OK = 0,
    SPADE_HOST_OUTPUT_TOO_LARGE, /* said more than SPADE_OBS_MAX bytes */
    SPADE_HOST_BAD_CALL, /* caller error: unknown instance, step before reset, action too long */
    SPADE_HOST_BAD_REWARD, /* the step called reward() with NaN, an infinity or a value beyond
                              +-SPADE_REWARD_MAX, or its rewards summed past it; ends the episode */
} spade_host_status;

/* The one place where reward magnitudes are bounded (docs/dsl.md): a step's
 * reward must be finite and within +-SPADE_REWARD_MAX, or the step fails with
 * SPADE_HOST_BAD_REWARD (an `invalid_env` through the sandbox). So an episode
 * returns at most SPADE_REWARD_MAX * SPADE_MAX_STEPS_LIMIT = 1e15 in magnitude:
 * finite in a double, in a float (a GRPO sample's reward), in a mean over any
 * number of episodes and in JSON. A success threshold beyond that could never
 * be met; the host refuses it at load. */
/* (SPADE_REWARD_MAX and SPADE_SUCCESS_MAX are in env.h, which the DSL runtime
 * shares.) */

/* One transition. obs points into host-owned memory, valid until the next call. */
typedef struct spade_step_result {
    const char *obs; /* observation text (NUL-terminated) */
    size_t obs_len;
    double reward; /* finite, within +-SPADE_REWARD_MAX (else the step is SPADE_HOST_BAD_REWARD) */
    int terminated; /* the task ended (the environment called finish) */
    int truncated; /* max_steps reached without termination */
    int success; /* episode return so far >= info.success (meaningful when done) */
    double episode_return;
} spade_step_result;

typedef struct spade_host spade_host;

/* Resolves the environment's symbols and validates them: ABI version, name
 * (non-empty, [a-z0-9_-]), description, reset/step/hint/state_size present,
 * state_size <= SPADE_STATE_MAX, params (unique names, min <= def <= max,
 * int type for int) and tools (parseable signature, see core/tools). Fills a
 * message naming what is wrong on failure. Returns 0 or -1. */
int spade_host_new(spade_host **out, spade_symbol_fn sym, void *sym_ctx, char *err, size_t errlen);
void spade_host_free(spade_host *h);
/* Poisons fresh memory before every call into the environment (seed 0, the
 * default, = off): the 32 KiB of stack the call is about to use and the 256
 * bytes after the action's NUL are filled with a pattern of seed and the
 * instance id, so an environment that reads uninitialised locals (or past its
 * action) sees different bytes in two instances and fails the checker's
 * determinism checks (core/check.c), where without poison both would read
 * the same leftovers. */
void spade_host_set_poison(spade_host *h, uint64_t seed);
const spade_env_info *spade_host_info(const spade_host *h);

/* "key=value,key=value" (may be NULL or "") -> values[n_params] in declaration
 * order, defaults filled in. Unknown key, bad number, out of [min,max], or a
 * non-integer for an int param: -1 with a message naming the key. */
int spade_params_parse(const spade_env_info *info, const char *spec, double *values, char *err, size_t errlen);

/* Instances: each has its own state, param values, RNG and step counter.
 * Returns the new instance id (>= 0) or -1 (out of memory, state too large). */
int spade_host_add_instance(spade_host *h, const double *param_values /* [n_params] or NULL=defaults */);
int spade_host_num_instances(const spade_host *h);

/* Zeroes the state, seeds the RNG from seed, calls reset. */
spade_host_status spade_host_reset(spade_host *h, int inst, uint64_t seed, spade_step_result *out);
/* A tool call (when the environment declares tools and the action is one) is
 * dispatched to the tool (core/tools); any other action goes to step. Both
 * count as a step. Stepping a finished episode is SPADE_HOST_BAD_CALL. */
spade_host_status spade_host_step(spade_host *h, int inst, const char *action, size_t len, spade_step_result *out);
/* The hint / the reference action for the instance's current state. text points
 * into host-owned memory, valid until the next call. solve on an environment
 * without SOLVE returns BAD_CALL. */
spade_host_status spade_host_hint(spade_host *h, int inst, const char **text, size_t *len);
spade_host_status spade_host_solve(spade_host *h, int inst, const char **text, size_t *len);

/* The rules for the strings and numbers of spade_env_info, shared by the host
 * (checking what an environment declares) and the parent (checking the info a
 * worker sends back, since the worker runs environment code and could forge
 * it). ASCII only, whatever the locale. */
int spade_info_name_ok(const char *s); /* non-empty [a-z0-9_-]+: env names and families */
int spade_info_c_ident_ok(const char *s); /* a C identifier: param and tool names */
int spade_info_one_line_ok(const char *s); /* non-empty, no control byte but tab */
int spade_info_whole_int(double v); /* finite, whole, fits an int */

#endif /* SPADE_HOST_H */
