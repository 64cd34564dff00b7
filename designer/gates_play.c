/* gates_play.c — the one run of several gates' episodes (gates_internal.h).
 *
 * What it is: the specs, agents and requests a group of gates adds (gplay),
 * the mux agent that gives each gate's agent its own range of the run's
 * episodes, the per-episode hashes of what an episode showed (trace), and
 * the play through spade_episodes_play.
 * What it is not: a second episode loop, nor any gate's judgement.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "designer/gates_internal.h"
#include "errbuf.h"

/* ---- the trace: what an episode showed, hashed ---- */

static void hash_bytes(uint64_t *h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * 1099511628211ULL;
}

/* An observation with each run of digits as one '#': what an environment
 * shows, whatever numbers its seed drew. */
static void hash_masked(uint64_t *h, const char *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c >= '0' && c <= '9') {
            while (i + 1 < n && t[i + 1] >= '0' && t[i + 1] <= '9') i++;
            c = '#';
        }
        *h = (*h ^ c) * 1099511628211ULL;
    }
}

static void on_event(void *ctx, const spade_ep_event *e) {
    trace *t = ctx;
    if (e->episode < 0 || e->episode >= t->n) return;
    uint64_t *h = &t->h[e->episode];
    if (t->first_obs && e->episode == 0 && e->kind == SPADE_EV_OBS && e->step == 0 && !t->first_obs[0])
        snprintf(t->first_obs, FIRST_OBS_MAX, "%.*s", (int)(e->len < FIRST_OBS_MAX ? e->len : FIRST_OBS_MAX - 1),
                 e->text);
    if (t->act && e->kind == SPADE_EV_ACTION && e->step == 1)
        snprintf(t->act[e->episode], ACT_KEEP, "%.*s", (int)(e->len < ACT_KEEP ? e->len : ACT_KEEP - 1), e->text);
    int kind = (int)e->kind;
    if (t->masked) { /* what the environment shows and pays; the agents' actions differ by design */
        if (e->kind != SPADE_EV_OBS) return;
        hash_masked(h, e->text, e->len);
        hash_bytes(h, &e->reward, sizeof e->reward);
        return;
    }
    hash_bytes(h, &kind, sizeof kind);
    hash_bytes(h, e->text, e->len);
    if (e->kind == SPADE_EV_OBS) hash_bytes(h, &e->reward, sizeof e->reward);
}

/* ---- the mux agent: agent k plays episodes [base[k], base[k + 1]), numbered from 0 ---- */

static int agent_of(const mux *m, long episode) {
    int k = 0;
    while (k + 1 < m->n && episode >= m->base[k + 1]) k++;
    return k;
}

static int mux_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    mux *m = ctx;
    int k = agent_of(m, v->episode);
    if (!m->a[k]->begin) return 0;
    spade_ep_view u = *v;
    u.episode -= m->base[k];
    return m->a[k]->begin(m->a[k]->ctx, &u, state, err, errlen);
}

static int mux_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    mux *m = ctx;
    if (n > m->cap) {
        spade_ep_view *v = realloc(m->v, (size_t)n * sizeof *v);
        if (v) m->v = v;
        spade_ep_act *a = realloc(m->act, (size_t)n * sizeof *a);
        if (a) m->act = a;
        int *at = realloc(m->at, (size_t)n * sizeof *at);
        if (at) m->at = at;
        if (!v || !a || !at) {
            spade_errf(err, errlen, "gates: out of memory");
            return -1;
        }
        m->cap = n;
    }
    for (int k = 0; k < m->n; k++) {
        int c = 0;
        for (int i = 0; i < n; i++)
            if (agent_of(m, views[i].episode) == k) {
                m->v[c] = views[i];
                m->v[c].episode -= m->base[k];
                m->act[c] = (spade_ep_act){0};
                m->at[c++] = i;
            }
        if (!c) continue;
        int rc = m->a[k]->act(m->a[k]->ctx, c, m->v, m->act, err, errlen);
        if (rc) return rc;
        for (int j = 0; j < c; j++) acts[m->at[j]] = m->act[j];
    }
    return 0;
}

static void mux_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    mux *m = ctx;
    int k = agent_of(m, v->episode);
    if (!m->a[k]->end) return;
    spade_ep_view u = *v;
    spade_ep_outcome p = *o;
    u.episode -= m->base[k];
    p.episode -= m->base[k];
    m->a[k]->end(m->a[k]->ctx, &u, state, &p);
}

/* ---- the run ---- */

int spade_gates_add_spec(gplay *r, const char *file, const char *src, size_t len, const char *params, spade_vecenv *v,
                         int first, int count) {
    int s = r->ns++;
    r->params[s][0] = 0;
    if (params) snprintf(r->params[s], sizeof r->params[s], "%s", params);
    r->spec[s] = (spade_ep_spec){file, src, len, params ? r->params[s] : NULL, count};
    r->place[s] = (spade_ep_place){v, first, count};
    return s;
}

/* The next requests are agent a's (taken over: freed by the play). */
void spade_gates_add_agent(gplay *r, spade_agent *a) {
    if (!a || r->m.n == MUX_MAX) {
        r->oom = 1;
        spade_agent_free(a);
        return;
    }
    r->m.base[r->m.n] = r->n;
    r->m.a[r->m.n++] = a;
}

void spade_gates_add_req(gplay *r, int spec, uint64_t seed) {
    if (r->n == r->cap || !r->m.n) {
        r->oom = 1;
        return;
    }
    r->req[r->n] = (spade_ep_request){spec, seed, 0, 0};
    r->wants[r->n++] = (unsigned char)r->m.a[r->m.n - 1]->wants;
}

/* Empties r for the next play (its agents freed). */
void spade_gates_clear(gplay *r) {
    for (int k = 0; k < r->m.n; k++) spade_agent_free(r->m.a[k]);
    r->m.n = 0;
    r->n = 0;
    r->ns = 0;
    r->oom = 0;
}

/* Plays r's requests into out (tr: their traces, may be NULL) and empties
 * r for the next play. Each gate keeps max_live episodes of its own live at
 * once, as when it ran alone. */
int spade_gates_play(spade_sandbox *sb, gplay *r, const spade_gate_opts *o, spade_ep_outcome *out, trace *tr, char *err,
                     size_t errlen) {
    int rc = -1;
    if (r->oom) {
        spade_errf(err, errlen, "gates: out of memory for an agent or a request");
        goto done;
    }
    r->m.base[r->m.n] = r->n;
    spade_agent ag;
    memset(&ag, 0, sizeof ag);
    ag.name = "gates";
    ag.ctx = &r->m;
    ag.begin = mux_begin;
    ag.act = mux_act;
    ag.end = mux_end;
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    long live = (long)(o->max_live > 0 ? o->max_live : 32) * r->m.n;
    eo.max_live = (int)(live < r->n ? live : r->n > 0 ? r->n : 1);
    eo.places = r->place;
    eo.wants = r->wants;
    eo.n_wants = r->n;
    eo.stop_on_timeout = 1; /* a hang costs the batch's deadline and its replay's, then the gates stop */
    /* every spec is the one source (at some params): one given hint for all */
    const char *hints[MAX_SPECS];
    size_t hint_lens[MAX_SPECS];
    if (o->hint) {
        for (int s = 0; s < r->ns; s++) hints[s] = o->hint, hint_lens[s] = o->hint_len;
        eo.hints = hints;
        eo.hint_lens = hint_lens;
    }
    if (tr) {
        for (long i = 0; i < r->n && i < tr->n; i++) {
            tr->h[i] = 1469598103934665603ULL;
            if (tr->act) tr->act[i][0] = 0;
        }
        eo.on_event = on_event;
        eo.ctx = tr;
    }
    rc = spade_episodes_play(sb, r->spec, r->ns, r->req, r->n, &ag, &eo, out, err, errlen) < 0 ? -1 : 0;
done:
    spade_gates_clear(r);
    return rc;
}
