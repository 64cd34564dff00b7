/* curriculum.h — pool.curriculum = adaptive: one difficulty param of each pool
 * environment moves over levels as the agent's success on it goes up or down.
 *
 * What it is: each pool environment that declares the curriculum's param gets
 * a level in 0..levels-1 (start 0); the param is min + level / (levels - 1) *
 * (max - min) (whole numbers for an int param), over what the spec says.
 * After every iteration that played it, its success joins a window; once the
 * window holds `window` iterations, a mean >= up raises the level and a mean
 * <= down lowers it, and the window starts again either way (consecutive
 * windows of that many iterations, never a longer one). The levels and
 * windows are written into the run's state file as lines and read back on
 * resume, so a resumed run goes on from them.
 * What it is not: the config's parsing (cli/train_config.c) or the run's
 * state file (cli/run_dir.c): it only formats and reads its own lines.
 */
#ifndef SPADE_CURRICULUM_H
#define SPADE_CURRICULUM_H

#include <stddef.h>

#include "agent/pool.h"
#include "agent/rl.h"
#include "sandbox/sandbox.h"

typedef struct spade_curriculum_opts {
    int levels, window; /* curriculum_levels (5), curriculum_window (2) */
    double up, down; /* curriculum_up (0.8), curriculum_down (0.2) */
    const char *param; /* curriculum_param = NAME: every environment that has it, or "" */
    const char *const *env, *const *env_param; /* curriculum_param = ENV:NAME entries: that env's own */
    int n_env;
} spade_curriculum_opts;

typedef struct spade_curriculum {
    spade_curriculum_opts o;
    int known[SPADE_POOL_MAX]; /* 0 not looked at, 1 has the param, -1 has not */
    double lo[SPADE_POOL_MAX], hi[SPADE_POOL_MAX];
    int is_int[SPADE_POOL_MAX], level[SPADE_POOL_MAX], n[SPADE_POOL_MAX];
    double sum[SPADE_POOL_MAX];
    char params[SPADE_POOL_MAX][SPADE_SPEC_PARAMS_MAX];
    const char *ptr[SPADE_POOL_MAX]; /* per pool entry: the params to play it with, or NULL (its spec's) */
} spade_curriculum;

/* Sets every level and window to its start. */
void spade_curriculum_init(spade_curriculum *cu, const spade_curriculum_opts *o);
/* Looks at the pool's environments not seen yet (loading each once in the sandbox to read its
 * param's range) and fills cu->ptr with each one's params at its level. A misspelt ENV:NAME is
 * reported on stderr once and moves nothing. */
void spade_curriculum_prepare(spade_curriculum *cu, spade_sandbox *sb, const spade_pool *pool);
/* Adds an iteration's per-environment success; a full window moves the level. */
void spade_curriculum_update(spade_curriculum *cu, const spade_rl_metrics *m);
/* The lines "curriculum I LEVEL N SUM\n" of every environment that has the param, appended to
 * buf[*len..cap) (as much as fits). */
void spade_curriculum_state_lines(const spade_curriculum *cu, char *buf, size_t cap, int *len);
/* Reads one such line back; other lines are ignored. */
void spade_curriculum_state_read(spade_curriculum *cu, const char *line);

#endif /* SPADE_CURRICULUM_H */
