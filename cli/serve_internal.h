/* serve_internal.h — what the files of `spade serve`'s request handling
 * share: one connection's state, one request being answered, and the
 * functions that cross files.
 *
 * The handler is four files along its seams: serve_proto.c (the connection,
 * the dispatch of a line to its op, the response envelope and the field
 * readers every op uses), serve_reply.c (the reply builders: failures,
 * environment info, check lines), serve_ops.c (the ops that load, describe,
 * make and close environments, hint, solve and check) and serve_batch.c (reset
 * and step: batches over the workers).
 * What it is not: API — only cli/serve*.c include it; the interface is
 * serve.h.
 */
#ifndef SPADE_SERVE_INTERNAL_H
#define SPADE_SERVE_INTERNAL_H

#include <stddef.h>

#include "env.h"
#include "json.h"
#include "registry.h"
#include "serve.h"

/* An instance's episode, as the handler tracks it (a step the worker would refuse is refused here). */
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
    int authenticated; /* a hello carried the token (always 1 when lim.token is NULL) */
    int closing; /* the transport ends the connection after this response */
};

/* Frees an environment handle: its workers are killed and reaped. */
void serve_env_free(serve_env *e);

/* One request being answered. */
typedef struct rq {
    serve_conn *c;
    spade_jbuf *out;
    const spade_json *id; /* the request's "id", echoed; NULL when absent */
    const spade_json *body;
} rq;

/* ---- the response envelope (serve_proto.c) ---- */
void rq_begin_ok(rq *r); /* {"id"?, "ok": true, then the op's members */
void rq_finish(rq *r); /* closes the object and ends the line */
void rq_begin_err(rq *r, const char *code, const char *field); /* {"id"?, "ok": false, "error": {"code", "field"? */
/* A whole error response; returns -1 (so a reader can `return rq_err(...)`). */
int rq_err(rq *r, const char *code, const char *field, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* An environment's own failure (compile error, crash, ...), classified; returns -1. */
int rq_env_failure(rq *r, const char *what, const spade_failure *f);

/* ---- field readers (serve_proto.c): each answers the error itself ---- */
/* obj[key] of type t (name is how errors call it); NULL when absent (an error response when required) or wrong. */
const spade_json *rq_field(rq *r, const spade_json *obj, const char *key, const char *name, spade_json_type t,
                           int required);
/* 1 and *out when present and valid, 0 when absent (default kept), -1 after an error response. */
int rq_int_field(rq *r, const spade_json *obj, const char *key, long long min, long long max, long long *out);
/* "env": a live handle of this connection (and its index); -1 after an error response. */
int rq_handle(rq *r, serve_env **e, int *index);

/* ---- reply builders (serve_reply.c) ---- */
void serve_write_failure(spade_jbuf *b, const spade_failure *f);
void serve_write_info(spade_jbuf *b, const spade_env_info *info);
/* The param values as an object {name: value}, all of them (defaults filled). */
void serve_write_param_values(spade_jbuf *b, const spade_env_info *info, const double *v);
/* A checker report's PASS/FAIL/WARN/SKIP/INFO lines as an array of objects. */
void serve_write_check_lines(spade_jbuf *b, const char *text);

/* ---- the ops (serve_ops.c, serve_batch.c) ---- */
void serve_op_hello(rq *r);
void serve_op_list(rq *r);
void serve_op_info(rq *r);
void serve_op_make(rq *r);
void serve_op_close(rq *r);
void serve_op_text(rq *r, int solve); /* hint, solve */
void serve_op_check(rq *r);
void serve_op_batch(rq *r, int is_reset); /* reset, step */

#endif /* SPADE_SERVE_INTERNAL_H */
