/* served_episodes.h — plays a stream of episode requests through environments
 * served by running `spade serve` servers (docs/scale.md) instead of this
 * host's sandbox: `spade run --servers HOST:PORT,...`.
 *
 * What it is: the episode layer's contract (episodes.h: the same requests,
 * agent calls, events and outcomes in episode order) over the protocol. The
 * live episodes are split in blocks, one per server, each block one
 * environment handle made from the spec's source text (the servers need not
 * have the file); a round sends every server its steps before it waits on
 * any, so the servers step at the same time. An episode depends only on its
 * request and the agent's answers, as in local play: the same seeds give the
 * same outcomes (tests/test_servers.sh checks it against local play).
 * A server whose connection breaks is dialled again (retries, waits doubling
 * from backoff_s), its environment made again and its live episodes replayed
 * from their seeds and recorded actions, then the round goes on; a server
 * still unreachable after the retries stops the run with an error naming it.
 * What it is not: the local layer (no worker replays, no poison, no hints
 * given by the caller), nor a scheduler that moves episodes off a server that
 * is gone.
 */
#ifndef SPADE_SERVED_EPISODES_H
#define SPADE_SERVED_EPISODES_H

#include "episodes.h"
#include "host.h"

typedef struct spade_served_opts {
    const char *const *servers; /* n_servers addresses (serve_client.h) */
    int n_servers;
    const char *token; /* the servers' shared token, or NULL */
    int max_live; /* episodes live at once over all servers (default 32) */
    int workers; /* worker processes per server (default 1) */
    int retries; /* reconnections tried for a server that went away (default 5) */
    double backoff_s; /* the first wait between them, doubling up to 5 s (default 0.25) */
    double timeout_s; /* connect and each reply (default 120) */
    const volatile sig_atomic_t *stop; /* may be NULL */
    void (*on_outcome)(void *ctx, const spade_ep_outcome *o);
    void (*on_event)(void *ctx, const spade_ep_event *e); /* may be NULL */
    void *ctx;
} spade_served_opts;

void spade_served_opts_default(spade_served_opts *o);

/* Plays every request from next (their spec must be 0: one environment) on
 * the servers. Returns a SPADE_EPISODES_* value, or -1 with err (a server gone,
 * a reply that is not the protocol's, the environment refused by a server,
 * the agent's error). *info (may be NULL) gets the environment's info. */
int spade_served_run(const spade_ep_spec *spec, spade_ep_next_fn next, void *next_ctx, spade_agent *agent,
                     const spade_served_opts *opts, spade_env_info *info, char *err, size_t errlen);

#endif /* SPADE_SERVED_EPISODES_H */
