/* check_play.c — the checker's plays through the episode layer.
 *
 * What it is: spade_check_play_eps, which runs requests through the episode
 * layer (core/episodes.h) with an agent wrapped in a watch (a step cap, a stop
 * on winning, SOLVE's actions noted for obs_size), the per-episode logs the
 * determinism checks compare, the wording of a failed episode, and the mixed
 * probing agent of seeds_vary and step_deterministic.
 * What it is not: a check (check_determinism.c, check_checks.c judge what
 * these plays return) or a second episode loop: every episode is the layer's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "check_internal.h"
#include "errbuf.h"

typedef struct play_ctx {
    ctx *c;
    ep_log *log; /* [episodes] or NULL */
    long n_log;
    int keep;
} play_ctx;

static void mix(uint64_t *h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * 1099511628211ULL;
}

static void on_event(void *arg, const spade_ep_event *e) {
    play_ctx *pc = arg;
    if (e->kind == SPADE_EV_OBS) spade_check_note_obs(pc->c, e->len);
    if (!pc->log || e->episode < 0 || e->episode >= pc->n_log) return;
    ep_log *l = &pc->log[e->episode];
    mix(&l->hash, e->text, e->len);
    if (e->kind == SPADE_EV_OBS && e->step > 0) mix(&l->hash, &e->reward, sizeof e->reward);
    if (!pc->keep || (e->kind == SPADE_EV_OBS && e->step == 0)) return;
    if ((e->kind == SPADE_EV_OBS ? l->n : l->n_act) >= l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        saved *o = realloc(l->obs, (size_t)cap * sizeof *o);
        if (o) l->obs = o;
        char **a = realloc(l->act, (size_t)cap * sizeof *a);
        if (a) l->act = a;
        size_t *al = realloc(l->act_len, (size_t)cap * sizeof *al);
        if (al) l->act_len = al;
        if (!o || !a || !al) return; /* out of memory: the log ends here, and looks like an episode that ended */
        l->cap = cap;
    }
    if (e->kind == SPADE_EV_OBS) {
        spade_step_result r;
        memset(&r, 0, sizeof r);
        r.obs = e->text;
        r.obs_len = e->len;
        r.reward = e->reward;
        spade_check_save(&l->obs[l->n++], &r);
    } else {
        char *a = malloc(e->len + 1);
        if (!a) return;
        memcpy(a, e->text, e->len);
        a[e->len] = 0;
        l->act[l->n_act] = a;
        l->act_len[l->n_act++] = e->len;
    }
}

void spade_check_free_logs(ep_log *log, long n) {
    for (long i = 0; log && i < n; i++) {
        for (int t = 0; t < log[i].n; t++) free(log[i].obs[t].obs);
        for (int t = 0; t < log[i].n_act; t++) free(log[i].act[t]);
        free(log[i].obs);
        free(log[i].act);
        free(log[i].act_len);
    }
    free(log);
}

/* The checker's wrapper around an agent of core/agents.h: ends an episode
 * after cap steps (0: no cap) as agent_stop "cap", or, with stop_on_win, as
 * soon as its return reaches the success threshold ("won"); notes SOLVE's
 * actions for obs_size, and shows the first one in verbose mode. */
typedef struct watch {
    ctx *c;
    spade_agent *inner;
    int cap, stop_on_win, show_solve;
    spade_ep_view *v; /* scratch: the views passed on */
    spade_ep_act *a;
    int *at;
    int n_cap;
} watch;

static int watch_begin(void *arg, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    watch *w = arg;
    return w->inner->begin ? w->inner->begin(w->inner->ctx, v, state, err, errlen) : 0;
}

static void watch_end(void *arg, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    watch *w = arg;
    if (w->inner->end) w->inner->end(w->inner->ctx, v, state, o);
}

static int watch_act(void *arg, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    watch *w = arg;
    ctx *c = w->c;
    if (n > w->n_cap) {
        spade_ep_view *v = realloc(w->v, (size_t)n * sizeof *v);
        if (v) w->v = v;
        spade_ep_act *a = realloc(w->a, (size_t)n * sizeof *a);
        if (a) w->a = a;
        int *at = realloc(w->at, (size_t)n * sizeof *at);
        if (at) w->at = at;
        if (!v || !a || !at) return spade_errf(err, errlen, "checker: out of memory"), -1;
        w->n_cap = n;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        const spade_ep_view *v = &views[i];
        if (v->solve) {
            spade_check_note_obs(c, v->solve_len);
            if (w->show_solve && c->o.verbose && v->step == 0 && v->seed == seed_of(c, 0)) {
                char sh[256];
                spade_check_put(c, "INFO", "solve_action", " (seed %llu): %s", (unsigned long long)v->seed,
                                spade_check_shown(v->solve, v->solve_len, sh, sizeof sh));
            }
        }
        if (w->stop_on_win && v->step > 0 && v->ret >= v->info->success) {
            acts[i] = (spade_ep_act){NULL, 0, "won"};
            continue;
        }
        if (w->cap > 0 && v->step >= w->cap) {
            acts[i] = (spade_ep_act){NULL, 0, "cap"};
            continue;
        }
        w->v[m] = *v;
        memset(&w->a[m], 0, sizeof w->a[m]);
        w->at[m++] = i;
    }
    if (!m) return 0;
    int rc = w->inner->act(w->inner->ctx, m, w->v, w->a, err, errlen);
    for (int j = 0; rc == 0 && j < m; j++) acts[w->at[j]] = w->a[j];
    return rc;
}

/* Plays reqs[0..n) through inner (freed here; NULL: out of memory) wrapped
 * in a watch, every worker poisoned, the first timeout stopping the run;
 * vecs (may be NULL): the specs' vector envs (a NULL one: the spec's own),
 * each played on all its envs (opts.places of episodes.h);
 * max_live: episodes at once (0: all of them, up to 256).
 * Failed episodes are noted (timeouts, oversized outputs). log (may be NULL)
 * gets what each episode showed. Returns 0, or -1 after a FAIL line for the
 * check c->check when the run itself could not go on. */
int spade_check_play_eps(ctx *c, const spade_ep_spec *specs, int n_specs, spade_vecenv *const *vecs, int max_live,
                         const spade_ep_request *reqs, long n, spade_agent *inner, int cap, int stop_on_win,
                         int show_solve, ep_log *log, int keep, spade_ep_outcome *out) {
    char err[1024] = "";
    int rc = -1;
    if (!inner) {
        spade_errf(err, sizeof err, "out of memory for an agent");
    } else {
        watch w = {c, inner, cap, stop_on_win, show_solve, NULL, NULL, NULL, 0};
        spade_agent a = {inner->name, inner->wants, &w, watch_begin, watch_act, watch_end, NULL};
        play_ctx pc = {c, log, log ? n : 0, keep};
        for (long i = 0; log && i < n; i++) log[i].hash = 1469598103934665603ULL;
        spade_episodes_opts eo;
        spade_episodes_opts_default(&eo);
        eo.max_live = max_live > 0 ? max_live : n < 1 ? 1 : n > 256 ? 256 : (int)n;
        eo.poison = CHECK_POISON;
        eo.stop_on_timeout = 1;
        eo.on_event = on_event;
        eo.ctx = &pc;
        spade_ep_place *places = vecs ? calloc((size_t)n_specs, sizeof *places) : NULL;
        for (int s = 0; places && s < n_specs; s++)
            places[s] = (spade_ep_place){vecs[s], 0, vecs[s] ? spade_vecenv_num_envs(vecs[s]) : 0};
        eo.places = places; /* out of memory: the specs' own vector envs, slower but the same */
        rc = spade_episodes_play(c->sb, specs, n_specs, reqs, n, &a, &eo, out, err, sizeof err) < 0 ? -1 : 0;
        free(places);
        free(w.v);
        free(w.a);
        free(w.at);
        spade_agent_free(inner);
    }
    if (rc < 0) {
        c->internal = 1;
        spade_check_put(c, "FAIL", c->check, ": the episode layer failed: %s", err);
        return -1;
    }
    for (long i = 0; i < n; i++)
        if (out[i].end == SPADE_EP_FAILED) {
            spade_check_note_failure(c, &out[i].failure, spade_ep_op_name(out[i].failed_in));
            if (out[i].failure.outcome == SPADE_OUT_INTERNAL) c->internal = 1;
        }
    return 0;
}

/* Why a failed episode failed, as the report says it: "reset: ...",
 * "step 3: ...", "step 3: solve: ...". */
const char *spade_check_ep_why(const spade_ep_outcome *o, char *buf, size_t cap) {
    char w[1400];
    spade_check_why(&o->failure, w, sizeof w);
    switch (o->failed_in) {
    case SPADE_EP_OP_RESET:
    case SPADE_EP_OP_LOAD:
    case SPADE_EP_OP_NONE:
        snprintf(buf, cap, "%s: %.1300s", o->failed_in == SPADE_EP_OP_RESET ? "reset" : "load", w);
        break;
    case SPADE_EP_OP_SOLVE:
    case SPADE_EP_OP_HINT:
        snprintf(buf, cap, "step %d: %s: %.1300s", o->steps + 1, spade_ep_op_name(o->failed_in), w);
        break;
    default: snprintf(buf, cap, "step %d: %.1300s", o->steps + 1, w);
    }
    return buf;
}

/* The probing agent of seeds_vary and step_deterministic: SOLVE's action on
 * even steps (random moves alone rarely get past the first branch of an
 * environment), else a random action from a stream that starts at rng0(seed). */
typedef struct mixed {
    int use_solve;
    uint64_t mul, add; /* the stream of an episode starts at seed * mul + add */
    /* episodes 2k and 2k + 1 are a pair (step_deterministic): the second
     * plays the first's action while both are at the same step, so the two
     * get the same actions even where SOLVE would see them differ */
    int pairs;
} mixed;

typedef struct mixed_ep {
    uint64_t rng;
    char buf[64];
} mixed_ep;

static int mixed_begin(void *arg, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    const mixed *m = arg;
    mixed_ep *e = malloc(sizeof *e);
    if (!e) return spade_errf(err, errlen, "checker: out of memory"), -1;
    e->rng = v->seed * m->mul + m->add;
    *state = e;
    return 0;
}

static void mixed_end(void *arg, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    (void)arg, (void)v, (void)o;
    free(state);
}

static int mixed_act(void *arg, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    (void)err, (void)errlen;
    const mixed *m = arg;
    for (int i = 0; i < n; i++) {
        mixed_ep *e = views[i].state;
        if (m->pairs && i > 0 && views[i].episode % 2 == 1 && views[i - 1].episode == views[i].episode - 1 &&
            views[i - 1].step == views[i].step) {
            acts[i] = acts[i - 1];
            if (!(m->use_solve && views[i].step % 2 == 0 && views[i].solve))
                (void)spade_random_action(&e->rng, e->buf, sizeof e->buf); /* its stream stays the first's */
            continue;
        }
        if (m->use_solve && views[i].step % 2 == 0 && views[i].solve) {
            acts[i].text = views[i].solve;
            acts[i].len = views[i].solve_len;
        } else {
            acts[i].len = spade_random_action(&e->rng, e->buf, sizeof e->buf);
            acts[i].text = e->buf;
        }
    }
    return 0;
}

spade_agent *spade_check_mixed_agent(int use_solve, uint64_t mul, uint64_t add, int pairs) {
    spade_agent *a = calloc(1, sizeof *a);
    mixed *m = malloc(sizeof *m);
    if (!a || !m) {
        free(a), free(m);
        return NULL;
    }
    *m = (mixed){use_solve, mul, add, pairs};
    *a = (spade_agent){"mixed", use_solve ? SPADE_AGENT_WANTS_SOLVE : 0u, m, mixed_begin, mixed_act, mixed_end, free};
    return a;
}
