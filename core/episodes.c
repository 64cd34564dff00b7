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
 * Its files: this one (the queue, outcomes, the run and the list form),
 * episodes_recovery.c, episodes_phases.c; what they share is episodes_internal.h.
 * What it is not: an agent (core/agents.c, agent/), a scheduler of model
 * batches, or a place that prints (callers get events and outcomes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_order.h"
#include "episodes.h"
#include "episodes_internal.h"
#include "errbuf.h"

const char *spade_ep_op_name(spade_ep_op op) {
    static const char *const names[] = {"none", "load", "reset", "step", "hint", "solve"};
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

const char *spade_ep_end_name(spade_ep_end e) {
    static const char *const names[] = {"terminated", "truncated", "agent_stop", "failed", "stopped"};
    return (unsigned)e < sizeof names / sizeof names[0] ? names[e] : "?";
}

void spade_episodes_opts_default(spade_episodes_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_live = 32;
    o->workers = 1;
}

void spade_agent_free(spade_agent *a) {
    if (!a) return;
    if (a->free) a->free(a->ctx);
    free(a);
}

size_t spade_ep_with_hint(const char *obs, size_t obs_len, const char *hint, size_t hint_len, char *buf, size_t cap) {
    static const char lead[] = "Hint: ";
    int nl = obs_len && obs[obs_len - 1] != '\n';
    size_t need = obs_len + (size_t)nl + sizeof lead - 1 + hint_len;
    if (cap) {
        size_t k = 0;
#define PUT(s, n)                                                                                                      \
    do {                                                                                                               \
        size_t m_ = (n) < cap - 1 - k ? (n) : cap - 1 - k;                                                             \
        memcpy(buf + k, (s), m_);                                                                                      \
        k += m_;                                                                                                       \
    } while (0)
        PUT(obs, obs_len);
        if (nl) PUT("\n", (size_t)1);
        PUT(lead, sizeof lead - 1);
        PUT(hint, hint_len);
#undef PUT
        buf[k] = 0;
    }
    return need;
}

size_t spade_ep_obs_len_without_hint(const spade_ep_view *v) {
    static const char tag[] = "Hint: ";
    size_t n = v->obs_len, h = v->hint_len + sizeof tag - 1;
    if (v->step == 0 && v->hint && n >= h && !memcmp(v->obs + n - v->hint_len, v->hint, v->hint_len) &&
        !memcmp(v->obs + n - h, tag, sizeof tag - 1))
        return n - h;
    return n;
}

int spade_eps_oom(run *R) {
    spade_errf(R->err, R->errlen, "episodes: out of memory");
    return -1;
}

/* ---- outcomes ------------------------------------------------------------ */

static int hold(run *R, const spade_ep_outcome *o) {
    return spade_ep_order_put(&R->order_out, o, R->o.on_outcome, R->o.ctx) < 0 ? spade_eps_oom(R) : 0;
}

void spade_eps_view_of(run *R, live *e, spade_ep_view *v) {
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
int spade_eps_finish(run *R, int li, spade_ep_end end, const spade_failure *g, int op, const char *stop) {
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
    if (stop) snprintf(o.stop_reason, sizeof o.stop_reason, "%s", stop);
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
        spade_eps_view_of(R, e, &v);
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
int spade_eps_fail_unplaced(run *R, long ep, const spade_ep_request *q, const spade_failure *g) {
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

void spade_eps_emit(run *R, spade_ep_event_kind kind, const live *e, int step, const char *text, size_t len,
                    double reward) {
    if (!R->o.on_event) return;
    spade_ep_event ev = {.kind = kind, .episode = e->episode, .step = step, .text = text, .len = len, .reward = reward};
    R->o.on_event(R->o.ctx, &ev);
}

/* ---- applying results ------------------------------------------------------ */

int spade_eps_after_reset(run *R, int li, const spade_step_result *r) {
    live *e = &R->L[li];
    if (sb_set(&e->obs, r->obs, r->obs_len) < 0) return spade_eps_oom(R);
    e->steps = 0;
    e->ret = 0;
    e->reward = 0;
    e->hist_n = 0;
    e->hlen = 0;
    e->unreplayable = 0;
    e->phase = PH_HINT;
    return 0;
}

int spade_eps_after_step(run *R, int li, const spade_step_result *r) {
    live *e = &R->L[li];
    if (sb_set(&e->obs, r->obs, r->obs_len) < 0) return spade_eps_oom(R);
    e->steps++;
    e->reward = r->reward;
    e->ret = r->episode_return;
    spade_eps_emit(R, SPADE_EV_OBS, e, e->steps, e->obs.p, e->obs.len, r->reward);
    if (r->terminated) return spade_eps_finish(R, li, SPADE_EP_TERMINATED, NULL, SPADE_EP_OP_NONE, NULL);
    if (r->truncated) return spade_eps_finish(R, li, SPADE_EP_TRUNCATED, NULL, SPADE_EP_OP_NONE, NULL);
    return 0;
}
static void free_run(run *R) {
    for (int i = 0; R->L && i < R->max_live; i++) {
        live *e = &R->L[i];
        free(e->obs.p);
        free(e->hint.p);
        free(e->solve.p);
        free(e->hbuf);
        free(e->hoff);
    }
    for (int s = 0; R->env && s < R->n_specs; s++) free(R->env[s].slot_of);
    for (int g = 0; R->grp && g < R->n_grp; g++)
        if (!R->grp[g].borrowed) spade_vecenv_free(R->grp[g].v);
    free(R->grp);
    spade_ep_order_free(&R->order_out);
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

static int stopped(const run *R) { return R->halt || (R->o.stop && *R->o.stop); }

/* R's per-slot and per-spec arrays, zeroed: 0, or -1 having said so. */
static int run_alloc(run *R) {
    size_t m = (size_t)R->max_live, ns = (size_t)R->n_specs + 1, nsp = R->n_specs > 0 ? (size_t)R->n_specs : 1;
    R->env = calloc(nsp, sizeof *R->env);
    R->grp = calloc(nsp, sizeof *R->grp);
    R->L = calloc(m, sizeof *R->L);
    R->order = calloc(m, sizeof *R->order);
    R->views = calloc(m, sizeof *R->views);
    R->acts = calloc(m, sizeof *R->acts);
    R->ids = calloc(m, sizeof *R->ids);
    R->seeds = calloc(m, sizeof *R->seeds);
    R->act_p = calloc(m, sizeof *R->act_p);
    R->act_l = calloc(m, sizeof *R->act_l);
    R->who = calloc(m, sizeof *R->who);
    R->who2 = calloc(m, sizeof *R->who2);
    R->res = calloc(m, sizeof *R->res);
    R->sent = calloc(ns, sizeof *R->sent);
    R->start = calloc(ns, sizeof *R->start);
    R->gs = calloc(ns, sizeof *R->gs);
    if (!R->env || !R->grp || !R->L || !R->order || !R->views || !R->acts || !R->ids || !R->seeds || !R->act_p ||
        !R->act_l || !R->who || !R->who2 || !R->res || !R->sent || !R->start || !R->gs)
        return spade_eps_oom(R);
    for (int i = 0; i < R->max_live; i++) R->L[i].slot = -1;
    return 0;
}

/* Each spec's group: a spec of its own, or the first spec naming the same
 * caller's vector (opts.places). 0, or -1 for a place outside its vector. */
static int run_groups(run *R) {
    for (int s = 0; s < R->n_specs; s++) {
        const spade_ep_place *sp = R->o.places && R->o.places[s].vec ? &R->o.places[s] : NULL;
        R->env[s].group = -1;
        if (sp) {
            int ne = spade_vecenv_num_envs(sp->vec);
            if (sp->count < 1 || sp->first < 0 || sp->first > ne - sp->count) {
                spade_errf(R->err, R->errlen, "episodes: spec %d: envs [%d, %d) of a vector of %d", s, sp->first,
                           sp->first + sp->count, ne);
                return -1;
            }
            R->env[s].off = sp->first;
            for (int t = 0; t < s && R->env[s].group < 0; t++)
                if (R->o.places[t].vec == sp->vec) R->env[s].group = R->env[t].group;
        }
        if (R->env[s].group < 0) R->env[s].group = R->n_grp++;
    }
    return 0;
}

/* Rounds of fill, reset, begin, solve, act and step until the queue is done,
 * a stop is asked for or the agent ends: the SPADE_EPISODES_* reason, or -1. */
static int run_rounds(run *R, spade_ep_next_fn next, void *next_ctx) {
    for (;;) {
        if (stopped(R)) return SPADE_EPISODES_STOPPED;
        if (spade_eps_fill(R, next, next_ctx) < 0 || spade_eps_do_resets(R) < 0 || spade_eps_prefetch(R, 0) < 0 ||
            spade_eps_do_begins(R) < 0 || spade_eps_prefetch(R, 1) < 0 || spade_eps_do_solves(R) < 0)
            return -1;
        if (R->n_order == 0 && R->queue_done && !R->have_req) return SPADE_EPISODES_DONE;
        if (stopped(R)) return SPADE_EPISODES_STOPPED;
        int a = spade_eps_do_act(R);
        if (a < 0) return -1;
        if (a > 0) return stopped(R) ? SPADE_EPISODES_STOPPED : SPADE_EPISODES_AGENT_END;
        if (spade_eps_do_steps(R) < 0) return -1;
    }
}

/* The run stopped: what is live ends as stopped, in episode order, and so
 * does a request taken from the queue but never started. rc, or -1. */
static int run_end_live(run *R, int rc) {
    while (R->n_order > 0)
        if (spade_eps_finish(R, R->order[0], SPADE_EP_STOPPED, NULL, SPADE_EP_OP_NONE, NULL) < 0) return -1;
    if (R->have_req) {
        spade_ep_outcome o;
        memset(&o, 0, sizeof o);
        o.episode = R->req_ep;
        o.spec = R->req.spec;
        o.seed = R->req.seed;
        o.hint = R->req.hint;
        o.end = SPADE_EP_STOPPED;
        if (hold(R, &o) < 0) rc = -1;
    }
    return rc;
}

/* A failed run: the agent's per-episode state is freed all the same. */
static void run_end_agent(run *R) {
    for (int k = 0; k < R->n_order; k++) {
        live *e = &R->L[R->order[k]];
        if (e->begun && R->agent->end) {
            spade_ep_view v;
            spade_ep_outcome o;
            memset(&o, 0, sizeof o);
            o.episode = e->episode;
            o.end = SPADE_EP_STOPPED;
            spade_eps_view_of(R, e, &v);
            R->agent->end(R->agent->ctx, &v, e->state, &o);
        }
    }
}

int spade_episodes_run(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, spade_ep_next_fn next,
                       void *next_ctx, spade_agent *agent, const spade_episodes_opts *opts, char *err, size_t errlen) {
    run R;
    memset(&R, 0, sizeof R);
    R.err = err;
    R.errlen = errlen;
    if (err && errlen) err[0] = 0;
    if (!sb || !next || !agent || !agent->act || n_specs < 0 || (n_specs > 0 && !specs)) {
        spade_errf(err, errlen, "spade_episodes_run: NULL sandbox, next, agent or specs");
        return -1;
    }
    if (opts)
        R.o = *opts;
    else
        spade_episodes_opts_default(&R.o);
    if (R.o.max_live < 1) R.o.max_live = 32;
    if (R.o.workers < 1) R.o.workers = 1;
    R.sb = sb;
    R.specs = specs;
    R.n_specs = n_specs;
    R.agent = agent;
    R.max_live = R.o.max_live;
    int rc = run_alloc(&R) < 0 || run_groups(&R) < 0 ? -1 : run_rounds(&R, next, next_ctx);
    if (rc >= 0) rc = run_end_live(&R, rc);
    if (rc < 0) run_end_agent(&R);
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

static int list_next(void *ctx, spade_ep_request *req) {
    list_ctx *c = ctx;
    if (c->next >= c->n) return 0;
    *req = c->reqs[c->next++];
    return 1;
}

static void list_outcome(void *ctx, const spade_ep_outcome *o) {
    list_ctx *c = ctx;
    if (c->out && o->episode >= 0 && o->episode < c->n) c->out[o->episode] = *o;
    if (c->user) c->user(c->user_ctx, o);
}

static void list_event(void *ctx, const spade_ep_event *e) {
    list_ctx *c = ctx;
    c->user_event(c->user_ctx, e);
}

int spade_episodes_play(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, const spade_ep_request *reqs,
                        long n, spade_agent *agent, const spade_episodes_opts *opts, spade_ep_outcome *out, char *err,
                        size_t errlen) {
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
    if (o.on_event) o.on_event = list_event;
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
            for (long i = 0; i < n; i++) own[s].expected += reqs[i].spec == s;
    }
    int rc = spade_episodes_run(sb, own ? own : specs, n_specs, list_next, &c, agent, &o, err, errlen);
    free(own);
    return rc;
}
