/* vecenv.c — a vector of environment instances over one or more workers.
 *
 * What it is: the Gymnasium-style vector env of sandbox.h. Env i lives in
 * worker i % num_workers (round robin), as instance i / num_workers of it;
 * every call sends one batch to each worker before it waits for any, so the
 * workers step in parallel. step = step_async + step_wait.
 * Auto-reset, as in Gymnasium:
 *   NEXT_STEP: the step after env i's episode ended (terminated or truncated)
 *     resets env i instead; that step's action is ignored and its result is
 *     the reset's (first observation, reward 0, not done).
 *   DISABLED: stepping a finished env is a bad_call, caught here before anything
 *     is sent; the caller resets it with spade_vecenv_reset_one.
 * Seeds: spade_vecenv_reset(seed) starts env i with seed + i; the k-th
 * auto-reset of env i (k = 1, 2, ...) uses seed + i + k * num_envs.
 * spade_vecenv_reset_one(env, seed) and _reset_some use exactly the seeds
 * they are given.
 * Subsets: _step_some/_reset_some/_step_mask send a batch only to the workers
 * holding a chosen env, and only those envs; the others keep their state.
 * Failures: bad_call leaves the vector usable; anything else (a worker timed
 * out, crashed, ...) is sticky: every later call returns it until
 * spade_vecenv_revive loads the dead workers again (their envs then need a
 * reset; the envs of the workers that lived keep their episodes), or the
 * caller frees the vector.
 * Blocks: _add_block appends envs of another params setting to the same
 * workers (each env keeps its own values, for a revive). _text_some fetches
 * hints or SOLVE's actions as batch items; _set_poison switches a worker's
 * poison with a batch item too.
 * What it is not: a trainer's rollout buffer; results point into the workers'
 * buffers and are valid until the next call on the vector.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/internal.h"

struct spade_vecenv {
    int num_envs, num_workers;
    uint64_t *poison; /* [num_workers] worker w's poison seed (0: off); poison + w at creation */
    spade_autoreset mode;
    spade_worker **workers;
    int *local_id; /* [num_envs] instance id inside its worker */
    uint64_t *episode; /* [num_envs] episodes started since the last vector reset */
    unsigned char *ended; /* [num_envs] its last result was terminated or truncated */
    unsigned char *begun; /* [num_envs] reset since its worker was loaded */
    uint64_t base_seed;
    int pending;
    int failed;
    spade_failure fail;
    /* what spade_vecenv_revive needs to load a worker again */
    spade_sandbox *sb;
    char *filename, *source;
    size_t source_len;
    spade_env_info info; /* worker 0's at creation (a revive may fail and leave no worker) */
    int n_values;
    double values[SPADE_INFO_MAX_PARAMS];
    double *env_values; /* [num_envs][n_values]: env i's params (blocks may differ) */
    /* per worker: how many envs, which ones, their instance ids there (fixed
     * at creation); results of its last batch */
    int *count;
    int **envs;
    int **wids;
    spade_step_result **res;
    /* per worker: the envs and instance ids of the batch in flight (a subset
     * of envs[w] in the same order) */
    int *bat_n;
    int **bat_envs;
    int **bat_ids;
    /* [num_envs]: which envs reset in the next batch and with which seed;
     * which take part (subset calls) and where their result goes */
    unsigned char *resetting;
    uint64_t *seed_of;
    unsigned char *sel;
    int *pos_of;
    int pend_pos; /* the batch in flight writes results[pos_of[env]] */
    int pend_text; /* the batch in flight is hints or SOLVE's actions: episodes go on */
    /* a send of the batch in flight failed (its worker is dead; the others
     * were sent to): the wait reports it, with the other workers' results */
    int pend_bad;
    spade_failure pend_fail;
    const char **act_of;
    size_t *len_of;
    /* scratch for one worker's batch (sized for the largest) */
    uint32_t *ops;
    uint64_t *seeds;
    const char **acts;
    size_t *lens;
};

static int vfail(spade_vecenv *v, const spade_failure *g, spade_failure *f) {
    if (g->outcome != SPADE_OUT_BAD_CALL) {
        v->failed = 1;
        v->fail = *g;
    }
    if (f) *f = *g;
    return -1;
}

/* A batch send to worker w failed with g. A bad_call (the caller's mistake:
 * the worker is alive and was not sent to) ends the call: the workers before
 * it, already sent to, are drained so that they stay usable, and -1.
 * Otherwise w is dead; its failure waits for the gather, which reports it
 * with the other workers' results, and the send goes on to them: 0. */
static int send_failure(spade_vecenv *v, int w, const spade_failure *g, spade_failure *f) {
    if (g->outcome != SPADE_OUT_BAD_CALL) {
        if (!v->pend_bad) v->pend_fail = *g;
        v->pend_bad = 1;
        v->bat_n[w] = 0;
        return 0;
    }
    v->pend_bad = 0; /* an earlier worker's failed send: that worker is dead, and says so to every call */
    for (int k = 0; k < w; k++) {
        spade_failure ignore;
        if (v->bat_n[k]) spade_worker_batch_recv(v->workers[k], v->res[k], &ignore);
    }
    return vfail(v, g, f);
}

static int venter(spade_vecenv *v, spade_failure *f) {
    spade_failure_clear(f);
    if (!v) return spade_bad_call(f, "vecenv is NULL");
    if (v->failed) {
        if (f) *f = v->fail;
        return -1;
    }
    return 0;
}

static int voom(spade_failure *f) {
    if (f) {
        f->outcome = SPADE_OUT_INTERNAL;
        f->signal = f->line = 0;
        snprintf(f->message, sizeof f->message, "vecenv: out of memory");
    }
    return -1;
}

void spade_vecenv_free(spade_vecenv *v) {
    if (!v) return;
    for (int w = 0; v->workers && w < v->num_workers; w++) spade_worker_free(v->workers[w]);
    for (int w = 0; w < v->num_workers; w++) {
        if (v->envs) free(v->envs[w]);
        if (v->res) free(v->res[w]);
        if (v->wids) free(v->wids[w]);
        if (v->bat_envs) free(v->bat_envs[w]);
        if (v->bat_ids) free(v->bat_ids[w]);
    }
    free(v->workers);
    free(v->envs);
    free(v->wids);
    free(v->res);
    free(v->bat_n);
    free(v->bat_envs);
    free(v->bat_ids);
    free(v->resetting);
    free(v->seed_of);
    free(v->sel);
    free(v->pos_of);
    free(v->act_of);
    free(v->len_of);
    free(v->count);
    free(v->local_id);
    free(v->episode);
    free(v->ended);
    free(v->begun);
    free(v->ops);
    free(v->seeds);
    free(v->acts);
    free(v->lens);
    free(v->env_values);
    free(v->poison);
    free(v->filename);
    free(v->source);
    free(v);
}

static const double *values_of(const spade_vecenv *v, int env) {
    return v->env_values + (size_t)env * (size_t)v->n_values;
}

/* Adds worker w's instances (count[w], each env's param values: one request
 * per run of envs with the same values) and notes their ids; its envs have no
 * episode yet. */
static int add_instances(spade_vecenv *v, int w, spade_failure *f) {
    size_t vb = (size_t)v->n_values * sizeof(double);
    for (int j0 = 0; j0 < v->count[w];) {
        int j1 = j0 + 1;
        const double *vals = values_of(v, v->envs[w][j0]);
        while (j1 < v->count[w] && !memcmp(values_of(v, v->envs[w][j1]), vals, vb)) j1++;
        int first;
        if (spade_worker_add_instances(v->workers[w], j1 - j0, v->n_values ? vals : NULL, &first, f) < 0) return -1;
        for (int j = j0; j < j1; j++) {
            int i = v->envs[w][j];
            v->local_id[i] = first + (j - j0);
            v->wids[w][j] = first + (j - j0);
            v->ended[i] = 0;
            v->begun[i] = 0;
        }
        j0 = j1;
    }
    return 0;
}

int spade_vecenv_new(spade_sandbox *sb, const char *filename, const char *source, size_t len, const char *params,
                     int num_envs, int num_workers, spade_autoreset mode, spade_vecenv **out, spade_failure *f) {
    return spade_vecenv_new_poisoned(sb, filename, source, len, params, num_envs, num_workers, mode, 0, out, f);
}

int spade_vecenv_new_poisoned(spade_sandbox *sb, const char *filename, const char *source, size_t len,
                              const char *params, int num_envs, int num_workers, spade_autoreset mode, uint64_t poison,
                              spade_vecenv **out, spade_failure *f) {
    spade_failure_clear(f);
    if (out) *out = NULL;
    if (!sb || !out || !source) return spade_bad_call(f, "spade_vecenv_new: NULL sandbox, source or out");
    if (num_envs < 1 || num_envs > (1 << 20)) return spade_bad_call(f, "num_envs = %d (1 .. 1048576)", num_envs);
    if (num_workers < 1) return spade_bad_call(f, "num_workers = %d (at least 1)", num_workers);
    if (mode != SPADE_AUTORESET_NEXT_STEP && mode != SPADE_AUTORESET_DISABLED)
        return spade_bad_call(f, "unknown autoreset mode %d", (int)mode);
    if (num_workers > num_envs) num_workers = num_envs; /* a worker without an env would only cost a process */

    spade_vecenv *v = calloc(1, sizeof *v);
    if (!v) return voom(f);
    v->num_envs = num_envs;
    v->num_workers = num_workers;
    v->mode = mode;
    v->sb = sb;
    const char *fname = filename ? filename : "env.c";
    v->filename = malloc(strlen(fname) + 1);
    v->source = malloc(len + 1);
    if (v->filename) strcpy(v->filename, fname);
    if (v->source) {
        memcpy(v->source, source, len);
        v->source[len] = 0;
    }
    v->source_len = len;
    int per = (num_envs + num_workers - 1) / num_workers;
    v->workers = calloc((size_t)num_workers, sizeof *v->workers);
    v->envs = calloc((size_t)num_workers, sizeof *v->envs);
    v->wids = calloc((size_t)num_workers, sizeof *v->wids);
    v->res = calloc((size_t)num_workers, sizeof *v->res);
    v->bat_n = calloc((size_t)num_workers, sizeof *v->bat_n);
    v->bat_envs = calloc((size_t)num_workers, sizeof *v->bat_envs);
    v->bat_ids = calloc((size_t)num_workers, sizeof *v->bat_ids);
    v->count = calloc((size_t)num_workers, sizeof *v->count);
    v->local_id = calloc((size_t)num_envs, sizeof *v->local_id);
    v->episode = calloc((size_t)num_envs, sizeof *v->episode);
    v->ended = calloc((size_t)num_envs, 1);
    v->begun = calloc((size_t)num_envs, 1);
    v->resetting = calloc((size_t)num_envs, 1);
    v->seed_of = calloc((size_t)num_envs, sizeof *v->seed_of);
    v->sel = calloc((size_t)num_envs, 1);
    v->pos_of = calloc((size_t)num_envs, sizeof *v->pos_of);
    v->act_of = calloc((size_t)num_envs, sizeof *v->act_of);
    v->len_of = calloc((size_t)num_envs, sizeof *v->len_of);
    v->ops = calloc((size_t)per, sizeof *v->ops);
    v->seeds = calloc((size_t)per, sizeof *v->seeds);
    v->acts = calloc((size_t)per, sizeof *v->acts);
    v->lens = calloc((size_t)per, sizeof *v->lens);
    v->poison = calloc((size_t)num_workers, sizeof *v->poison);
    if (!v->filename || !v->source || !v->workers || !v->envs || !v->wids || !v->res || !v->bat_n || !v->bat_envs ||
        !v->bat_ids || !v->count || !v->local_id || !v->episode || !v->ended || !v->begun || !v->resetting ||
        !v->seed_of || !v->sel || !v->pos_of || !v->act_of || !v->len_of || !v->ops || !v->seeds || !v->acts ||
        !v->lens || !v->poison)
        goto oom;
    for (int i = 0; i < num_envs; i++) v->count[i % num_workers]++;
    for (int w = 0; w < num_workers; w++) v->poison[w] = poison ? poison + (uint64_t)w : 0;
    for (int w = 0; w < num_workers; w++) {
        v->envs[w] = calloc((size_t)v->count[w], sizeof **v->envs);
        v->wids[w] = calloc((size_t)v->count[w], sizeof **v->wids);
        v->res[w] = calloc((size_t)v->count[w], sizeof **v->res);
        v->bat_envs[w] = calloc((size_t)v->count[w], sizeof **v->bat_envs);
        v->bat_ids[w] = calloc((size_t)v->count[w], sizeof **v->bat_ids);
        if (!v->envs[w] || !v->wids[w] || !v->res[w] || !v->bat_envs[w] || !v->bat_ids[w]) goto oom;
    }
    for (int i = 0; i < num_envs; i++) v->envs[i % num_workers][i / num_workers] = i;

    /* Every worker compiles at once: send all the sources, then wait. */
    for (int w = 0; w < num_workers; w++)
        if (spade_worker_load_begin_poisoned(sb, filename, source, len, v->poison[w], &v->workers[w], f) < 0) {
            spade_vecenv_free(v);
            return -1;
        }
    for (int w = 0; w < num_workers; w++)
        if (spade_worker_load_finish(v->workers[w], f) < 0) {
            v->workers[w] = NULL; /* already freed */
            spade_vecenv_free(v);
            return -1;
        }
    char err[512];
    const spade_env_info *info = spade_worker_info(v->workers[0]);
    if (spade_params_parse(info, params, v->values, err, sizeof err) < 0) {
        spade_vecenv_free(v);
        return spade_bad_call(f, "%s: params: %s", fname, err);
    }
    v->n_values = info->n_params;
    v->info = *info;
    v->env_values = malloc((size_t)num_envs * (size_t)(v->n_values ? v->n_values : 1) * sizeof(double));
    if (!v->env_values) goto oom;
    for (int i = 0; i < num_envs; i++)
        memcpy(v->env_values + (size_t)i * (size_t)v->n_values, v->values, (size_t)v->n_values * sizeof(double));
    for (int w = 0; w < num_workers; w++)
        if (add_instances(v, w, f) < 0) {
            spade_vecenv_free(v);
            return -1;
        }
    *out = v;
    return 0;
oom:
    spade_vecenv_free(v);
    return voom(f);
}

int spade_vecenv_num_envs(const spade_vecenv *v) { return v ? v->num_envs : 0; }

const spade_env_info *spade_vecenv_info(const spade_vecenv *v) { return v ? &v->info : NULL; }

/* realloc that keeps *p on failure and zeroes the new tail. */
static int grow(void *pp, size_t old_n, size_t new_n, size_t size) {
    void **p = pp;
    unsigned char *q = realloc(*p, new_n * size > 0 ? new_n * size : 1);
    if (!q) return -1;
    memset(q + old_n * size, 0, (new_n - old_n) * size);
    *p = q;
    return 0;
}

int spade_vecenv_add_block(spade_vecenv *v, const char *params, int n, int *first_env, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    if (n < 1 || n > (1 << 20) - v->num_envs)
        return spade_bad_call(f, "add_block: n = %d (1 .. %d)", n, (1 << 20) - v->num_envs);
    double vals[SPADE_INFO_MAX_PARAMS];
    char err[512];
    if (spade_params_parse(&v->info, params, vals, err, sizeof err) < 0)
        return spade_bad_call(f, "%s: params: %s", v->filename, err);
    size_t old = (size_t)v->num_envs, nn = old + (size_t)n, nv = (size_t)(v->n_values ? v->n_values : 1);
    int W = v->num_workers, *add = calloc((size_t)W, sizeof *add);
    if (!add) return voom(f);
    for (size_t i = old; i < nn; i++) add[i % (size_t)W]++;
    /* room first (nothing changes on a failure), then the layout */
    int bad = grow(&v->local_id, old, nn, sizeof *v->local_id) || grow(&v->episode, old, nn, sizeof *v->episode) ||
              grow(&v->ended, old, nn, 1) || grow(&v->begun, old, nn, 1) || grow(&v->resetting, old, nn, 1) ||
              grow(&v->seed_of, old, nn, sizeof *v->seed_of) || grow(&v->sel, old, nn, 1) ||
              grow(&v->pos_of, old, nn, sizeof *v->pos_of) || grow(&v->act_of, old, nn, sizeof *v->act_of) ||
              grow(&v->len_of, old, nn, sizeof *v->len_of) ||
              grow(&v->env_values, old * nv, nn * nv, sizeof *v->env_values);
    int per = 0;
    for (int w = 0; !bad && w < W; w++) {
        size_t c = (size_t)v->count[w], c2 = c + (size_t)add[w];
        bad = grow(&v->envs[w], c, c2, sizeof **v->envs) || grow(&v->wids[w], c, c2, sizeof **v->wids) ||
              grow(&v->res[w], c, c2, sizeof **v->res) || grow(&v->bat_envs[w], c, c2, sizeof **v->bat_envs) ||
              grow(&v->bat_ids[w], c, c2, sizeof **v->bat_ids);
        if ((int)c2 > per) per = (int)c2;
    }
    int per0 = (v->num_envs + W - 1) / W;
    if (!bad && per > per0)
        bad = grow(&v->ops, (size_t)per0, (size_t)per, sizeof *v->ops) ||
              grow(&v->seeds, (size_t)per0, (size_t)per, sizeof *v->seeds) ||
              grow(&v->acts, (size_t)per0, (size_t)per, sizeof *v->acts) ||
              grow(&v->lens, (size_t)per0, (size_t)per, sizeof *v->lens);
    if (bad) {
        free(add);
        return voom(f);
    }
    for (size_t i = old; i < nn; i++)
        memcpy(v->env_values + i * (size_t)v->n_values, vals, (size_t)v->n_values * sizeof(double));
    /* each worker's new envs, one request: they share the block's values */
    for (int w = 0; w < W; w++) {
        if (!add[w]) continue;
        int first, c = v->count[w];
        spade_failure g;
        if (spade_worker_add_instances(v->workers[w], add[w], v->n_values ? vals : NULL, &first, &g) < 0) {
            free(add);
            spade_failure_prefix(&g, "vecenv");
            return vfail(v, &g, f);
        }
        int i0 = (int)old + ((w - (int)(old % (size_t)W)) % W + W) % W; /* worker w's first new env */
        for (int k = 0; k < add[w]; k++) {
            int i = i0 + k * W;
            v->envs[w][c + k] = i;
            v->wids[w][c + k] = first + k;
            v->local_id[i] = first + k;
        }
    }
    for (int w = 0; w < W; w++) v->count[w] += add[w];
    free(add);
    v->num_envs = (int)nn;
    if (first_env) *first_env = (int)old;
    return 0;
}

/* Receives every worker's batch; the first failure wins, but every worker is
 * drained so that none is left with a reply in flight. The results of the
 * workers that answered are filled even when another failed. One worker
 * stepping all its envs holds them 0..n-1 in order, so its results are
 * decoded straight into the caller's. */
static int gather(spade_vecenv *v, spade_step_result *results, spade_failure *f) {
    spade_failure first = v->pend_fail, g;
    int bad = v->pend_bad;
    v->pend_bad = 0;
    for (int w = 0; w < v->num_workers; w++) {
        int n = v->bat_n[w];
        if (n == 0) continue;
        int direct = v->num_workers == 1 && results && !v->pend_pos && n == v->num_envs;
        spade_step_result *res = direct ? results : v->res[w];
        if (spade_worker_batch_recv(v->workers[w], res, &g) < 0) {
            if (!bad) first = g;
            bad = 1;
            v->bat_n[w] = 0; /* nothing of it came back (what did: bat_n of the others) */
            continue;
        }
        const int *envs = v->bat_envs[w];
        for (int j = 0; j < n; j++) {
            int i = envs[j];
            const spade_step_result *r = &res[j];
            if (results && !direct) results[v->pend_pos ? v->pos_of[i] : i] = *r;
            if (!v->pend_text) v->ended[i] = (r->terminated || r->truncated) ? 1 : 0;
        }
    }
    v->pending = 0;
    if (bad) {
        spade_failure_prefix(&first, "vecenv");
        return vfail(v, &first, f);
    }
    return 0;
}

/* Sends one batch per worker holding a selected env (sel[i], or every env
 * when sel is NULL): env i resets when reset[i] (with seed_of[i]), else steps
 * with actions[i]. A worker none of whose envs resets gets a plain step
 * batch. A send that fails kills its worker; the others are still sent to,
 * and the wait (gather) reports the failure with their results, so on any
 * failure the results of the envs whose worker is alive are the real ones
 * (spade_vecenv_env_lost tells them apart). A bad_call (the caller's
 * mistake, the worker alive and not sent to) ends the call at once. */
static int scatter(spade_vecenv *v, const unsigned char *sel, const unsigned char *reset, const uint64_t *seed_of,
                   const char *const *actions, const size_t *lens, spade_failure *f) {
    spade_failure g;
    for (int w = 0; w < v->num_workers; w++) {
        const int *envs = v->envs[w];
        int n = 0;
        for (int j = 0; j < v->count[w]; j++) {
            int i = envs[j];
            if (sel && !sel[i]) continue;
            v->bat_envs[w][n] = i;
            v->bat_ids[w][n] = v->wids[w][j];
            n++;
        }
        v->bat_n[w] = n;
    }
    for (int w = 0; w < v->num_workers; w++) {
        int n = v->bat_n[w];
        if (n == 0) continue;
        /* the scratch is shared: it holds one worker's batch at a time */
        int any_reset = 0;
        for (int j = 0; j < n; j++) {
            int i = v->bat_envs[w][j];
            if (actions) {
                v->acts[j] = reset[i] ? NULL : actions[i];
                v->lens[j] = reset[i] ? 0 : lens ? lens[i] : (actions[i] ? strlen(actions[i]) : 0);
            }
            v->ops[j] = reset[i] ? SPADE_OP_RESET : SPADE_OP_STEP;
            v->seeds[j] = reset[i] ? seed_of[i] : 0;
            any_reset |= reset[i];
        }
        int rc;
        if (!any_reset)
            rc = spade_worker_step_send(v->workers[w], n, v->bat_ids[w], v->acts, v->lens, &g);
        else
            rc = spade_worker_batch_send(v->workers[w], n, v->bat_ids[w], v->ops, v->seeds, actions ? v->acts : NULL,
                                         actions ? v->lens : NULL, &g);
        if (rc < 0 && send_failure(v, w, &g, f) < 0) return -1;
    }
    v->pending = 1;
    return 0;
}

/* After the gather of a batch that reset envs: those of the workers whose
 * results came back did reset, whatever failed beside them. */
static void mark_begun(spade_vecenv *v) {
    for (int w = 0; w < v->num_workers; w++)
        for (int j = 0; j < v->bat_n[w]; j++) v->begun[v->bat_envs[w][j]] = 1;
}

int spade_vecenv_reset(spade_vecenv *v, uint64_t seed, spade_step_result *results, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    memset(v->resetting, 1, (size_t)v->num_envs);
    for (int i = 0; i < v->num_envs; i++) v->seed_of[i] = seed + (uint64_t)i;
    v->pend_pos = 0;
    if (scatter(v, NULL, v->resetting, v->seed_of, NULL, NULL, f) < 0) return -1;
    if (gather(v, results, f) < 0) {
        mark_begun(v); /* the live workers' envs did reset */
        return -1;
    }
    v->base_seed = seed;
    memset(v->episode, 0, (size_t)v->num_envs * sizeof *v->episode);
    memset(v->begun, 1, (size_t)v->num_envs);
    return 0;
}

int spade_vecenv_reset_one(spade_vecenv *v, int env, uint64_t seed, spade_step_result *result, spade_failure *f) {
    return spade_vecenv_reset_some(v, 1, &env, &seed, result, f);
}

/* Marks envs[0..n) in v->sel (and their positions), refusing an unknown or
 * repeated env. */
static int select_envs(spade_vecenv *v, int n, const int *envs, spade_failure *f) {
    if (n < 0 || n > v->num_envs) return spade_bad_call(f, "%d envs given, the vector has %d", n, v->num_envs);
    if (n > 0 && !envs) return spade_bad_call(f, "env list is NULL");
    memset(v->sel, 0, (size_t)v->num_envs);
    for (int j = 0; j < n; j++) {
        int i = envs[j];
        if (i < 0 || i >= v->num_envs) return spade_bad_call(f, "env %d out of range [0, %d)", i, v->num_envs);
        if (v->sel[i]) return spade_bad_call(f, "env %d listed twice in one call", i);
        v->sel[i] = 1;
        v->pos_of[i] = j;
    }
    return 0;
}

int spade_vecenv_reset_some(spade_vecenv *v, int n, const int *envs, const uint64_t *seeds, spade_step_result *results,
                            spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    if (select_envs(v, n, envs, f) < 0) return -1;
    if (n > 0 && !seeds) return spade_bad_call(f, "seeds is NULL");
    for (int j = 0; j < n; j++) v->seed_of[envs[j]] = seeds[j];
    v->pend_pos = 1;
    if (scatter(v, v->sel, v->sel, v->seed_of, NULL, NULL, f) < 0) return -1;
    int rc = gather(v, results, f);
    mark_begun(v);
    return rc;
}

/* Checks that every selected env (sel, or all) may step, then sends: the
 * envs whose episode ended reset instead under NEXT_STEP. */
static int step_send(spade_vecenv *v, const unsigned char *sel, const char *const *actions, const size_t *lens,
                     spade_failure *f) {
    for (int i = 0; i < v->num_envs; i++) {
        if (sel && !sel[i]) continue;
        if (!v->begun[i])
            return spade_bad_call(f, "env %d: step before its reset (spade_vecenv_reset or _reset_some)", i);
        if (v->ended[i] && v->mode == SPADE_AUTORESET_DISABLED)
            return spade_bad_call(
                f, "env %d finished its episode: reset it with spade_vecenv_reset_one (autoreset disabled)", i);
    }
    unsigned char *reset = v->ended; /* NEXT_STEP: exactly the envs that ended */
    uint64_t n = (uint64_t)v->num_envs;
    for (int i = 0; i < v->num_envs; i++)
        if (reset[i] && (!sel || sel[i])) v->seed_of[i] = v->base_seed + (uint64_t)i + (v->episode[i] + 1) * n;
    if (scatter(v, sel, reset, v->seed_of, actions, lens, f) < 0) return -1;
    for (int i = 0; i < v->num_envs; i++)
        if (reset[i] && (!sel || sel[i])) v->episode[i]++;
    return 0;
}

int spade_vecenv_step_async(spade_vecenv *v, const char *const *actions, const size_t *lens, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is already in flight: call spade_vecenv_step_wait first");
    if (!actions) return spade_bad_call(f, "actions is NULL");
    v->pend_pos = 0;
    return step_send(v, NULL, actions, lens, f);
}

int spade_vecenv_step_wait(spade_vecenv *v, spade_step_result *results, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (!v->pending) return spade_bad_call(f, "no step in flight: call spade_vecenv_step_async first");
    return gather(v, results, f);
}

int spade_vecenv_step(spade_vecenv *v, const char *const *actions, const size_t *lens, spade_step_result *results,
                      spade_failure *f) {
    if (spade_vecenv_step_async(v, actions, lens, f) < 0) return -1;
    return spade_vecenv_step_wait(v, results, f);
}

int spade_vecenv_step_some_async(spade_vecenv *v, int n, const int *envs, const char *const *actions,
                                 const size_t *lens, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is already in flight: call spade_vecenv_step_wait first");
    if (n > 0 && !actions) return spade_bad_call(f, "actions is NULL");
    if (select_envs(v, n, envs, f) < 0) return -1;
    for (int j = 0; j < n; j++) {
        v->act_of[envs[j]] = actions[j];
        v->len_of[envs[j]] = lens ? lens[j] : actions[j] ? strlen(actions[j]) : 0;
    }
    v->pend_pos = 1;
    return step_send(v, v->sel, v->act_of, v->len_of, f);
}

int spade_vecenv_step_some(spade_vecenv *v, int n, const int *envs, const char *const *actions, const size_t *lens,
                           spade_step_result *results, spade_failure *f) {
    if (spade_vecenv_step_some_async(v, n, envs, actions, lens, f) < 0) return -1;
    return spade_vecenv_step_wait(v, results, f);
}

int spade_vecenv_step_mask(spade_vecenv *v, const unsigned char *mask, const char *const *actions, const size_t *lens,
                           spade_step_result *results, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is already in flight: call spade_vecenv_step_wait first");
    if (!mask || !actions) return spade_bad_call(f, "mask or actions is NULL");
    for (int i = 0; i < v->num_envs; i++) v->sel[i] = mask[i] ? 1 : 0;
    v->pend_pos = 0;
    if (step_send(v, v->sel, actions, lens, f) < 0) return -1;
    return gather(v, results, f);
}

int spade_vecenv_text_some(spade_vecenv *v, int n, const int *envs, int solve, spade_step_result *results,
                           spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    if (select_envs(v, n, envs, f) < 0) return -1;
    for (int j = 0; j < n; j++)
        if (!v->begun[envs[j]])
            return spade_bad_call(f, "env %d: %s before its reset", envs[j], solve ? "solve" : "hint");
    spade_failure g;
    for (int w = 0; w < v->num_workers; w++) {
        int m = 0;
        for (int j = 0; j < v->count[w]; j++) {
            int i = v->envs[w][j];
            if (!v->sel[i]) continue;
            v->bat_envs[w][m] = i;
            v->bat_ids[w][m] = v->wids[w][j];
            v->ops[m] = solve ? SPADE_OP_SOLVE : SPADE_OP_HINT;
            m++;
        }
        v->bat_n[w] = m;
        if (m && spade_worker_batch_send(v->workers[w], m, v->bat_ids[w], v->ops, NULL, NULL, NULL, &g) < 0 &&
            send_failure(v, w, &g, f) < 0)
            return -1;
    }
    v->pending = 1;
    v->pend_pos = 1;
    v->pend_text = 1;
    int rc = gather(v, results, f);
    v->pend_text = 0;
    return rc;
}

int spade_vecenv_set_poison(spade_vecenv *v, int worker, uint64_t poison, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    if (worker < -1 || worker >= v->num_workers)
        return spade_bad_call(f, "worker %d out of range [-1, %d)", worker, v->num_workers);
    spade_failure g;
    for (int w = 0; w < v->num_workers; w++) {
        if (worker >= 0 && w != worker) continue;
        int id = v->count[w] ? v->wids[w][0] : 0;
        uint32_t op = SPADE_OP_POISON;
        uint64_t seed = worker >= 0 ? poison : poison ? poison + (uint64_t)w : 0;
        spade_step_result r;
        if (spade_worker_batch_send(v->workers[w], 1, &id, &op, &seed, NULL, NULL, &g) < 0 ||
            spade_worker_batch_recv(v->workers[w], &r, &g) < 0) {
            spade_failure_prefix(&g, "vecenv");
            return vfail(v, &g, f);
        }
        v->poison[w] = seed;
    }
    return 0;
}

/* hint and solve: one round trip to the env's worker. */
static int text_call(spade_vecenv *v, int env, int solve, const char **text, size_t *len, spade_failure *f) {
    if (venter(v, f) < 0) return -1;
    if (v->pending) return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    if (env < 0 || env >= v->num_envs) return spade_bad_call(f, "env %d out of range [0, %d)", env, v->num_envs);
    spade_worker *w = v->workers[env % v->num_workers];
    spade_failure g;
    int rc = solve ? spade_worker_solve(w, v->local_id[env], text, len, &g)
                   : spade_worker_hint(w, v->local_id[env], text, len, &g);
    if (rc < 0) {
        spade_failure_prefix(&g, "vecenv");
        return vfail(v, &g, f);
    }
    return 0;
}

int spade_vecenv_hint(spade_vecenv *v, int env, const char **text, size_t *len, spade_failure *f) {
    return text_call(v, env, 0, text, len, f);
}

int spade_vecenv_solve(spade_vecenv *v, int env, const char **text, size_t *len, spade_failure *f) {
    return text_call(v, env, 1, text, len, f);
}

int spade_vecenv_env_lost(const spade_vecenv *v, int env) {
    if (!v || env < 0 || env >= v->num_envs) return 0;
    return !spade_worker_alive(v->workers[env % v->num_workers]);
}

int spade_vecenv_revive(spade_vecenv *v, spade_failure *f) {
    spade_failure_clear(f);
    if (!v) return spade_bad_call(f, "vecenv is NULL");
    if (v->pending) return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    int dead = 0;
    for (int w = 0; w < v->num_workers; w++)
        if (!spade_worker_alive(v->workers[w])) {
            spade_worker_free(v->workers[w]);
            v->workers[w] = NULL;
            dead = 1;
        }
    if (!dead) {
        v->failed = 0;
        return 0;
    }
    /* as at creation, every dead worker compiles at once */
    int rc = 0;
    spade_failure g, first;
    unsigned char *fresh = v->resetting; /* scratch: which workers are loading (num_workers <= num_envs) */
    memset(fresh, 0, (size_t)v->num_workers);
    for (int w = 0; w < v->num_workers; w++) {
        if (v->workers[w]) continue;
        if (spade_worker_load_begin_poisoned(v->sb, v->filename, v->source, v->source_len, v->poison[w], &v->workers[w],
                                             &g) < 0) {
            v->workers[w] = NULL;
            if (!rc) first = g;
            rc = -1;
        } else {
            fresh[w] = 1;
        }
    }
    for (int w = 0; w < v->num_workers; w++) {
        if (!fresh[w]) continue;
        if (spade_worker_load_finish(v->workers[w], &g) < 0) {
            v->workers[w] = NULL; /* already freed */
            if (!rc) first = g;
            rc = -1;
            continue;
        }
        if (add_instances(v, w, &g) < 0) {
            if (!rc) first = g;
            rc = -1;
        }
    }
    if (rc < 0) {
        /* the vector stays failed (a NULL worker is dead to every call) */
        spade_failure_prefix(&first, "vecenv: revive");
        return vfail(v, &first, f);
    }
    v->failed = 0;
    return 0;
}
