/* gates_novelty.c — the novelty gate (gates_internal.h).
 *
 * What it is: the candidate against the reference environments and what
 * the prompt showed, by text (the cosine of their Vendi embeddings) and,
 * for the nearest with a source, by behaviour (played beside it on the same
 * seeds by the same scripted agents, numbers in observations masked).
 * What it is not: the Vendi score of a set (core/vendi.c), nor the choice of
 * what the prompt shows (designer/prompt.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "designer/gates_internal.h"
#include "errbuf.h"
#include "vendi.h"

#define BEHAVE_COPY 0.75 /* share of like episodes that makes a copy */

static double cosine(const double *x, const double *y, int dim) {
    double dot = 0, nx = 0, ny = 0;
    for (int k = 0; k < dim; k++) dot += x[k] * y[k], nx += x[k] * x[k], ny += y[k] * y[k];
    return nx > 0 && ny > 0 ? dot / sqrt(nx * ny) : 0;
}

typedef struct near {
    const char *name, *src;
    size_t len;
    double cos;
} near;

/* Plays the candidate and the sources nb[0..m) on the same seeds with the
 * same scripted agents (SOLVE, random, three constants); for each source,
 * the share of episodes that showed and paid exactly what the candidate's
 * did (observations with numbers masked, rewards, lengths, ends) into
 * match[]. 0, or -1 (err) when it could not play. */
static int behave(gctx *g, const near *nb, int m, double *match, char *err, size_t errlen) {
    static const char *const cs[] = {"1", "yes", "north"};
    enum { NC = 3, PER_SRC = BEHAVE_SEEDS * (2 + NC) };
    gplay *r = g->r;
    int spec[BEHAVE_MAX + 1];
    spec[0] = spade_gates_add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    for (int q = 0; q < m; q++)
        spec[q + 1] = spade_gates_add_spec(r, nb[q].name, nb[q].src, nb[q].len, NULL, NULL, 0, PER_SRC);
    size_t cl[NC];
    for (int k = 0; k < NC; k++) cl[k] = strlen(cs[k]);
    /* episode of (agent a, source q, seed j, constant c): per agent, sources in turn */
    for (int a = 0; a < 3; a++) {
        spade_gates_add_agent(r, a == 0   ? spade_agent_solve()
                                 : a == 1 ? spade_agent_random(13)
                                          : spade_agent_probes(cs, cl, NC, 0));
        int per = a == 2 ? NC : 1;
        for (int q = 0; q <= m; q++)
            for (int i = 0; i < BEHAVE_SEEDS * per; i++)
                spade_gates_add_req(r, spec[q], spade_gates_seed_of(g, SEED_BEHAVE, i / per));
    }
    long n = r->n;
    trace t = {.h = calloc((size_t)n + 1, sizeof(uint64_t)), .n = n, .masked = 1};
    spade_ep_outcome *o = calloc((size_t)n + 1, sizeof *o);
    if (!t.h || !o) {
        spade_gates_clear(r);
        free(t.h);
        free(o);
        return spade_errf(err, errlen, "out of memory"), -1;
    }
    int rc = spade_gates_play(g->sb, r, g->o, o, &t, err, errlen);
    if (rc == 0) {
        long off[3] = {0, (long)BEHAVE_SEEDS * (m + 1), 2L * BEHAVE_SEEDS * (m + 1)};
        for (int q = 0; q < m; q++) {
            long same = 0, all = 0;
            for (int a = 0; a < 3; a++) {
                int per = a == 2 ? NC : 1;
                long k = (long)BEHAVE_SEEDS * per;
                for (long i = 0; i < k; i++) {
                    const spade_ep_outcome *x = &o[off[a] + i], *y = &o[off[a] + (long)(q + 1) * k + i];
                    uint64_t hx = t.h[off[a] + i], hy = t.h[off[a] + (long)(q + 1) * k + i];
                    all++;
                    same += hx == hy && x->steps == y->steps && x->end == y->end && x->success == y->success &&
                            x->ret == y->ret;
                }
            }
            match[q] = all ? (double)same / (double)all : 0;
        }
    }
    free(t.h);
    free(o);
    return rc;
}

void spade_gates_novelty(gctx *g) {
    const spade_gate_opts *o = g->o;
    spade_gate_report *rep = g->rep;
    int nr = o->refs ? o->n_refs : 0, ns = o->shown ? o->n_shown : 0;
    if (nr + ns == 0) {
        spade_gates_verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "no reference environments to compare with");
        return;
    }
    double *x = malloc((size_t)o->dim * sizeof *x), *y = malloc((size_t)o->dim * sizeof *y);
    near *all = calloc((size_t)(nr + ns), sizeof *all);
    if (!x || !y || !all) {
        spade_gates_verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "out of memory");
        goto done;
    }
    if (o->embedding)
        memcpy(x, o->embedding, (size_t)o->dim * sizeof *x);
    else
        spade_vendi_embed(g->src, g->len, x, o->dim);
    double best = -1;
    int at = -1;
    for (int q = 0; q < nr + ns; q++) {
        near *e = &all[q];
        if (q < nr) {
            e->cos = cosine(x, o->refs + (size_t)q * o->dim, o->dim);
            e->name = o->ref_names ? o->ref_names[q] : "a reference";
            if (o->ref_src && o->ref_src[q])
                e->src = o->ref_src[q], e->len = o->ref_len ? o->ref_len[q] : strlen(e->src);
        } else {
            e->src = o->shown[q - nr];
            e->len = o->shown_len ? o->shown_len[q - nr] : strlen(e->src);
            e->name = o->shown_names && o->shown_names[q - nr] ? o->shown_names[q - nr] : "what the prompt showed";
            spade_vendi_embed(e->src, e->len, y, o->dim);
            e->cos = cosine(x, y, o->dim);
        }
        if (e->cos > best) best = e->cos, at = q;
    }
    rep->max_cosine = best;
    const char *from = at >= nr ? " (shown in the prompt)" : "";
    if (best > o->novelty_max) {
        spade_gates_verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "a near-duplicate of %s%s (cosine %.3f > %.2f)",
                            all[at].name, from, best, o->novelty_max);
        goto done;
    }
    /* by behaviour: the nearest sources with a text, played beside it */
    near nb[BEHAVE_MAX];
    int m = 0, kmax = o->behave_k < BEHAVE_MAX ? o->behave_k : BEHAVE_MAX;
    while (m < kmax) {
        int pick = -1;
        for (int q = 0; q < nr + ns; q++)
            if (all[q].src && all[q].cos >= o->behave_min_cosine && (pick < 0 || all[q].cos > all[pick].cos)) pick = q;
        if (pick < 0) break;
        nb[m++] = all[pick];
        all[pick].src = NULL;
    }
    double match[BEHAVE_MAX];
    char berr[1024] = "";
    if (m > 0 && behave(g, nb, m, match, berr, sizeof berr) < 0) {
        spade_gates_verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "could not play the behavioural comparison: %s",
                            berr);
        goto done;
    }
    int copy = -1;
    for (int q = 0; q < m; q++) {
        if (!(rep->behave_match >= match[q])) rep->behave_match = match[q];
        if (match[q] >= BEHAVE_COPY && (copy < 0 || match[q] > match[copy])) copy = q;
    }
    if (copy >= 0)
        spade_gates_verdict(
            rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL,
            "behaves like %s: %.0f%% of episodes on the same seeds showed and paid the same (numbers masked; text "
            "cosine %.3f)",
            nb[copy].name, 100 * match[copy], nb[copy].cos);
    else if (m > 0)
        spade_gates_verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS,
                            "nearest %s at cosine %.3f; behaves like none of %d played (at most %.0f%% alike)",
                            all[at].name, best, m, 100 * rep->behave_match);
    else
        spade_gates_verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "nearest %s at cosine %.3f", all[at].name, best);
done:
    free(x);
    free(y);
    free(all);
}
