/* serve_ops.c — the ops of `spade serve` that are not batches
 * (docs/protocol.md): hello, list, info, make, close, hint, solve and check,
 * and what info, make and check share: reading what to load (a spec on the
 * search path, or source text) and its params.
 *
 * What it is not: reset and step (serve_batch.c), the envelope and the field
 * readers (serve_proto.c), the JSON of an info or a report (serve_reply.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "registry.h"
#include "serve_internal.h"
#include "version.h"

/* ---- what to load: a spec, or source text -------------------------------------------------- */
typedef struct loadable {
    char path[SPADE_PATH_MAX]; /* the file, or the filename given with source */
    char params[SPADE_SPEC_PARAMS_MAX];
    char *src;
    size_t len;
} loadable;

/* "params" as a string ("k=v,...") or an object ({"k": number}). */
static int params_field(rq *r, char *out, size_t cap) {
    const spade_json *p = spade_json_get(r->body, "params");
    out[0] = 0;
    if (!p || p->type == SPADE_JSON_NULL) return 0;
    if (p->type == SPADE_JSON_STRING) {
        if (p->len >= cap || memchr(p->str, 0, p->len))
            return rq_err(r, "bad_value", "params", "'params' is longer than %zu bytes or holds a NUL", cap - 1);
        memcpy(out, p->str, p->len + 1);
        return 0;
    }
    if (p->type != SPADE_JSON_OBJECT)
        return rq_err(r, "wrong_type", "params", "'params' must be a string or an object, not %s",
                      spade_json_type_name(p->type));
    size_t n = 0;
    for (size_t i = 0; i < p->len; i++) {
        const spade_json_member *m = &p->members[i];
        if (m->value.type != SPADE_JSON_NUMBER)
            return rq_err(r, "wrong_type", "params", "param '%s' must be a number, not %s", m->key,
                          spade_json_type_name(m->value.type));
        if (!spade_info_c_ident_ok(m->key))
            return rq_err(r, "bad_value", "params", "param name '%s' is not an identifier", m->key);
        int k = snprintf(out + n, cap - n, "%s%s=%s", n ? "," : "", m->key, m->value.str);
        if (k < 0 || (size_t)k >= cap - n)
            return rq_err(r, "bad_value", "params", "'params' is longer than %zu bytes", cap - 1);
        n += (size_t)k;
    }
    return 0;
}

static int rq_load(rq *r, loadable *L) {
    memset(L, 0, sizeof *L);
    const spade_json *spec = spade_json_get(r->body, "spec"), *source = spade_json_get(r->body, "source");
    if (spec && source) return rq_err(r, "bad_value", "spec", "give 'spec' or 'source', not both");
    if (!spec && !source)
        return rq_err(r, "missing_field", "spec", "'spec' (NAME[:params] or FILE.c) or 'source' is required");
    char params[SPADE_SPEC_PARAMS_MAX];
    if (params_field(r, params, sizeof params) < 0) return -1;
    char err[4096];
    if (spec) {
        if (!(spec = rq_field(r, r->body, "spec", "spec", SPADE_JSON_STRING, 1))) return -1;
        if (memchr(spec->str, 0, spec->len)) return rq_err(r, "bad_value", "spec", "'spec' holds a NUL byte");
        spade_registry *reg = NULL;
        if (spade_registry_new(&reg, NULL, 0, err, sizeof err) < 0) return rq_err(r, "internal", NULL, "%s", err);
        int rc = spade_registry_resolve(reg, spec->str, L->path, sizeof L->path, L->params, sizeof L->params, err,
                                        sizeof err);
        spade_registry_free(reg);
        if (rc < 0) return rq_err(r, "not_found", "spec", "%s", err);
        if (params[0] && L->params[0])
            return rq_err(r, "bad_value", "params", "params are given twice: in 'spec' and in 'params'");
        if (params[0]) memcpy(L->params, params, sizeof params);
        if (spade_read_source(L->path, &L->src, &L->len, err, sizeof err) < 0)
            return rq_err(r, "not_found", "spec", "%s", err);
        return 0;
    }
    if (!(source = rq_field(r, r->body, "source", "source", SPADE_JSON_STRING, 1))) return -1;
    if (source->len > SPADE_SOURCE_MAX)
        return rq_err(r, "bad_value", "source", "'source' is %zu bytes; the most is %d", source->len, SPADE_SOURCE_MAX);
    const spade_json *fn = spade_json_get(r->body, "filename");
    if (fn && fn->type != SPADE_JSON_NULL) {
        if (!(fn = rq_field(r, r->body, "filename", "filename", SPADE_JSON_STRING, 1))) return -1;
        if (!fn->len || fn->len > 255 || memchr(fn->str, 0, fn->len) || memchr(fn->str, '\n', fn->len))
            return rq_err(r, "bad_value", "filename", "'filename' must be 1..255 bytes on one line");
        memcpy(L->path, fn->str, fn->len + 1);
    } else {
        strcpy(L->path, "source.c");
    }
    memcpy(L->params, params, sizeof params);
    L->src = malloc(source->len + 1);
    if (!L->src) return rq_err(r, "internal", NULL, "out of memory");
    memcpy(L->src, source->str, source->len + 1);
    L->len = source->len;
    return 0;
}

/* The rest of an info or make reply: what was loaded (path, params, their
 * values, the env's info), then the reply's end. */
static void write_loaded(rq *r, const loadable *L, const spade_env_info *info, const double *pv) {
    spade_jw_key(r->out, "path");
    spade_jw_cstr(r->out, L->path);
    spade_jw_key(r->out, "params");
    spade_jw_cstr(r->out, L->params);
    spade_jw_key(r->out, "param_values");
    serve_write_param_values(r->out, info, pv);
    spade_jw_key(r->out, "info");
    serve_write_info(r->out, info);
    rq_finish(r);
}

/* ---- ops ---------------------------------------------------------------------------- */
void serve_op_hello(rq *r) {
    rq_begin_ok(r);
    spade_jbuf *b = r->out;
    spade_jw_key(b, "protocol");
    spade_jw_int(b, SPADE_PROTOCOL_VERSION);
    spade_jw_key(b, "spade");
    spade_jw_cstr(b, spade_version());
    spade_jw_key(b, "abi");
    spade_jw_int(b, SPADE_ENV_ABI);
    spade_jw_key(b, "auth"); /* what this server asks of a client: "token" or "none" */
    spade_jw_cstr(b, r->c->lim.token ? "token" : "none");
    spade_jw_key(b, "limits");
    spade_jw_obj(b);
    spade_jw_key(b, "max_envs");
    spade_jw_int(b, r->c->lim.max_envs);
    spade_jw_key(b, "max_instances");
    spade_jw_int(b, r->c->lim.max_instances);
    spade_jw_key(b, "max_workers");
    spade_jw_int(b, r->c->lim.max_workers);
    spade_jw_key(b, "max_line");
    spade_jw_u64(b, r->c->lim.max_line);
    spade_jw_key(b, "obs_max");
    spade_jw_int(b, SPADE_OBS_MAX);
    spade_jw_key(b, "action_max");
    spade_jw_int(b, SPADE_ACTION_MAX);
    spade_jw_end_obj(b);
    spade_jw_key(b, "ops");
    spade_jw_arr(b);
    static const char *const ops[] = {"hello", "list", "info",  "make",  "reset",
                                      "step",  "hint", "solve", "check", "close"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) spade_jw_cstr(b, ops[i]);
    spade_jw_end_arr(b);
    rq_finish(r);
}

void serve_op_list(rq *r) {
    const spade_json *load = spade_json_get(r->body, "load");
    if (load && load->type != SPADE_JSON_NULL && !(load = rq_field(r, r->body, "load", "load", SPADE_JSON_BOOL, 1)))
        return;
    int compile = !load || load->type == SPADE_JSON_NULL || load->boolean;
    char err[2048];
    spade_registry *reg = NULL;
    if (spade_registry_new(&reg, NULL, 0, err, sizeof err) < 0) {
        rq_err(r, "internal", NULL, "%s", err);
        return;
    }
    spade_env_listing *ls = NULL;
    int n = 0;
    int rc = spade_registry_list(reg, compile ? r->c->sb : NULL, &ls, &n, err, sizeof err);
    spade_registry_free(reg);
    if (rc < 0) {
        rq_err(r, "internal", NULL, "%s", err);
        return;
    }
    rq_begin_ok(r);
    spade_jw_key(r->out, "envs");
    spade_jw_arr(r->out);
    for (int i = 0; i < n; i++) {
        spade_jw_obj(r->out);
        spade_jw_key(r->out, "name");
        spade_jw_cstr(r->out, ls[i].name);
        spade_jw_key(r->out, "path");
        spade_jw_cstr(r->out, ls[i].path);
        spade_jw_key(r->out, "shadowed");
        spade_jw_bool(r->out, ls[i].shadowed);
        if (compile && !ls[i].shadowed) {
            spade_jw_key(r->out, "loaded");
            spade_jw_bool(r->out, ls[i].ok);
            if (ls[i].ok) {
                spade_jw_key(r->out, "info");
                serve_write_info(r->out, &ls[i].info);
            } else {
                spade_jw_key(r->out, "error");
                spade_jw_cstr(r->out, ls[i].error);
            }
        }
        spade_jw_end_obj(r->out);
    }
    spade_jw_end_arr(r->out);
    rq_finish(r);
    free(ls);
}

void serve_op_info(rq *r) {
    loadable L;
    if (rq_load(r, &L) < 0) return;
    spade_worker *w = NULL;
    spade_failure f;
    memset(&f, 0, sizeof f);
    if (spade_worker_load(r->c->sb, L.path, L.src, L.len, &w, &f) != 0 || !w) {
        rq_env_failure(r, L.path, &f);
        free(L.src);
        return;
    }
    const spade_env_info *info = spade_worker_info(w);
    double pv[SPADE_INFO_MAX_PARAMS];
    char err[1024];
    if (spade_params_parse(info, L.params, pv, err, sizeof err) != 0) {
        rq_err(r, "bad_params", "params", "%s: params: %s", L.path, err);
    } else {
        rq_begin_ok(r);
        write_loaded(r, &L, info, pv);
    }
    spade_worker_free(w);
    free(L.src);
}

void serve_op_make(rq *r) {
    serve_conn *c = r->c;
    long long n = 1, W = 1;
    if (rq_int_field(r, r->body, "instances", 1, c->lim.max_instances, &n) < 0) return;
    if (rq_int_field(r, r->body, "workers", 1, c->lim.max_workers, &W) < 0) return;
    if (W > n) W = n;
    if (c->n_envs >= c->lim.max_envs) {
        rq_err(r, "limit", NULL, "this connection has %d environments, the most it may have (close one first)",
               c->n_envs);
        return;
    }
    if (c->total_instances + n > c->lim.max_instances) {
        rq_err(r, "limit", "instances", "%lld more instances would pass this connection's cap of %d (it has %d)", n,
               c->lim.max_instances, c->total_instances);
        return;
    }
    if (c->total_workers + W > c->lim.max_workers) {
        rq_err(r, "limit", "workers", "%lld more workers would pass this connection's cap of %d (it has %d)", W,
               c->lim.max_workers, c->total_workers);
        return;
    }
    loadable L;
    if (rq_load(r, &L) < 0) return;
    serve_env *e = calloc(1, sizeof *e);
    if (e) {
        e->workers = calloc((size_t)W, sizeof *e->workers);
        e->first_id = calloc((size_t)W, sizeof *e->first_id);
        e->state = calloc((size_t)n, 1);
    }
    if (!e || !e->workers || !e->first_id || !e->state) {
        serve_env_free(e);
        free(L.src);
        rq_err(r, "internal", NULL, "out of memory");
        return;
    }
    if (c->n_envs == c->cap_envs) {
        int cap = c->cap_envs ? c->cap_envs * 2 : 8;
        serve_env **p = realloc(c->envs, (size_t)cap * sizeof *p);
        if (!p) {
            serve_env_free(e);
            free(L.src);
            rq_err(r, "internal", NULL, "out of memory");
            return;
        }
        c->envs = p;
        c->cap_envs = cap;
    }
    snprintf(e->path, sizeof e->path, "%s", L.path);
    snprintf(e->params, sizeof e->params, "%s", L.params);
    spade_failure f;
    memset(&f, 0, sizeof f);
    double pv[SPADE_INFO_MAX_PARAMS];
    const spade_env_info *info = NULL;
    for (int w = 0; w < W; w++) {
        if (spade_worker_load(c->sb, L.path, L.src, L.len, &e->workers[w], &f) != 0 || !e->workers[w]) {
            e->workers[w] = NULL;
            rq_env_failure(r, L.path, &f);
            goto fail;
        }
        e->n_workers = w + 1;
        if (w == 0) {
            info = spade_worker_info(e->workers[0]);
            char err[1024];
            if (spade_params_parse(info, L.params, pv, err, sizeof err) != 0) {
                rq_err(r, "bad_params", "params", "%s: params: %s", L.path, err);
                goto fail;
            }
        }
        int count = (int)((n - w + W - 1) / W);
        if (spade_worker_add_instances(e->workers[w], count, info->n_params ? pv : NULL, &e->first_id[w], &f) != 0) {
            rq_env_failure(r, L.path, &f);
            goto fail;
        }
    }
    e->n_instances = (int)n;
    e->handle = c->next_handle++;
    c->envs[c->n_envs++] = e;
    c->total_instances += (int)n;
    c->total_workers += (int)W;
    rq_begin_ok(r);
    spade_jw_key(r->out, "env");
    spade_jw_int(r->out, e->handle);
    spade_jw_key(r->out, "instances");
    spade_jw_int(r->out, n);
    spade_jw_key(r->out, "workers");
    spade_jw_int(r->out, W);
    write_loaded(r, &L, info, pv);
    free(L.src);
    return;
fail:
    serve_env_free(e);
    free(L.src);
}

void serve_op_close(rq *r) {
    serve_env *e;
    int i;
    if (rq_handle(r, &e, &i) < 0) return;
    r->c->total_instances -= e->n_instances;
    r->c->total_workers -= e->n_workers;
    serve_env_free(e);
    memmove(&r->c->envs[i], &r->c->envs[i + 1], (size_t)(r->c->n_envs - i - 1) * sizeof *r->c->envs);
    r->c->n_envs--;
    rq_begin_ok(r);
    rq_finish(r);
}

void serve_op_text(rq *r, int solve) {
    serve_env *e;
    if (rq_handle(r, &e, NULL) < 0) return;
    long long inst = 0;
    int got = rq_int_field(r, r->body, "instance", 0, e->n_instances - 1, &inst);
    if (got < 0) return;
    if (got == 0 && e->n_instances > 1) {
        rq_err(r, "missing_field", "instance", "'instance' is required when the environment has several");
        return;
    }
    int W = e->n_workers, w = (int)(inst % W);
    const char *text;
    size_t len;
    spade_failure f;
    memset(&f, 0, sizeof f);
    int rc = solve ? spade_worker_solve(e->workers[w], e->first_id[w] + (int)(inst / W), &text, &len, &f)
                   : spade_worker_hint(e->workers[w], e->first_id[w] + (int)(inst / W), &text, &len, &f);
    if (rc != 0) {
        rq_env_failure(r, solve ? "solve" : "hint", &f);
        return;
    }
    rq_begin_ok(r);
    spade_jw_key(r->out, solve ? "action" : "text");
    spade_jw_str(r->out, text, len);
    rq_finish(r);
}

void serve_op_check(rq *r) {
    spade_check_opts o;
    spade_check_opts_default(&o);
    long long v;
    int got;
    if ((got = rq_int_field(r, r->body, "seeds", 1, 1000, &v)) < 0) return;
    if (got) o.seeds = (int)v;
    if ((got = rq_int_field(r, r->body, "solve_seeds", 1, 10000, &v)) < 0) return;
    if (got) o.solve_seeds = (int)v;
    const spade_json *fs = spade_json_get(r->body, "first_seed");
    if (fs && fs->type != SPADE_JSON_NULL) {
        if (!(fs = rq_field(r, r->body, "first_seed", "first_seed", SPADE_JSON_NUMBER, 1))) return;
        if (spade_json_u64(fs, &o.first_seed) < 0) {
            rq_err(r, "bad_value", "first_seed", "'first_seed' must be a whole number in [0, 2^64)");
            return;
        }
    }
    loadable L;
    if (rq_load(r, &L) < 0) return;
    spade_check_report *rep = malloc(sizeof *rep);
    if (!rep) {
        free(L.src);
        rq_err(r, "internal", NULL, "out of memory");
        return;
    }
    int rc = spade_check(r->c->sb, L.path, L.src, L.len, L.params[0] ? L.params : NULL, &o, rep);
    free(L.src);
    if (rc < 0) {
        rq_err(r, "internal", NULL, "the checker could not run: %s", rep->text);
        free(rep);
        return;
    }
    rq_begin_ok(r);
    spade_jw_key(r->out, "path");
    spade_jw_cstr(r->out, L.path);
    spade_jw_key(r->out, "passed");
    spade_jw_int(r->out, rep->passed);
    spade_jw_key(r->out, "failed");
    spade_jw_int(r->out, rep->failed);
    spade_jw_key(r->out, "warned");
    spade_jw_int(r->out, rep->warned);
    spade_jw_key(r->out, "result");
    spade_jw_cstr(r->out, rc == 0 ? "pass" : "fail");
    spade_jw_key(r->out, "checks");
    serve_write_check_lines(r->out, rep->text);
    spade_jw_key(r->out, "text");
    spade_jw_cstr(r->out, rep->text);
    rq_finish(r);
    free(rep);
}
