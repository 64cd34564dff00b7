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
 * spade_vecenv_reset_one(env, seed) uses exactly the seed it is given.
 * Failures: bad_call leaves the vector usable; anything else (a worker timed
 * out, crashed, ...) is sticky: every later call returns it, and the caller
 * frees the vector and builds a new one.
 * What it is not: a trainer's rollout buffer; results point into the workers'
 * buffers and are valid until the next call on the vector.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/internal.h"

struct spade_vecenv {
    int num_envs, num_workers;
    spade_autoreset mode;
    spade_worker **workers;
    int *local_id;       /* [num_envs] instance id inside its worker */
    uint64_t *episode;   /* [num_envs] episodes started since the last vector reset */
    unsigned char *ended; /* [num_envs] its last result was terminated or truncated */
    uint64_t base_seed;
    int started;
    int pending;
    int failed;
    spade_failure fail;
    /* per worker: how many envs, which ones, their instance ids there (fixed
     * at creation); results of its last batch */
    int *count;
    int **envs;
    int **wids;
    spade_step_result **res;
    /* [num_envs]: which envs reset in the next batch and with which seed */
    unsigned char *resetting;
    uint64_t *seed_of;
    /* scratch for one worker's batch (sized for the largest) */
    uint32_t *ops;
    uint64_t *seeds;
    const char **acts;
    size_t *lens;
};

static int vfail(spade_vecenv *v, const spade_failure *g, spade_failure *f)
{
    if (g->outcome != SPADE_OUT_BAD_CALL) {
        v->failed = 1;
        v->fail = *g;
    }
    if (f)
        *f = *g;
    return -1;
}

static int venter(spade_vecenv *v, spade_failure *f)
{
    spade_failure_clear(f);
    if (!v)
        return spade_bad_call(f, "vecenv is NULL");
    if (v->failed) {
        if (f)
            *f = v->fail;
        return -1;
    }
    return 0;
}

void spade_vecenv_free(spade_vecenv *v)
{
    if (!v)
        return;
    for (int w = 0; v->workers && w < v->num_workers; w++)
        spade_worker_free(v->workers[w]);
    for (int w = 0; v->envs && w < v->num_workers; w++)
        free(v->envs[w]);
    for (int w = 0; v->res && w < v->num_workers; w++)
        free(v->res[w]);
    for (int w = 0; v->wids && w < v->num_workers; w++)
        free(v->wids[w]);
    free(v->workers);
    free(v->envs);
    free(v->wids);
    free(v->res);
    free(v->resetting);
    free(v->seed_of);
    free(v->count);
    free(v->local_id);
    free(v->episode);
    free(v->ended);
    free(v->ops);
    free(v->seeds);
    free(v->acts);
    free(v->lens);
    free(v);
}

int spade_vecenv_new(spade_sandbox *sb, const char *filename, const char *source, size_t len, const char *params,
                     int num_envs, int num_workers, spade_autoreset mode, spade_vecenv **out, spade_failure *f)
{
    spade_failure_clear(f);
    if (out)
        *out = NULL;
    if (!sb || !out || !source)
        return spade_bad_call(f, "spade_vecenv_new: NULL sandbox, source or out");
    if (num_envs < 1 || num_envs > (1 << 20))
        return spade_bad_call(f, "num_envs = %d (1 .. 1048576)", num_envs);
    if (num_workers < 1)
        return spade_bad_call(f, "num_workers = %d (at least 1)", num_workers);
    if (mode != SPADE_AUTORESET_NEXT_STEP && mode != SPADE_AUTORESET_DISABLED)
        return spade_bad_call(f, "unknown autoreset mode %d", (int)mode);
    if (num_workers > num_envs)
        num_workers = num_envs; /* a worker without an env would only cost a process */

    spade_vecenv *v = calloc(1, sizeof *v);
    if (!v)
        goto oom;
    v->num_envs = num_envs;
    v->num_workers = num_workers;
    v->mode = mode;
    int per = (num_envs + num_workers - 1) / num_workers;
    v->workers = calloc((size_t)num_workers, sizeof *v->workers);
    v->envs = calloc((size_t)num_workers, sizeof *v->envs);
    v->wids = calloc((size_t)num_workers, sizeof *v->wids);
    v->res = calloc((size_t)num_workers, sizeof *v->res);
    v->count = calloc((size_t)num_workers, sizeof *v->count);
    v->local_id = calloc((size_t)num_envs, sizeof *v->local_id);
    v->episode = calloc((size_t)num_envs, sizeof *v->episode);
    v->ended = calloc((size_t)num_envs, 1);
    v->resetting = calloc((size_t)num_envs, 1);
    v->seed_of = calloc((size_t)num_envs, sizeof *v->seed_of);
    v->ops = calloc((size_t)per, sizeof *v->ops);
    v->seeds = calloc((size_t)per, sizeof *v->seeds);
    v->acts = calloc((size_t)per, sizeof *v->acts);
    v->lens = calloc((size_t)per, sizeof *v->lens);
    if (!v->workers || !v->envs || !v->wids || !v->res || !v->count || !v->local_id || !v->episode || !v->ended ||
        !v->resetting || !v->seed_of || !v->ops || !v->seeds || !v->acts || !v->lens)
        goto oom;
    for (int i = 0; i < num_envs; i++)
        v->count[i % num_workers]++;
    for (int w = 0; w < num_workers; w++) {
        v->envs[w] = calloc((size_t)v->count[w], sizeof **v->envs);
        v->wids[w] = calloc((size_t)v->count[w], sizeof **v->wids);
        v->res[w] = calloc((size_t)v->count[w], sizeof **v->res);
        if (!v->envs[w] || !v->wids[w] || !v->res[w])
            goto oom;
    }
    for (int i = 0; i < num_envs; i++)
        v->envs[i % num_workers][i / num_workers] = i;

    /* Every worker compiles at once: send all the sources, then wait. */
    double values[SPADE_INFO_MAX_PARAMS];
    for (int w = 0; w < num_workers; w++)
        if (spade_worker_load_begin(sb, filename, source, len, &v->workers[w], f) < 0) {
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
    if (spade_params_parse(spade_worker_info(v->workers[0]), params, values, err, sizeof err) < 0) {
        spade_vecenv_free(v);
        return spade_bad_call(f, "%s: params: %s", filename ? filename : "env.c", err);
    }
    for (int w = 0; w < num_workers; w++) {
        int first;
        const spade_env_info *info = spade_worker_info(v->workers[w]);
        if (spade_worker_add_instances(v->workers[w], v->count[w], info->n_params ? values : NULL, &first, f) < 0) {
            spade_vecenv_free(v);
            return -1;
        }
        for (int j = 0; j < v->count[w]; j++) {
            v->local_id[v->envs[w][j]] = first + j;
            v->wids[w][j] = first + j;
        }
    }
    *out = v;
    return 0;
oom:
    spade_vecenv_free(v);
    if (f) {
        f->outcome = SPADE_OUT_INTERNAL;
        f->signal = f->line = 0;
        snprintf(f->message, sizeof f->message, "vecenv: out of memory");
    }
    return -1;
}

int spade_vecenv_num_envs(const spade_vecenv *v)
{
    return v ? v->num_envs : 0;
}

const spade_env_info *spade_vecenv_info(const spade_vecenv *v)
{
    return v ? spade_worker_info(v->workers[0]) : NULL;
}

/* Receives every worker's batch; the first failure wins, but every worker is
 * drained so that none is left with a reply in flight. One worker holds envs
 * 0..n-1 in order, so its results are decoded straight into the caller's. */
static int gather(spade_vecenv *v, spade_step_result *results, spade_failure *f)
{
    spade_failure first, g;
    int bad = 0;
    for (int w = 0; w < v->num_workers; w++) {
        spade_step_result *res = v->num_workers == 1 && results ? results : v->res[w];
        if (spade_worker_batch_recv(v->workers[w], res, &g) < 0) {
            if (!bad)
                first = g;
            bad = 1;
            continue;
        }
        const int *envs = v->envs[w];
        for (int j = 0; j < v->count[w]; j++) {
            int i = envs[j];
            const spade_step_result *r = &res[j];
            if (results && res != results)
                results[i] = *r;
            v->ended[i] = (r->terminated || r->truncated) ? 1 : 0;
        }
    }
    v->pending = 0;
    if (bad) {
        spade_failure_prefix(&first, "vecenv");
        return vfail(v, &first, f);
    }
    return 0;
}

/* Sends one batch per worker: env i resets when reset[i] (with seed_of[i]),
 * else steps with its action. A worker none of whose envs resets gets a plain
 * step batch; with one worker the caller's actions go through as they are. A
 * failed send ends the vector. */
static int scatter(spade_vecenv *v, const unsigned char *reset, const uint64_t *seed_of, const char *const *actions,
                   const size_t *lens, spade_failure *f)
{
    spade_failure g;
    for (int w = 0; w < v->num_workers; w++) {
        const int *envs = v->envs[w];
        int cnt = v->count[w], any_reset = 0;
        const char *const *acts = actions;
        const size_t *lns = lens;
        if (v->num_workers > 1 && actions) {
            for (int j = 0; j < cnt; j++) {
                int i = envs[j];
                v->acts[j] = reset[i] ? NULL : actions[i];
                v->lens[j] = reset[i] ? 0 : lens ? lens[i] : (actions[i] ? strlen(actions[i]) : 0);
                any_reset |= reset[i];
            }
            acts = v->acts;
            lns = v->lens;
        } else {
            for (int j = 0; j < cnt; j++)
                any_reset |= reset[envs[j]];
        }
        int rc;
        if (!any_reset) {
            rc = spade_worker_step_send(v->workers[w], cnt, v->wids[w], acts, lns, &g);
        } else {
            for (int j = 0; j < cnt; j++) {
                int i = envs[j];
                v->ops[j] = reset[i] ? SPADE_OP_RESET : SPADE_OP_STEP;
                v->seeds[j] = reset[i] ? seed_of[i] : 0;
            }
            rc = spade_worker_batch_send(v->workers[w], cnt, v->wids[w], v->ops, v->seeds, actions ? acts : NULL,
                                         actions ? lns : NULL, &g);
        }
        if (rc < 0) {
            /* Workers already sent to are drained, so that they stay usable
             * when the failure is only a bad_call. */
            for (int k = 0; k < w; k++) {
                spade_failure ignore;
                spade_worker_batch_recv(v->workers[k], v->res[k], &ignore);
            }
            return vfail(v, &g, f);
        }
    }
    v->pending = 1;
    return 0;
}

int spade_vecenv_reset(spade_vecenv *v, uint64_t seed, spade_step_result *results, spade_failure *f)
{
    if (venter(v, f) < 0)
        return -1;
    if (v->pending)
        return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    memset(v->resetting, 1, (size_t)v->num_envs);
    for (int i = 0; i < v->num_envs; i++)
        v->seed_of[i] = seed + (uint64_t)i;
    if (scatter(v, v->resetting, v->seed_of, NULL, NULL, f) < 0)
        return -1;
    if (gather(v, results, f) < 0)
        return -1;
    v->base_seed = seed;
    memset(v->episode, 0, (size_t)v->num_envs * sizeof *v->episode);
    v->started = 1;
    return 0;
}

int spade_vecenv_reset_one(spade_vecenv *v, int env, uint64_t seed, spade_step_result *result, spade_failure *f)
{
    if (venter(v, f) < 0)
        return -1;
    if (v->pending)
        return spade_bad_call(f, "a step is in flight: call spade_vecenv_step_wait first");
    if (env < 0 || env >= v->num_envs)
        return spade_bad_call(f, "env %d out of range [0, %d)", env, v->num_envs);
    spade_worker *w = v->workers[env % v->num_workers];
    spade_step_result r;
    spade_failure g;
    int id = v->local_id[env];
    if (spade_worker_reset(w, 1, &id, &seed, &r, &g) < 0)
        return vfail(v, &g, f);
    if (result)
        *result = r;
    v->ended[env] = 0;
    return 0;
}

int spade_vecenv_step_async(spade_vecenv *v, const char *const *actions, const size_t *lens, spade_failure *f)
{
    if (venter(v, f) < 0)
        return -1;
    if (v->pending)
        return spade_bad_call(f, "a step is already in flight: call spade_vecenv_step_wait first");
    if (!v->started)
        return spade_bad_call(f, "step before spade_vecenv_reset");
    if (!actions)
        return spade_bad_call(f, "actions is NULL");
    if (v->mode == SPADE_AUTORESET_DISABLED)
        for (int i = 0; i < v->num_envs; i++)
            if (v->ended[i])
                return spade_bad_call(
                    f, "env %d finished its episode: reset it with spade_vecenv_reset_one (autoreset disabled)", i);
    unsigned char *reset = v->ended; /* NEXT_STEP: exactly the envs that ended */
    uint64_t n = (uint64_t)v->num_envs;
    for (int i = 0; i < v->num_envs; i++)
        if (reset[i])
            v->seed_of[i] = v->base_seed + (uint64_t)i + (v->episode[i] + 1) * n;
    if (scatter(v, reset, v->seed_of, actions, lens, f) < 0)
        return -1;
    for (int i = 0; i < v->num_envs; i++)
        if (reset[i])
            v->episode[i]++;
    return 0;
}

int spade_vecenv_step_wait(spade_vecenv *v, spade_step_result *results, spade_failure *f)
{
    if (venter(v, f) < 0)
        return -1;
    if (!v->pending)
        return spade_bad_call(f, "no step in flight: call spade_vecenv_step_async first");
    return gather(v, results, f);
}

int spade_vecenv_step(spade_vecenv *v, const char *const *actions, const size_t *lens, spade_step_result *results,
                      spade_failure *f)
{
    if (spade_vecenv_step_async(v, actions, lens, f) < 0)
        return -1;
    return spade_vecenv_step_wait(v, results, f);
}
