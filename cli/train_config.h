/* train_config.h — `spade train`'s config: the keys of a run's .ini (docs/train.md,
 * docs/selfplay.md), read with inih into one struct, every key validated and
 * every error naming the file, the line and the key.
 * What it is not: the run (cmd_train.c) or its directory (run_dir.c); cli only.
 */
#ifndef SPADE_CLI_TRAIN_CONFIG_H
#define SPADE_CLI_TRAIN_CONFIG_H

#include <stdint.h>

#include "agent/pool.h"
#include "agent/rl.h"
#include "designer/template.h"
#include "policy/policy.h"
#include "selfplay/loop.h"

#define TR_MAX_LIST 64

typedef struct tr_config {
    char dir[2048]; /* run.dir */
    int iterations; /* run.iterations */
    uint64_t seed; /* run.seed */
    int checkpoint_every; /* run.checkpoint_every */
    spade_gpt_config gpt;
    int have_gpt_keys;
    char init[2048]; /* policy.init: a checkpoint to start from */
    char model[2048]; /* policy.model: a pretrained model (known NAME or PATH.gguf) to start from */
    char specs[TR_MAX_LIST][512];
    int n_specs;
    char dirs[TR_MAX_LIST][2048];
    int n_dirs;
    int designer; /* designer.enabled */
    /* pool.curriculum = adaptive: one param of each environment moves over levels */
    int curriculum, cur_levels, cur_window;
    double cur_up, cur_down;
    char cur_param[64]; /* curriculum_param = NAME: every environment that has it */
    /* curriculum_param = ENV:NAME (repeatable): that environment's own, before NAME */
    char cur_env[SPADE_POOL_MAX][64], cur_env_param[SPADE_POOL_MAX][64];
    int n_cur_env;
    spade_rl_opts rl;
    spade_selfplay_opts sp;
    char corpus_dirs[TR_MAX_LIST][2048];
    int n_corpus;
    int eval_every, eval_episodes; /* eval.every (0 = never), eval.episodes (8): the held-out suite */
    char source_dir[2048]; /* designer.files: designer.source = files */
    int source_files;
    int source_template; /* designer.source = template */
    char tpl_paths[TR_MAX_LIST][2048]; /* designer.template (repeatable, or a comma-separated list) */
    int n_tpl;
    spade_template *tpl[TR_MAX_LIST]; /* loaded by load_config */
    /* designer.source = remote: [designer.policy] backend = remote and its keys (docs/scale.md) */
    int source_remote;
    int source_set, designer_train_set; /* [designer] source / train given (not defaults) */
    int dpolicy_remote; /* [designer.policy] backend = remote */
    char r_url[1024], r_model[512], r_key_env[128];
    int r_concurrency, r_retries;
    double r_timeout_s;
    char base[2048]; /* the config file's directory: relative paths are resolved against it */
    char msg[600];
} tr_config;

/* Reads the config at path into c (defaults first). base: where its relative paths point from
 * (NULL: the config's own directory). CLI_OK, or the exit code with the message printed. */
int cli_train_config_load(const char *path, const char *base, tr_config *c);
/* 0 when the two files hold the same bytes, else the first line where they differ (1-based). */
int cli_train_config_differs(const char *a, const char *b);

#endif /* SPADE_CLI_TRAIN_CONFIG_H */
