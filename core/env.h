/* env.h — the environment ABI of spade, installed as <spade/env.h>.
 *
 * What it is: the contract between one compiled environment and the runtime
 * that hosts it. An environment is a C file; compiled (by libtcc inside a
 * sandboxed worker, or by gcc for tests and benchmarks) it exports the symbols
 * listed below, and the runtime finds them by name.
 * What it is not: the way people write environments (that is the DSL,
 * <spade/dsl.h>, whose macros produce these symbols), nor the runtime itself.
 *
 * The model is Gymnasium's, with text for observations and actions:
 *   reset   -> first observation                 (deterministic in the seed)
 *   step    -> observation, reward, terminated   (the task ended)
 *   the runtime adds truncated                   (max_steps reached)
 *   hint    -> privileged text that helps without handing over the answer
 *   solve   -> a reference action (optional)
 *
 * Exported symbols (C linkage, global; declared at the end of this file, so a
 * definition of the wrong type is a compile error rather than a crash at load):
 *   const spade_env_meta spade_meta;         name, description, limits
 *   struct spade_state *spade_S;             the runtime points this at the
 *                                            instance's state before every call
 *   unsigned long spade_state_size(void);    bytes of state; zeroed by the runtime
 *   void spade_reset(void);                  say() the first observation
 *   void spade_step(const char *action, unsigned long len);
 *                                            say() the observation; reward()/finish()
 *   void spade_hint(void);                   say() the hint
 *   void spade_solve(void);                  optional: act() a reference action
 *   spade_param_def spade_param_<k>;         k in [0, SPADE_MAX_DECLS): difficulty knobs
 *   spade_tool_def  spade_tool_<k>;          k in [0, SPADE_MAX_DECLS): callable tools
 *
 * Output goes through the runtime helpers (say, act, reward, finish, ... see
 * <spade/dsl.h>), never through memory the environment returns, so a hostile
 * environment cannot hand the runtime a bad pointer. Randomness comes only from
 * the runtime's seeded generator; an environment sees no time, file or network.
 *
 * Dependencies: none beyond <stddef.h>. Under the JIT there are no system
 * headers at all (-nostdinc), so the JIT defines SPADE_JIT and we declare the
 * few types ourselves.
 */
#ifndef SPADE_ENV_H
#define SPADE_ENV_H

#ifdef SPADE_JIT
typedef unsigned long size_t;
#else
#include <stddef.h>
#endif

#define SPADE_ENV_ABI 1

/* Limits the runtime enforces (an environment that exceeds them fails). */
#define SPADE_MAX_DECLS 64 /* spade_param_<k> / spade_tool_<k> indices probed */
#define SPADE_OBS_MAX (64 * 1024) /* bytes of one observation, hint or solve action */
#define SPADE_ACTION_MAX (1024 * 1024) /* bytes of one action handed to step */
/* The most one step may reward, in magnitude (reward() of NaN, inf or more
 * fails the step: core/host.h), and the most a success threshold may be. */
#define SPADE_REWARD_MAX 1e9
#define SPADE_SUCCESS_MAX 1e15
#define SPADE_STATE_MAX (16 * 1024 * 1024) /* bytes of one instance's state */
#define SPADE_DEFAULT_MAX_STEPS 100
#define SPADE_DEFAULT_SUCCESS 1.0

/* Metadata. Zero fields take the defaults above. */
typedef struct spade_env_meta {
    int abi; /* SPADE_ENV_ABI the environment was written against */
    const char *name; /* short identifier, [a-z0-9_-]+ */
    const char *description; /* one line */
    const char *family; /* grouping for listings: "grid", "tools", "math", "logic", ... */
    int max_steps; /* steps before the runtime truncates the episode */
    double success; /* an episode succeeds when its return >= success */
} spade_env_meta;

typedef enum spade_param_type {
    SPADE_PARAM_INT = 1, /* stored in an int */
    SPADE_PARAM_REAL = 2, /* stored in a double */
} spade_param_type;

/* One difficulty knob, set at instantiation as `file.c:name=value,...`. The
 * runtime validates the value against [min, max] and writes it through
 * `value` before each call into the environment. */
typedef struct spade_param_def {
    const char *name;
    int type; /* spade_param_type */
    void *value; /* int * or double *, matching type */
    double def, min, max;
    const char *doc; /* may be "" */
} spade_param_def;

/* One tool the agent may call as `name(arg, ...)`. `signature` is C-like:
 * "int (int amount, const char *to)"; the types are int, long, double, bool
 * and strings (const char *), and void for the return. The runtime parses and
 * type-checks the call and invokes fn with those arguments (via libffi); the
 * result, printed, plus anything said, becomes the observation. */
typedef struct spade_tool_def {
    const char *name;
    const char *signature; /* "ret (args)" */
    const char *description; /* one line */
    void *fn;
} spade_tool_def;

/* The symbols an environment exports (the DSL's macros define them; the
 * runtime finds them by name). struct spade_state is the environment's STATE,
 * complete only in its own file. spade_solve is optional; spade_param_<k> and
 * spade_tool_<k> are named by a counter and so cannot be declared here. */
struct spade_state;
extern const spade_env_meta spade_meta;
extern struct spade_state *spade_S;
size_t spade_state_size(void);
void spade_reset(void);
void spade_step(const char *action, size_t action_len);
void spade_hint(void);
void spade_solve(void);

#endif /* SPADE_ENV_H */
