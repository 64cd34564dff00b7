/* cmd_train.c — `spade train CONFIG` and `spade train RUN_DIR`: agent RL on a
 * fixed pool of environments ([designer] enabled = false), with a run
 * directory, JSONL metrics per iteration, a progress line on a terminal,
 * atomic checkpoints, and resume after SIGINT or kill -9 with nothing lost.
 *
 * What it is: the command and the run directory:
 *   RUN/config.ini          the config the run was started with (resume reads it)
 *   RUN/config.base         the directory that config was in: its relative paths
 *                           ([pool] dirs, [policy] init) still mean the same on resume
 *   RUN/policy-K.ckpt       the policy after iteration K (the latest only)
 *   RUN/state               "iteration K" and the checkpoint's name (written
 *                           atomically after the checkpoint)
 *   RUN/train.jsonl         one JSON object per completed iteration
 * An iteration's log line is written before its checkpoint; a resumed run
 * drops log lines past the checkpoint it resumes from and plays them again,
 * and because an iteration depends only on the run seed, its number and the
 * policy (agent/rl.h), it plays them exactly as before.
 * With [designer] enabled = true it runs self-play instead (selfplay/loop.h):
 * the designer writes environments, the gates judge them, the agent plays the
 * valid ones with and without their hint, both roles train; RUN/spade.db is
 * the archive (rolled back on resume to the last completed iteration).
 * What it is not: library code (it prints and owns the process).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/pool.h"
#include "agent/eval.h"
#include "agent/rl.h"
#include "archive.h"
#include "killpoint.h"
#include "designer/corpus.h"
#include "designer/template.h"
#include "selfplay/loop.h"
#include "selfplay/template.h"
#include "vendi.h"
#include "cli.h"
#include "cmd_pretrain.h"
#include "heldout.h"
#include "policy/models.h"
#include "policy/policy.h"
#include "policy/pretrained.h"

#define MAX_LIST 64

typedef struct tr_config {
    char dir[2048];      /* run.dir */
    int iterations;      /* run.iterations */
    uint64_t seed;       /* run.seed */
    int checkpoint_every; /* run.checkpoint_every */
    spade_gpt_config gpt;
    int have_gpt_keys;
    char init[2048];     /* policy.init: a checkpoint to start from */
    char model[2048];    /* policy.model: a pretrained model (known NAME or PATH.gguf) to start from */
    char specs[MAX_LIST][512];
    int n_specs;
    char dirs[MAX_LIST][2048];
    int n_dirs;
    int designer;        /* designer.enabled */
    /* pool.curriculum = adaptive: one param of each environment moves over levels */
    int curriculum, cur_levels, cur_window;
    double cur_up, cur_down;
    char cur_param[64];  /* curriculum_param = NAME: every environment that has it */
    /* curriculum_param = ENV:NAME (repeatable): that environment's own, before NAME */
    char cur_env[SPADE_POOL_MAX][64], cur_env_param[SPADE_POOL_MAX][64];
    int n_cur_env;
    spade_rl_opts rl;
    spade_selfplay_opts sp;
    char corpus_dirs[MAX_LIST][2048];
    int n_corpus;
    int eval_every, eval_episodes; /* eval.every (0 = never), eval.episodes (8): the held-out suite */
    char source_dir[2048]; /* designer.files: designer.source = files */
    int source_files;
    int source_template;   /* designer.source = template */
    char tpl_paths[MAX_LIST][2048]; /* designer.template (repeatable, or a comma-separated list) */
    int n_tpl;
    spade_template *tpl[MAX_LIST];  /* loaded by load_config */
    char base[2048];     /* the config file's directory: relative paths are resolved against it */
    char msg[600];
} tr_config;

static void defaults(tr_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "runs/train");
    c->iterations = 20;
    c->seed = 1;
    c->checkpoint_every = 1;
    spade_gpt_config_default(&c->gpt);
    spade_rl_opts_default(&c->rl);
    spade_selfplay_opts_default(&c->sp);
    c->eval_episodes = 8;
    c->cur_levels = 5;
    c->cur_window = 2;
    c->cur_up = 0.8;
    c->cur_down = 0.2;
}

static int parse_num(const char *v, double lo, double hi, int integer, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi) || (integer && x != floor(x))) return -1;
    *out = x;
    return 0;
}

static void resolve(const tr_config *c, const char *v, char *out, size_t cap) {
    size_t b = strlen(c->base), n = strlen(v);
    if (v[0] == '/' || !b || b + 1 + n >= cap) {
        snprintf(out, cap, "%s", v);
        return;
    }
    memcpy(out, c->base, b);
    out[b] = '/';
    memcpy(out + b + 1, v, n + 1);
}

static int on_key(void *user, const char *section, const char *name, const char *value) {
    tr_config *c = user;
    double x;
    if (c->msg[0]) return 1;
#define FAIL(...) return snprintf(c->msg, sizeof c->msg, __VA_ARGS__), 0
#define NUMK(sec, key, lo, hi, integer, dst)                                                                      \
    if (!strcmp(section, sec) && !strcmp(name, key)) {                                                        \
        if (parse_num(value, lo, hi, integer, &x))                                                            \
            FAIL("[%s] %s = '%s': expected %s in [%g, %g]", sec, key, value, integer ? "an integer" : "a number", \
                 (double)(lo), (double)(hi));                                                                 \
        dst;                                                                                                  \
        return 1;                                                                                             \
    }
    if (!strcmp(section, "run") && !strcmp(name, "dir")) {
        if (!*value) FAIL("[run] dir is empty");
        resolve(c, value, c->dir, sizeof c->dir);
        return 1;
    }
    NUMK("run", "iterations", 1, 1e7, 1, c->iterations = (int)x)
    NUMK("run", "seed", 0, 9007199254740992.0, 1, c->seed = (uint64_t)x; c->rl.seed = c->seed)
    NUMK("run", "checkpoint_every", 1, 1e7, 1, c->checkpoint_every = (int)x)
    if (!strcmp(section, "policy")) {
        if (!strcmp(name, "init")) {
            resolve(c, value, c->init, sizeof c->init);
            return 1;
        }
        if (!strcmp(name, "model")) {
            if (!*value) FAIL("[policy] model is empty");
            /* a known name stays a name (the model cache); a path is the config's */
            if (spade_model_find(value)) snprintf(c->model, sizeof c->model, "%s", value);
            else resolve(c, value, c->model, sizeof c->model);
            return 1;
        }
        char e[400];
        if (spade_gpt_config_set(&c->gpt, name, value, e, sizeof e)) FAIL("[policy] %s", e);
        c->have_gpt_keys = 1;
        return 1;
    }
    if (!strcmp(section, "pool")) {
        if (!strcmp(name, "envs")) {
            if (c->n_specs == MAX_LIST) FAIL("[pool] more than %d envs", MAX_LIST);
            if (!*value || strlen(value) >= sizeof c->specs[0]) FAIL("[pool] envs = '%s': empty or too long", value);
            snprintf(c->specs[c->n_specs++], sizeof c->specs[0], "%s", value);
            return 1;
        }
        if (!strcmp(name, "dirs")) {
            if (c->n_dirs == MAX_LIST) FAIL("[pool] more than %d dirs", MAX_LIST);
            resolve(c, value, c->dirs[c->n_dirs++], sizeof c->dirs[0]);
            return 1;
        }
        if (!strcmp(name, "curriculum")) {
            if (!strcmp(value, "fixed")) c->curriculum = 0;
            else if (!strcmp(value, "adaptive")) c->curriculum = 1;
            else FAIL("[pool] curriculum = '%s': expected fixed or adaptive", value);
            return 1;
        }
        if (!strcmp(name, "curriculum_param")) {
            const char *colon = strchr(value, ':');
            if (!colon) {
                if (!*value || strlen(value) >= sizeof c->cur_param)
                    FAIL("[pool] curriculum_param = '%s': a param name, or ENV:NAME", value);
                snprintf(c->cur_param, sizeof c->cur_param, "%s", value);
                return 1;
            }
            size_t el = (size_t)(colon - value);
            if (!el || el >= sizeof c->cur_env[0] || !colon[1] || strlen(colon + 1) >= sizeof c->cur_env_param[0] ||
                strchr(colon + 1, ':'))
                FAIL("[pool] curriculum_param = '%s': expected ENV:NAME (an environment's name, one of its params)", value);
            for (int k = 0; k < c->n_cur_env; k++)
                if (strlen(c->cur_env[k]) == el && !strncmp(c->cur_env[k], value, el))
                    FAIL("[pool] curriculum_param = '%s': %.*s already has one", value, (int)el, value);
            if (c->n_cur_env >= SPADE_POOL_MAX) FAIL("[pool] curriculum_param: at most %d ENV:NAME entries", SPADE_POOL_MAX);
            snprintf(c->cur_env[c->n_cur_env], sizeof c->cur_env[0], "%.*s", (int)el, value);
            snprintf(c->cur_env_param[c->n_cur_env++], sizeof c->cur_env_param[0], "%s", colon + 1);
            return 1;
        }
    }
    NUMK("pool", "curriculum_levels", 2, 100, 1, c->cur_levels = (int)x)
    NUMK("pool", "curriculum_window", 1, 1000, 1, c->cur_window = (int)x)
    NUMK("pool", "curriculum_up", 0, 1, 0, c->cur_up = x)
    NUMK("pool", "curriculum_down", 0, 1, 0, c->cur_down = x)
    NUMK("agent", "envs", 1, SPADE_RL_MAX_ENVS, 1, c->rl.envs_per_iter = (int)x)
    NUMK("agent", "plays", 2, 4096, 1, c->rl.plays = (int)x)
    NUMK("agent", "max_live", 1, 4096, 1, c->rl.max_live = (int)x)
    NUMK("agent", "max_action_tokens", 1, 4096, 1, c->rl.max_action_tokens = (int)x)
    NUMK("agent", "temperature", 0, 10, 0, c->rl.temperature = (float)x)
    NUMK("agent", "top_p", 1e-6, 1, 0, c->rl.top_p = (float)x)
    NUMK("agent", "workers", 1, 64, 1, c->rl.workers = (int)x)
    if (!strcmp(section, "agent") && !strcmp(name, "advantage")) {
        if (!strcmp(value, "zscore")) c->rl.zscore = 1;
        else if (!strcmp(value, "mean")) c->rl.zscore = 0;
        else FAIL("[agent] advantage = '%s': expected zscore or mean", value);
        return 1;
    }
    NUMK("grpo", "lr", 0, 1, 0, c->rl.adamw.lr = (float)x)
    NUMK("grpo", "weight_decay", 0, 1, 0, c->rl.adamw.weight_decay = (float)x)
    NUMK("grpo", "grad_clip", 0, 1e6, 0, c->rl.adamw.grad_clip = (float)x)
    NUMK("grpo", "eps_low", 0, 0.999, 0, c->rl.grpo.eps_low = (float)x)
    NUMK("grpo", "eps_high", 0, 100, 0, c->rl.grpo.eps_high = (float)x)
    NUMK("grpo", "epochs", 1, 100, 1, c->rl.grpo.epochs = (int)x)
    NUMK("grpo", "minibatch", 0, 1e6, 1, c->rl.grpo.minibatch = (int)x)
    NUMK("grpo", "tis_cap", 0, 1e6, 0, c->rl.grpo.tis_cap = (float)x)
    NUMK("designer", "envs", 1, SPADE_SP_MAX_ENVS, 1, c->sp.envs = (int)x)
    NUMK("designer", "max_source_tokens", 16, 65536, 1, c->sp.max_source_tokens = (int)x)
    NUMK("designer", "temperature", 0, 10, 0, c->sp.temperature = (float)x)
    NUMK("designer", "top_p", 1e-6, 1, 0, c->sp.top_p = (float)x)
    NUMK("designer", "invalid_reward", -10, 10, 0, c->sp.invalid_reward = x)
    NUMK("designer", "max_step_ms", 0.001, 1e6, 0, c->sp.gates.max_step_ms = x)
    NUMK("designer", "novelty_max", 0, 1, 0, c->sp.gates.novelty_max = x)
    NUMK("designer", "family_window", 1, SPADE_SP_MAX_FAMILIES, 1, c->sp.family_window = (int)x)
    NUMK("designer", "gate_seeds", 2, 1000, 1, c->sp.gates.seeds = (int)x)
    NUMK("memory", "size", 1, 1e6, 1, c->sp.memory.window = (int)x)
    NUMK("selfplay", "plays", 2, 256, 1, c->sp.plays = (int)x)
    NUMK("selfplay", "repeats", 1, 128, 1, c->sp.repeats = (int)x)
    NUMK("selfplay", "pool_envs", 0, SPADE_RL_MAX_ENVS, 1, c->sp.pool_envs = (int)x)
    NUMK("eval", "every", 0, 1e7, 1, c->eval_every = (int)x)
    NUMK("eval", "episodes", 1, 100000, 1, c->eval_episodes = (int)x)
    if (!strcmp(section, "eval") && !strcmp(name, "suite")) {
        if (strcmp(value, "heldout")) FAIL("[eval] suite = '%s': the suite is heldout", value);
        return 1;
    }
    NUMK("selfplay", "regen_every", 1, 1e6, 1, c->sp.regen_every = (int)x)
    NUMK("selfplay", "replay", 0, SPADE_SP_MAX_ENVS, 1, c->sp.replay = (int)x)
#define BOOLK(sec, key, dst)                                                              \
    if (!strcmp(section, sec) && !strcmp(name, key)) {                                    \
        if (!strcmp(value, "true")) dst = 1;                                              \
        else if (!strcmp(value, "false")) dst = 0;                                        \
        else FAIL("[%s] %s = '%s': expected true or false", sec, key, value);             \
        return 1;                                                                         \
    }
    BOOLK("designer", "train", c->sp.train_designer)
    BOOLK("designer", "require_solve", c->sp.gates.require_solve)
    BOOLK("corpus", "enabled", c->sp.use_corpus)
    BOOLK("memory", "enabled", c->sp.use_memory)
    BOOLK("selfplay", "train_hint_arm", c->sp.train_hint_arm)
#undef BOOLK
    if (!strcmp(section, "designer") && !strcmp(name, "reward")) {
        int k = spade_dreward_parse(value);
        if (k < 0) FAIL("[designer] reward = '%s': expected blend, regret, solve_rate or learning_potential", value);
        c->sp.reward = (spade_dreward_kind)k;
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "invalid")) {
        if (!strcmp(value, "penalise")) c->sp.invalid_drop = 0;
        else if (!strcmp(value, "drop")) c->sp.invalid_drop = 1;
        else FAIL("[designer] invalid = '%s': expected penalise or drop", value);
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "hint")) {
        if (!strcmp(value, "embedded")) c->sp.hint_self = 0;
        else if (!strcmp(value, "self")) c->sp.hint_self = 1;
        else FAIL("[designer] hint = '%s': expected embedded (the source's HINT block) or self (the policy writes it)", value);
        return 1;
    }
    NUMK("designer", "hint_temperature", 0, 10, 0, c->sp.hint_temperature = (float)x)
    NUMK("designer", "hint_tokens", 1, 4096, 1, c->sp.hint_tokens = (int)x)
    if (!strcmp(section, "designer") && !strcmp(name, "families")) {
        c->sp.n_families = 0;
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", value);
        for (char *t = strtok(buf, ", "); t; t = strtok(NULL, ", ")) {
            if (c->sp.n_families == SPADE_SP_MAX_FAMILIES) FAIL("[designer] families: more than %d", SPADE_SP_MAX_FAMILIES);
            snprintf(c->sp.families[c->sp.n_families++], 32, "%s", t);
        }
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "source")) {
        c->source_files = c->source_template = 0;
        if (!strcmp(value, "policy")) {
        } else if (!strcmp(value, "files")) c->source_files = 1;
        else if (!strcmp(value, "template")) c->source_template = 1;
        else FAIL("[designer] source = '%s': expected policy, files or template", value);
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "template")) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", value);
        int any = 0;
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            while (*t == ' ' || *t == '\t') t++;
            size_t tl = strlen(t);
            while (tl && (t[tl - 1] == ' ' || t[tl - 1] == '\t')) t[--tl] = 0;
            if (!tl) continue;
            if (c->n_tpl == MAX_LIST) FAIL("[designer] template: more than %d templates", MAX_LIST);
            resolve(c, t, c->tpl_paths[c->n_tpl++], sizeof c->tpl_paths[0]);
            any = 1;
        }
        if (!any) FAIL("[designer] template is empty: name a template file");
        return 1;
    }
    NUMK("designer", "hole_tokens", 1, 4096, 1, c->sp.hole_tokens = (int)x)
    if (!strcmp(section, "designer") && !strcmp(name, "files")) {
        resolve(c, value, c->source_dir, sizeof c->source_dir);
        return 1;
    }
    if (!strcmp(section, "corpus") && !strcmp(name, "dirs")) {
        if (c->n_corpus == MAX_LIST) FAIL("[corpus] more than %d dirs", MAX_LIST);
        resolve(c, value, c->corpus_dirs[c->n_corpus++], sizeof c->corpus_dirs[0]);
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "enabled")) {
        if (!strcmp(value, "false")) c->designer = 0;
        else if (!strcmp(value, "true")) c->designer = 1;
        else FAIL("[designer] enabled = '%s': expected true or false", value);
        return 1;
    }
    FAIL("unknown key [%s] %s", section, name);
#undef NUMK
#undef FAIL
}

/* base: where relative paths in the config point from (NULL: the config's own directory). */
static int load_config(const char *path, const char *base, tr_config *c) {
    defaults(c);
    const char *slash = strrchr(path, '/');
    if (base) snprintf(c->base, sizeof c->base, "%s", base);
    else if (slash) snprintf(c->base, sizeof c->base, "%.*s", (int)(slash - path), path);
    struct stat st;
    if (stat(path, &st) != 0) return cli_err(CLI_FAIL, "train", "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return cli_err(CLI_FAIL, "train", "%s: a directory without config.ini is not a run", path);
    int line = ini_parse(path, on_key, c);
    if (line == -1) return cli_err(CLI_FAIL, "train", "%s: %s", path, strerror(errno ? errno : ENOENT));
    if (line != 0 || c->msg[0])
        return line > 0 ? cli_err(CLI_USAGE, "train", "%s:%d: %s", path, line, c->msg[0] ? c->msg : "syntax error")
                        : cli_err(CLI_USAGE, "train", "%s: %s", path, c->msg);
    char e[400];
    if (spade_gpt_config_validate(&c->gpt, e, sizeof e)) return cli_err(CLI_USAGE, "train", "%s: %s", path, e);
    if (c->curriculum && !c->cur_param[0] && !c->n_cur_env)
        return cli_err(CLI_USAGE, "train", "%s: [pool] curriculum = adaptive needs curriculum_param = NAME (or ENV:NAME)", path);
    if (c->curriculum && !(c->cur_down < c->cur_up))
        return cli_err(CLI_USAGE, "train", "%s: [pool] curriculum_down (%g) must be below curriculum_up (%g)", path,
                       c->cur_down, c->cur_up);
    if (c->sp.plays % c->sp.repeats)
        return cli_err(CLI_USAGE, "train", "%s: [selfplay] plays = %d is not a multiple of repeats = %d (plays / repeats seeds, each played repeats times)",
                       path, c->sp.plays, c->sp.repeats);
    if (c->source_files && !c->source_dir[0]) return cli_err(CLI_USAGE, "train", "%s: [designer] source = files needs files = DIR", path);
    if (c->source_template && !c->n_tpl)
        return cli_err(CLI_USAGE, "train", "%s: [designer] source = template needs template = FILE", path);
    for (int i = 0; c->source_template && i < c->n_tpl; i++) { /* each template read and checked now, by name */
        char te[600];
        if (spade_template_load(&c->tpl[i], c->tpl_paths[i], te, sizeof te) < 0)
            return cli_err(CLI_USAGE, "train", "%s: [designer] template: %s", path, te);
    }
    if (c->designer && c->sp.reward == SPADE_DREWARD_LEARNING_POTENTIAL && !(c->rl.adamw.lr > 0))
        return cli_err(CLI_USAGE, "train",
                       "%s: [designer] reward = learning_potential needs [grpo] lr > 0: its trial agent step would "
                       "change nothing, and every potential would be 0", path);
    c->sp.seed = c->seed;
    c->sp.rl = c->rl;
    if (c->designer && !c->n_corpus) spade_data_path("stdenv", c->corpus_dirs[c->n_corpus++], sizeof c->corpus_dirs[0]);
    if (c->designer && !c->n_specs && !c->n_dirs && !c->sp.pool_envs) return 0; /* self-play alone needs no pool */
    if (!c->n_specs && !c->n_dirs) spade_data_path("stdenv", c->dirs[c->n_dirs++], sizeof c->dirs[0]);
    if (c->rl.max_live < 1) c->rl.max_live = 1;
    return 0;
}

/* ---- files ---- */

static int write_atomic(const char *path, const char *text, size_t n) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    ssize_t w = write(fd, text, n);
    if (w != (ssize_t)n || fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *s = strrchr(dir, '/');
    if (s) *s = 0;
    int dfd = open(s ? dir : ".", O_RDONLY);
    if (dfd >= 0) fsync(dfd), close(dfd);
    return 0;
}

static int copy_file(const char *from, const char *to) {
    char *buf = NULL, e[256];
    size_t n;
    if (spade_read_source(from, &buf, &n, e, sizeof e) < 0) return -1;
    int rc = write_atomic(to, buf, n);
    free(buf);
    return rc;
}

/* The iteration the state file says is done (-1 when there is none) and its checkpoint. */
static int read_state(const char *dir, char *ckpt, size_t cap) {
    char path[4200];
    snprintf(path, sizeof path, "%s/state", dir);
    FILE *f = fopen(path, "r");
    int it = -1;
    char name[256] = "";
    if (!f) return -1;
    if (fscanf(f, "iteration %d checkpoint %255s", &it, name) != 2) it = -2;
    fclose(f);
    snprintf(ckpt, cap, "%s/%s", dir, name);
    return it;
}

/* Removes what a killed run can leave behind: checkpoints other than the
 * state's (a kill between writing the state and unlinking the old one) and
 * temporary files of an interrupted atomic write. */
static void tidy_run(const char *dir, const char *keep) {
    DIR *d = opendir(dir);
    const char *base = strrchr(keep, '/');
    base = base ? base + 1 : keep;
    if (!d) return;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        const char *n = de->d_name;
        int old_ckpt = !strncmp(n, "policy-", 7) && strstr(n, ".ckpt") && strcmp(n, base);
        if (old_ckpt || strstr(n, ".tmp.")) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, n);
            unlink(p);
        }
    }
    closedir(d);
}

/* Keeps the log lines of iterations <= last (a line past the checkpoint is played again). */
static int trim_log(const char *log, int last) {
    FILE *f = fopen(log, "r");
    if (!f) return 0;
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap), line[65536];
    while (out && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"iteration\":");
        size_t k = strlen(line);
        if (!p || atoi(p + 12) > last || line[k - 1] != '\n') continue; /* a kill mid-write leaves a line cut short */
        if (n + k + 1 > cap) {
            char *no = realloc(out, cap = 2 * (n + k + 1));
            if (!no) break;
            out = no;
        }
        memcpy(out + n, line, k);
        n += k;
    }
    fclose(f);
    int rc = out ? write_atomic(log, out, n) : -1;
    free(out);
    return rc;
}

/* ---- pool.curriculum = adaptive ----
 * Each pool environment that declares curriculum_param gets a level in
 * 0..levels-1 (start 0); the param is min + level / (levels - 1) * (max - min)
 * (whole numbers for an int param), over what the spec says. After every
 * iteration that played it, its success joins a window; once the window holds
 * curriculum_window iterations, a mean >= curriculum_up raises the level and
 * a mean <= curriculum_down lowers it, and the window starts again either way
 * (consecutive windows of that many iterations, never a longer one). The
 * levels and windows are saved with the state file, so a resumed run goes on
 * from them. */
typedef struct curriculum {
    int known[SPADE_POOL_MAX]; /* 0 not looked at, 1 has the param, -1 has not */
    double lo[SPADE_POOL_MAX], hi[SPADE_POOL_MAX];
    int is_int[SPADE_POOL_MAX], level[SPADE_POOL_MAX], n[SPADE_POOL_MAX];
    double sum[SPADE_POOL_MAX];
    char params[SPADE_POOL_MAX][SPADE_SPEC_PARAMS_MAX];
    const char *ptr[SPADE_POOL_MAX];
} curriculum;

/* The param the curriculum moves in the environment named env: its own
 * ENV:NAME entry, else the pool-wide NAME ("" when neither). */
static const char *cur_param_of(const tr_config *c, const char *env) {
    for (int k = 0; k < c->n_cur_env; k++)
        if (!strcmp(c->cur_env[k], env)) return c->cur_env_param[k];
    return c->cur_param;
}

static void cur_prepare(curriculum *cu, const tr_config *c, spade_sandbox *sb, const spade_pool *pool) {
    for (int i = 0; i < spade_pool_count(pool) && i < SPADE_POOL_MAX; i++) {
        const spade_pool_entry *pe = spade_pool_entry_at(pool, i);
        const char *param = cur_param_of(c, pe->name);
        if (!cu->known[i]) {
            spade_worker *w = NULL;
            spade_failure f;
            cu->known[i] = -1;
            if (spade_worker_load(sb, pe->path, pe->source, pe->len, &w, &f) == 0) {
                const spade_env_info *info = spade_worker_info(w);
                for (int k = 0; k < info->n_params; k++)
                    if (*param && !strcmp(info->params[k].name, param)) {
                        cu->known[i] = 1;
                        cu->lo[i] = info->params[k].min;
                        cu->hi[i] = info->params[k].max;
                        cu->is_int[i] = info->params[k].type == SPADE_PARAM_INT;
                    }
                spade_worker_free(w);
            }
            if (cu->known[i] != 1 && *param && param != c->cur_param) /* a misspelt ENV:NAME would move nothing unseen */
                fprintf(stderr, "train: [pool] curriculum_param = %s:%s: %s has no param %s; it stays as its spec says\n",
                        pe->name, param, pe->name, param);
        }
        cu->ptr[i] = NULL;
        if (cu->known[i] != 1) continue;
        double v = cu->lo[i] + (cu->hi[i] - cu->lo[i]) * cu->level[i] / (c->cur_levels - 1);
        char item[128], rest[SPADE_SPEC_PARAMS_MAX] = "";
        if (cu->is_int[i]) snprintf(item, sizeof item, "%s=%.0f", param, floor(v + 0.5));
        else snprintf(item, sizeof item, "%s=%.17g", param, v);
        /* the spec's other params, without its own value of this one */
        char copy[SPADE_SPEC_PARAMS_MAX];
        snprintf(copy, sizeof copy, "%s", pe->params);
        size_t kl = strlen(param);
        for (char *t = strtok(copy, ","); t; t = strtok(NULL, ","))
            if (!(strncmp(t, param, kl) == 0 && t[kl] == '='))
                snprintf(rest + strlen(rest), sizeof rest - strlen(rest), "%s,", t);
        snprintf(cu->params[i], sizeof cu->params[i], "%s%s", rest, item);
        cu->ptr[i] = cu->params[i];
    }
}

static void cur_update(curriculum *cu, const tr_config *c, const spade_rl_metrics *m) {
    for (int e = 0; e < m->envs; e++) {
        int i = m->env_index[e];
        if (i < 0 || i >= SPADE_POOL_MAX || cu->known[i] != 1) continue;
        cu->sum[i] += m->env_success[e];
        if (++cu->n[i] < c->cur_window) continue;
        double mean = cu->sum[i] / cu->n[i];
        if (mean >= c->cur_up && cu->level[i] < c->cur_levels - 1) cu->level[i]++;
        else if (mean <= c->cur_down && cu->level[i] > 0) cu->level[i]--;
        /* a full window starts again whether or not it moved the level: a window
         * kept open past its size becomes the mean since the last move, which a
         * slow start holds below `up` long after the policy has learned */
        cu->n[i] = 0;
        cu->sum[i] = 0;
    }
}

/* ---- the run ---- */

static volatile sig_atomic_t stop_requested;
static void on_signal(int s) {
    (void)s;
    stop_requested = 1;
}

static void pool_report(void *ctx, const char *line) {
    FILE *log = ctx;
    fprintf(stderr, "%s\n", line);
    if (log) fprintf(log, "%s\n", line);
}

/* The held-out suite, played by the policy as it is after iteration it: one
 * JSONL line {"iteration":it,"eval":{...}} (the same seeds every time). */
static int eval_heldout(FILE *log, spade_policy *p, spade_sandbox *sb, int it, int episodes, char *err, size_t errlen) {
    char dir[SPADE_PATH_MAX], **files = NULL;
    int nf = 0, rc = -1;
    if (spade_heldout_dir(dir, sizeof dir, err, errlen) < 0 || spade_heldout_files(dir, &files, &nf, err, errlen) < 0)
        return -1;
    spade_ep_spec *specs = calloc((size_t)nf, sizeof *specs);
    char **srcs = calloc((size_t)nf, sizeof *srcs);
    spade_eval_row *rows = calloc((size_t)nf, sizeof *rows);
    int n = 0;
    for (int i = 0; specs && srcs && rows && i < nf; i++) {
        size_t len;
        if (spade_read_source(files[i], &srcs[n], &len, err, errlen) < 0) goto done;
        specs[n] = (spade_ep_spec){files[i], srcs[n], len, NULL, episodes};
        n++;
    }
    spade_eval_opts o;
    spade_eval_opts_default(&o);
    o.episodes = episodes;
    o.references = 0;
    o.seed = 777;
    if (spade_eval(p, sb, specs, n, &o, rows, err, errlen) < 0) goto done;
    double sum = 0;
    fprintf(log, "{\"iteration\":%d,\"eval\":{\"suite\":\"heldout\",\"episodes\":%d,\"per_env\":{", it, episodes);
    for (int i = 0; i < n; i++) {
        const char *b = strrchr(files[i], '/');
        fprintf(log, "%s\"%.*s\":%.4f", i ? "," : "", (int)strcspn(b + 1, "."), b + 1, rows[i].policy.success);
        sum += rows[i].policy.success;
    }
    fprintf(log, "},\"success\":%.6f}}\n", n ? sum / n : 0);
    rc = 0;
done:
    for (int i = 0; i < nf; i++) free(files[i]);
    for (int i = 0; srcs && i < n; i++) free(srcs[i]);
    free(files);
    free(srcs);
    free(specs);
    free(rows);
    return rc;
}

static void write_metrics(FILE *f, const spade_rl_metrics *m, const spade_pool *pool, const char *const *ovr) {
    fprintf(f,
            "{\"iteration\":%d,\"envs\":%d,\"episodes\":%ld,\"success\":%.6f,\"mean_return\":%.6f,\"mean_steps\":%.4f,"
            "\"failed\":%ld,\"context_full\":%ld,\"truncated\":%ld,\"samples\":%d,\"groups\":%d,\"dropped_groups\":%d,"
            "\"trained_tokens\":%ld,\"sampled_tokens\":%ld,\"turns\":%ld,\"loss\":%.6g,\"grad_norm\":%.6g,"
            "\"clip_frac\":%.6g,\"mean_ratio\":%.6g,\"updated\":%s,\"per_env\":{",
            m->iteration, m->envs, m->episodes, m->success_rate, m->mean_return, m->mean_steps, m->failed,
            m->context_full, m->truncated, m->n_samples, m->n_groups, m->n_dropped, m->trained_tokens,
            m->sampled_tokens, m->turns, m->loss, m->grad_norm, m->clip_frac, m->mean_ratio,
            m->updated ? "true" : "false");
    for (int e = 0; e < m->envs; e++) {
        const spade_pool_entry *pe = spade_pool_entry_at(pool, m->env_index[e]);
        const char *pp = ovr && ovr[m->env_index[e]] ? ovr[m->env_index[e]] : pe->params;
        fprintf(f, "%s\"%s%s%s\":%.4f", e ? "," : "", pe->name, pp[0] ? ":" : "", pp, m->env_success[e]);
    }
    fprintf(f, "},\"t_play\":%.3f,\"t_update\":%.3f}\n", m->t_play, m->t_update);
}

void cli_usage_train(FILE *out) {
    fprintf(out,
            "usage: spade train\n"
            "       spade train CONFIG\n"
            "       spade train RUN_DIR\n"
            "\n"
            "With no argument: the embedded default (runs/default, or $SPADE_TRAIN_DIR): a short\n"
            "base pretraining on stdenv, then a few self-play iterations; minutes on a laptop CPU.\n"
            "\n"
            "Trains the policy as an agent on a fixed pool of environments (GRPO over masked\n"
            "multi-turn episodes: each iteration plays [agent] plays episodes of [agent] envs\n"
            "environments on distinct seeds and makes one update on the actions' tokens).\n"
            "CONFIG is an .ini with [run] dir, iterations, seed; [policy] init = CKPT or the\n"
            "policy keys; [pool] envs = SPEC (repeatable) and dirs = DIR (every .c; changed and\n"
            "new files join at the next iteration); [agent] envs, plays, max_action_tokens,\n"
            "max_live, temperature, top_p, advantage = zscore|mean; [grpo] lr, epochs,\n"
            "minibatch, eps_low, eps_high, tis_cap (docs/train.md). [designer] enabled = true\n"
            "runs self-play instead: the designer's, corpus and memory keys are in docs/selfplay.md.\n"
            "[designer] source = template, template = FILE, hole_tokens = N: the policy fills only\n"
            "the @@ holes of an environment template (a loop a small policy can move; docs/selfplay.md).\n"
            "The run directory gets config.ini, train.jsonl (one object per iteration), the\n"
            "latest checkpoint and a state file. spade train RUN_DIR resumes a run from its\n"
            "last completed iteration (after Ctrl-C or kill -9) and lands where the\n"
            "uninterrupted run would have.\n"
            "Exit status: 0 done, 1 failure or interrupted, 2 bad config.\n");
}

/* ---- `spade train` with no argument: the embedded default ---- */

/* A short base pretraining on stdenv (a BPE trained on it first), then a few
 * self-play iterations whose agent also trains on two stdenv environments per
 * iteration; on 2 CPU cores it ends in a few minutes. SPADE_TRAIN_QUICK=1
 * shrinks both (the test suite runs the whole path with it). */
static const char DEFAULT_PRETRAIN[] =
    "; written by `spade train` (the embedded default): the base policy's pretraining\n"
    "[policy]\nlayers = 2\nheads = 4\nwidth = 96\ncontext = 640\nbackend = auto\nseed = 1\ntokenizer = bpe\n"
    "[pretrain]\ndata = %s\nout = %s/base\nsteps = %d\nbatch = 8\nseq = 128\nlr = 2e-3\nwarmup = 20\n"
    "checkpoint_every = 100\nsample_every = 100000\ntokenizer_vocab = 2048\nseed = 1\n";
static const char DEFAULT_SELFPLAY[] =
    "; written by `spade train` (the embedded default): self-play from the base policy\n"
    "[run]\ndir = .\niterations = %d\nseed = 1\n"
    "[policy]\ninit = base/policy.ckpt\n"
    "[designer]\nenabled = true\nenvs = 4\nmax_source_tokens = 320\ntemperature = 0.8\nmax_step_ms = 50\n"
    "[selfplay]\nplays = 6\npool_envs = 2\n"
    "[pool]\ndirs = %s\n"
    "[agent]\nplays = 6\nmax_action_tokens = 16\n"
    "[grpo]\nlr = 3e-4\n";

static int train_default(spade_sandbox *sb) {
    const char *quick = getenv("SPADE_TRAIN_QUICK");
    int q = quick && *quick && strcmp(quick, "0");
    const char *dir = getenv("SPADE_TRAIN_DIR");
    char run[2048], stdenv[2048], path[4200], text[4096];
    snprintf(run, sizeof run, "%s", dir && *dir ? dir : "runs/default");
    spade_data_path("stdenv", stdenv, sizeof stdenv);
    snprintf(path, sizeof path, "%s/state", run);
    if (access(path, F_OK) == 0) { /* a default run that was stopped: go on with it */
        printf("spade train: resuming the default run in %s\n", run);
        char *args[] = {"train", run, NULL};
        return cli_train(sb, 2, args);
    }
    if (cli_mkdir_p(run) < 0) return cli_err(CLI_FAIL, "train", "%s: %s", run, strerror(errno));
    printf("spade train: the embedded default in %s: a short base pretraining on %s, then self-play\n", run, stdenv);
    snprintf(path, sizeof path, "%s/base/policy.ckpt", run);
    if (access(path, F_OK) != 0 || access(run, F_OK) != 0) {
        char abs[4096];
        if (!realpath(run, abs)) snprintf(abs, sizeof abs, "%s", run);
        int n = snprintf(text, sizeof text, DEFAULT_PRETRAIN, stdenv, abs, q ? 8 : 400);
        snprintf(path, sizeof path, "%s/pretrain.ini", run);
        if (write_atomic(path, text, (size_t)n) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
        char *args[] = {"pretrain", path, NULL};
        int rc = spade_cmd_pretrain(2, args);
        if (rc) return rc;
    }
    int n = snprintf(text, sizeof text, DEFAULT_SELFPLAY, q ? 2 : 6, stdenv);
    snprintf(path, sizeof path, "%s/selfplay.ini", run);
    if (write_atomic(path, text, (size_t)n) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
    char *args[] = {"train", path, NULL};
    int rc = cli_train(sb, 2, args);
    char ckpt[4400] = "";
    read_state(run, ckpt, sizeof ckpt);
    if (rc == CLI_OK)
        printf("\nWhat happened: a %s base policy was pretrained on stdenv, then it wrote environments as the\n"
               "designer (at this size none has been seen to compile: see failed_at in train.jsonl),\n"
               "and trained as the agent on the valid ones and on stdenv. Look at the run:\n"
               "  ./spade report %s              plots and a summary of the run (report/report.md)\n"
               "  ./spade archive list %s        every environment it wrote, by first failed gate\n"
               "  ./spade eval %s --suite heldout    the agent on the held-out suite\n"
               "Run longer: raise [run] iterations in %s/config.ini and resume with\n"
               "  ./spade train %s\n"
               "Train your own: docs/selfplay.md (self-play) and docs/train.md (a fixed pool).\n"
               "A designer that does learn at this size fills only a template's holes: [designer]\n"
               "source = template (configs/default-template.ini, from this base; docs/selfplay.md).\n",
               q ? "tiny" : "small", run, run, ckpt, run, run);
    return rc;
}

int cli_train(spade_sandbox *sb, int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        cli_usage_train(stdout);
        return CLI_OK;
    }
    if (argc == 1) return train_default(sb);
    if (argc != 2) return cli_err(CLI_USAGE, "train", "give a CONFIG file or a RUN_DIR (spade train --help)");
    static tr_config c;
    char cfg_path[4200], err[2048], path0[4400];
    struct stat st;
    int resume_dir = stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode);
    if (resume_dir) snprintf(cfg_path, sizeof cfg_path, "%s/config.ini", argv[1]);
    else snprintf(cfg_path, sizeof cfg_path, "%s", argv[1]);
    if (resume_dir && stat(cfg_path, &st) != 0)
        return cli_err(CLI_FAIL, "train", "%s: not a run directory (no config.ini)", argv[1]);
    char base[4200] = "", *base_arg = NULL;
    if (resume_dir) { /* relative paths keep meaning what they meant when the run started */
        snprintf(path0, sizeof path0, "%s/config.base", argv[1]);
        FILE *bf = fopen(path0, "r");
        if (bf && fgets(base, sizeof base, bf)) {
            base[strcspn(base, "\n")] = 0;
            base_arg = base;
        }
        if (bf) fclose(bf);
    }
    int rc = load_config(cfg_path, base_arg, &c);
    if (rc) return rc;
    if (resume_dir) snprintf(c.dir, sizeof c.dir, "%s", argv[1]); /* the run is where it is now */
    size_t dl = strlen(c.dir);
    while (dl > 2 && !strcmp(c.dir + dl - 2, "/.")) c.dir[dl -= 2] = 0; /* "RUN/." (dir = . in RUN's own config) is RUN */
    if (cli_mkdir_p(c.dir) < 0) return cli_err(CLI_FAIL, "train", "%s: %s", c.dir, strerror(errno));
    char path[4400], ckpt[4400], log_path[4400];
    snprintf(path, sizeof path, "%s/config.ini", c.dir);
    snprintf(log_path, sizeof log_path, "%s/train.jsonl", c.dir);
    int done = read_state(c.dir, ckpt, sizeof ckpt);
    if (done == -2) return cli_err(CLI_FAIL, "train", "%s/state: unreadable; the run cannot resume", c.dir);
    if (!resume_dir) {
        if (done >= 0)
            return cli_err(CLI_FAIL, "train", "%s already holds a run (iteration %d done): resume it with spade train %s",
                           c.dir, done, c.dir);
        /* config.base before config.ini: config.ini makes the directory a run, so a kill
         * between the two leaves no run that would resume with its relative paths taken
         * from the run directory instead of the config's */
        char abs[4096], line[4200];
        if (!realpath(c.base[0] ? c.base : ".", abs)) snprintf(abs, sizeof abs, "%s", c.base[0] ? c.base : ".");
        int k = snprintf(line, sizeof line, "%s\n", abs);
        snprintf(path0, sizeof path0, "%s/config.base", c.dir);
        if (write_atomic(path0, line, (size_t)k) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path0);
        if (copy_file(cfg_path, path) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
    }
    if (resume_dir) { /* what a killed run left past its last completed iteration goes */
        trim_log(log_path, done);
        tidy_run(c.dir, done >= 0 ? ckpt : "");
    }
    /* the policy */
    spade_policy *p = NULL;
    if (done >= 0) {
        if (spade_policy_load(&p, ckpt, NULL, err, sizeof err)) return cli_err(CLI_FAIL, "train", "cannot resume: %s", err);
        printf("resuming %s after iteration %d\n", c.dir, done);
    } else if (c.init[0] && c.model[0]) {
        return cli_err(CLI_USAGE, "train", "[policy] init and model exclude each other");
    } else if (c.init[0]) {
        if (spade_policy_load(&p, c.init, NULL, err, sizeof err)) return cli_err(CLI_FAIL, "train", "%s", err);
    } else if (c.model[0]) {
        /* the config's [policy] context and backend apply; the rest is the model's */
        spade_model_opts mo = {.backend = c.gpt.backend, .context = c.gpt.context};
        if (spade_policy_from_model(&p, c.model, &mo, err, sizeof err)) return cli_err(CLI_FAIL, "train", "%s", err);
    } else if (spade_policy_new(&p, &c.gpt, err, sizeof err))
        return cli_err(CLI_FAIL, "train", "%s", err);
    /* the pool, guarded against the held-out suite */
    spade_heldout_guard *guard = NULL;
    if (spade_heldout_guard_new(&guard, NULL, err, sizeof err) < 0) {
        spade_policy_free(p);
        return cli_err(CLI_FAIL, "train", "%s", err);
    }
    spade_registry *reg;
    if (spade_registry_new(&reg, NULL, 0, err, sizeof err) < 0) {
        spade_heldout_guard_free(guard);
        spade_policy_free(p);
        return cli_err(CLI_FAIL, "train", "%s", err);
    }
    const char *specs[MAX_LIST], *dirs[MAX_LIST];
    for (int i = 0; i < c.n_specs; i++) specs[i] = c.specs[i];
    for (int i = 0; i < c.n_dirs; i++) dirs[i] = c.dirs[i];
    spade_pool *pool = NULL;
    curriculum *cu = NULL;
    spade_corpus *corpus = NULL;
    spade_archive *archive = NULL;
    double *refs = NULL;
    const char **ref_names = NULL;
    int n_refs = 0, n_src = 0;
    char **src_text = NULL, **src_names = NULL;
    size_t *src_lens = NULL;
    FILE *log = fopen(log_path, "a");
    rc = CLI_FAIL;
    if (!log) {
        cli_err(CLI_FAIL, "train", "%s: %s", log_path, strerror(errno));
        goto out;
    }
    if ((c.n_specs || c.n_dirs) &&
        spade_pool_new(&pool, sb, reg, specs, c.n_specs, dirs, c.n_dirs, guard, pool_report, NULL, err, sizeof err) < 0) {
        cli_err(CLI_FAIL, "train", "%s", err);
        goto out;
    }
    if (c.designer) { /* self-play: the corpus (guarded), its embeddings for novelty, the archive */
        const char *cd[MAX_LIST];
        for (int i = 0; i < c.n_corpus; i++) cd[i] = c.corpus_dirs[i];
        int refused = 0;
        if (c.sp.use_corpus && spade_corpus_new(&corpus, cd, c.n_corpus, guard, 0, &refused, err, sizeof err) < 0) {
            cli_err(CLI_FAIL, "train", "%s", err);
            goto out;
        }
        int nc = corpus ? spade_corpus_count(corpus) : 0;
        refs = calloc((size_t)(nc ? nc : 1) * SPADE_VENDI_DIM, sizeof *refs);
        ref_names = calloc((size_t)(nc ? nc : 1), sizeof *ref_names);
        for (int i = 0; refs && ref_names && i < nc; i++) {
            const spade_corpus_item *it = spade_corpus_item_at(corpus, i);
            spade_vendi_embed(it->text, it->len, refs + (size_t)n_refs * SPADE_VENDI_DIM, SPADE_VENDI_DIM);
            ref_names[n_refs++] = it->name;
        }
        if (!c.sp.n_families && corpus) /* the corpus's families, in order of first appearance */
            for (int i = 0; i < nc && c.sp.n_families < SPADE_SP_MAX_FAMILIES; i++) {
                const char *f = spade_corpus_item_at(corpus, i)->family;
                int seen = !*f;
                for (int k = 0; k < c.sp.n_families && !seen; k++) seen = !strcmp(c.sp.families[k], f);
                if (!seen) snprintf(c.sp.families[c.sp.n_families++], 32, "%s", f);
            }
        if (c.source_files) { /* the given sources, sorted, as the designer's "writing" */
            char **fp;
            int nf;
            if (spade_heldout_files(c.source_dir, &fp, &nf, err, sizeof err) < 0 || nf == 0) {
                cli_err(CLI_FAIL, "train", "[designer] files = %s: %s", c.source_dir, nf == 0 ? "no .c files" : err);
                goto out;
            }
            src_text = calloc((size_t)nf, sizeof *src_text);
            src_lens = calloc((size_t)nf, sizeof *src_lens);
            for (int i = 0; src_text && src_lens && i < nf; i++) {
                if (spade_read_source(fp[i], &src_text[i], &src_lens[i], err, sizeof err) < 0) {
                    cli_err(CLI_FAIL, "train", "%s", err);
                    goto out;
                }
                n_src++;
            }
            c.sp.files = (const char *const *)src_text;
            c.sp.file_lens = src_lens;
            c.sp.file_names = (const char *const *)fp;
            src_names = fp;
            c.sp.n_files = n_src;
        }
        if (c.source_template) { /* each template, filled at its longest, must fit the policy's context */
            for (int i = 0; i < c.n_tpl; i++)
                if (spade_template_fits(p, c.tpl[i], c.sp.hole_tokens, err, sizeof err) < 0) {
                    rc = cli_err(CLI_USAGE, "train", "%s", err);
                    goto out;
                }
            c.sp.templates = (const spade_template *const *)c.tpl;
            c.sp.n_templates = c.n_tpl;
        }
        snprintf(path, sizeof path, "%s/spade.db", c.dir);
        if (spade_archive_open(&archive, path, err, sizeof err) < 0 ||
            spade_archive_rollback_after(archive, done, err, sizeof err) < 0) {
            cli_err(CLI_FAIL, "train", "%s", err);
            goto out;
        }
        printf("spade train: self-play; corpus %d items (%d held-out files kept out), %d families, archive %s\n", nc,
               refused, c.sp.n_families, path);
    }
    if (done + 1 >= c.iterations) {
        printf("spade train: %s is complete (%d iterations); raise [run] iterations in %s/config.ini to go on\n", c.dir,
               c.iterations, c.dir);
        rc = CLI_OK;
        goto out;
    }
    printf("spade train: %d environments in the pool, policy %zu parameters on %s, iterations %d..%d\n",
           pool ? spade_pool_count(pool) : 0, spade_policy_num_params(p), spade_policy_backend_name(p), done + 1,
           c.iterations - 1);
    cu = calloc(1, sizeof *cu);
    if (!cu) {
        cli_err(CLI_FAIL, "train", "out of memory");
        goto out;
    }
    if (c.curriculum && done >= 0) { /* the levels and windows the state file kept */
        char sp[4400], line[256];
        snprintf(sp, sizeof sp, "%s/state", c.dir);
        FILE *sf = fopen(sp, "r");
        while (sf && fgets(line, sizeof line, sf)) {
            int i, lv, cnt;
            double sm;
            if (sscanf(line, "curriculum %d %d %d %lf", &i, &lv, &cnt, &sm) == 4 && i >= 0 && i < SPADE_POOL_MAX) {
                cu->level[i] = lv;
                cu->n[i] = cnt;
                cu->sum[i] = sm;
            }
        }
        if (sf) fclose(sf);
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int tty = isatty(STDOUT_FILENO);
    for (int it = done + 1; it < c.iterations; it++) {
        if (pool && spade_pool_refresh(pool, err, sizeof err) < 0) {
            cli_err(CLI_FAIL, "train", "%s", err);
            goto out;
        }
        spade_rl_metrics m;
        spade_selfplay_metrics sm;
        int r;
        if (c.designer) {
            spade_selfplay s = {p, sb, corpus, archive, pool, refs, ref_names, n_refs};
            r = spade_selfplay_iteration(&s, &c.sp, it, &stop_requested, &sm, err, sizeof err);
        } else {
            if (c.curriculum) {
                cur_prepare(cu, &c, sb, pool);
                c.rl.params_override = cu->ptr;
                c.rl.n_override = spade_pool_count(pool);
            }
            r = spade_rl_iteration(p, NULL, sb, pool, it, &c.rl, &stop_requested, &m, err, sizeof err);
        }
        if (r < 0) {
            cli_err(CLI_FAIL, "train", "iteration %d: %s", it, err);
            goto out;
        }
        if (r == 1 || stop_requested) {
            fprintf(stderr, "spade train: interrupted in iteration %d; resume with: spade train %s\n", it, c.dir);
            goto out;
        }
        if (c.designer) {
            char json[4096];
            spade_selfplay_metrics_json(&sm, json, sizeof json);
            fprintf(log, "%s\n", json);
            fflush(log);
            fsync(fileno(log));
            goto checkpoint;
        }
        write_metrics(log, &m, pool, c.curriculum ? cu->ptr : NULL);
        if (c.curriculum) cur_update(cu, &c, &m);
        fflush(log);
        fsync(fileno(log));
    checkpoint:
        spade_killpoint("logged", it);
        if (c.eval_every > 0 && ((it + 1) % c.eval_every == 0 || it == c.iterations - 1)) {
            if (eval_heldout(log, p, sb, it, c.eval_episodes, err, sizeof err) < 0) {
                cli_err(CLI_FAIL, "train", "iteration %d: held-out evaluation: %s", it, err);
                goto out;
            }
            fflush(log);
            fsync(fileno(log));
        }
        if ((it + 1) % c.checkpoint_every == 0 || it == c.iterations - 1) {
            char name[64], old[4400];
            snprintf(name, sizeof name, "policy-%d.ckpt", it);
            snprintf(path, sizeof path, "%s/%s", c.dir, name);
            if (spade_policy_save(p, path, err, sizeof err)) {
                cli_err(CLI_FAIL, "train", "%s", err);
                goto out;
            }
            spade_killpoint("checkpoint", it); /* the new checkpoint written, the state not yet */
            int prev = read_state(c.dir, old, sizeof old);
            static char state_text[SPADE_POOL_MAX * 64 + 512];
            int n = snprintf(state_text, sizeof state_text, "iteration %d checkpoint %s\n", it, name);
            for (int i = 0; c.curriculum && i < SPADE_POOL_MAX && n < (int)sizeof state_text - 64; i++)
                if (cu->known[i] == 1)
                    n += snprintf(state_text + n, sizeof state_text - n, "curriculum %d %d %d %.17g\n", i, cu->level[i],
                                  cu->n[i], cu->sum[i]);
            snprintf(path, sizeof path, "%s/state", c.dir);
            if (write_atomic(path, state_text, (size_t)n) < 0) {
                cli_err(CLI_FAIL, "train", "%s: cannot write", path);
                goto out;
            }
            spade_killpoint("state", it); /* the state written, the previous checkpoint not yet unlinked */
            if (prev >= 0 && prev != it) unlink(old);
        }
        if (c.designer) {
            char pool_part[64] = "";
            if (c.sp.pool_envs > 0) snprintf(pool_part, sizeof pool_part, "  pool %.2f", sm.pool.success_rate);
            size_t at = strlen(pool_part); /* the look-ahead's time (designer.reward = learning_potential) */
            if (c.sp.reward == SPADE_DREWARD_LEARNING_POTENTIAL)
                snprintf(pool_part + at, sizeof pool_part - at, "  lookahead %.1fs", sm.t_lookahead);
            printf("%siter %d/%d  valid %d/%d  pass %.2f  +hint %.2f  regret %.3f  designer %.3f  vendi/n %.2f%s  "
                   "design %.1fs gates %.1fs play %.1fs update %.1fs%s",
                   tty ? "\r" : "", it + 1, c.iterations, sm.valid, sm.written, sm.pass_nohint, sm.pass_hint, sm.regret,
                   sm.designer_reward, sm.vendi_n, pool_part, sm.t_design, sm.t_gates, sm.t_play,
                   sm.t_update + sm.pool.t_update, tty ? "" : "\n");
            fflush(stdout);
            continue;
        }
        printf("%siter %d/%d  success %.3f  return %.3f  steps %.1f  failed %ld  ctx_full %ld  groups %d (-%d)  "
               "loss %.4f  |g| %.3f  play %.1fs  update %.1fs%s",
               tty ? "\r" : "", it + 1, c.iterations, m.success_rate, m.mean_return, m.mean_steps, m.failed,
               m.context_full, m.n_groups, m.n_dropped, m.loss, m.grad_norm, m.t_play, m.t_update, tty ? "" : "\n");
        fflush(stdout);
    }
    if (tty) printf("\n");
    printf("spade train: done; metrics in %s, the policy in %s\n", log_path, c.dir);
    rc = CLI_OK;
out:
    if (log) fclose(log);
    spade_pool_free(pool);
    free(cu);
    spade_corpus_free(corpus);
    spade_archive_close(archive);
    free(refs);
    free(ref_names);
    for (int i = 0; i < n_src; i++) free(src_text[i]), free(src_names[i]);
    free(src_text);
    free(src_names);
    free(src_lens);
    spade_registry_free(reg);
    spade_heldout_guard_free(guard);
    spade_policy_free(p);
    for (int i = 0; i < c.n_tpl; i++) spade_template_free(c.tpl[i]), c.tpl[i] = NULL;
    return rc;
}
