/* serve_proto.c — the requests of `spade serve` (docs/protocol.md): parses one
 * JSON line, checks the token when the server asks for one, hands the request
 * to its op, and gives every op the response envelope and the field readers.
 *
 * The ops themselves are in serve_ops.c and serve_batch.c, the reply builders
 * in serve_reply.c (serve_internal.h says which is where).
 * What it is not: a transport (cmd_serve.c reads and writes the bytes), nor
 * thread-safe per connection.
 */
#include "serve.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_internal.h"
#include "sha256.h"

void serve_limits_default(serve_limits *l) {
    *l = (serve_limits){.max_envs = 64,
                        .max_instances = 4096,
                        .max_workers = 32,
                        .max_line = 16u << 20,
                        .max_clients = 32,
                        .token = NULL};
}

serve_conn *serve_conn_new(spade_sandbox *sb, const serve_limits *lim) {
    serve_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->sb = sb;
    if (lim)
        c->lim = *lim;
    else
        serve_limits_default(&c->lim);
    c->next_handle = 1;
    c->authenticated = c->lim.token == NULL;
    return c;
}

void serve_env_free(serve_env *e) {
    if (!e) return;
    for (int w = 0; w < e->n_workers; w++) spade_worker_free(e->workers[w]);
    free(e->workers), free(e->first_id), free(e->state), free(e);
}

void serve_conn_free(serve_conn *c) {
    if (!c) return;
    for (int i = 0; i < c->n_envs; i++) serve_env_free(c->envs[i]);
    free(c->envs);
    spade_jbuf_free(&c->store);
    free(c);
}

int serve_conn_num_envs(const serve_conn *c) { return c->n_envs; }
int serve_conn_num_workers(const serve_conn *c) { return c->total_workers; }
int serve_conn_closing(const serve_conn *c) { return c->closing; }

size_t serve_conn_max_line(const serve_conn *c) {
    return c->authenticated || c->lim.max_line < SERVE_UNAUTH_LINE_MAX ? c->lim.max_line : SERVE_UNAUTH_LINE_MAX;
}

/* ---- the token -------------------------------------------------------------------- */
/* Equal without a timing that tells how much of a guess was right: both sides
 * are hashed (the time then does not depend on where they first differ, nor
 * on the server token's length) and the digests compared in full. */
static int token_equal(const char *a, size_t an, const char *b, size_t bn) {
    spade_sha256 h;
    uint8_t da[32], db[32];
    spade_sha256_init(&h);
    spade_sha256_update(&h, a, an);
    spade_sha256_final(&h, da);
    spade_sha256_init(&h);
    spade_sha256_update(&h, b, bn);
    spade_sha256_final(&h, db);
    unsigned diff = 0;
    for (int i = 0; i < 32; i++) diff |= (unsigned)(da[i] ^ db[i]);
    return diff == 0;
}

/* A hello's "token" against the server's. 0: go on (the op is served); -1:
 * answered "unauthorized", and the connection ends. Before the token only a
 * hello is served; once given, a hello may leave it out (a client's keepalive
 * hello) but not send a wrong one. */
static int check_token(rq *r, const spade_json *op) {
    serve_conn *c = r->c;
    if (!c->lim.token) return 0;
    int is_hello = op->len == 5 && !strcmp(op->str, "hello");
    const spade_json *t = is_hello ? spade_json_get(r->body, "token") : NULL;
    if (c->authenticated && (!t || !is_hello)) return 0;
    c->closing = 1;
    c->authenticated = 0;
    if (!is_hello)
        return rq_err(r, "unauthorized", "token",
                      "this server asks for a token: the first request must be a hello with \"token\" "
                      "(the server's --token-file or --token-env); the connection is closed");
    if (!t || t->type == SPADE_JSON_NULL)
        return rq_err(r, "unauthorized", "token",
                      "this server asks for a token and the hello has no \"token\"; the connection is closed");
    if (t->type != SPADE_JSON_STRING)
        return rq_err(r, "unauthorized", "token", "'token' must be a string, not %s; the connection is closed",
                      spade_json_type_name(t->type));
    if (!token_equal(t->str, t->len, c->lim.token, c->lim.token_len))
        return rq_err(r, "unauthorized", "token", "the token is wrong; the connection is closed");
    c->closing = 0;
    c->authenticated = 1;
    return 0;
}

/* ---- responses ------------------------------------------------------------------ */
void rq_begin_ok(rq *r) {
    spade_jw_obj(r->out);
    if (r->id) {
        spade_jw_key(r->out, "id");
        spade_jw_value(r->out, r->id);
    }
    spade_jw_key(r->out, "ok");
    spade_jw_bool(r->out, 1);
}

void rq_finish(rq *r) {
    spade_jw_end_obj(r->out);
    spade_jw_raw(r->out, "\n", 1);
}

void rq_begin_err(rq *r, const char *code, const char *field) {
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

int rq_err(rq *r, const char *code, const char *field, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rq_begin_err(r, code, field);
    spade_jw_key(r->out, "message");
    spade_jw_cstr(r->out, msg);
    spade_jw_end_obj(r->out);
    rq_finish(r);
    return -1;
}

/* An environment's own failure (compile error, crash, ...), classified. */
int rq_env_failure(rq *r, const char *what, const spade_failure *f) {
    rq_begin_err(r, "env_failure", NULL);
    spade_jw_key(r->out, "message");
    char msg[1400];
    snprintf(msg, sizeof msg, "%s: %s: %s", what, spade_outcome_name(f->outcome), f->message);
    spade_jw_cstr(r->out, msg);
    spade_jw_key(r->out, "failure");
    serve_write_failure(r->out, f);
    spade_jw_end_obj(r->out);
    rq_finish(r);
    return -1;
}

void serve_error_line(spade_jbuf *out, const char *code, const char *message) {
    rq r = {NULL, out, NULL, NULL};
    rq_err(&r, code, NULL, "%s", message);
}

/* ---- fields ---------------------------------------------------------------------- */
const spade_json *rq_field(rq *r, const spade_json *obj, const char *key, const char *name, spade_json_type t,
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
int rq_int_field(rq *r, const spade_json *obj, const char *key, long long min, long long max, long long *out) {
    const spade_json *raw = spade_json_get(obj, key);
    if (!raw || raw->type == SPADE_JSON_NULL) return 0;
    const spade_json *v = rq_field(r, obj, key, key, SPADE_JSON_NUMBER, 1);
    if (!v) return -1;
    if (spade_json_int(v, min, max, out) < 0)
        return rq_err(r, "bad_value", key, "'%s' must be a whole number in [%lld, %lld], not %s", key, min, max,
                      v->str);
    return 1;
}

int rq_handle(rq *r, serve_env **e, int *index) {
    long long h;
    int got = rq_int_field(r, r->body, "env", 0, 1LL << 40, &h);
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

static void op_reset(rq *r) { serve_op_batch(r, 1); }
static void op_step(rq *r) { serve_op_batch(r, 0); }
static void op_hint(rq *r) { serve_op_text(r, 0); }
static void op_solve(rq *r) { serve_op_text(r, 1); }

void serve_handle_line(serve_conn *c, const char *line, size_t len, spade_jbuf *out) {
    rq r = {c, out, NULL, NULL};
    spade_json_doc *doc = NULL;
    char err[512];
    if (spade_json_parse(line, len, &doc, err, sizeof err) < 0) {
        rq_err(&r, "bad_json", NULL, "the request is not JSON: %s", err);
        if (!c->authenticated) c->closing = 1; /* a peer that owes the token gets one line */
        return;
    }
    const spade_json *root = spade_json_root(doc);
    if (root->type != SPADE_JSON_OBJECT) {
        rq_err(&r, "bad_request", NULL, "a request is a JSON object, not %s", spade_json_type_name(root->type));
        if (!c->authenticated) c->closing = 1;
        spade_json_doc_free(doc);
        return;
    }
    r.body = root;
    r.id = spade_json_get(root, "id");
    const spade_json *op = rq_field(&r, root, "op", "op", SPADE_JSON_STRING, 1);
    if (!op || check_token(&r, op) < 0) {
        if (!c->authenticated) c->closing = 1;
        spade_json_doc_free(doc);
        return;
    }
    static const struct {
        const char *name;
        void (*fn)(rq *);
    } ops[] = {{"hello", serve_op_hello}, {"list", serve_op_list},  {"info", serve_op_info}, {"make", serve_op_make},
               {"reset", op_reset},       {"step", op_step},        {"hint", op_hint},       {"solve", op_solve},
               {"check", serve_op_check}, {"close", serve_op_close}};
    size_t which = 0;
    while (which < sizeof ops / sizeof *ops && (strlen(ops[which].name) != op->len || strcmp(op->str, ops[which].name)))
        which++;
    if (which == sizeof ops / sizeof *ops) {
        char shown[64];
        size_t n = op->len < 40 ? op->len : 40;
        memcpy(shown, op->str, n);
        shown[n] = 0;
        rq_err(&r, "unknown_op", "op",
               "unknown op '%s%s' (hello, list, info, make, reset, step, hint, solve, check, close)", shown,
               op->len > 40 ? "..." : "");
    } else {
        ops[which].fn(&r);
    }
    spade_json_doc_free(doc);
}
