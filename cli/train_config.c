/* train_config.c — `spade train`'s config (train_config.h): defaults, one key
 * function a section, the checks across keys, and the comparison of two
 * configs a resume needs.
 * What it is not: the run (cmd_train.c) or its directory (run_dir.c).
 */
#include "train_config.h"

#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "policy/models.h"
#include "remote.h"

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
    c->r_concurrency = 8;
    c->r_retries = 6;
    c->r_timeout_s = 120;
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

#define FAIL(...) return snprintf(c->msg, sizeof c->msg, __VA_ARGS__), 0
/* A number key: parsed, range-checked, then dst (which may use x). */
#define NUMK(sec, key, lo, hi, integer, dst)                                                                           \
    if (!strcmp(section, sec) && !strcmp(name, key)) {                                                                 \
        if (parse_num(value, lo, hi, integer, &x))                                                                     \
            FAIL("[%s] %s = '%s': expected %s in [%g, %g]", sec, key, value, integer ? "an integer" : "a number",      \
                 (double)(lo), (double)(hi));                                                                          \
        dst;                                                                                                           \
        return 1;                                                                                                      \
    }
#define BOOLK(sec, key, dst)                                                                                           \
    if (!strcmp(section, sec) && !strcmp(name, key)) {                                                                 \
        if (!strcmp(value, "true"))                                                                                    \
            dst = 1;                                                                                                   \
        else if (!strcmp(value, "false"))                                                                              \
            dst = 0;                                                                                                   \
        else                                                                                                           \
            FAIL("[%s] %s = '%s': expected true or false", sec, key, value);                                           \
        return 1;                                                                                                      \
    }

/* [run]: where the run lives, how long it goes, its seed. */
static int key_run(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    if (!strcmp(section, "run") && !strcmp(name, "dir")) {
        if (!*value) FAIL("[run] dir is empty");
        resolve(c, value, c->dir, sizeof c->dir);
        return 1;
    }
    NUMK("run", "iterations", 1, 1e7, 1, c->iterations = (int)x)
    NUMK("run", "seed", 0, 9007199254740992.0, 1, c->seed = (uint64_t)x; c->rl.seed = c->seed)
    NUMK("run", "checkpoint_every", 1, 1e7, 1, c->checkpoint_every = (int)x)
    return -1;
}

/* [policy]: the checkpoint to start from, or the policy's own keys (spade_gpt_config_set). */
static int key_policy(tr_config *c, const char *section, const char *name, const char *value) {
    if (!strcmp(section, "policy")) {
        if (!strcmp(name, "init")) {
            resolve(c, value, c->init, sizeof c->init);
            return 1;
        }
        if (!strcmp(name, "model")) {
            if (!*value) FAIL("[policy] model is empty");
            /* a known name stays a name (the model cache); a path is the config's */
            if (spade_model_find(value))
                snprintf(c->model, sizeof c->model, "%s", value);
            else
                resolve(c, value, c->model, sizeof c->model);
            return 1;
        }
        if (!strcmp(name, "backend") && !strcmp(value, "remote"))
            FAIL("[policy] backend = remote: in spade train the agent trains on [policy], and a served model has no "
                 "gradients here; a served designer goes in [designer.policy] (backend = remote, url, model) with "
                 "[designer] train = false (docs/scale.md)");
        char e[400];
        if (spade_gpt_config_set(&c->gpt, name, value, e, sizeof e)) FAIL("[policy] %s", e);
        c->have_gpt_keys = 1;
        return 1;
    }
    return -1;
}

/* [pool]: the fixed pool, and its adaptive curriculum. */
static int key_pool(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    if (!strcmp(section, "pool")) {
        if (!strcmp(name, "envs")) {
            if (c->n_specs == TR_MAX_LIST) FAIL("[pool] more than %d envs", TR_MAX_LIST);
            if (!*value || strlen(value) >= sizeof c->specs[0]) FAIL("[pool] envs = '%s': empty or too long", value);
            snprintf(c->specs[c->n_specs++], sizeof c->specs[0], "%s", value);
            return 1;
        }
        if (!strcmp(name, "dirs")) {
            if (c->n_dirs == TR_MAX_LIST) FAIL("[pool] more than %d dirs", TR_MAX_LIST);
            resolve(c, value, c->dirs[c->n_dirs++], sizeof c->dirs[0]);
            return 1;
        }
        if (!strcmp(name, "curriculum")) {
            if (!strcmp(value, "fixed"))
                c->curriculum = 0;
            else if (!strcmp(value, "adaptive"))
                c->curriculum = 1;
            else
                FAIL("[pool] curriculum = '%s': expected fixed or adaptive", value);
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
                FAIL("[pool] curriculum_param = '%s': expected ENV:NAME (an environment's name, one of its params)",
                     value);
            for (int k = 0; k < c->n_cur_env; k++)
                if (strlen(c->cur_env[k]) == el && !strncmp(c->cur_env[k], value, el))
                    FAIL("[pool] curriculum_param = '%s': %.*s already has one", value, (int)el, value);
            if (c->n_cur_env >= SPADE_POOL_MAX)
                FAIL("[pool] curriculum_param: at most %d ENV:NAME entries", SPADE_POOL_MAX);
            snprintf(c->cur_env[c->n_cur_env], sizeof c->cur_env[0], "%.*s", (int)el, value);
            snprintf(c->cur_env_param[c->n_cur_env++], sizeof c->cur_env_param[0], "%s", colon + 1);
            return 1;
        }
    }
    NUMK("pool", "curriculum_levels", 2, 100, 1, c->cur_levels = (int)x)
    NUMK("pool", "curriculum_window", 1, 1000, 1, c->cur_window = (int)x)
    NUMK("pool", "curriculum_up", 0, 1, 0, c->cur_up = x)
    NUMK("pool", "curriculum_down", 0, 1, 0, c->cur_down = x)
    return -1;
}

/* [agent]: the agent's plays and sampling. */
static int key_agent(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    NUMK("agent", "envs", 1, SPADE_RL_MAX_ENVS, 1, c->rl.envs_per_iter = (int)x)
    NUMK("agent", "plays", 2, 4096, 1, c->rl.plays = (int)x)
    NUMK("agent", "max_live", 1, 4096, 1, c->rl.max_live = (int)x)
    NUMK("agent", "max_action_tokens", 1, 4096, 1, c->rl.max_action_tokens = (int)x)
    NUMK("agent", "reasoning_tokens", 0, 8192, 1, c->rl.reasoning_tokens = (int)x)
    NUMK("agent", "temperature", 0, 10, 0, c->rl.temperature = (float)x)
    NUMK("agent", "top_p", 1e-6, 1, 0, c->rl.top_p = (float)x)
    NUMK("agent", "workers", 1, 64, 1, c->rl.workers = (int)x)
    if (!strcmp(section, "agent") && !strcmp(name, "advantage")) {
        if (!strcmp(value, "zscore"))
            c->rl.zscore = 1;
        else if (!strcmp(value, "mean"))
            c->rl.zscore = 0;
        else
            FAIL("[agent] advantage = '%s': expected zscore or mean", value);
        return 1;
    }
    return -1;
}

/* [grpo]: the optimiser and the clipped surrogate. */
static int key_grpo(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    NUMK("grpo", "lr", 0, 1, 0, c->rl.adamw.lr = (float)x)
    NUMK("grpo", "weight_decay", 0, 1, 0, c->rl.adamw.weight_decay = (float)x)
    NUMK("grpo", "grad_clip", 0, 1e6, 0, c->rl.adamw.grad_clip = (float)x)
    NUMK("grpo", "eps_low", 0, 0.999, 0, c->rl.grpo.eps_low = (float)x)
    NUMK("grpo", "eps_high", 0, 100, 0, c->rl.grpo.eps_high = (float)x)
    NUMK("grpo", "epochs", 1, 100, 1, c->rl.grpo.epochs = (int)x)
    NUMK("grpo", "minibatch", 0, 1e6, 1, c->rl.grpo.minibatch = (int)x)
    NUMK("grpo", "micro_batch", 1, 1024, 1, c->rl.grpo.micro_batch = (int)x)
    NUMK("grpo", "tis_cap", 0, 1e6, 0, c->rl.grpo.tis_cap = (float)x)
    return -1;
}

/* [designer]: its numbers and switches. */
static int key_designer_num(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    NUMK("designer", "envs", 1, SPADE_SP_MAX_ENVS, 1, c->sp.envs = (int)x)
    NUMK("designer", "max_source_tokens", 16, 65536, 1, c->sp.max_source_tokens = (int)x)
    NUMK("designer", "temperature", 0, 10, 0, c->sp.temperature = (float)x)
    NUMK("designer", "top_p", 1e-6, 1, 0, c->sp.top_p = (float)x)
    NUMK("designer", "invalid_reward", -10, 10, 0, c->sp.invalid_reward = x)
    NUMK("designer", "max_step_ms", 0.001, 1e6, 0, c->sp.gates.max_step_ms = x)
    NUMK("designer", "novelty_max", 0, 1, 0, c->sp.gates.novelty_max = x)
    NUMK("designer", "family_window", 1, SPADE_SP_MAX_FAMILIES, 1, c->sp.family_window = (int)x)
    NUMK("designer", "gate_seeds", 2, 1000, 1, c->sp.gates.seeds = (int)x)
    if (!strcmp(section, "designer") && !strcmp(name, "train")) c->designer_train_set = 1; /* then read below */
    BOOLK("designer", "train", c->sp.train_designer)
    BOOLK("designer", "require_solve", c->sp.gates.require_solve)
    NUMK("designer", "hint_temperature", 0, 10, 0, c->sp.hint_temperature = (float)x)
    NUMK("designer", "hint_tokens", 1, 4096, 1, c->sp.hint_tokens = (int)x)
    NUMK("designer", "hole_tokens", 1, 4096, 1, c->sp.hole_tokens = (int)x)
    return -1;
}

/* [designer]: the keys that name things (reward, hint, families, source, templates). */
static int key_designer_text(tr_config *c, const char *section, const char *name, const char *value) {
    if (!strcmp(section, "designer") && !strcmp(name, "reward")) {
        int k = spade_dreward_parse(value);
        if (k < 0) FAIL("[designer] reward = '%s': expected blend, regret, solve_rate or learning_potential", value);
        c->sp.reward = (spade_dreward_kind)k;
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "invalid")) {
        if (!strcmp(value, "penalise"))
            c->sp.invalid_drop = 0;
        else if (!strcmp(value, "drop"))
            c->sp.invalid_drop = 1;
        else
            FAIL("[designer] invalid = '%s': expected penalise or drop", value);
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "hint")) {
        if (!strcmp(value, "embedded"))
            c->sp.hint_self = 0;
        else if (!strcmp(value, "self"))
            c->sp.hint_self = 1;
        else
            FAIL("[designer] hint = '%s': expected embedded (the source's HINT block) or self (the policy writes it)",
                 value);
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "families")) {
        c->sp.n_families = 0;
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", value);
        for (char *t = strtok(buf, ", "); t; t = strtok(NULL, ", ")) {
            if (c->sp.n_families == SPADE_SP_MAX_FAMILIES)
                FAIL("[designer] families: more than %d", SPADE_SP_MAX_FAMILIES);
            snprintf(c->sp.families[c->sp.n_families++], 32, "%s", t);
        }
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "source")) {
        c->source_files = c->source_template = c->source_remote = 0;
        c->source_set = 1;
        if (!strcmp(value, "policy")) {
        } else if (!strcmp(value, "files"))
            c->source_files = 1;
        else if (!strcmp(value, "template"))
            c->source_template = 1;
        else if (!strcmp(value, "remote"))
            c->source_remote = 1;
        else
            FAIL("[designer] source = '%s': expected policy, files, template or remote", value);
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
            if (c->n_tpl == TR_MAX_LIST) FAIL("[designer] template: more than %d templates", TR_MAX_LIST);
            resolve(c, t, c->tpl_paths[c->n_tpl++], sizeof c->tpl_paths[0]);
            any = 1;
        }
        if (!any) FAIL("[designer] template is empty: name a template file");
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "files")) {
        resolve(c, value, c->source_dir, sizeof c->source_dir);
        return 1;
    }
    if (!strcmp(section, "designer") && !strcmp(name, "enabled")) {
        if (!strcmp(value, "false"))
            c->designer = 0;
        else if (!strcmp(value, "true"))
            c->designer = 1;
        else
            FAIL("[designer] enabled = '%s': expected true or false", value);
        return 1;
    }
    return -1;
}

/* An environment variable's name: what api_key_env must be. A value that
 * is not one, or looks like a secret (long, letters and digits, no '_'), is
 * refused without being echoed: a key never goes in a file. */
static const char *key_env_problem(const char *v) {
    size_t n = strlen(v), digits = 0, alpha = 0;
    int name = n > 0 && n < 128 && !(v[0] >= '0' && v[0] <= '9');
    for (size_t i = 0; i < n; i++) {
        char ch = v[i];
        int d = ch >= '0' && ch <= '9', al = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
        digits += (size_t)d, alpha += (size_t)al;
        if (!d && !al && ch != '_') name = 0;
    }
    if (!strncmp(v, "sk-", 3) || !strncmp(v, "hf_", 3) || !strncmp(v, "Bearer", 6) ||
        (n >= 24 && digits >= 4 && alpha >= 8 && !strchr(v, '_')))
        return "looks like a key, not the name of the variable that holds one";
    if (!name) return "is not an environment variable's name (letters, digits and '_')";
    return NULL;
}

/* [designer.policy]: the designer's own policy; only a served one (backend = remote) for now. */
static int key_designer_policy(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    if (strcmp(section, "designer.policy")) return -1;
    if (!strcmp(name, "backend")) {
        if (strcmp(value, "remote"))
            FAIL("[designer.policy] backend = '%s': expected remote (a local designer is [policy], shared with the "
                 "agent)",
                 value);
        c->dpolicy_remote = 1;
        return 1;
    }
    if (!strcmp(name, "url")) {
        if (strncmp(value, "http://", 7) && strncmp(value, "https://", 8))
            FAIL("[designer.policy] url = '%s': expected an http:// or https:// URL (e.g. http://127.0.0.1:8080)",
                 value);
        if (strlen(value) >= sizeof c->r_url) FAIL("[designer.policy] url: too long");
        if (strchr(value, '@')) FAIL("[designer.policy] url: credentials in the URL; name a variable in api_key_env");
        snprintf(c->r_url, sizeof c->r_url, "%s", value);
        return 1;
    }
    if (!strcmp(name, "model")) {
        if (!*value || strlen(value) >= sizeof c->r_model)
            FAIL("[designer.policy] model = '%s': empty or too long (the name GET URL/v1/models lists)", value);
        snprintf(c->r_model, sizeof c->r_model, "%s", value);
        return 1;
    }
    if (!strcmp(name, "api_key_env")) {
        const char *why = key_env_problem(value);
        if (why)
            FAIL("[designer.policy] api_key_env: the value (%zu characters) %s; put the key in a variable and name "
                 "it here, e.g. api_key_env = OPENAI_API_KEY",
                 strlen(value), why);
        snprintf(c->r_key_env, sizeof c->r_key_env, "%s", value);
        return 1;
    }
    if (!strcmp(name, "api_key") || !strcmp(name, "key") || !strcmp(name, "token"))
        FAIL("[designer.policy] %s: a key never goes in a file (the run directory keeps a copy of this config); put "
             "it in a variable and name it with api_key_env = VAR",
             name);
    NUMK("designer.policy", "concurrency", 1, SPADE_REMOTE_CONCURRENCY_MAX, 1, c->r_concurrency = (int)x)
    NUMK("designer.policy", "retries", 0, SPADE_REMOTE_RETRIES_MAX, 1, c->r_retries = (int)x)
    NUMK("designer.policy", "timeout_s", 0.001, 86400, 0, c->r_timeout_s = x)
    return -1;
}

/* [memory]: the designer's memory of past environments. */
static int key_memory(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    NUMK("memory", "size", 1, 1e6, 1, c->sp.memory.window = (int)x)
    BOOLK("memory", "enabled", c->sp.use_memory)
    return -1;
}

/* [selfplay]: the paired plays and what is kept between iterations. */
static int key_selfplay(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    NUMK("selfplay", "plays", 2, 256, 1, c->sp.plays = (int)x)
    NUMK("selfplay", "repeats", 1, 128, 1, c->sp.repeats = (int)x)
    NUMK("selfplay", "pool_envs", 0, SPADE_RL_MAX_ENVS, 1, c->sp.pool_envs = (int)x)
    NUMK("selfplay", "regen_every", 1, 1e6, 1, c->sp.regen_every = (int)x)
    NUMK("selfplay", "replay", 0, SPADE_SP_MAX_ENVS, 1, c->sp.replay = (int)x)
    BOOLK("selfplay", "train_hint_arm", c->sp.train_hint_arm)
    return -1;
}

/* [eval]: the held-out suite during training. */
static int key_eval(tr_config *c, const char *section, const char *name, const char *value) {
    double x;
    NUMK("eval", "every", 0, 1e7, 1, c->eval_every = (int)x)
    NUMK("eval", "episodes", 1, 100000, 1, c->eval_episodes = (int)x)
    if (!strcmp(section, "eval") && !strcmp(name, "suite")) {
        if (strcmp(value, "heldout")) FAIL("[eval] suite = '%s': the suite is heldout", value);
        return 1;
    }
    return -1;
}

/* [corpus]: the grounding documents. */
static int key_corpus(tr_config *c, const char *section, const char *name, const char *value) {
    BOOLK("corpus", "enabled", c->sp.use_corpus)
    if (!strcmp(section, "corpus") && !strcmp(name, "dirs")) {
        if (c->n_corpus == TR_MAX_LIST) FAIL("[corpus] more than %d dirs", TR_MAX_LIST);
        resolve(c, value, c->corpus_dirs[c->n_corpus++], sizeof c->corpus_dirs[0]);
        return 1;
    }
    return -1;
}

/* One function a section: 1 the key was taken, 0 it was refused (c->msg says why), -1 not its key. */
typedef int (*key_fn)(tr_config *c, const char *section, const char *name, const char *value);
static const struct {
    const char *section;
    key_fn fn;
} sections[] = {
    {"run", key_run},
    {"policy", key_policy},
    {"pool", key_pool},
    {"agent", key_agent},
    {"grpo", key_grpo},
    {"designer", key_designer_num},
    {"designer", key_designer_text},
    {"designer.policy", key_designer_policy},
    {"memory", key_memory},
    {"selfplay", key_selfplay},
    {"eval", key_eval},
    {"corpus", key_corpus},
};

static int on_key(void *user, const char *section, const char *name, const char *value) {
    tr_config *c = user;
    if (c->msg[0]) return 1;
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
        if (strcmp(section, sections[i].section)) continue;
        int r = sections[i].fn(c, section, name, value);
        if (r >= 0) return r;
    }
    if (!section[0])
        FAIL("%s = %s is outside any [section] (the config starts with [run], [policy], ...)", name, value);
    FAIL("unknown key [%s] %s", section, name);
}
#undef BOOLK
#undef NUMK
#undef FAIL

/* base: where relative paths in the config point from (NULL: the config's own directory). */
int cli_train_config_load(const char *path, const char *base, tr_config *c) {
    defaults(c);
    const char *slash = strrchr(path, '/');
    if (base)
        snprintf(c->base, sizeof c->base, "%s", base);
    else if (slash)
        snprintf(c->base, sizeof c->base, "%.*s", (int)(slash - path), path);
    struct stat st;
    if (stat(path, &st) != 0) return cli_err(CLI_FAIL, "train", "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return cli_err(CLI_FAIL, "train", "%s: a directory without config.ini is not a run", path);
    int line = ini_parse(path, on_key, c);
    if (line == -1) return cli_err(CLI_FAIL, "train", "%s: %s", path, strerror(errno ? errno : ENOENT));
    if (line > 0) { /* inih goes on past a bad section line, so the key after it would be blamed instead */
        char text[512] = "";
        FILE *f = fopen(path, "r");
        for (int k = 0; f && k < line && fgets(text, sizeof text, f); k++) {}
        if (f) fclose(f);
        char *t = text + strspn(text, " \t");
        t[strcspn(t, "\r\n")] = 0;
        if (t[0] == '[' && !strchr(t, ']'))
            return cli_err(CLI_USAGE, "train", "%s:%d: '%s': a section line without its closing ']'", path, line, t);
    }
    if (line != 0 || c->msg[0])
        return line > 0 ? cli_err(CLI_USAGE, "train", "%s:%d: %s", path, line, c->msg[0] ? c->msg : "syntax error")
                        : cli_err(CLI_USAGE, "train", "%s: %s", path, c->msg);
    char e[400];
    if (spade_gpt_config_validate(&c->gpt, e, sizeof e)) return cli_err(CLI_USAGE, "train", "%s: %s", path, e);
    if (c->curriculum && !c->cur_param[0] && !c->n_cur_env)
        return cli_err(CLI_USAGE, "train",
                       "%s: [pool] curriculum = adaptive needs curriculum_param = NAME (or ENV:NAME)", path);
    if (c->curriculum && !(c->cur_down < c->cur_up))
        return cli_err(CLI_USAGE, "train", "%s: [pool] curriculum_down (%g) must be below curriculum_up (%g)", path,
                       c->cur_down, c->cur_up);
    /* greedy draws come from a point mass: their old log-prob is 0 and no ratio or gradient exists */
    if (!(c->rl.temperature > 0))
        return cli_err(CLI_USAGE, "train",
                       "%s: [agent] temperature = 0: the agent trains on its plays, which must be "
                       "sampled (temperature > 0)",
                       path);
    if (c->dpolicy_remote && !c->source_set) c->source_remote = 1; /* a served designer writes */
    if (c->designer && c->sp.train_designer && !c->source_remote && !(c->sp.temperature > 0))
        return cli_err(CLI_USAGE, "train",
                       "%s: [designer] temperature = 0 with [designer] train = true: a trained "
                       "designer's sources must be sampled (temperature > 0)",
                       path);
    if (c->sp.plays % c->sp.repeats)
        return cli_err(CLI_USAGE, "train",
                       "%s: [selfplay] plays = %d is not a multiple of repeats = %d (plays / repeats seeds, each "
                       "played repeats times)",
                       path, c->sp.plays, c->sp.repeats);
    if (c->source_files && !c->source_dir[0])
        return cli_err(CLI_USAGE, "train", "%s: [designer] source = files needs files = DIR", path);
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
                       "change nothing, and every potential would be 0",
                       path);
    if (c->dpolicy_remote && !c->source_remote)
        return cli_err(CLI_USAGE, "train",
                       "%s: [designer.policy] backend = remote, but [designer] source = %s: the served designer "
                       "would write nothing (source = remote, or drop [designer.policy])",
                       path,
                       c->source_files      ? "files"
                       : c->source_template ? "template"
                                            : "policy");
    if (c->source_remote) {
        if (!c->dpolicy_remote || !c->r_url[0] || !c->r_model[0])
            return cli_err(CLI_USAGE, "train",
                           "%s: [designer] source = remote needs [designer.policy] backend = remote, url = "
                           "http://HOST:PORT and model = NAME (%s missing; docs/scale.md)",
                           path,
                           !c->dpolicy_remote ? "backend"
                           : !c->r_url[0]     ? "url"
                                              : "model");
        if (!c->designer)
            return cli_err(CLI_USAGE, "train",
                           "%s: [designer] source = remote needs [designer] enabled = true (self-play writes the "
                           "environments)",
                           path);
        if (c->designer_train_set && c->sp.train_designer)
            return cli_err(CLI_USAGE, "train",
                           "%s: [designer] train = true with source = remote: a served designer has no gradients "
                           "here (train = false: a fixed designer writes, the local agent learns)",
                           path);
        c->sp.train_designer = 0;
        if (c->sp.hint_self)
            return cli_err(CLI_USAGE, "train",
                           "%s: [designer] hint = self with source = remote: the local agent policy would write "
                           "the hints, not the designer; use hint = embedded (the source's HINT block)",
                           path);
    } else if (c->r_url[0] || c->r_model[0] || c->r_key_env[0])
        return cli_err(CLI_USAGE, "train", "%s: [designer.policy] url, model or api_key_env without backend = remote",
                       path);
    c->sp.seed = c->seed;
    c->sp.rl = c->rl;
    if (c->designer && !c->n_corpus) spade_data_path("stdenv", c->corpus_dirs[c->n_corpus++], sizeof c->corpus_dirs[0]);
    if (c->designer && !c->n_specs && !c->n_dirs && !c->sp.pool_envs) return 0; /* self-play alone needs no pool */
    if (!c->n_specs && !c->n_dirs) spade_data_path("stdenv", c->dirs[c->n_dirs++], sizeof c->dirs[0]);
    if (c->rl.max_live < 1) c->rl.max_live = 1;
    return 0;
}

/* 0 when the two files hold the same bytes, else the first line where they differ (1-based, as an editor shows it). */
int cli_train_config_differs(const char *a, const char *b) {
    FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
    int line = 1, rc = 0;
    if (!fa || !fb) rc = 1;
    while (!rc) {
        int x = getc(fa), y = getc(fb);
        if (x != y)
            rc = line;
        else if (x == EOF)
            break;
        else if (x == '\n')
            line++;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return rc;
}
