/* episodes_recovery.c — the episode layer's recovery from a dead worker
 * (the method is in episodes.c's opening comment and docs/episodes.md).
 *
 * What it is: replaying an episode alone from its seed and recorded actions,
 * reviving a group's vector env, and recover, which blames the one episode a
 * failure belongs to and rebuilds the others of the dead worker.
 * What it is not: the phases that meet the failures (episodes_phases.c) or
 * the outcomes (episodes.c).
 */
#include <stdio.h>
#include <string.h>

#include "episodes_internal.h"
#include "errbuf.h"

/* Plays episode li again alone: reset, then every recorded action. *r gets
 * the last result; *op the call that failed. */
static int replay(run *R, int li, spade_step_result *r, spade_failure *g, int *op) {
    live *e = &R->L[li];
    spade_vecenv *v = R->grp[R->env[e->spec].group].v;
    *op = SPADE_EP_OP_RESET;
    if (spade_vecenv_reset_some(v, 1, &e->slot, &e->seed, r, g) < 0) return -1;
    *op = SPADE_EP_OP_STEP;
    for (int k = 0; k < e->hist_n; k++) {
        size_t at = k ? e->hoff[k - 1] : 0;
        const char *a = e->hbuf ? e->hbuf + at : "";
        size_t n = e->hoff[k] - at;
        if (spade_vecenv_step_some(v, 1, &e->slot, &a, &n, r, g) < 0) return -1;
    }
    return 0;
}

static int revive(run *R, int grp, spade_failure *g) {
    grprt *E = &R->grp[grp];
    if (spade_vecenv_revive(E->v, g) == 0) return 0;
    E->broken = 1;
    E->fail = *g;
    return -1;
}

/* The failure g ended op on group grp's vector; flag of the live episodes
 * marks the ones that took part and whose result is unknown. */
int spade_eps_recover(run *R, int grp, int op, const spade_failure *g) {
    grprt *E = &R->grp[grp];
    if (g->outcome == SPADE_OUT_BAD_CALL) {
        spade_errf(R->err, R->errlen, "episodes: internal error: %s", g->message);
        return -1;
    }
    /* affected: the suspects (flag 1) and the others of dead workers (flag 2) */
    int n_sus = 0;
    for (int k = 0; k < R->n_order; k++) {
        live *e = &R->L[R->order[k]];
        if (group_of(R, e) != grp || e->phase == PH_FREE || e->slot < 0) continue;
        if (e->flag == 1)
            n_sus++;
        else if (e->phase != PH_RESET && spade_vecenv_env_lost(E->v, e->slot))
            e->flag = 2;
    }
    int blame = -1;
    if (n_sus == 1)
        for (int k = 0; k < R->n_order; k++)
            if (R->L[R->order[k]].flag == 1 && group_of(R, &R->L[R->order[k]]) == grp) blame = R->order[k];
    if (blame >= 0) {
        R->L[blame].flag = 0;
        if (spade_eps_finish(R, blame, SPADE_EP_FAILED, g, op, NULL) < 0) return -1;
        if (g->outcome == SPADE_OUT_TIMEOUT && R->o.stop_on_timeout) R->halt = 1;
    }
    if (R->halt) return 0; /* the rest end as stopped: no replay, no revive */
    spade_failure h;
    int rv = revive(R, grp, &h);
    /* one at a time, in episode order; a replay that fails kills its worker
     * again, so the episodes restored there are flagged to be restored again */
    for (;;) {
        int li = -1;
        for (int k = 0; k < R->n_order && li < 0; k++)
            if (R->L[R->order[k]].flag && group_of(R, &R->L[R->order[k]]) == grp) li = R->order[k];
        if (li < 0) break;
        live *e = &R->L[li];
        int suspect = e->flag == 1;
        e->flag = 0;
        if (rv < 0) {
            if (spade_eps_finish(R, li, SPADE_EP_FAILED, &h, SPADE_EP_OP_LOAD, NULL) < 0) return -1;
            continue;
        }
        if (e->phase == PH_RESET && !suspect) continue; /* nothing to rebuild */
        if (e->unreplayable) {
            spade_failure x = *g;
            size_t k = strlen(x.message);
            snprintf(x.message + k, sizeof x.message - k, " (this episode's worker; too long to replay)");
            if (spade_eps_finish(R, li, SPADE_EP_FAILED, &x, op, NULL) < 0) return -1;
            continue;
        }
        spade_step_result r;
        int rop;
        if (replay(R, li, &r, &h, &rop) < 0) {
            if (spade_eps_finish(R, li, SPADE_EP_FAILED, &h, rop, NULL) < 0) return -1;
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
        if (!suspect) continue;
        int rc = op == SPADE_EP_OP_RESET  ? spade_eps_after_reset(R, li, &r)
                 : op == SPADE_EP_OP_STEP ? spade_eps_after_step(R, li, &r)
                                          : 0;
        if (rc < 0) return -1;
    }
    return 0;
}

void spade_eps_clear_flags(run *R) {
    for (int i = 0; i < R->max_live; i++) R->L[i].flag = 0;
}
