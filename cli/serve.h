/* serve.h — the request handling of `spade serve` (docs/protocol.md), apart
 * from its transports (cli/cmd_serve.c), so a test can drive it line by line.
 *
 * What it is: one connection's state (its environments, its caps) and the
 * handler that turns one request line into one response line. Everything a
 * connection owns is freed with it: a client that goes away releases its
 * workers. A connection sees only its own handles.
 * What it is not: thread-safe per connection (one thread drives one
 * connection; several connections may share the sandbox from their threads).
 */
#ifndef SPADE_SERVE_H
#define SPADE_SERVE_H

#include <stddef.h>

#include "json.h"
#include "sandbox/sandbox.h"

#define SPADE_PROTOCOL_VERSION 1

typedef struct serve_limits {
    int max_envs; /* live environment handles per connection */
    int max_instances; /* instances over all of a connection's environments */
    int max_workers; /* worker processes over all of a connection's environments */
    size_t max_line; /* bytes of one request line, newline excluded */
    int max_clients; /* connections served at once (socket transports) */
    /* the shared token (token_len bytes) a client's first request, a hello,
     * must carry; NULL: none asked (a token sent anyway is ignored) */
    const char *token;
    size_t token_len;
} serve_limits;

/* The longest request line a connection takes now: the cap, or 64 KiB
 * before a connection that owes a token has given it (an unauthenticated
 * peer cannot make the server hold 16 MiB). */
#define SERVE_UNAUTH_LINE_MAX 65536

void serve_limits_default(serve_limits *l);

typedef struct serve_conn serve_conn;

/* NULL when out of memory. */
serve_conn *serve_conn_new(spade_sandbox *sb, const serve_limits *lim);
/* Frees every environment of the connection (kills and reaps its workers). */
void serve_conn_free(serve_conn *c);
/* Live handles and workers of the connection (tests). */
int serve_conn_num_envs(const serve_conn *c);
int serve_conn_num_workers(const serve_conn *c);

/* The connection ends after the response just written: a request before
 * the token, or a hello with a wrong or missing one (error "unauthorized").
 * The transport writes the response, then closes. */
int serve_conn_closing(const serve_conn *c);
/* How long a request line may be on this connection now (see SERVE_UNAUTH_LINE_MAX). */
size_t serve_conn_max_line(const serve_conn *c);

/* Handles one request line (without its newline) and appends one response
 * line, newline included, to out. Never fails: a bad request gets an error
 * object. */
void serve_handle_line(serve_conn *c, const char *line, size_t len, spade_jbuf *out);

/* Appends an error response with no request id (the line could not be read:
 * too long). */
void serve_error_line(spade_jbuf *out, const char *code, const char *message);

#endif /* SPADE_SERVE_H */
