/* spade.c — the public API of <spade/spade.h>: a thin layer over the registry,
 * the vector env and the checker, with opaque handles and plain results.
 * What it is not: new behaviour; each call is the engine's own (the headers under core/),
 * so what they document holds here. */
#include <spade/spade.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errbuf.h"
#include "registry.h"
#include "sandbox/sandbox.h"

struct spade_env {
    spade_vecenv *v;
    int n;
    spade_step_result *raw; /* num_envs */
    size_t *lens;
};

static void convert(const spade_step_result *r, spade_result *out, int n) {
    for (int i = 0; i < n; i++) {
        out[i].obs = r[i].obs;
        out[i].obs_len = r[i].obs_len;
        out[i].reward = r[i].reward;
        out[i].episode_return = r[i].episode_return;
        out[i].terminated = r[i].terminated;
        out[i].truncated = r[i].truncated;
        out[i].success = r[i].success;
    }
}

/* The file and params of spec, and its source. */
static int load_spec(const char *spec, char *path, size_t pathcap, char *params, size_t pcap, char **src, size_t *len,
                     char *err, size_t errlen) {
    spade_registry *r;
    if (spade_registry_new(&r, NULL, 0, err, errlen) < 0) return -1;
    int rc = spade_registry_resolve(r, spec, path, pathcap, params, pcap, err, errlen);
    spade_registry_free(r);
    if (rc < 0) return -1;
    return spade_read_source(path, src, len, err, errlen);
}

int spade_env_open(spade_sandbox *sb, const char *spec, int num_envs, spade_env **out, char *err, size_t errlen) {
    if (out) *out = NULL;
    if (!sb || !spec || !out || num_envs < 1) {
        spade_errf(err, errlen, "spade_env_open: NULL sandbox, spec or out, or num_envs < 1");
        return -1;
    }
    char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX];
    char *src = NULL;
    size_t len = 0;
    if (load_spec(spec, path, sizeof path, params, sizeof params, &src, &len, err, errlen) < 0) return -1;
    spade_env *e = calloc(1, sizeof *e);
    if (e) {
        e->raw = calloc((size_t)num_envs, sizeof *e->raw);
        e->lens = calloc((size_t)num_envs, sizeof *e->lens);
    }
    if (!e || !e->raw || !e->lens) {
        free(src);
        spade_env_free(e);
        spade_errf(err, errlen, "spade_env_open: out of memory");
        return -1;
    }
    spade_failure f;
    int rc = spade_vecenv_new(sb, path, src, len, *params ? params : NULL, num_envs, 1, SPADE_AUTORESET_NEXT_STEP,
                              &e->v, &f);
    free(src);
    if (rc != 0) {
        spade_errf(err, errlen, "%s: %s: %s", path, spade_outcome_name(f.outcome), f.message);
        spade_env_free(e);
        return -1;
    }
    e->n = num_envs;
    *out = e;
    return 0;
}

void spade_env_free(spade_env *e) {
    if (!e) return;
    spade_vecenv_free(e->v);
    free(e->raw);
    free(e->lens);
    free(e);
}

int spade_env_num(const spade_env *e) { return e ? e->n : 0; }

const char *spade_env_name(const spade_env *e) {
    const spade_env_info *in = e ? spade_vecenv_info(e->v) : NULL;
    return in ? in->name : "";
}

int spade_env_reset(spade_env *e, uint64_t seed, spade_result *results, char *err, size_t errlen) {
    spade_failure f;
    if (!e || !results) {
        spade_errf(err, errlen, "spade_env_reset: NULL env or results");
        return -1;
    }
    if (spade_vecenv_reset(e->v, seed, e->raw, &f) != 0) {
        spade_errf(err, errlen, "reset: %s: %s", spade_outcome_name(f.outcome), f.message);
        return -1;
    }
    convert(e->raw, results, e->n);
    return 0;
}

int spade_env_step(spade_env *e, const char *const *actions, spade_result *results, char *err, size_t errlen) {
    spade_failure f;
    if (!e || !actions || !results) {
        spade_errf(err, errlen, "spade_env_step: NULL env, actions or results");
        return -1;
    }
    for (int i = 0; i < e->n; i++) e->lens[i] = actions[i] ? strlen(actions[i]) : 0;
    if (spade_vecenv_step(e->v, actions, e->lens, e->raw, &f) != 0) {
        spade_errf(err, errlen, "step: %s: %s", spade_outcome_name(f.outcome), f.message);
        return -1;
    }
    convert(e->raw, results, e->n);
    return 0;
}

int spade_check_spec(spade_sandbox *sb, const char *spec, char **report, char *err, size_t errlen) {
    if (report) *report = NULL;
    char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX];
    char *src = NULL;
    size_t len = 0;
    if (!sb || !spec) {
        spade_errf(err, errlen, "spade_check_spec: NULL sandbox or spec");
        return -1;
    }
    if (load_spec(spec, path, sizeof path, params, sizeof params, &src, &len, err, errlen) < 0) return -1;
    spade_check_report *rep = malloc(sizeof *rep);
    if (!rep) {
        free(src);
        spade_errf(err, errlen, "spade_check_spec: out of memory");
        return -1;
    }
    int rc = spade_check(sb, path, src, len, *params ? params : NULL, NULL, rep);
    free(src);
    if (rc < 0) spade_errf(err, errlen, "%s: the checker could not run: %.900s", path, rep->text);
    if (report) *report = strdup(rep->text);
    free(rep);
    return rc;
}

void spade_free(void *p) { free(p); }
