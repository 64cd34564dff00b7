/* remote.h — a policy behind an OpenAI-compatible HTTP server (vLLM, SGLang,
 * llama.cpp's server, TGI): chat completions, many in flight at once.
 *
 * What it is: the client a role that samples but does not train uses
 * (agent/remote_agent.c for the agent; docs/scale.md). One call sends n chat
 * requests (system/user/assistant turns) to URL/v1/chat/completions with up
 * to `concurrency` in flight (libcurl's multi interface) and returns each
 * reply's text, with its summed log-prob when the server gives one. Replies
 * are hostile bytes: each is capped (SPADE_REMOTE_REPLY_MAX), parsed by
 * core/json.c, and a missing or mistyped field is an error naming the URL and
 * the field ("http://h:p/v1/chat/completions: choices[0].message.content:
 * missing"). A refused connection, a timeout, HTTP 429 or 5xx is retried with
 * exponential backoff, bounded in count (retries) and in each wait
 * (SPADE_REMOTE_BACKOFF_MAX_S); every retry is reported (on_note, or stderr),
 * and an outage that outlasts them is an error that says how long it lasted.
 * spade_remote_new asks GET URL/v1/models first, so a wrong model name is
 * refused before any episode plays.
 * What it is not: a trainer (nothing here has gradients), a tokenizer, nor a
 * TLS policy (libcurl's defaults verify certificates). The API key is read
 * from the environment variable named by api_key_env, never from a file, and
 * is never printed.
 */
#ifndef SPADE_REMOTE_H
#define SPADE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#define SPADE_REMOTE_REPLY_MAX (4 * 1024 * 1024) /* bytes of one HTTP response body */
#define SPADE_REMOTE_TEXT_MAX (256 * 1024) /* bytes of one reply's text */
#define SPADE_REMOTE_BACKOFF_MAX_S 8.0 /* the longest wait between two tries */
#define SPADE_REMOTE_CONCURRENCY_MAX 1024
#define SPADE_REMOTE_RETRIES_MAX 100

typedef struct spade_remote spade_remote;

typedef struct spade_remote_opts {
    const char *url; /* the server: "http://127.0.0.1:8080" (a trailing /v1 is accepted) */
    const char *model; /* the served model's name, as GET /v1/models lists it */
    const char *api_key_env; /* NULL, or the variable holding the key (sent as "Authorization: Bearer") */
    int concurrency; /* requests in flight (8) */
    double timeout_s; /* one request, connect to last byte (120) */
    int retries; /* tries after the first, per request (6) */
    double backoff_s; /* the first wait; doubles each retry up to SPADE_REMOTE_BACKOFF_MAX_S (0.25) */
    int max_tokens; /* per reply (64) */
    float temperature; /* 1.0 */
    int logprobs; /* ask for log-probs (1); a server without them is fine */
    /* a retry, an outage, a recovery: one line, no newline. NULL: stderr */
    void (*on_note)(void *ctx, const char *line);
    void *ctx;
} spade_remote_opts;
void spade_remote_opts_default(spade_remote_opts *o);

/* "remote:URL#MODEL" (the spec form wherever a checkpoint is named) into
 * url/model (NUL-terminated, truncated: -1 when they do not fit). 1: s is one;
 * 0: s is not a remote spec; -1: s starts with remote: but is malformed (err). */
int spade_remote_parse_spec(const char *s, char *url, size_t url_cap, char *model, size_t model_cap, char *err,
                            size_t errlen);

/* Checks the options and the server (GET /v1/models lists the model). */
int spade_remote_new(spade_remote **out, const spade_remote_opts *o, char *err, size_t errlen);
void spade_remote_free(spade_remote *r);
/* "http://127.0.0.1:8080/v1/chat/completions" and the model name: what a
 * run directory records (never the key). */
const char *spade_remote_endpoint(const spade_remote *r);
const char *spade_remote_model(const spade_remote *r);

typedef struct spade_remote_msg {
    const char *role; /* "system", "user", "assistant" */
    const char *text;
    size_t len;
} spade_remote_msg;

typedef struct spade_remote_req {
    const spade_remote_msg *msgs;
    int n_msgs;
    uint64_t seed; /* sent as "seed" (servers that sample reproducibly honour it) */
    int stop_newline; /* the reply ends at its first newline (an action) */
    int max_tokens; /* 0: the client's */
} spade_remote_req;

typedef struct spade_remote_reply {
    char *text; /* malloc'd, NUL-terminated; the caller frees */
    size_t len;
    int has_logprob;
    double logprob; /* the sum over the reply's tokens, when has_logprob */
    double latency_s; /* the successful try's */
    int tries;
} spade_remote_reply;

/* Sends reqs[0..n), at most concurrency in flight, and fills out[0..n).
 * 0, or -1 with err (nothing in out is then allocated). */
int spade_remote_chat(spade_remote *r, int n, const spade_remote_req *reqs, spade_remote_reply *out, char *err,
                      size_t errlen);

/* Requests sent, retries and the seconds spent waiting out outages since new. */
void spade_remote_counts(const spade_remote *r, long *requests, long *retries, double *outage_s);

#endif /* SPADE_REMOTE_H */
