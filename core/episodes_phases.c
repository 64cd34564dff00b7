/* episodes_phases.c — the phases of one round of the episode layer: fill the
 * live set, reset, hints, the agent's begin, SOLVE's actions, the agent's
 * act, and the step of every live episode, one batch per worker.
 *
 * What it is: the calls into the vector envs, in the order spade_episodes_run
 * (episodes.c) makes them; each failed call hands its suspects to recover
 * (episodes_recovery.c).
 * What it is not: the run's loop and outcomes (episodes.c) or an agent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "episodes_internal.h"
#include "errbuf.h"

static int load_spec(run *R, int s) {
    envrt *E = &R->env[s];
    if (E->loaded) return 0;
    E->loaded = 1;
    const spade_ep_spec *sp = &R->specs[s];
    const spade_ep_place *pl = R->o.places && R->o.places[s].vec ? &R->o.places[s] : NULL;
    grprt *G = &R->grp[E->group];
    long want = sp->expected > 0 && sp->expected < R->max_live ? sp->expected : R->max_live;
    if (pl) want = pl->count;
    E->nslots = (int)want;
    E->slot_of = malloc((size_t)E->nslots * sizeof *E->slot_of);
    if (!E->slot_of) return spade_eps_oom(R);
    for (int i = 0; i < E->nslots; i++) E->slot_of[i] = -1;
    E->nfree = E->nslots;
    if (!G->loaded) {
        G->loaded = 1;
        if (pl) {
            G->v = pl->vec;
            G->borrowed = 1;
            /* it may come failed from an earlier run or call (sticky: every
             * call would return that failure without sending anything) */
            if (spade_vecenv_revive(G->v, &G->fail) < 0) G->broken = 1;
        } else if (spade_vecenv_new_poisoned(R->sb, sp->filename, sp->source, sp->len, sp->params, E->nslots,
                                             R->o.workers, SPADE_AUTORESET_DISABLED, R->o.poison, &G->v,
                                             &G->fail) < 0) {
            G->broken = 1;
            G->v = NULL;
        }
    }
    if (G->v) E->info = spade_vecenv_info(G->v);
    return 0;
}

/* Takes requests while there is room; a request whose spec is full waits. */
int spade_eps_fill(run *R, spade_ep_next_fn next, void *next_ctx) {
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
        if (load_spec(R, s) < 0) return -1;
        envrt *E = &R->env[s];
        if (R->grp[E->group].broken) {
            R->have_req = 0;
            if (spade_eps_fail_unplaced(R, R->req_ep, &R->req, &R->grp[E->group].fail) < 0) return -1;
            continue;
        }
        if (E->nfree == 0) return 0; /* waits for an episode of its spec to end */
        int li = 0;
        while (R->L[li].phase != PH_FREE) li++;
        int slot = 0;
        while (E->slot_of[slot] >= 0) slot++;
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

int spade_eps_do_resets(run *R) {
    for (int s = 0; s < R->n_grp && !R->halt; s++) {
        grprt *E = &R->grp[s];
        if (!E->v) continue;
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
        if (!n) continue;
        spade_failure g;
        if (spade_vecenv_reset_some(E->v, n, R->ids, R->seeds, R->res, &g) == 0) {
            for (int j = 0; j < n; j++)
                if (spade_eps_after_reset(R, R->who[j], &R->res[j]) < 0) return -1;
            continue;
        }
        /* the results of live workers are good; the rest are suspects */
        spade_eps_clear_flags(R);
        int *who = R->who2;
        memcpy(who, R->who, (size_t)n * sizeof *who);
        for (int j = 0; j < n; j++) {
            if (g.outcome != SPADE_OUT_BAD_CALL && !spade_vecenv_env_lost(E->v, R->ids[j])) {
                if (spade_eps_after_reset(R, who[j], &R->res[j]) < 0) return -1;
            } else {
                R->L[who[j]].flag = 1;
            }
        }
        if (spade_eps_recover(R, s, SPADE_EP_OP_RESET, &g) < 0) return -1;
    }
    return 0;
}

/* A one-instance text call (hint or solve) of live episode li into buf. */
static int text_of(run *R, int li, int solve, strbuf *buf, int *ok) {
    live *e = &R->L[li];
    grprt *E = &R->grp[group_of(R, e)];
    const char *t;
    size_t n;
    spade_failure g;
    *ok = 0;
    int rc = solve ? spade_vecenv_solve(E->v, e->slot, &t, &n, &g) : spade_vecenv_hint(E->v, e->slot, &t, &n, &g);
    if (rc == 0) {
        if (sb_set(buf, t, n) < 0) return spade_eps_oom(R);
        *ok = 1;
        return 0;
    }
    spade_eps_clear_flags(R);
    e->flag = 1;
    return spade_eps_recover(R, group_of(R, e), solve ? SPADE_EP_OP_SOLVE : SPADE_EP_OP_HINT, &g);
}

/* The hints of the episodes starting that need one (solve 0), or SOLVE's
 * actions for the ready episodes whose agent wants them (solve 1): one batch
 * per worker instead of a round trip each. After a failure the episodes of
 * the dead worker are rebuilt (recover) and the one-at-a-time calls of
 * do_begins and do_solves fetch what is missing, so the episode whose text
 * kills its worker is the one blamed, as before. */
int spade_eps_prefetch(run *R, int solve) {
    for (int s = 0; s < R->n_grp && !R->halt; s++) {
        grprt *G = &R->grp[s];
        if (!G->v) continue;
        int n = 0;
        for (int k = 0; k < R->n_order; k++) {
            int li = R->order[k];
            live *e = &R->L[li];
            if (group_of(R, e) != s) continue;
            int need = solve ? e->phase == PH_READY && !e->has_solve && (e->wants & SPADE_AGENT_WANTS_SOLVE) &&
                                   R->env[e->spec].info->has_solve
                             : e->phase == PH_HINT && !e->has_hint && !(R->o.hints && R->o.hints[e->spec]) &&
                                   ((e->wants & SPADE_AGENT_WANTS_HINT) || e->hint_req);
            if (!need) continue;
            R->who[n] = li;
            R->ids[n] = e->slot;
            n++;
        }
        if (n < 2) continue; /* one: the one-at-a-time call costs the same */
        spade_failure g;
        if (spade_vecenv_text_some(G->v, n, R->ids, solve, R->res, &g) == 0) {
            for (int j = 0; j < n; j++) {
                live *e = &R->L[R->who[j]];
                if (sb_set(solve ? &e->solve : &e->hint, R->res[j].obs, R->res[j].obs_len) < 0) return spade_eps_oom(R);
                if (solve)
                    e->has_solve = 1;
                else
                    e->has_hint = 1;
            }
            continue;
        }
        spade_eps_clear_flags(R);
        for (int j = 0; j < n; j++)
            if (g.outcome == SPADE_OUT_BAD_CALL || spade_vecenv_env_lost(G->v, R->ids[j])) R->L[R->who[j]].flag = 1;
        if (spade_eps_recover(R, s, solve ? SPADE_EP_OP_SOLVE : SPADE_EP_OP_HINT, &g) < 0) return -1;
    }
    return 0;
}

/* New episodes: the hint when wanted, appended for a hint episode; then the
 * agent's begin. */
int spade_eps_do_begins(run *R) {
    for (int k = 0; k < R->n_order && !R->halt; k++) {
        int li = R->order[k];
        live *e = &R->L[li];
        if (e->phase != PH_HINT) continue;
        if ((e->wants & SPADE_AGENT_WANTS_HINT) || e->hint_req) {
            const char *given = R->o.hints ? R->o.hints[e->spec] : NULL;
            if (given) { /* the run's hint for this spec, not the environment's */
                size_t n = R->o.hint_lens ? R->o.hint_lens[e->spec] : strlen(given);
                if (sb_set(&e->hint, given, n) < 0) return spade_eps_oom(R);
            } else {
                int ok = 1;
                if (!e->has_hint && text_of(R, li, 0, &e->hint, &ok) < 0) return -1;
                if (!ok) {
                    k = -1; /* the order changed: start over (begun ones are skipped) */
                    continue;
                }
            }
            e->has_hint = 1;
            if (e->hint_req) {
                size_t need = spade_ep_with_hint(e->obs.p, e->obs.len, e->hint.p, e->hint.len, NULL, 0);
                char *buf = malloc(need + 1);
                if (!buf) return spade_eps_oom(R);
                spade_ep_with_hint(e->obs.p, e->obs.len, e->hint.p, e->hint.len, buf, need + 1);
                int rc = sb_set(&e->obs, buf, need);
                free(buf);
                if (rc < 0) return spade_eps_oom(R);
            }
        }
        e->phase = PH_READY;
        spade_eps_emit(R, SPADE_EV_OBS, e, 0, e->obs.p, e->obs.len, 0);
        if (R->agent->begin) {
            spade_ep_view v;
            spade_eps_view_of(R, e, &v);
            if (R->agent->begin(R->agent->ctx, &v, &e->state, R->err, R->errlen) < 0) return -1;
        }
        e->begun = 1;
    }
    return 0;
}

int spade_eps_do_solves(run *R) {
    for (int k = 0; k < R->n_order && !R->halt; k++) {
        int li = R->order[k];
        live *e = &R->L[li];
        if (e->phase != PH_READY || e->has_solve || !(e->wants & SPADE_AGENT_WANTS_SOLVE) ||
            !R->env[e->spec].info->has_solve)
            continue;
        int ok;
        if (text_of(R, li, 1, &e->solve, &ok) < 0) return -1;
        if (!ok) {
            k = -1;
            continue;
        }
        e->has_solve = 1;
    }
    return 0;
}

static int push_action(run *R, live *e, const char *a, size_t n) {
    e->cur = a;
    e->cur_len = n;
    if (e->unreplayable) return 0;
    if (e->hlen + n + (size_t)(e->hist_n + 1) * sizeof *e->hoff > SPADE_EP_REPLAY_MAX) {
        e->unreplayable = 1; /* a failure now costs this episode too */
        return 0;
    }
    if (e->hist_n == e->hoff_cap) {
        int cap = e->hoff_cap ? 2 * e->hoff_cap : 16;
        size_t *p = realloc(e->hoff, (size_t)cap * sizeof *p);
        if (!p) return spade_eps_oom(R);
        e->hoff = p;
        e->hoff_cap = cap;
    }
    if (e->hlen + n > e->hcap) {
        size_t cap = e->hcap ? e->hcap : 256;
        while (cap < e->hlen + n) cap *= 2;
        char *p = realloc(e->hbuf, cap);
        if (!p) return spade_eps_oom(R);
        e->hbuf = p;
        e->hcap = cap;
    }
    if (n) memcpy(e->hbuf + e->hlen, a, n);
    e->hlen += n;
    e->hoff[e->hist_n++] = e->hlen;
    return 0;
}

/* The agent answers for every ready episode; returns 1 when it has no more
 * actions. Stops end their episodes; the rest get their action recorded. */
int spade_eps_do_act(run *R) {
    int n = 0;
    for (int k = 0; k < R->n_order; k++) {
        int li = R->order[k];
        if (R->L[li].phase != PH_READY) continue;
        spade_eps_view_of(R, &R->L[li], &R->views[n]);
        memset(&R->acts[n], 0, sizeof R->acts[n]);
        R->who[n++] = li;
    }
    if (!n) return 0;
    int rc = R->agent->act(R->agent->ctx, n, R->views, R->acts, R->err, R->errlen);
    if (rc != 0) return rc < 0 ? -1 : 1;
    int *who = R->who2;
    memcpy(who, R->who, (size_t)n * sizeof *who);
    for (int j = 0; j < n; j++) {
        live *e = &R->L[who[j]];
        const spade_ep_act *a = &R->acts[j];
        e->has_solve = 0;
        if (a->stop) {
            if (spade_eps_finish(R, who[j], SPADE_EP_AGENT_STOP, NULL, SPADE_EP_OP_NONE, a->stop) < 0) return -1;
            continue;
        }
        if (a->len > SPADE_ACTION_MAX) {
            if (spade_eps_finish(R, who[j], SPADE_EP_AGENT_STOP, NULL, SPADE_EP_OP_NONE, "action_too_long") < 0)
                return -1;
            continue;
        }
        if (push_action(R, e, a->text && a->len ? a->text : "", a->text ? a->len : 0) < 0) return -1;
        spade_eps_emit(R, SPADE_EV_ACTION, e, e->steps + 1, e->cur, e->cur_len, 0);
        e->flag = 3; /* steps this round */
    }
    return 0;
}

int spade_eps_do_steps(run *R) {
    /* send every spec's batch, then wait for each: the specs' workers step
     * in parallel */
    int *sent = R->sent, *start = R->start;
    spade_failure *gs = R->gs;
    int n = 0;
    for (int s = 0; s < R->n_grp; s++) {
        grprt *E = &R->grp[s];
        start[s] = n;
        sent[s] = 0;
        if (!E->v) continue;
        int first = n;
        for (int k = 0; k < R->n_order; k++) {
            int li = R->order[k];
            live *e = &R->L[li];
            if (group_of(R, e) != s || e->flag != 3) continue;
            R->who[n] = li;
            R->ids[n] = e->slot;
            R->act_p[n] = e->cur;
            R->act_l[n] = e->cur_len;
            n++;
        }
        if (n == first) continue;
        sent[s] = spade_vecenv_step_some_async(E->v, n - first, R->ids + first, R->act_p + first, R->act_l + first,
                                               &gs[s]) == 0
                      ? 1
                      : -1;
    }
    start[R->n_grp] = n;
    for (int s = 0; s < R->n_grp; s++) {
        if (!sent[s]) continue;
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
                if (spade_eps_after_step(R, li, &R->res[first + j]) < 0) return -1;
            } else {
                e->flag = 1;
            }
        }
        if (rc != 0 && spade_eps_recover(R, s, SPADE_EP_OP_STEP, &gs[s]) < 0) return -1;
    }
    return 0;
}
