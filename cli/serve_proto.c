/* serve_proto.c — the requests of `spade serve` (docs/protocol.md): parses one
 * JSON line, checks every field it uses, calls the sandbox, registry and
 * checker, and writes one JSON line back.
 *
 * An environment handle owns W workers and N instances; instance i lives on
 * worker i % W, so a batch spreads evenly and the workers' steps overlap
 * (split-phase send, then receive). The handler keeps each instance's episode
 * state itself (never reset, running, ended), so a step the worker would
 * refuse is answered for that instance alone instead of spoiling the batch.
 * What it is not: a transport (cmd_serve.c reads and writes the bytes), nor
 * thread-safe per connection.
 */
#include "serve.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "env.h"
#include "registry.h"
#include "sandbox/sandbox.h"
#include "version.h"

void serve_limits_default(serve_limits *l) {
    l->max_envs = 64;
    l->max_instances = 4096;
    l->max_workers = 32;
    l->max_line = 16u << 20;
    l->max_clients = 32;
}

enum { ST_NEW = 0, ST_RUNNING = 1, ST_ENDED = 2 };

typedef struct serve_env {
    int handle;
    int n_workers, n_instances;
    spade_worker **workers;
    int *first_id; /* per worker: the local id of its first instance */
    unsigned char *state; /* per instance */
    char path[SPADE_PATH_MAX];
    char params[SPADE_SPEC_PARAMS_MAX];
} serve_env;

struct serve_conn {
    spade_sandbox *sb;
    serve_limits lim;
    serve_env **envs;
    int n_envs, cap_envs, next_handle;
    int total_instances, total_workers;
    spade_jbuf store; /* a batch's observations until they are written; kept between requests */
};

serve_conn *serve_conn_new(spade_sandbox *sb, const serve_limits *lim) {
    serve_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->sb = sb;
    if (lim)
        c->lim = *lim;
    else
        serve_limits_default(&c->lim);
    c->next_handle = 1;
    return c;
}

static void env_free(serve_env *e) {
    if (!e) return;
    for (int w = 0; w < e->n_workers; w++) spade_worker_free(e->workers[w]);
    free(e->workers), free(e->first_id), free(e->state), free(e);
}

void serve_conn_free(serve_conn *c) {
    if (!c) return;
    for (int i = 0; i < c->n_envs; i++) env_free(c->envs[i]);
    free(c->envs);
    spade_jbuf_free(&c->store);
    free(c);
}

int serve_conn_num_envs(const serve_conn *c) { return c->n_envs; }
int serve_conn_num_workers(const serve_conn *c) { return c->total_workers; }

/* ---- responses ------------------------------------------------------------------ */
typedef struct rq {
    serve_conn *c;
    spade_jbuf *out;
    const spade_json *id; /* the request's "id", echoed; NULL when absent */
    const spade_json *body;
} rq;

static void begin_ok(rq *r) {
    spade_jw_obj(r->out);
    if (r->id) {
        spade_jw_key(r->out, "id");
        spade_jw_value(r->out, r->id);
    }
    spade_jw_key(r->out, "ok");
    spade_jw_bool(r->out, 1);
}

static void finish(rq *r) {
    spade_jw_end_obj(r->out);
    spade_jw_raw(r->out, "\n", 1);
}

static void begin_err(rq *r, const char *code, const char *field) {
    spade_jw_obj(r->out);
    if (r->id) {
        spade_jw_key(r->out, "id");
        spade_jw_value(r->out, r->id);
    }
    spade_jw_key(r->out, "ok");
    spade_jw_bool(r->out, 0);
    spade_jw_key(r->out, "error");
    spade_jw_obj(r->out);
    spade_jw_key(r->out, "code");
    spade_jw_cstr(r->out, code);
    if (field) {
        spade_jw_key(r->out, "field");
        spade_jw_cstr(r->out, field);
    }
}

static int rq_err(rq *r, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int rq_err(rq *r, const char *code, const char *field, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    begin_err(r, code, field);
    spade_jw_key(r->out, "message");
    spade_jw_cstr(r->out, msg);
    spade_jw_end_obj(r->out);
    finish(r);
    return -1;
}

static void write_failure(spade_jbuf *b, const spade_failure *f) {
    spade_jw_obj(b);
    spade_jw_key(b, "outcome");
    spade_jw_cstr(b, spade_outcome_name(f->outcome));
    if (f->signal) {
        spade_jw_key(b, "signal");
        spade_jw_int(b, f->signal);
    }
    if (f->line) {
        spade_jw_key(b, "line");
        spade_jw_int(b, f->line);
    }
    spade_jw_key(b, "message");
    spade_jw_cstr(b, f->message);
    spade_jw_end_obj(b);
}

/* An environment's own failure (compile error, crash, ...), classified. */
static int rq_env_failure(rq *r, const char *what, const spade_failure *f) {
    begin_err(r, "env_failure", NULL);
    spade_jw_key(r->out, "message");
    char msg[1400];
    snprintf(msg, sizeof msg, "%s: %s: %s", what, spade_outcome_name(f->outcome), f->message);
    spade_jw_cstr(r->out, msg);
    spade_jw_key(r->out, "failure");
    write_failure(r->out, f);
    spade_jw_end_obj(r->out);
    finish(r);
    return -1;
}

void serve_error_line(spade_jbuf *out, const char *code, const char *message) {
    rq r = {NULL, out, NULL, NULL};
    rq_err(&r, code, NULL, "%s", message);
}

/* ---- fields ---------------------------------------------------------------------- */
static const spade_json *field(rq *r, const spade_json *obj, const char *key, const char *name, spade_json_type t,
                               int required) {
    const spade_json *v = spade_json_get(obj, key);
    if (!v || (v->type == SPADE_JSON_NULL && t != SPADE_JSON_NULL)) {
        if (required) rq_err(r, "missing_field", name, "'%s' is required", name);
        return NULL;
    }
    if (v->type != t) {
        rq_err(r, "wrong_type", name, "'%s' must be %s %s, not %s", name, t == SPADE_JSON_ARRAY ? "an" : "a",
               spade_json_type_name(t), spade_json_type_name(v->type));
        return NULL;
    }
    return v;
}

/* 1 and *out when present and valid, 0 when absent (default kept), -1 after an error response. */
static int int_field(rq *r, const spade_json *obj, const char *key, long long min, long long max, long long *out) {
    const spade_json *raw = spade_json_get(obj, key);
    if (!raw || raw->type == SPADE_JSON_NULL) return 0;
    const spade_json *v = field(r, obj, key, key, SPADE_JSON_NUMBER, 1);
    if (!v) return -1;
    if (spade_json_int(v, min, max, out) < 0)
        return rq_err(r, "bad_value", key, "'%s' must be a whole number in [%lld, %lld], not %s", key, min, max,
                      v->str);
    return 1;
}

static int handle_field(rq *r, serve_env **e, int *index) {
    long long h;
    int got = int_field(r, r->body, "env", 0, 1LL << 40, &h);
    if (got < 0) return -1;
    if (got == 0) return rq_err(r, "missing_field", "env", "'env' (a handle from make) is required");
    for (int i = 0; i < r->c->n_envs; i++)
        if (r->c->envs[i]->handle == h) {
            *e = r->c->envs[i];
            if (index) *index = i;
            return 0;
        }
    return rq_err(r, "unknown_handle", "env", "no environment with handle %lld on this connection", h);
}

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

static int load_field(rq *r, loadable *L) {
    memset(L, 0, sizeof *L);
    const spade_json *spec = spade_json_get(r->body, "spec"), *source = spade_json_get(r->body, "source");
    if (spec && source) return rq_err(r, "bad_value", "spec", "give 'spec' or 'source', not both");
    if (!spec && !source)
        return rq_err(r, "missing_field", "spec", "'spec' (NAME[:params] or FILE.c) or 'source' is required");
    char params[SPADE_SPEC_PARAMS_MAX];
    if (params_field(r, params, sizeof params) < 0) return -1;
    char err[4096];
    if (spec) {
        if (!(spec = field(r, r->body, "spec", "spec", SPADE_JSON_STRING, 1))) return -1;
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
    if (!(source = field(r, r->body, "source", "source", SPADE_JSON_STRING, 1))) return -1;
    if (source->len > SPADE_SOURCE_MAX)
        return rq_err(r, "bad_value", "source", "'source' is %zu bytes; the most is %d", source->len, SPADE_SOURCE_MAX);
    const spade_json *fn = spade_json_get(r->body, "filename");
    if (fn && fn->type != SPADE_JSON_NULL) {
        if (!(fn = field(r, r->body, "filename", "filename", SPADE_JSON_STRING, 1))) return -1;
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

/* One JSON member per row: the key, how the field is written, where it is.
 * env_info, params and tools are written from these tables, so a field added
 * to spade_env_info is one row here, not two more hand-written calls. */
typedef enum { FIELD_STR, FIELD_INT, FIELD_NUM, FIELD_U64, FIELD_BOOL } field_kind;
typedef struct {
    const char *key;
    field_kind kind;
    size_t offset;
} info_field;

#define ROW(T, member, kind)                                                                                           \
    { #member, kind, offsetof(T, member) }
static const info_field env_fields[] = {
    ROW(spade_env_info, name, FIELD_STR),       ROW(spade_env_info, description, FIELD_STR),
    ROW(spade_env_info, family, FIELD_STR),     ROW(spade_env_info, abi, FIELD_INT),
    ROW(spade_env_info, max_steps, FIELD_INT),  ROW(spade_env_info, success, FIELD_NUM),
    ROW(spade_env_info, state_size, FIELD_U64), ROW(spade_env_info, has_solve, FIELD_BOOL),
};
static const info_field param_fields[] = {
    {"default", FIELD_NUM, offsetof(spade_param_info, def)},
    ROW(spade_param_info, min, FIELD_NUM),
    ROW(spade_param_info, max, FIELD_NUM),
};
static const info_field tool_fields[] = {
    ROW(spade_tool_info, name, FIELD_STR),
    ROW(spade_tool_info, signature, FIELD_STR),
    ROW(spade_tool_info, description, FIELD_STR),
};
#undef ROW

static void write_fields(spade_jbuf *b, const void *base, const info_field *f, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char *at = (const char *)base + f[i].offset;
        spade_jw_key(b, f[i].key);
        switch (f[i].kind) {
        case FIELD_STR: spade_jw_cstr(b, at); break;
        case FIELD_INT: spade_jw_int(b, *(const int *)at); break;
        case FIELD_NUM: spade_jw_num(b, *(const double *)at); break;
        case FIELD_U64: spade_jw_u64(b, *(const uint64_t *)at); break;
        case FIELD_BOOL: spade_jw_bool(b, *(const int *)at); break;
        }
    }
}

static void write_info(spade_jbuf *b, const spade_env_info *info) {
    spade_jw_obj(b);
    write_fields(b, info, env_fields, sizeof env_fields / sizeof *env_fields);
    spade_jw_key(b, "params");
    spade_jw_arr(b);
    for (int i = 0; i < info->n_params; i++) {
        const spade_param_info *p = &info->params[i];
        spade_jw_obj(b);
        spade_jw_key(b, "name");
        spade_jw_cstr(b, p->name);
        spade_jw_key(b, "type");
        spade_jw_cstr(b, p->type == SPADE_PARAM_INT ? "int" : "real");
        write_fields(b, p, param_fields, sizeof param_fields / sizeof *param_fields);
        spade_jw_end_obj(b);
    }
    spade_jw_end_arr(b);
    spade_jw_key(b, "tools");
    spade_jw_arr(b);
    for (int i = 0; i < info->n_tools; i++) {
        spade_jw_obj(b);
        write_fields(b, &info->tools[i], tool_fields, sizeof tool_fields / sizeof *tool_fields);
        spade_jw_end_obj(b);
    }
    spade_jw_end_arr(b);
    spade_jw_end_obj(b);
}

/* The param values as an object {name: value}, all of them (defaults filled). */
static void write_param_values(spade_jbuf *b, const spade_env_info *info, const double *v) {
    spade_jw_obj(b);
    for (int i = 0; i < info->n_params; i++) {
        spade_jw_key(b, info->params[i].name);
        spade_jw_num(b, v[i]);
    }
    spade_jw_end_obj(b);
}

/* ---- ops ---------------------------------------------------------------------------- */
static void op_hello(rq *r) {
    begin_ok(r);
    spade_jbuf *b = r->out;
    spade_jw_key(b, "protocol");
    spade_jw_int(b, SPADE_PROTOCOL_VERSION);
    spade_jw_key(b, "spade");
    spade_jw_cstr(b, spade_version());
    spade_jw_key(b, "abi");
    spade_jw_int(b, SPADE_ENV_ABI);
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
    finish(r);
}

static void op_list(rq *r) {
    const spade_json *load = spade_json_get(r->body, "load");
    if (load && load->type != SPADE_JSON_NULL && !(load = field(r, r->body, "load", "load", SPADE_JSON_BOOL, 1)))
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
    begin_ok(r);
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
                write_info(r->out, &ls[i].info);
            } else {
                spade_jw_key(r->out, "error");
                spade_jw_cstr(r->out, ls[i].error);
            }
        }
        spade_jw_end_obj(r->out);
    }
    spade_jw_end_arr(r->out);
    finish(r);
    free(ls);
}

static void op_info(rq *r) {
    loadable L;
    if (load_field(r, &L) < 0) return;
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
        begin_ok(r);
        spade_jw_key(r->out, "path");
        spade_jw_cstr(r->out, L.path);
        spade_jw_key(r->out, "params");
        spade_jw_cstr(r->out, L.params);
        spade_jw_key(r->out, "param_values");
        write_param_values(r->out, info, pv);
        spade_jw_key(r->out, "info");
        write_info(r->out, info);
        finish(r);
    }
    spade_worker_free(w);
    free(L.src);
}

static void op_make(rq *r) {
    serve_conn *c = r->c;
    long long n = 1, W = 1;
    if (int_field(r, r->body, "instances", 1, c->lim.max_instances, &n) < 0) return;
    if (int_field(r, r->body, "workers", 1, c->lim.max_workers, &W) < 0) return;
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
    if (load_field(r, &L) < 0) return;
    serve_env *e = calloc(1, sizeof *e);
    if (e) {
        e->workers = calloc((size_t)W, sizeof *e->workers);
        e->first_id = calloc((size_t)W, sizeof *e->first_id);
        e->state = calloc((size_t)n, 1);
    }
    if (!e || !e->workers || !e->first_id || !e->state) {
        env_free(e);
        free(L.src);
        rq_err(r, "internal", NULL, "out of memory");
        return;
    }
    if (c->n_envs == c->cap_envs) {
        int cap = c->cap_envs ? c->cap_envs * 2 : 8;
        serve_env **p = realloc(c->envs, (size_t)cap * sizeof *p);
        if (!p) {
            env_free(e);
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
    begin_ok(r);
    spade_jw_key(r->out, "env");
    spade_jw_int(r->out, e->handle);
    spade_jw_key(r->out, "instances");
    spade_jw_int(r->out, n);
    spade_jw_key(r->out, "workers");
    spade_jw_int(r->out, W);
    spade_jw_key(r->out, "path");
    spade_jw_cstr(r->out, L.path);
    spade_jw_key(r->out, "params");
    spade_jw_cstr(r->out, L.params);
    spade_jw_key(r->out, "param_values");
    write_param_values(r->out, info, pv);
    spade_jw_key(r->out, "info");
    write_info(r->out, info);
    finish(r);
    free(L.src);
    return;
fail:
    env_free(e);
    free(L.src);
}

static void op_close(rq *r) {
    serve_env *e;
    int i;
    if (handle_field(r, &e, &i) < 0) return;
    r->c->total_instances -= e->n_instances;
    r->c->total_workers -= e->n_workers;
    env_free(e);
    memmove(&r->c->envs[i], &r->c->envs[i + 1], (size_t)(r->c->n_envs - i - 1) * sizeof *r->c->envs);
    r->c->n_envs--;
    begin_ok(r);
    finish(r);
}

/* ---- batches ------------------------------------------------------------------------ */
enum { IR_OK = 0, IR_WORKER, IR_NOT_RESET, IR_ENDED, IR_TOO_LONG };

typedef struct ires {
    int kind;
    const spade_failure *f; /* IR_WORKER */
    size_t off, len; /* observation in the store */
    double reward, ret;
    unsigned char term, trunc, succ;
} ires;

typedef struct batch {
    int n;
    int *inst; /* instance index of item j */
    const uint64_t *seeds; /* resets */
    const char **acts; /* steps */
    size_t *lens;
    ires *res;
} batch;

static void store_result(serve_env *e, spade_jbuf *store, int inst, ires *ir, const spade_step_result *sr) {
    ir->kind = IR_OK;
    ir->off = store->len;
    ir->len = sr->obs_len;
    spade_jw_raw(store, sr->obs, sr->obs_len);
    ir->reward = sr->reward;
    ir->ret = sr->episode_return;
    ir->term = sr->terminated != 0;
    ir->trunc = sr->truncated != 0;
    ir->succ = sr->success != 0;
    e->state[inst] = ir->term || ir->trunc ? ST_ENDED : ST_RUNNING;
}

/* Items of b grouped by worker: order[start[w] .. start[w + 1]) are item indices. */
static int group(const serve_env *e, const batch *b, int *start, int *order) {
    int W = e->n_workers;
    for (int w = 0; w <= W; w++) start[w] = 0;
    for (int j = 0; j < b->n; j++)
        if (b->res[j].kind == IR_OK) start[b->inst[j] % W + 1]++;
    for (int w = 0; w < W; w++) start[w + 1] += start[w];
    int *fill = malloc(sizeof *fill * (size_t)W);
    if (!fill) return -1;
    memcpy(fill, start, sizeof *fill * (size_t)W);
    for (int j = 0; j < b->n; j++)
        if (b->res[j].kind == IR_OK) order[fill[b->inst[j] % W]++] = j;
    free(fill);
    return 0;
}

typedef struct scratch {
    int *start, *order; /* the resets grouped by worker (group()) */
    int *start2, *order2; /* the steps */
    int *ids;
    uint32_t *ops;
    const char **acts;
    size_t *lens;
    uint64_t *seeds;
    spade_step_result *sr;
    spade_failure *fails; /* [W] */
    char *sent; /* [W] */
} scratch;

static void scratch_free(scratch *s) {
    free(s->start), free(s->order), free(s->start2), free(s->order2), free(s->ids), free(s->ops), free(s->acts);
    free(s->lens), free(s->seeds), free(s->sr), free(s->fails), free(s->sent);
}

static int scratch_new(scratch *s, int W, int n) {
    memset(s, 0, sizeof *s);
    size_t un = n ? (size_t)n : 1, uw = (size_t)W + 1;
    s->start = malloc(sizeof *s->start * uw);
    s->start2 = malloc(sizeof *s->start2 * uw);
    s->order = malloc(sizeof *s->order * un);
    s->order2 = malloc(sizeof *s->order2 * un);
    s->ids = malloc(sizeof *s->ids * un);
    s->ops = malloc(sizeof *s->ops * un);
    s->acts = malloc(sizeof *s->acts * un);
    s->lens = malloc(sizeof *s->lens * un);
    s->seeds = malloc(sizeof *s->seeds * un);
    s->sr = malloc(sizeof *s->sr * un);
    s->fails = calloc((size_t)W, sizeof *s->fails);
    s->sent = calloc((size_t)W, 1);
    if (!s->start || !s->start2 || !s->order || !s->order2 || !s->ids || !s->ops || !s->acts || !s->lens || !s->seeds ||
        !s->sr || !s->fails || !s->sent) {
        scratch_free(s);
        return -1;
    }
    return 0;
}

/* Marks the items ord[0..k) of b failed with f; they must be reset before stepping again. */
static void fail_items(serve_env *e, batch *b, const int *ord, int k, const spade_failure *f) {
    for (int q = 0; q < k; q++) {
        b->res[ord[q]].kind = IR_WORKER;
        b->res[ord[q]].f = f;
        /* after a bad_call our view of an episode may be wrong; after any other failure the
         * worker is gone: either way the instance is not stepped again before a reset */
        e->state[b->inst[ord[q]]] = ST_NEW;
    }
}

/* A request's resets (rb) and steps (sb): each worker gets one batch with its share of both
 * (resets first; an instance is in at most one of them), and every worker is sent its batch
 * before any is waited on, so the workers step at the same time and an autoreset costs no
 * extra round trip. */
static int run_batches(serve_env *e, batch *rb, batch *sb, spade_jbuf *store, scratch *s) {
    int W = e->n_workers;
    for (int j = 0; j < sb->n; j++) {
        unsigned char st = e->state[sb->inst[j]];
        if (sb->lens[j] > SPADE_ACTION_MAX)
            sb->res[j].kind = IR_TOO_LONG;
        else if (st == ST_NEW)
            sb->res[j].kind = IR_NOT_RESET;
        else if (st == ST_ENDED)
            sb->res[j].kind = IR_ENDED;
    }
    if (group(e, rb, s->start, s->order) < 0 || group(e, sb, s->start2, s->order2) < 0) return -1;
    for (int w = 0; w < W; w++) {
        int kr = s->start[w + 1] - s->start[w], ks = s->start2[w + 1] - s->start2[w];
        if (!kr && !ks) continue;
        const int *ordr = s->order + s->start[w], *ords = s->order2 + s->start2[w];
        for (int q = 0; q < kr; q++) {
            s->ids[q] = e->first_id[w] + rb->inst[ordr[q]] / W;
            s->ops[q] = SPADE_BATCH_RESET;
            s->seeds[q] = rb->seeds[ordr[q]];
            s->acts[q] = NULL;
            s->lens[q] = 0;
        }
        for (int q = 0; q < ks; q++) {
            s->ids[kr + q] = e->first_id[w] + sb->inst[ords[q]] / W;
            s->ops[kr + q] = SPADE_BATCH_STEP;
            s->seeds[kr + q] = 0;
            s->acts[kr + q] = sb->acts[ords[q]];
            s->lens[kr + q] = sb->lens[ords[q]];
        }
        if (spade_worker_batch_send(e->workers[w], kr + ks, s->ids, s->ops, s->seeds, s->acts, s->lens, &s->fails[w]) !=
            0) {
            fail_items(e, rb, ordr, kr, &s->fails[w]);
            fail_items(e, sb, ords, ks, &s->fails[w]);
            continue;
        }
        s->sent[w] = 1;
    }
    for (int w = 0; w < W; w++) {
        if (!s->sent[w]) continue;
        s->sent[w] = 0;
        int kr = s->start[w + 1] - s->start[w], ks = s->start2[w + 1] - s->start2[w];
        const int *ordr = s->order + s->start[w], *ords = s->order2 + s->start2[w];
        if (spade_worker_batch_recv(e->workers[w], s->sr, &s->fails[w]) != 0) {
            fail_items(e, rb, ordr, kr, &s->fails[w]);
            fail_items(e, sb, ords, ks, &s->fails[w]);
            continue;
        }
        for (int q = 0; q < kr; q++) store_result(e, store, rb->inst[ordr[q]], &rb->res[ordr[q]], &s->sr[q]);
        for (int q = 0; q < ks; q++) store_result(e, store, sb->inst[ords[q]], &sb->res[ords[q]], &s->sr[kr + q]);
    }
    return 0;
}

static void write_results(spade_jbuf *o, const batch *b, const spade_jbuf *store) {
    spade_jw_key(o, "obs");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) {
        const ires *x = &b->res[j];
        if (x->kind == IR_OK)
            spade_jw_str(o, store->p + x->off, x->len);
        else
            spade_jw_str(o, "", 0);
    }
    spade_jw_end_arr(o);
    spade_jw_key(o, "reward");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) spade_jw_num(o, b->res[j].kind == IR_OK ? b->res[j].reward : 0.0);
    spade_jw_end_arr(o);
    static const char *const flags[] = {"terminated", "truncated", "success"};
    for (int k = 0; k < 3; k++) {
        spade_jw_key(o, flags[k]);
        spade_jw_arr(o);
        for (int j = 0; j < b->n; j++) {
            const ires *x = &b->res[j];
            int v = x->kind != IR_OK ? 0 : k == 0 ? x->term : k == 1 ? x->trunc : x->succ;
            spade_jw_bool(o, v);
        }
        spade_jw_end_arr(o);
    }
    spade_jw_key(o, "return");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) spade_jw_num(o, b->res[j].kind == IR_OK ? b->res[j].ret : 0.0);
    spade_jw_end_arr(o);
    int any = 0;
    for (int j = 0; j < b->n && !any; j++) any = b->res[j].kind != IR_OK;
    if (!any) return;
    spade_jw_key(o, "failures");
    spade_jw_arr(o);
    for (int j = 0; j < b->n; j++) {
        const ires *x = &b->res[j];
        if (x->kind == IR_OK) {
            spade_jw_null(o);
            continue;
        }
        if (x->kind == IR_WORKER) {
            write_failure(o, x->f);
            continue;
        }
        spade_failure f;
        memset(&f, 0, sizeof f);
        f.outcome = SPADE_OUT_BAD_CALL;
        snprintf(f.message, sizeof f.message, "instance %d: %s", b->inst[j],
                 x->kind == IR_NOT_RESET ? "step before reset (reset it first)"
                 : x->kind == IR_ENDED   ? "the episode has ended (reset it first)"
                                         : "the action exceeds SPADE_ACTION_MAX bytes");
        write_failure(o, &f);
    }
    spade_jw_end_arr(o);
}

/* Reads "ids" and, for resets, "seeds" (or one "seed" for all: seed + position)
 * or, for steps, "actions" from obj into b. prefix names the fields in errors. */
static int read_batch(rq *r, const serve_env *e, const spade_json *obj, const char *prefix, int is_reset, batch *b,
                      uint64_t **seeds_out, unsigned char *seen) {
    char name[64];
    snprintf(name, sizeof name, "%sids", prefix);
    const spade_json *ids = field(r, obj, "ids", name, SPADE_JSON_ARRAY, 1);
    if (!ids) return -1;
    if (ids->len > (size_t)e->n_instances)
        return rq_err(r, "bad_value", name, "'%s' has %zu items; the environment has %d instances", name, ids->len,
                      e->n_instances);
    b->n = (int)ids->len;
    size_t un = ids->len ? ids->len : 1;
    b->inst = malloc(sizeof *b->inst * un);
    b->res = calloc(un, sizeof *b->res);
    b->lens = calloc(un, sizeof *b->lens);
    b->acts = calloc(un, sizeof *b->acts);
    uint64_t *seeds = is_reset ? calloc(un, sizeof *seeds) : NULL;
    *seeds_out = seeds;
    if (!b->inst || !b->res || !b->lens || !b->acts || (is_reset && !seeds))
        return rq_err(r, "internal", NULL, "out of memory");
    for (size_t j = 0; j < ids->len; j++) {
        long long v;
        if (spade_json_int(&ids->items[j], 0, e->n_instances - 1, &v) < 0)
            return rq_err(r, ids->items[j].type == SPADE_JSON_NUMBER ? "bad_value" : "wrong_type", name,
                          "'%s'[%zu] must be an instance index in [0, %d]", name, j, e->n_instances - 1);
        if (seen[v]) return rq_err(r, "bad_value", name, "instance %lld appears twice in one request", v);
        seen[v] = 1;
        b->inst[j] = (int)v;
    }
    if (is_reset) {
        snprintf(name, sizeof name, "%sseeds", prefix);
        const spade_json *sv = spade_json_get(obj, "seeds");
        if (sv && sv->type != SPADE_JSON_NULL) {
            if (!(sv = field(r, obj, "seeds", name, SPADE_JSON_ARRAY, 1))) return -1;
            if (sv->len != ids->len)
                return rq_err(r, "bad_value", name, "'%s' has %zu items, 'ids' %zu", name, sv->len, ids->len);
            for (size_t j = 0; j < sv->len; j++)
                if (spade_json_u64(&sv->items[j], &seeds[j]) < 0)
                    return rq_err(r, sv->items[j].type == SPADE_JSON_NUMBER ? "bad_value" : "wrong_type", name,
                                  "'%s'[%zu] must be a whole number in [0, 2^64)", name, j);
        } else {
            snprintf(name, sizeof name, "%sseed", prefix);
            const spade_json *s1 = spade_json_get(obj, "seed");
            uint64_t s0 = 0;
            if (s1 && s1->type != SPADE_JSON_NULL) {
                if (!(s1 = field(r, obj, "seed", name, SPADE_JSON_NUMBER, 1))) return -1;
                if (spade_json_u64(s1, &s0) < 0)
                    return rq_err(r, "bad_value", name, "'%s' must be a whole number in [0, 2^64)", name);
            }
            for (size_t j = 0; j < ids->len; j++) seeds[j] = s0 + j;
        }
        b->seeds = seeds;
    } else {
        snprintf(name, sizeof name, "%sactions", prefix);
        const spade_json *av = field(r, obj, "actions", name, SPADE_JSON_ARRAY, 1);
        if (!av) return -1;
        if (av->len != ids->len)
            return rq_err(r, "bad_value", name, "'%s' has %zu items, 'ids' %zu", name, av->len, ids->len);
        for (size_t j = 0; j < av->len; j++) {
            if (av->items[j].type != SPADE_JSON_STRING)
                return rq_err(r, "wrong_type", name, "'%s'[%zu] must be a string, not %s", name, j,
                              spade_json_type_name(av->items[j].type));
            b->acts[j] = av->items[j].str;
            b->lens[j] = av->items[j].len;
        }
    }
    return 0;
}

static void batch_free(batch *b) {
    free(b->inst), free(b->res), free(b->lens), free(b->acts);
    memset(b, 0, sizeof *b);
}

/* reset: {"ids", "seeds"}. step: {"ids", "actions"} and optionally
 * "reset": {"ids", "seeds"} carried out first, in the same round trip. */
static void op_batch(rq *r, int is_reset) {
    serve_env *e;
    if (handle_field(r, &e, NULL) < 0) return;
    batch rb = {0}, sb_ = {0};
    uint64_t *rseeds = NULL, *unused = NULL;
    spade_jbuf *store = &r->c->store;
    spade_jbuf_clear(store);
    scratch s;
    int have_scratch = 0;
    unsigned char *seen = calloc((size_t)e->n_instances, 1);
    if (!seen) {
        rq_err(r, "internal", NULL, "out of memory");
        return;
    }
    const spade_json *robj = is_reset ? r->body : spade_json_get(r->body, "reset");
    if (robj && robj->type == SPADE_JSON_NULL) robj = NULL;
    if (robj && !is_reset && !(robj = field(r, r->body, "reset", "reset", SPADE_JSON_OBJECT, 1))) goto out;
    if (robj && read_batch(r, e, robj, is_reset ? "" : "reset.", 1, &rb, &rseeds, seen) < 0) goto out;
    if (!is_reset && read_batch(r, e, r->body, "", 0, &sb_, &unused, seen) < 0) goto out;
    if (scratch_new(&s, e->n_workers, rb.n + sb_.n) < 0) {
        rq_err(r, "internal", NULL, "out of memory");
        goto out;
    }
    have_scratch = 1;
    if (run_batches(e, &rb, &sb_, store, &s) < 0 || store->oom) {
        rq_err(r, "internal", NULL, "out of memory");
        goto out;
    }
    begin_ok(r);
    if (is_reset) {
        write_results(r->out, &rb, store);
    } else {
        write_results(r->out, &sb_, store);
        if (robj) {
            spade_jw_key(r->out, "reset");
            spade_jw_obj(r->out);
            write_results(r->out, &rb, store);
            spade_jw_end_obj(r->out);
        }
    }
    finish(r);
out:
    if (have_scratch) scratch_free(&s);
    batch_free(&rb), batch_free(&sb_);
    free(rseeds), free(unused), free(seen);
    if (store->cap > (8u << 20)) spade_jbuf_free(store); /* a huge batch does not pin its memory */
}

static void op_text(rq *r, int solve) {
    serve_env *e;
    if (handle_field(r, &e, NULL) < 0) return;
    long long inst = 0;
    int got = int_field(r, r->body, "instance", 0, e->n_instances - 1, &inst);
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
    begin_ok(r);
    spade_jw_key(r->out, solve ? "action" : "text");
    spade_jw_str(r->out, text, len);
    finish(r);
}

/* One check line: "PASS name (detail)", "FAIL name: reason", "WARN ...", "SKIP ...", "INFO ...". */
static void write_check_lines(spade_jbuf *b, const char *text) {
    spade_jw_arr(b);
    const char *p = text;
    int open = 0;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        static const char *const words[] = {"PASS ", "FAIL ", "WARN ", "SKIP ", "INFO "};
        int which = -1;
        for (int k = 0; k < 5; k++)
            if (n > 5 && !strncmp(p, words[k], 5)) which = k;
        if (which >= 0) {
            if (open) spade_jw_end_obj(b);
            const char *name = p + 5, *end = p + n;
            const char *ne = name;
            while (ne < end && *ne != ' ' && *ne != ':') ne++;
            const char *d = ne;
            while (d < end && (*d == ' ' || *d == ':')) d++;
            spade_jw_obj(b);
            spade_jw_key(b, "status");
            static const char *const st[] = {"pass", "fail", "warn", "skip", "info"};
            spade_jw_cstr(b, st[which]);
            spade_jw_key(b, "name");
            spade_jw_str(b, name, (size_t)(ne - name));
            spade_jw_key(b, "detail");
            spade_jw_str(b, d, (size_t)(end - d));
            spade_jw_key(b, "line");
            spade_jw_str(b, p, n);
            open = 1;
        }
        /* continuation lines (a compile error's source excerpt) stay in "text" */
        p += n + (eol ? 1 : 0);
    }
    if (open) spade_jw_end_obj(b);
    spade_jw_end_arr(b);
}

static void op_check(rq *r) {
    spade_check_opts o;
    spade_check_opts_default(&o);
    long long v;
    int got;
    if ((got = int_field(r, r->body, "seeds", 1, 1000, &v)) < 0) return;
    if (got) o.seeds = (int)v;
    if ((got = int_field(r, r->body, "solve_seeds", 1, 10000, &v)) < 0) return;
    if (got) o.solve_seeds = (int)v;
    const spade_json *fs = spade_json_get(r->body, "first_seed");
    if (fs && fs->type != SPADE_JSON_NULL) {
        if (!(fs = field(r, r->body, "first_seed", "first_seed", SPADE_JSON_NUMBER, 1))) return;
        if (spade_json_u64(fs, &o.first_seed) < 0) {
            rq_err(r, "bad_value", "first_seed", "'first_seed' must be a whole number in [0, 2^64)");
            return;
        }
    }
    loadable L;
    if (load_field(r, &L) < 0) return;
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
    begin_ok(r);
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
    write_check_lines(r->out, rep->text);
    spade_jw_key(r->out, "text");
    spade_jw_cstr(r->out, rep->text);
    finish(r);
    free(rep);
}

void serve_handle_line(serve_conn *c, const char *line, size_t len, spade_jbuf *out) {
    rq r = {c, out, NULL, NULL};
    spade_json_doc *doc = NULL;
    char err[512];
    if (spade_json_parse(line, len, &doc, err, sizeof err) < 0) {
        rq_err(&r, "bad_json", NULL, "the request is not JSON: %s", err);
        return;
    }
    const spade_json *root = spade_json_root(doc);
    if (root->type != SPADE_JSON_OBJECT) {
        rq_err(&r, "bad_request", NULL, "a request is a JSON object, not %s", spade_json_type_name(root->type));
        spade_json_doc_free(doc);
        return;
    }
    r.body = root;
    r.id = spade_json_get(root, "id");
    const spade_json *op = field(&r, root, "op", "op", SPADE_JSON_STRING, 1);
    if (!op) {
        spade_json_doc_free(doc);
        return;
    }
    static const struct {
        const char *name;
        void (*fn)(rq *);
    } ops[] = {{"hello", op_hello}, {"list", op_list},   {"info", op_info},
               {"make", op_make},   {"check", op_check}, {"close", op_close}};
    int done = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops && !done; i++)
        if (!strcmp(op->str, ops[i].name) && strlen(ops[i].name) == op->len) ops[i].fn(&r), done = 1;
    if (!done) {
        if (op->len == 5 && !strcmp(op->str, "reset"))
            op_batch(&r, 1);
        else if (op->len == 4 && !strcmp(op->str, "step"))
            op_batch(&r, 0);
        else if (op->len == 4 && !strcmp(op->str, "hint"))
            op_text(&r, 0);
        else if (op->len == 5 && !strcmp(op->str, "solve"))
            op_text(&r, 1);
        else {
            char shown[64];
            size_t n = op->len < 40 ? op->len : 40;
            memcpy(shown, op->str, n);
            shown[n] = 0;
            rq_err(&r, "unknown_op", "op",
                   "unknown op '%s%s' (hello, list, info, make, reset, step, hint, solve, check, close)", shown,
                   op->len > 40 ? "..." : "");
        }
    }
    spade_json_doc_free(doc);
}
