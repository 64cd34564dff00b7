/* episodes_internal.h — what the files of the episode layer (core/episodes*.c) share.
 *
 * What it is: one run's state (run: the specs' vector envs, the live set, the
 * held outcomes, the scratch of one round; live: one episode in play), and the
 * few functions that cross files: the outcomes and results of episodes.c, the
 * recovery of episodes_recovery.c, the phases of one round in episodes_phases.c.
 * What it is not: API — nothing outside core/episodes*.c includes it; the
 * layer's interface is episodes.h.
 */
#ifndef SPADE_EPISODES_INTERNAL_H
#define SPADE_EPISODES_INTERNAL_H

#include <stdlib.h>
#include <string.h>

#include "ep_order.h"
#include "episodes.h"

/* The parts' shared names stay inside libspade.so (libspade.map exports spade_*). */
#pragma GCC visibility push(hidden)

typedef struct strbuf {
    char *p;
    size_t len, cap;
} strbuf;

static inline int sb_set(strbuf *b, const char *s, size_t n) {
    if (n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p, s, n);
    b->p[n] = 0;
    b->len = n;
    return 0;
}

enum { PH_FREE = 0, PH_RESET, PH_HINT, PH_READY };

typedef struct live {
    int phase;
    long episode;
    int spec, slot;
    uint64_t seed;
    int repeat;
    int hint_req;
    int steps;
    double ret, reward;
    int begun;
    void *state;
    strbuf obs, hint, solve;
    int has_hint, has_solve;
    unsigned wants; /* SPADE_AGENT_WANTS_* for this episode */
    /* every action played, for replays (the last is the one in flight during
     * a step): hbuf holds them end to end, hoff[k] where action k ends */
    char *hbuf;
    size_t hlen, hcap;
    size_t *hoff;
    int hist_n, hoff_cap;
    int unreplayable; /* the history outgrew SPADE_EP_REPLAY_MAX */
    const char *cur; /* this step's action (the agent's bytes, valid until its next act) */
    size_t cur_len;
    /* scratch of one round */
    int flag;
} live;

/* A vector env and the specs that play on it: one of its own per spec, or
 * one of the caller's (opts.places) shared by the specs placed on it. */
typedef struct grprt {
    int loaded, broken, borrowed;
    spade_failure fail;
    spade_vecenv *v;
} grprt;

typedef struct envrt {
    int loaded;
    int group; /* index into run.grp */
    int off; /* slot k of this spec is env off + k of the group's vector */
    const spade_env_info *info;
    int nslots;
    int *slot_of; /* [nslots] live index or -1 */
    int nfree;
} envrt;

typedef struct run {
    spade_sandbox *sb;
    const spade_ep_spec *specs;
    int n_specs;
    envrt *env;
    grprt *grp;
    int n_grp;
    spade_agent *agent;
    spade_episodes_opts o;
    live *L;
    int max_live;
    int *order; /* live indices in episode order */
    int n_order;
    long taken; /* requests taken so far */
    int have_req; /* req holds a request taken but not placed (its spec was full) */
    spade_ep_request req;
    long req_ep;
    int queue_done;
    int halt; /* a timeout stopped the run (opts.stop_on_timeout) */
    /* outcomes held until the ones before them are delivered */
    spade_ep_order order_out;
    /* scratch */
    spade_ep_view *views;
    spade_ep_act *acts;
    int *ids;
    uint64_t *seeds;
    const char **act_p;
    size_t *act_l;
    int *who, *who2;
    spade_step_result *res;
    int *sent, *start; /* [n_specs], [n_specs + 1] */
    spade_failure *gs; /* [n_specs] */
    char *err;
    size_t errlen;
} run;

static inline int group_of(const run *R, const live *e) { return R->env[e->spec].group; }

/* episodes.c: outcomes and results */
int spade_eps_oom(run *R); /* fills the error buffer; returns -1 */
void spade_eps_view_of(run *R, live *e, spade_ep_view *v);
/* Ends live episode li: its outcome is held for delivery, the agent told, the slot freed. */
int spade_eps_finish(run *R, int li, spade_ep_end end, const spade_failure *g, int op, const char *stop);
int spade_eps_fail_unplaced(run *R, long ep, const spade_ep_request *q, const spade_failure *g);
void spade_eps_emit(run *R, spade_ep_event_kind kind, const live *e, int step, const char *text, size_t len,
                    double reward);
int spade_eps_after_reset(run *R, int li, const spade_step_result *r);
int spade_eps_after_step(run *R, int li, const spade_step_result *r);

/* episodes_recovery.c */
/* The failure g ended op on group grp's vector; flag of the live episodes
 * marks the ones that took part and whose result is unknown. */
int spade_eps_recover(run *R, int grp, int op, const spade_failure *g);
void spade_eps_clear_flags(run *R);

/* episodes_phases.c: one round, in the order spade_episodes_run calls them */
int spade_eps_fill(run *R, spade_ep_next_fn next, void *next_ctx);
int spade_eps_do_resets(run *R);
int spade_eps_prefetch(run *R, int solve);
int spade_eps_do_begins(run *R);
int spade_eps_do_solves(run *R);
int spade_eps_do_act(run *R); /* 1: the agent has no more actions */
int spade_eps_do_steps(run *R);

#pragma GCC visibility pop

#endif
