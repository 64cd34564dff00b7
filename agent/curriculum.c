/* curriculum.c — pool.curriculum = adaptive (curriculum.h): levels of one
 * param per pool environment, moved by windows of the agent's success.
 * Not the config (cli/train_config.c) nor the state file (cli/run_dir.c). */
#include "agent/curriculum.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void spade_curriculum_init(spade_curriculum *cu, const spade_curriculum_opts *o) {
    memset(cu, 0, sizeof *cu);
    cu->o = *o;
}

/* The param the curriculum moves in the environment named env: its own
 * ENV:NAME entry, else the pool-wide NAME ("" when neither). */
static const char *param_of(const spade_curriculum *cu, const char *env) {
    for (int k = 0; k < cu->o.n_env; k++)
        if (!strcmp(cu->o.env[k], env)) return cu->o.env_param[k];
    return cu->o.param;
}

void spade_curriculum_prepare(spade_curriculum *cu, spade_sandbox *sb, const spade_pool *pool) {
    for (int i = 0; i < spade_pool_count(pool) && i < SPADE_POOL_MAX; i++) {
        const spade_pool_entry *pe = spade_pool_entry_at(pool, i);
        const char *param = param_of(cu, pe->name);
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
            if (cu->known[i] != 1 && *param && param != cu->o.param) /* a misspelt ENV:NAME would move nothing unseen */
                fprintf(stderr,
                        "train: [pool] curriculum_param = %s:%s: %s has no param %s; it stays as its spec says\n",
                        pe->name, param, pe->name, param);
        }
        cu->ptr[i] = NULL;
        if (cu->known[i] != 1) continue;
        double v = cu->lo[i] + (cu->hi[i] - cu->lo[i]) * cu->level[i] / (cu->o.levels - 1);
        char item[128], rest[SPADE_SPEC_PARAMS_MAX] = "";
        if (cu->is_int[i])
            snprintf(item, sizeof item, "%s=%.0f", param, floor(v + 0.5));
        else
            snprintf(item, sizeof item, "%s=%.17g", param, v);
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

void spade_curriculum_update(spade_curriculum *cu, const spade_rl_metrics *m) {
    for (int e = 0; e < m->envs; e++) {
        int i = m->env_index[e];
        if (i < 0 || i >= SPADE_POOL_MAX || cu->known[i] != 1) continue;
        cu->sum[i] += m->env_success[e];
        if (++cu->n[i] < cu->o.window) continue;
        double mean = cu->sum[i] / cu->n[i];
        if (mean >= cu->o.up && cu->level[i] < cu->o.levels - 1)
            cu->level[i]++;
        else if (mean <= cu->o.down && cu->level[i] > 0)
            cu->level[i]--;
        /* a full window starts again whether or not it moved the level: a window
         * kept open past its size becomes the mean since the last move, which a
         * slow start holds below `up` long after the policy has learned */
        cu->n[i] = 0;
        cu->sum[i] = 0;
    }
}

void spade_curriculum_state_lines(const spade_curriculum *cu, char *buf, size_t cap, int *len) {
    for (int i = 0; i < SPADE_POOL_MAX && *len < (int)cap - 64; i++)
        if (cu->known[i] == 1)
            *len += snprintf(buf + *len, cap - (size_t)*len, "curriculum %d %d %d %.17g\n", i, cu->level[i], cu->n[i],
                             cu->sum[i]);
}

void spade_curriculum_state_read(spade_curriculum *cu, const char *line) {
    int i, lv, cnt;
    double sm;
    if (sscanf(line, "curriculum %d %d %d %lf", &i, &lv, &cnt, &sm) == 4 && i >= 0 && i < SPADE_POOL_MAX) {
        cu->level[i] = lv;
        cu->n[i] = cnt;
        cu->sum[i] = sm;
    }
}
