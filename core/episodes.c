/* episodes.c — the episode layer of episodes.h: a queue of requests, a live
 * set refilled up to max_live, one vector env per spec (auto-reset off,
 * subset stepping), and the recovery that turns a dead worker into the
 * outcome of the one episode that killed it.
 *
 * Recovery, in detail: a failed batch leaves the episodes of its dead worker
 * without state and the failed op's results unknown. If exactly one episode
 * took part in the failed op, it is blamed. Otherwise the worker is revived and
 * each affected episode is replayed alone (reset with its seed, then every
 * action it played, the failed op's action last); one whose replay fails is
 * blamed with that failure, and the worker is revived again. Environments are
 * deterministic in seed and actions (spade check tests it), so a replay
 * rebuilds the state exactly and the agent is never asked twice.
 * What it is not: an agent (core/agents.c, agent/), a scheduler of model
 * batches, or a place that prints (callers get events and outcomes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "episodes.h"
#include "errbuf.h"

typedef struct strbuf {
    char *p;
    size_t len, cap;
} strbuf;

static int sb_set(strbuf *b, const char *s, size_t n)
{
    if (n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p, s, n);
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
    const char *cur;  /* this step's action (the agent's bytes, valid until its next act) */
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
    int off;   /* slot k of this spec is env off + k of the group's vector */
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
    long taken;  /* requests taken so far */
    int have_req; /* req holds a request taken but not placed (its spec was full) */
    spade_ep_request req;
    long req_ep;
    int queue_done;
    int halt; /* a timeout stopped the run (opts.stop_on_timeout) */
    /* outcomes held until the ones before them are delivered */
    spade_ep_outcome **held;
    long held_cap, delivered;
    /* scratch */
    spade_ep_view *views;
    spade_ep_act *acts;
    int *ids;
    uint64_t *seeds;
    const char **act_p;
    size_t *act_l;
    int *who, *who2;
    spade_step_result *res;
    int *sent, *start;   /* [n_specs], [n_specs + 1] */
    spade_failure *gs;   /* [n_specs] */
    char *err;
    size_t errlen;
} run;

const char *spade_ep_op_name(spade_ep_op op)
{
    static const char *const names[] = {"none", "load", "reset", "step", "hint", "solve"};
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

const char *spade_ep_end_name(spade_ep_end e)
{
    static const char *const names[] = {"terminated", "truncated", "agent_stop", "failed", "stopped"};
    return (unsigned)e < sizeof names / sizeof names[0] ? names[e] : "?";
}

void spade_episodes_opts_default(spade_episodes_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_live = 32;
    o->workers = 1;
}

void spade_agent_free(spade_agent *a)
{
    if (!a)
        return;
    if (a->free)
        a->free(a->ctx);
    free(a);
}

size_t spade_ep_with_hint(const char *obs, size_t obs_len, const char *hint, size_t hint_len, char *buf, size_t cap)
{
    static const char lead[] = "Hint: ";
    int nl = obs_len && obs[obs_len - 1] != '\n';
    size_t need = obs_len + (size_t)nl + sizeof lead - 1 + hint_len;
    if (cap) {
        size_t k = 0;
#define PUT(s, n)                                                                                                   \
    do {                                                                                                            \
        size_t m_ = (n) < cap - 1 - k ? (n) : cap - 1 - k;                                                          \
        memcpy(buf + k, (s), m_);                                                                                   \
        k += m_;                                                                                                    \
    } while (0)
        PUT(obs, obs_len);
        if (nl)
            PUT("\n", (size_t)1);
        PUT(lead, sizeof lead - 1);
        PUT(hint, hint_len);
#undef PUT
        buf[k] = 0;
    }
    return need;
}

size_t spade_ep_obs_len_without_hint(const spade_ep_view *v)
{
    static const char tag[] = "Hint: ";
    size_t n = v->obs_len, h = v->hint_len + sizeof tag - 1;
    if (v->step == 0 && v->hint && n >= h && !memcmp(v->obs + n - v->hint_len, v->hint, v->hint_len) &&
        !memcmp(v->obs + n - h, tag, sizeof tag - 1))
        return n - h;
    return n;
}

static int oom(run *R)
{
    spade_errf(R->err, R->errlen, "episodes: out of memory");
    return -1;
}

/* ---- outcomes ------------------------------------------------------------ */

static void deliver_ready(run *R)
{
    long k = 0;
    while (k < R->held_cap && R->held[k]) {
        if (R->o.on_outcome)
            R->o.on_outcome(R->o.ctx, R->held[k]);
        free(R->held[k]);
        k++;
    }
    if (k) {
        memmove(R->held, R->held + k, (size_t)(R->held_cap - k) * sizeof *R->held);
        memset(R->held + R->held_cap - k, 0, (size_t)k * sizeof *R->held);
        R->delivered += k;
    }
}

static int hold(run *R, const spade_ep_outcome *o)
{
    long at = o->episode - R->delivered;
    if (at >= R->held_cap) {
        long cap = R->held_cap ? R->held_cap : 64;
        while (cap <= at)
            cap *= 2;
        spade_ep_outcome **p = realloc(R->held, (size_t)cap * sizeof *p);
        if (!p)
            return oom(R);
        memset(p + R->held_cap, 0, (size_t)(cap - R->held_cap) * sizeof *p);
        R->held = p;
        R->held_cap = cap;
    }
    spade_ep_outcome *c = malloc(sizeof *c);
    if (!c)
        return oom(R);
    *c = *o;
    R->held[at] = c;
    deliver_ready(R);
    return 0;
}

static void view_of(run *R, live *e, spade_ep_view *v)
{
    memset(v, 0, sizeof *v);
    v->episode = e->episode;
    v->spec = e->spec;
    v->seed = e->seed;
    v->repeat = e->repeat;
    v->step = e->steps;
    v->obs = e->obs.p ? e->obs.p : "";
    v->obs_len = e->obs.len;
    if (e->has_hint) {
        v->hint = e->hint.p;
        v->hint_len = e->hint.len;
    }
    if (e->has_solve) {
        v->solve = e->solve.p;
        v->solve_len = e->solve.len;
    }
    v->reward = e->reward;
    v->ret = e->ret;
    v->info = R->env[e->spec].info;
    v->state = e->state;
}

/* Ends live episode li: its outcome is held for delivery, the agent told, the
 * slot freed. */
static int finish(run *R, int li, spade_ep_end end, const spade_failure *g, int op, const char *stop)
{
    live *e = &R->L[li];
    spade_ep_outcome o;
    memset(&o, 0, sizeof o);
    o.episode = e->episode;
    o.spec = e->spec;
    o.seed = e->seed;
    o.hint = e->hint_req;
    o.end = end;
    o.ret = e->ret;
    o.steps = e->steps;
    const spade_env_info *info = R->env[e->spec].info;
    o.success = (end == SPADE_EP_TERMINATED || end == SPADE_EP_TRUNCATED || end == SPADE_EP_AGENT_STOP) && info &&
                e->ret >= info->success;
    if (stop)
        snprintf(o.stop_reason, sizeof o.stop_reason, "%s", stop);
    if (g) {
        o.failure = *g;
        o.failed_in = (spade_ep_op)op;
        /* the vector env's own prefix says nothing to the reader of an outcome */
        static const char pre[] = "vecenv: ";
        if (!strncmp(o.failure.message, pre, sizeof pre - 1))
            memmove(o.failure.message, o.failure.message + sizeof pre - 1,
                    strlen(o.failure.message + sizeof pre - 1) + 1);
    }
    if (e->begun && R->agent->end) {
        spade_ep_view v;
        view_of(R, e, &v);
        R->agent->end(R->agent->ctx, &v, e->state, &o);
    }
    e->begun = 0;
    e->state = NULL;
    envrt *E = &R->env[e->spec];
    if (e->slot >= 0 && E->slot_of) {
        E->slot_of[e->slot - E->off] = -1;
        E->nfree++;
    }
    e->slot = -1;
    e->phase = PH_FREE;
    e->hist_n = 0;
    e->hlen = 0;
    e->unreplayable = 0;
    for (int k = 0; k < R->n_order; k++)
        if (R->order[k] == li) {
            memmove(R->order + k, R->order + k + 1, (size_t)(R->n_order - k - 1) * sizeof *R->order);
            R->n_order--;
            break;
        }
    return hold(R, &o);
}

/* A request that never got a slot (its spec does not load). */
static int fail_unplaced(run *R, long ep, const spade_ep_request *q, const spade_failure *g)
{
    spade_ep_outcome o;
    memset(&o, 0, sizeof o);
    o.episode = ep;
    o.spec = q->spec;
    o.seed = q->seed;
    o.hint = q->hint;
    o.end = SPADE_EP_FAILED;
    o.failure = *g;
    o.failed_in = SPADE_EP_OP_LOAD;
    return hold(R, &o);
}

static void emit(run *R, spade_ep_event_kind kind, const live *e, int step, const char *text, size_t len,
                 double reward)
{
    if (!R->o.on_event)
        return;
    spade_ep_event ev = {.kind = kind, .episode = e->episode, .step = step, .text = text, .len = len, .reward = reward};
    R->o.on_event(R->o.ctx, &ev);
}

/* ---- applying results ------------------------------------------------------ */

static int after_reset(run *R, int li, const spade_step_result *r)
{
    live *e = &R->L[li];
    if (sb_set(&e->obs, r->obs, r->obs_len) < 0)
        return oom(R);
    e->steps = 0;
    e->ret = 0;
    e->reward = 0;
    e->hist_n = 0;
    e->hlen = 0;
    e->unreplayable = 0;
    e->phase = PH_HINT;
    return 0;
}

static int after_step(run *R, int li, const spade_step_result *r)
{
    live *e = &R->L[li];
    if (sb_set(&e->obs, r->obs, r->obs_len) < 0)
        return oom(R);
    e->steps++;
    e->reward = r->reward;
    e->ret = r->episode_return;
    emit(R, SPADE_EV_OBS, e, e->steps, e->obs.p, e->obs.len, r->reward);
    if (r->terminated)
        return finish(R, li, SPADE_EP_TERMINATED, NULL, SPADE_EP_OP_NONE, NULL);
    if (r->truncated)
        return finish(R, li, SPADE_EP_TRUNCATED, NULL, SPADE_EP_OP_NONE, NULL);
    return 0;
}

/* ---- recovery ------------------------------------------------------------------ */

/* Plays episode li again alone: reset, then every recorded action. *r gets
 * the last result; *op the call that failed. */
static int replay(run *R, int li, spade_step_result *r, spade_failure *g, int *op)
{
    live *e = &R->L[li];
    spade_vecenv *v = R->grp[R->env[e->spec].group].v;
    *op = SPADE_EP_OP_RESET;
    if (spade_vecenv_reset_some(v, 1, &e->slot, &e->seed, r, g) < 0)
        return -1;
    *op = SPADE_EP_OP_STEP;
    for (int k = 0; k < e->hist_n; k++) {
        size_t at = k ? e->hoff[k - 1] : 0;
        const char *a = e->hbuf ? e->hbuf + at : "";
        size_t n = e->hoff[k] - at;
        if (spade_vecenv_step_some(v, 1, &e->slot, &a, &n, r, g) < 0)
            return -1;
    }
    return 0;
}

static int revive(run *R, int grp, spade_failure *g)
{
    grprt *E = &R->grp[grp];
    if (spade_vecenv_revive(E->v, g) == 0)
        return 0;
    E->broken = 1;
    E->fail = *g;
    return -1;
}

static int group_of(const run *R, const live *e)
{
    return R->env[e->spec].group;
}

/* The failure g ended op on group grp's vector; flag of the live episodes
 * marks the ones that took part and whose result is unknown. */
static int recover(run *R, int grp, int op, const spade_failure *g)
{
    grprt *E = &R->grp[grp];
    if (g->outcome == SPADE_OUT_BAD_CALL) {
        spade_errf(R->err, R->errlen, "episodes: internal error: %s", g->message);
        return -1;
    }
    /* affected: the suspects (flag 1) and the others of dead workers (flag 2) */
    int n_sus = 0;
    for (int k = 0; k < R->n_order; k++) {
        live *e = &R->L[R->order[k]];
        if (group_of(R, e) != grp || e->phase == PH_FREE || e->slot < 0)
            continue;
        if (e->flag == 1)
            n_sus++;
        else if (e->phase != PH_RESET && spade_vecenv_env_lost(E->v, e->slot))
            e->flag = 2;
    }
    int blame = -1;
    if (n_sus == 1)
        for (int k = 0; k < R->n_order; k++)
            if (R->L[R->order[k]].flag == 1 && group_of(R, &R->L[R->order[k]]) == grp)
                blame = R->order[k];
    if (blame >= 0) {
        R->L[blame].flag = 0;
        if (finish(R, blame, SPADE_EP_FAILED, g, op, NULL) < 0)
            return -1;
        if (g->outcome == SPADE_OUT_TIMEOUT && R->o.stop_on_timeout)
            R->halt = 1;
    }
    if (R->halt)
        return 0; /* the rest end as stopped: no replay, no revive */
    spade_failure h;
    int rv = revive(R, grp, &h);
    /* one at a time, in episode order; a replay that fails kills its worker
     * again, so the episodes restored there are flagged to be restored again */
    for (;;) {
        int li = -1;
        for (int k = 0; k < R->n_order && li < 0; k++)
            if (R->L[R->order[k]].flag && group_of(R, &R->L[R->order[k]]) == grp)
                li = R->order[k];
        if (li < 0)
            break;
        live *e = &R->L[li];
        int suspect = e->flag == 1;
        e->flag = 0;
        if (rv < 0) {
            if (finish(R, li, SPADE_EP_FAILED, &h, SPADE_EP_OP_LOAD, NULL) < 0)
                return -1;
            continue;
        }
        if (e->phase == PH_RESET && !suspect)
            continue; /* nothing to rebuild */
        if (e->unreplayable) {
            spade_failure x = *g;
            size_t k = strlen(x.message);
            snprintf(x.message + k, sizeof x.message - k, " (this episode's worker; too long to replay)");
            if (finish(R, li, SPADE_EP_FAILED, &x, op, NULL) < 0)
                return -1;
            continue;
        }
        spade_step_result r;
        int rop;
        if (replay(R, li, &r, &h, &rop) < 0) {
            if (finish(R, li, SPADE_EP_FAILED, &h, rop, NULL) < 0)
                return -1;
            if (h.outcome == SPADE_OUT_TIMEOUT && R->o.stop_on_timeout) {
                R->halt = 1;
                return 0;
            }
            for (int k = 0; k < R->n_order; k++) {
                live *x = &R->L[R->order[k]];
                if (group_of(R, x) == grp && !x->flag && x->phase != PH_RESET && spade_vecenv_env_lost(E->v, x->slot))
                    x->flag = 2;
            }
            rv = revive(R, grp, &h);
            continue;
        }
        if (!suspect)
            continue;
        int rc = op == SPADE_EP_OP_RESET ? after_reset(R, li, &r) : op == SPADE_EP_OP_STEP ? after_step(R, li, &r) : 0;
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void clear_flags(run *R)
{
    for (int i = 0; i < R->max_live; i++)
        R->L[i].flag = 0;
}

/* ---- phases -------------------------------------------------------------------- */

static int load_spec(run *R, int s)
{
    envrt *E = &R->env[s];
    if (E->loaded)
        return 0;
    E->loaded = 1;
    const spade_ep_spec *sp = &R->specs[s];
    const spade_ep_place *pl = R->o.places && R->o.places[s].vec ? &R->o.places[s] : NULL;
    grprt *G = &R->grp[E->group];
    long want = sp->expected > 0 && sp->expected < R->max_live ? sp->expected : R->max_live;
    if (pl)
        want = pl->count;
    E->nslots = (int)want;
    E->slot_of = malloc((size_t)E->nslots * sizeof *E->slot_of);
    if (!E->slot_of)
        return oom(R);
    for (int i = 0; i < E->nslots; i++)
        E->slot_of[i] = -1;
    E->nfree = E->nslots;
    if (!G->loaded) {
        G->loaded = 1;
        if (pl) {
            G->v = pl->vec;
            G->borrowed = 1;
            /* it may come failed from an earlier run or call (sticky: every
             * call would return that failure without sending anything) */
            if (spade_vecenv_revive(G->v, &G->fail) < 0)
                G->broken = 1;
        } else if (spade_vecenv_new_poisoned(R->sb, sp->filename, sp->source, sp->len, sp->params, E->nslots,
                                             R->o.workers, SPADE_AUTORESET_DISABLED, R->o.poison, &G->v,
                                             &G->fail) < 0) {
            G->broken = 1;
            G->v = NULL;
        }
    }
    if (G->v)
        E->info = spade_vecenv_info(G->v);
    return 0;
}

/* Takes requests while there is room; a request whose spec is full waits. */
static int fill(run *R, spade_ep_next_fn next, void *next_ctx)
{
    while (R->n_order < R->max_live && !R->halt) {
        if (!R->have_req) {
            if (R->queue_done || !next(next_ctx, &R->req)) {
                R->queue_done = 1;
                return 0;
            }
            if (R->req.spec < 0 || R->req.spec >= R->n_specs) {
                spade_errf(R->err, R->errlen, "episodes: request %ld names spec %d (there are %d)", R->taken,
                           R->req.spec, R->n_specs);
                return -1;
            }
            R->req_ep = R->taken++;
            R->have_req = 1;
        }
        int s = R->req.spec;
        if (load_spec(R, s) < 0)
            return -1;
        envrt *E = &R->env[s];
        if (R->grp[E->group].broken) {
            R->have_req = 0;
            if (fail_unplaced(R, R->req_ep, &R->req, &R->grp[E->group].fail) < 0)
                return -1;
            continue;
        }
        if (E->nfree == 0)
            return 0; /* waits for an episode of its spec to end */
        int li = 0;
        while (R->L[li].phase != PH_FREE)
            li++;
        int slot = 0;
        while (E->slot_of[slot] >= 0)
            slot++;
        live *e = &R->L[li];
        e->phase = PH_RESET;
        e->episode = R->req_ep;
        e->spec = s;
        e->slot = E->off + slot;
        e->seed = R->req.seed;
        e->repeat = R->req.repeat;
        e->hint_req = R->req.hint != 0;
        e->steps = 0;
        e->ret = e->reward = 0;
        e->has_hint = e->has_solve = 0;
        e->wants = R->o.wants && e->episode < R->o.n_wants ? R->o.wants[e->episode] : R->agent->wants;
        e->hist_n = 0;
    e->hlen = 0;
    e->unreplayable = 0;
        e->flag = 0;
        E->slot_of[slot] = li;
        E->nfree--;
        R->order[R->n_order++] = li;
        R->have_req = 0;
    }
    return 0;
}

static int do_resets(run *R)
{
    for (int s = 0; s < R->n_grp && !R->halt; s++) {
        grprt *E = &R->grp[s];
        if (!E->v)
            continue;
        int n = 0;
        for (int k = 0; k < R->n_order; k++) {
            live *e = &R->L[R->order[k]];
            if (group_of(R, e) == s && e->phase == PH_RESET) {
                R->who[n] = R->order[k];
                R->ids[n] = e->slot;
                R->seeds[n] = e->seed;
                n++;
            }
        }
        if (!n)
            continue;
        spade_failure g;
        if (spade_vecenv_reset_some(E->v, n, R->ids, R->seeds, R->res, &g) == 0) {
            for (int j = 0; j < n; j++)
                if (after_reset(R, R->who[j], &R->res[j]) < 0)
                    return -1;
            continue;
        }
        /* the results of live workers are good; the rest are suspects */
        clear_flags(R);
        int *who = R->who2;
        memcpy(who, R->who, (size_t)n * sizeof *who);
        for (int j = 0; j < n; j++) {
            if (g.outcome != SPADE_OUT_BAD_CALL && !spade_vecenv_env_lost(E->v, R->ids[j])) {
                if (after_reset(R, who[j], &R->res[j]) < 0)
                    return -1;
            } else {
                R->L[who[j]].flag = 1;
            }
        }
        if (recover(R, s, SPADE_EP_OP_RESET, &g) < 0)
            return -1;
    }
    return 0;
}

/* A one-instance text call (hint or solve) of live episode li into buf. */
static int text_of(run *R, int li, int solve, strbuf *buf, int *ok)
{
    live *e = &R->L[li];
    grprt *E = &R->grp[group_of(R, e)];
    const char *t;
    size_t n;
    spade_failure g;
    *ok = 0;
    int rc = solve ? spade_vecenv_solve(E->v, e->slot, &t, &n, &g) : spade_vecenv_hint(E->v, e->slot, &t, &n, &g);
    if (rc == 0) {
        if (sb_set(buf, t, n) < 0)
            return oom(R);
        *ok = 1;
        return 0;
    }
    clear_flags(R);
    e->flag = 1;
    return recover(R, group_of(R, e), solve ? SPADE_EP_OP_SOLVE : SPADE_EP_OP_HINT, &g);
}

/* The hints of the episodes starting that need one (solve 0), or SOLVE's
 * actions for the ready episodes whose agent wants them (solve 1): one batch
 * per worker instead of a round trip each. After a failure the episodes of
 * the dead worker are rebuilt (recover) and the one-at-a-time calls of
 * do_begins and do_solves fetch what is missing, so the episode whose text
 * kills its worker is the one blamed, as before. */
static int prefetch(run *R, int solve)
{
    for (int s = 0; s < R->n_grp && !R->halt; s++) {
        grprt *G = &R->grp[s];
        if (!G->v)
            continue;
        int n = 0;
        for (int k = 0; k < R->n_order; k++) {
            int li = R->order[k];
            live *e = &R->L[li];
            if (group_of(R, e) != s)
                continue;
            int need = solve ? e->phase == PH_READY && !e->has_solve && (e->wants & SPADE_AGENT_WANTS_SOLVE) &&
                                   R->env[e->spec].info->has_solve
                             : e->phase == PH_HINT && !e->has_hint && !(R->o.hints && R->o.hints[e->spec]) &&
                                   ((e->wants & SPADE_AGENT_WANTS_HINT) || e->hint_req);
            if (!need)
                continue;
            R->who[n] = li;
            R->ids[n] = e->slot;
            n++;
        }
        if (n < 2)
            continue; /* one: the one-at-a-time call costs the same */
        spade_failure g;
        if (spade_vecenv_text_some(G->v, n, R->ids, solve, R->res, &g) == 0) {
            for (int j = 0; j < n; j++) {
                live *e = &R->L[R->who[j]];
                if (sb_set(solve ? &e->solve : &e->hint, R->res[j].obs, R->res[j].obs_len) < 0)
                    return oom(R);
                if (solve)
                    e->has_solve = 1;
                else
                    e->has_hint = 1;
            }
            continue;
        }
        clear_flags(R);
        for (int j = 0; j < n; j++)
            if (g.outcome == SPADE_OUT_BAD_CALL || spade_vecenv_env_lost(G->v, R->ids[j]))
                R->L[R->who[j]].flag = 1;
        if (recover(R, s, solve ? SPADE_EP_OP_SOLVE : SPADE_EP_OP_HINT, &g) < 0)
            return -1;
    }
    return 0;
}

/* New episodes: the hint when wanted, appended for a hint episode; then the
 * agent's begin. */
static int do_begins(run *R)
{
    for (int k = 0; k < R->n_order && !R->halt; k++) {
        int li = R->order[k];
        live *e = &R->L[li];
        if (e->phase != PH_HINT)
            continue;
        if ((e->wants & SPADE_AGENT_WANTS_HINT) || e->hint_req) {
            const char *given = R->o.hints ? R->o.hints[e->spec] : NULL;
            if (given) { /* the run's hint for this spec, not the environment's */
                size_t n = R->o.hint_lens ? R->o.hint_lens[e->spec] : strlen(given);
                if (sb_set(&e->hint, given, n) < 0)
                    return oom(R);
            } else {
                int ok = 1;
                if (!e->has_hint && text_of(R, li, 0, &e->hint, &ok) < 0)
                    return -1;
                if (!ok) {
                    k = -1; /* the order changed: start over (begun ones are skipped) */
                    continue;
                }
            }
            e->has_hint = 1;
            if (e->hint_req) {
                size_t need = spade_ep_with_hint(e->obs.p, e->obs.len, e->hint.p, e->hint.len, NULL, 0);
                char *buf = malloc(need + 1);
                if (!buf)
                    return oom(R);
                spade_ep_with_hint(e->obs.p, e->obs.len, e->hint.p, e->hint.len, buf, need + 1);
                int rc = sb_set(&e->obs, buf, need);
                free(buf);
                if (rc < 0)
                    return oom(R);
            }
        }
        e->phase = PH_READY;
        emit(R, SPADE_EV_OBS, e, 0, e->obs.p, e->obs.len, 0);
        if (R->agent->begin) {
            spade_ep_view v;
            view_of(R, e, &v);
            if (R->agent->begin(R->agent->ctx, &v, &e->state, R->err, R->errlen) < 0)
                return -1;
        }
        e->begun = 1;
    }
    return 0;
}

static int do_solves(run *R)
{
    for (int k = 0; k < R->n_order && !R->halt; k++) {
        int li = R->order[k];
        live *e = &R->L[li];
        if (e->phase != PH_READY || e->has_solve || !(e->wants & SPADE_AGENT_WANTS_SOLVE) ||
            !R->env[e->spec].info->has_solve)
            continue;
        int ok;
        if (text_of(R, li, 1, &e->solve, &ok) < 0)
            return -1;
        if (!ok) {
            k = -1;
            continue;
        }
        e->has_solve = 1;
    }
    return 0;
}

static int push_action(run *R, live *e, const char *a, size_t n)
{
    e->cur = a;
    e->cur_len = n;
    if (e->unreplayable)
        return 0;
    if (e->hlen + n + (size_t)(e->hist_n + 1) * sizeof *e->hoff > SPADE_EP_REPLAY_MAX) {
        e->unreplayable = 1; /* a failure now costs this episode too */
        return 0;
    }
    if (e->hist_n == e->hoff_cap) {
        int cap = e->hoff_cap ? 2 * e->hoff_cap : 16;
        size_t *p = realloc(e->hoff, (size_t)cap * sizeof *p);
        if (!p)
            return oom(R);
        e->hoff = p;
        e->hoff_cap = cap;
    }
    if (e->hlen + n > e->hcap) {
        size_t cap = e->hcap ? e->hcap : 256;
        while (cap < e->hlen + n)
            cap *= 2;
        char *p = realloc(e->hbuf, cap);
        if (!p)
            return oom(R);
        e->hbuf = p;
        e->hcap = cap;
    }
    if (n)
        memcpy(e->hbuf + e->hlen, a, n);
    e->hlen += n;
    e->hoff[e->hist_n++] = e->hlen;
    return 0;
}

/* The agent answers for every ready episode; returns 1 when it has no more
 * actions. Stops end their episodes; the rest get their action recorded. */
static int do_act(run *R)
{
    int n = 0;
    for (int k = 0; k < R->n_order; k++) {
        int li = R->order[k];
        if (R->L[li].phase != PH_READY)
            continue;
        view_of(R, &R->L[li], &R->views[n]);
        memset(&R->acts[n], 0, sizeof R->acts[n]);
        R->who[n++] = li;
    }
    if (!n)
        return 0;
    int rc = R->agent->act(R->agent->ctx, n, R->views, R->acts, R->err, R->errlen);
    if (rc != 0)
        return rc < 0 ? -1 : 1;
    int *who = R->who2;
    memcpy(who, R->who, (size_t)n * sizeof *who);
    for (int j = 0; j < n; j++) {
        live *e = &R->L[who[j]];
        const spade_ep_act *a = &R->acts[j];
        e->has_solve = 0;
        if (a->stop) {
            if (finish(R, who[j], SPADE_EP_AGENT_STOP, NULL, SPADE_EP_OP_NONE, a->stop) < 0)
                return -1;
            continue;
        }
        if (a->len > SPADE_ACTION_MAX) {
            if (finish(R, who[j], SPADE_EP_AGENT_STOP, NULL, SPADE_EP_OP_NONE, "action_too_long") < 0)
                return -1;
            continue;
        }
        if (push_action(R, e, a->text && a->len ? a->text : "", a->text ? a->len : 0) < 0)
            return -1;
        emit(R, SPADE_EV_ACTION, e, e->steps + 1, e->cur, e->cur_len, 0);
        e->flag = 3; /* steps this round */
    }
    return 0;
}

static int do_steps(run *R)
{
    /* send every spec's batch, then wait for each: the specs' workers step
     * in parallel */
    int *sent = R->sent, *start = R->start;
    spade_failure *gs = R->gs;
    int n = 0;
    for (int s = 0; s < R->n_grp; s++) {
        grprt *E = &R->grp[s];
        start[s] = n;
        sent[s] = 0;
        if (!E->v)
            continue;
        int first = n;
        for (int k = 0; k < R->n_order; k++) {
            int li = R->order[k];
            live *e = &R->L[li];
            if (group_of(R, e) != s || e->flag != 3)
                continue;
            R->who[n] = li;
            R->ids[n] = e->slot;
            R->act_p[n] = e->cur;
            R->act_l[n] = e->cur_len;
            n++;
        }
        if (n == first)
            continue;
        sent[s] = spade_vecenv_step_some_async(E->v, n - first, R->ids + first, R->act_p + first, R->act_l + first,
                                               &gs[s]) == 0
                      ? 1
                      : -1;
    }
    start[R->n_grp] = n;
    for (int s = 0; s < R->n_grp; s++) {
        if (!sent[s])
            continue;
        grprt *E = &R->grp[s];
        int first = start[s], cnt = start[s + 1] - first;
        int rc = sent[s] > 0 ? spade_vecenv_step_wait(E->v, R->res + first, &gs[s]) : -1;
        /* a failed send leaves no result known; a failed wait, those of the
         * workers that lived. The rest are the suspects (flag 1). */
        for (int j = 0; j < cnt; j++) {
            int li = R->who[first + j];
            live *e = &R->L[li];
            if (rc == 0 ||
                (sent[s] > 0 && gs[s].outcome != SPADE_OUT_BAD_CALL && !spade_vecenv_env_lost(E->v, e->slot))) {
                e->flag = 0;
                if (after_step(R, li, &R->res[first + j]) < 0)
                    return -1;
            } else {
                e->flag = 1;
            }
        }
        if (rc != 0 && recover(R, s, SPADE_EP_OP_STEP, &gs[s]) < 0)
            return -1;
    }
    return 0;
}

static void free_run(run *R)
{
    for (int i = 0; R->L && i < R->max_live; i++) {
        live *e = &R->L[i];
        free(e->obs.p);
        free(e->hint.p);
        free(e->solve.p);
        free(e->hbuf);
        free(e->hoff);
    }
    for (int s = 0; R->env && s < R->n_specs; s++)
        free(R->env[s].slot_of);
    for (int g = 0; R->grp && g < R->n_grp; g++)
        if (!R->grp[g].borrowed)
            spade_vecenv_free(R->grp[g].v);
    free(R->grp);
    for (long k = 0; k < R->held_cap; k++)
        free(R->held[k]);
    free(R->held);
    free(R->env);
    free(R->L);
    free(R->order);
    free(R->views);
    free(R->acts);
    free(R->ids);
    free(R->seeds);
    free(R->act_p);
    free(R->act_l);
    free(R->who);
    free(R->who2);
    free(R->res);
    free(R->sent);
    free(R->start);
    free(R->gs);
}

static int stopped(const run *R)
{
    return R->halt || (R->o.stop && *R->o.stop);
}

int spade_episodes_run(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, spade_ep_next_fn next,
                       void *next_ctx, spade_agent *agent, const spade_episodes_opts *opts, char *err, size_t errlen)
{
    run R;
    memset(&R, 0, sizeof R);
    R.err = err;
    R.errlen = errlen;
    if (err && errlen)
        err[0] = 0;
    if (!sb || !next || !agent || !agent->act || n_specs < 0 || (n_specs > 0 && !specs)) {
        spade_errf(err, errlen, "spade_episodes_run: NULL sandbox, next, agent or specs");
        return -1;
    }
    if (opts)
        R.o = *opts;
    else
        spade_episodes_opts_default(&R.o);
    if (R.o.max_live < 1)
        R.o.max_live = 32;
    if (R.o.workers < 1)
        R.o.workers = 1;
    R.sb = sb;
    R.specs = specs;
    R.n_specs = n_specs;
    R.agent = agent;
    R.max_live = R.o.max_live;
    size_t m = (size_t)R.max_live;
    R.env = calloc(n_specs > 0 ? (size_t)n_specs : 1, sizeof *R.env);
    R.grp = calloc(n_specs > 0 ? (size_t)n_specs : 1, sizeof *R.grp);
    R.L = calloc(m, sizeof *R.L);
    R.order = calloc(m, sizeof *R.order);
    R.views = calloc(m, sizeof *R.views);
    R.acts = calloc(m, sizeof *R.acts);
    R.ids = calloc(m, sizeof *R.ids);
    R.seeds = calloc(m, sizeof *R.seeds);
    R.act_p = calloc(m, sizeof *R.act_p);
    R.act_l = calloc(m, sizeof *R.act_l);
    R.who = calloc(m, sizeof *R.who);
    R.who2 = calloc(m, sizeof *R.who2);
    R.res = calloc(m, sizeof *R.res);
    size_t ns = (size_t)n_specs + 1;
    R.sent = calloc(ns, sizeof *R.sent);
    R.start = calloc(ns, sizeof *R.start);
    R.gs = calloc(ns, sizeof *R.gs);
    int rc = -1;
    if (!R.env || !R.grp || !R.L || !R.order || !R.views || !R.acts || !R.ids || !R.seeds || !R.act_p || !R.act_l ||
        !R.who || !R.who2 || !R.res || !R.sent || !R.start || !R.gs) {
        oom(&R);
        goto out;
    }
    for (int i = 0; i < R.max_live; i++)
        R.L[i].slot = -1;
    /* groups: a spec of its own, or the first spec naming the same caller's vector */
    for (int s = 0; s < n_specs; s++) {
        const spade_ep_place *sp = R.o.places && R.o.places[s].vec ? &R.o.places[s] : NULL;
        R.env[s].group = -1;
        if (sp) {
            int ne = spade_vecenv_num_envs(sp->vec);
            if (sp->count < 1 || sp->first < 0 || sp->first > ne - sp->count) {
                spade_errf(err, errlen, "episodes: spec %d: envs [%d, %d) of a vector of %d", s, sp->first,
                           sp->first + sp->count, ne);
                goto out;
            }
            R.env[s].off = sp->first;
            for (int t = 0; t < s && R.env[s].group < 0; t++)
                if (R.o.places[t].vec == sp->vec)
                    R.env[s].group = R.env[t].group;
        }
        if (R.env[s].group < 0)
            R.env[s].group = R.n_grp++;
    }
    for (;;) {
        if (stopped(&R)) {
            rc = SPADE_EPISODES_STOPPED;
            break;
        }
        if (fill(&R, next, next_ctx) < 0 || do_resets(&R) < 0 || prefetch(&R, 0) < 0 || do_begins(&R) < 0 ||
            prefetch(&R, 1) < 0 || do_solves(&R) < 0)
            goto out;
        if (R.n_order == 0 && R.queue_done && !R.have_req) {
            rc = SPADE_EPISODES_DONE;
            break;
        }
        if (stopped(&R)) {
            rc = SPADE_EPISODES_STOPPED;
            break;
        }
        int a = do_act(&R);
        if (a < 0)
            goto out;
        if (a > 0) {
            rc = stopped(&R) ? SPADE_EPISODES_STOPPED : SPADE_EPISODES_AGENT_END;
            break;
        }
        if (do_steps(&R) < 0)
            goto out;
    }
    /* the run stopped: what is live ends as stopped, in episode order */
    while (R.n_order > 0)
        if (finish(&R, R.order[0], SPADE_EP_STOPPED, NULL, SPADE_EP_OP_NONE, NULL) < 0) {
            rc = -1;
            goto out;
        }
    if (R.have_req) {
        /* taken from the queue but never started: stopped too */
        spade_ep_outcome o;
        memset(&o, 0, sizeof o);
        o.episode = R.req_ep;
        o.spec = R.req.spec;
        o.seed = R.req.seed;
        o.hint = R.req.hint;
        o.end = SPADE_EP_STOPPED;
        if (hold(&R, &o) < 0)
            rc = -1;
    }
out:
    if (rc < 0) {
        /* the agent's per-episode state is freed even when the run fails */
        for (int k = 0; k < R.n_order; k++) {
            live *e = &R.L[R.order[k]];
            if (e->begun && agent->end) {
                spade_ep_view v;
                spade_ep_outcome o;
                memset(&o, 0, sizeof o);
                o.episode = e->episode;
                o.end = SPADE_EP_STOPPED;
                view_of(&R, e, &v);
                agent->end(agent->ctx, &v, e->state, &o);
            }
        }
    }
    free_run(&R);
    return rc;
}

/* ---- the list form ------------------------------------------------------------- */

typedef struct list_ctx {
    const spade_ep_request *reqs;
    long n, next;
    spade_ep_outcome *out;
    void (*user)(void *, const spade_ep_outcome *);
    void (*user_event)(void *, const spade_ep_event *);
    void *user_ctx;
} list_ctx;

static int list_next(void *ctx, spade_ep_request *req)
{
    list_ctx *c = ctx;
    if (c->next >= c->n)
        return 0;
    *req = c->reqs[c->next++];
    return 1;
}

static void list_outcome(void *ctx, const spade_ep_outcome *o)
{
    list_ctx *c = ctx;
    if (c->out && o->episode >= 0 && o->episode < c->n)
        c->out[o->episode] = *o;
    if (c->user)
        c->user(c->user_ctx, o);
}

static void list_event(void *ctx, const spade_ep_event *e)
{
    list_ctx *c = ctx;
    c->user_event(c->user_ctx, e);
}

int spade_episodes_play(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, const spade_ep_request *reqs,
                        long n, spade_agent *agent, const spade_episodes_opts *opts, spade_ep_outcome *out,
                        char *err, size_t errlen)
{
    spade_episodes_opts o;
    if (opts)
        o = *opts;
    else
        spade_episodes_opts_default(&o);
    list_ctx c = {.reqs = reqs, .n = n, .out = out, .user = o.on_outcome, .user_event = o.on_event, .user_ctx = o.ctx};
    for (long i = 0; out && i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].episode = i;
        out[i].spec = reqs[i].spec;
        out[i].seed = reqs[i].seed;
        out[i].hint = reqs[i].hint;
        out[i].end = SPADE_EP_STOPPED;
    }
    o.on_outcome = list_outcome;
    if (o.on_event)
        o.on_event = list_event;
    o.ctx = &c;
    /* the list says how many episodes each spec has: no more instances than that */
    spade_ep_spec *own = n_specs > 0 ? malloc((size_t)n_specs * sizeof *own) : NULL;
    if (n_specs > 0 && !own) {
        spade_errf(err, errlen, "episodes: out of memory");
        return -1;
    }
    for (int s = 0; s < n_specs; s++) {
        own[s] = specs[s];
        if (own[s].expected <= 0)
            for (long i = 0; i < n; i++)
                own[s].expected += reqs[i].spec == s;
    }
    int rc = spade_episodes_run(sb, own ? own : specs, n_specs, list_next, &c, agent, &o, err, errlen);
    free(own);
    return rc;
}
