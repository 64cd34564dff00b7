/* gates.c — the validation gates (gates.h): the runner.
 *
 * What it is: the gates' names and options, the verdicts, the gate seeds,
 * compile and limits, and spade_gates_run, which plays the groups in order
 * over one context (gates_internal.h) and, between groups, decides whether
 * the rest can run. The groups' plays and verdicts are in gates_play.c (the
 * one run they share), gates_determinism.c, gates_agents.c (probe_actions
 * and the behavioural gates) and gates_novelty.c.
 * What it is not: a second episode loop. Every play goes through
 * spade_episodes_play with agents of core/agents.h (the probes agent
 * answers each episode with its own probe, as in spade check's
 * arbitrary_actions), several gates' agents in one run through the mux agent
 * of gates_play.c, on one vector env of two workers that every gate shares.
 */
#include "designer/gates.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "designer/gates_internal.h"
#include "errbuf.h"
#include "rng.h"
#include "source.h"
#include "vendi.h"

static const char *const NAMES[SPADE_GATE_COUNT] = {
    "compile",
    "limits",
    "reset_deterministic",
    "replay_deterministic",
    "probe_actions",
    "random_agent",
    "noop_agent",
    "constant_agent",
    "obs_echo",
    "hint_echo",
    "solve",
    "winnable",
    "novelty",
};

const char *spade_gate_name(spade_gate g) { return (unsigned)g < SPADE_GATE_COUNT ? NAMES[g] : "?"; }

void spade_gate_opts_default(spade_gate_opts *o) {
    memset(o, 0, sizeof *o);
    o->seeds = 20;
    o->random_max = 0.15;
    o->constant_max = 0.75;
    o->max_step_ms = 20;
    o->novelty_max = 0.95;
    o->dim = SPADE_VENDI_DIM;
    o->max_live = 32;
    o->behave_k = 2;
    o->behave_min_cosine = 0.5;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the options of the spade_gates_run in progress on this thread (for on_verdict) */
static _Thread_local const spade_gate_opts *o_now;

void spade_gates_verdict(spade_gate_report *r, spade_gate g, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail[g], sizeof r->detail[g], fmt, ap);
    va_end(ap);
    r->status[g] = status;
    if (status == SPADE_GATE_FAIL && r->first_failed < 0) r->first_failed = (int)g;
    if (o_now && o_now->on_verdict) o_now->on_verdict(o_now->on_verdict_arg, r, g);
}

/* the gates' instances in a worker, at most (make_room) */
#define INST_BYTES (320L << 20)

uint64_t spade_gate_seed(const spade_gate_opts *o, const char *src, size_t len, int tag, int i) {
    uint64_t h = spade_source_fingerprint(src ? src : "", src ? len : 0);
    uint64_t x = spade_mix64(h ^ spade_mix64(o->run_seed ^ 0x6761746573ULL));
    x = spade_mix64(x + (uint64_t)tag * 0x9E3779B97F4A7C15ULL + (uint64_t)i);
    return 1 + x % 999983; /* short enough to read in a reason */
}

uint64_t spade_gates_seed_of(const gctx *g, int tag, int i) { return spade_gate_seed(g->o, g->src, g->len, tag, i); }

/* A timed-out call among out[0..n): noted on the report (the gates stop after this group). */
void spade_gates_note_timeouts(gctx *g, const spade_ep_outcome *out, long n) {
    for (long i = 0; i < n; i++)
        if (out[i].end == SPADE_EP_FAILED && out[i].failure.outcome == SPADE_OUT_TIMEOUT) g->rep->timed_out = 1;
}

/* After a group: whether to go on. When not, every gate not judged yet is
 * SKIP with the reason: a timeout (each later play would wait out the
 * deadline again), steps over max_step_ms (the agent run would take that
 * per step for thousands of steps), or a failure where the caller stops at
 * the first one (the compile gate's always: nothing can run without it). */
static int go_on(gctx *g) {
    spade_gate_report *rep = g->rep;
    if (!rep->timed_out && !g->too_slow && !(rep->first_failed >= 0 && (g->o->stop_at_first || rep->first_failed == 0)))
        return 1;
    const char *why = rep->first_failed >= 0 ? NAMES[rep->first_failed] : "an earlier gate";
    for (int k = 0; k < SPADE_GATE_COUNT; k++)
        if (!rep->status[k]) {
            if (rep->timed_out)
                spade_gates_verdict(rep, (spade_gate)k, SPADE_GATE_SKIP,
                                    "not run: a call timed out in %s (it would time out again)", why);
            else if (g->too_slow)
                spade_gates_verdict(rep, (spade_gate)k, SPADE_GATE_SKIP, "not run: too slow to play (limits failed)");
            else
                spade_gates_verdict(rep, (spade_gate)k, SPADE_GATE_SKIP, "not run: %s failed", why);
        }
    return 0;
}

/* compile: the vector every gate after it plays on. Two workers (compiling
 * at once), the determinism gates' pair. Env i is instance i / 2 of worker
 * i % 2. Its first block, at the defaults, holds the determinism gates'
 * episodes; a second block added later makes room for the gates that play
 * at the defaults together (so none waits for a free instance). */
static void gate_compile(gctx *g) {
    spade_failure f;
    g->n_default = 4 * DET_SEEDS;
    if (spade_vecenv_new_poisoned(g->sb, g->file, g->src, g->len, NULL, g->n_default, 2, SPADE_AUTORESET_DISABLED,
                                  DET_POISON, &g->V, &f) < 0) {
        spade_gates_verdict(g->rep, SPADE_GATE_COMPILE, SPADE_GATE_FAIL, "%s: %s", spade_outcome_name(f.outcome),
                            f.message);
        return;
    }
    g->rep->info = *spade_vecenv_info(g->V);
    g->info = &g->rep->info;
    spade_gates_verdict(g->rep, SPADE_GATE_COMPILE, SPADE_GATE_PASS, "%s%s%s%s, %d params%s", g->info->name,
                        g->info->family[0] ? " (" : "", g->info->family, g->info->family[0] ? ")" : "",
                        g->info->n_params, g->info->has_solve ? ", SOLVE" : "");
}

/* What a worker may hold: as many instances as the old gates' largest play
 * held of the largest state (20 of 16 MiB), or more of a smaller one. The
 * corners share the workers when they fit, else each plays on a vector of
 * its own; the second default block takes the room left (as much as the
 * agent run keeps live), and the gates' episodes queue for what it lacks. */
static void make_room(gctx *g) {
    const spade_env_info *info = g->info;
    long per_worker = (long)(INST_BYTES / (info->state_size ? info->state_size : 1));
    g->shared_corners = 2 * DET_SEEDS + 2L * info->n_params * LIMIT_SEEDS <= per_worker;
    long room = per_worker - 2 * DET_SEEDS - (g->shared_corners ? 2L * info->n_params * LIMIT_SEEDS : 0);
    long want = spade_gates_agent_requests(g), live = (long)(g->o->max_live > 0 ? g->o->max_live : 32) * 4;
    long extra = (want < live ? want : live) - g->n_default;
    if (extra > 2 * room) extra = 2 * room;
    if (extra > 0) {
        int first;
        spade_failure ignore;
        if (spade_vecenv_add_block(g->V, NULL, (int)extra, &first, &ignore) == 0) g->n_default += (int)extra;
        /* else the vector is failed: the next play revives it (with the first block only) */
    }
}

/* "name=min" / "name=max" of param k. */
static void corner(const spade_param_info *p, int max, char *buf, size_t cap) {
    double v = max ? p->max : p->min;
    if (p->type == SPADE_PARAM_INT)
        snprintf(buf, cap, "%s=%.0f", p->name, v);
    else
        snprintf(buf, cap, "%s=%.17g", p->name, v);
}

/* limits: random and SOLVE at the defaults and at every param's min and
 * max (a block of instances each, in both workers, or a vector each) */
static void gate_limits(gctx *g) {
    const spade_env_info *info = g->info;
    spade_gate_report *rep = g->rep;
    gplay *r = g->r;
    spade_failure f;
    long n = 0, half = 0;
    int ok = 1, ns = 1 + 2 * info->n_params, spec[2 * SPADE_INFO_MAX_PARAMS + 1];
    char lerr[1024] = "";
    spec[0] = spade_gates_add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    for (int c = 1; c < ns && ok; c++) {
        char p[256];
        int first;
        corner(&info->params[(c - 1) / 2], (c - 1) % 2, p, sizeof p);
        if (!g->shared_corners) {
            spec[c] = spade_gates_add_spec(r, g->file, g->src, g->len, p, NULL, 0, 2 * LIMIT_SEEDS);
        } else if (spade_vecenv_add_block(g->V, p, 2 * LIMIT_SEEDS, &first, &f) < 0) {
            snprintf(lerr, sizeof lerr, "%s at %.200s: %.700s", spade_outcome_name(f.outcome), p, f.message);
            ok = 0;
        } else {
            spec[c] = spade_gates_add_spec(r, g->file, g->src, g->len, p, g->V, first, 2 * LIMIT_SEEDS);
        }
    }
    for (int w = 0; w < 1 + (info->has_solve != 0); w++) {
        spade_gates_add_agent(r, w ? spade_agent_solve() : spade_agent_random(7));
        for (int c = 0; c < ns; c++)
            for (int k = 0; k < LIMIT_SEEDS; k++)
                spade_gates_add_req(r, spec[c], spade_gates_seed_of(g, SEED_LIMITS, k));
        if (!w) half = r->n;
    }
    n = r->n;
    double t0 = now_s();
    if (ok)
        ok = spade_gates_play(g->sb, r, g->o, g->lim, NULL, lerr, sizeof lerr) == 0;
    else
        spade_gates_clear(r);
    double secs = now_s() - t0;
    long steps = 0;
    const spade_ep_outcome *bad = NULL, *big = NULL;
    for (long i = 0; ok && i < n; i++) {
        steps += g->lim[i].steps;
        if (!bad && g->lim[i].end == SPADE_EP_FAILED) bad = &g->lim[i];
        if (!big && fabs(g->lim[i].ret) > 1 + 1e-9) big = &g->lim[i];
    }
    if (ok) spade_gates_note_timeouts(g, g->lim, n);
    rep->ms_per_step = steps ? 1000 * secs / (double)steps : 0;
    if (!ok)
        spade_gates_verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "could not play: %s", lerr);
    else if (!(info->success > -1 && info->success <= 1))
        spade_gates_verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL,
                            "success threshold %g cannot be reached by a return in [-1, 1]", info->success);
    else if (bad)
        spade_gates_verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "%s at %s, seed %llu (%s agent): %s: %.160s",
                            spade_outcome_name(bad->failure.outcome),
                            r->params[bad->spec][0] ? r->params[bad->spec] : "defaults", (unsigned long long)bad->seed,
                            bad - g->lim < half ? "random" : "solve", spade_outcome_name(bad->failure.outcome),
                            bad->failure.message);
    else if (big)
        spade_gates_verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "return %g outside [-1, 1] at %s, seed %llu",
                            big->ret, r->params[big->spec][0] ? r->params[big->spec] : "defaults",
                            (unsigned long long)big->seed);
    else if (rep->ms_per_step > g->o->max_step_ms) {
        spade_gates_verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL,
                            "%.2f ms per step on average (designer.max_step_ms = %g)", rep->ms_per_step,
                            g->o->max_step_ms);
        g->too_slow = 1;
    } else
        spade_gates_verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_PASS, "%d settings, %ld episodes, %.3f ms per step", ns,
                            n, rep->ms_per_step);
}

/* The context's buffers: for every gate's episodes at once (cap), the
 * determinism gates' and their traces. 0, or -1 out of memory. */
static int gctx_alloc(gctx *g) {
    g->cap = 2L * LIMIT_SEEDS * MAX_SPECS + 2 * N_PROBES + (long)g->S * (6 + MAX_CONST + 2 * MAX_PIECES) +
             4 * DET_SEEDS + (long)(BEHAVE_MAX + 1) * BEHAVE_SEEDS * 5;
    g->r = calloc(1, sizeof *g->r);
    g->det = calloc(4 * DET_SEEDS, sizeof *g->det);
    g->lim = calloc((size_t)g->cap, sizeof *g->lim);
    g->out = calloc((size_t)g->cap, sizeof *g->out);
    g->act = calloc((size_t)g->cap, sizeof *g->act);
    g->tr = (trace){.h = calloc(4 * DET_SEEDS, sizeof(uint64_t)), .n = 4 * DET_SEEDS};
    if (g->r) {
        g->r->cap = g->cap;
        g->r->req = calloc((size_t)g->cap, sizeof *g->r->req);
        g->r->wants = calloc((size_t)g->cap, 1);
    }
    return g->r && g->r->req && g->r->wants && g->det && g->lim && g->out && g->act && g->tr.h ? 0 : -1;
}

static void gctx_free(gctx *g) {
    spade_vecenv_free(g->V);
    if (g->r) {
        free(g->r->req);
        free(g->r->wants);
        free(g->r->m.v);
        free(g->r->m.act);
        free(g->r->m.at);
    }
    free(g->r);
    free(g->det);
    free(g->lim);
    free(g->out);
    free(g->act);
    free(g->tr.h);
}

/* The determinism episodes, then limits. They play before limits (fresh
 * workers) and are judged after it; when their play hung, limits (a step's
 * time is one) fails with it, and nothing more is played. */
static void determinism_then_limits(gctx *g) {
    spade_gate_report *rep = g->rep;
    spade_gates_play_determinism(g);
    const spade_ep_outcome *t = NULL;
    for (long i = 0; rep->timed_out && i < 4 * DET_SEEDS && !t; i++)
        if (g->det[i].end == SPADE_EP_FAILED && g->det[i].failure.outcome == SPADE_OUT_TIMEOUT) t = &g->det[i];
    if (t) {
        spade_gates_verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "seed %llu: %s: %.200s",
                            (unsigned long long)t->seed, spade_outcome_name(t->failure.outcome), t->failure.message);
        return;
    }
    make_room(g);
    gate_limits(g);
}

int spade_gates_run(spade_sandbox *sb, const char *filename, const char *src, size_t len, const spade_gate_opts *o,
                    spade_gate_report *rep, char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    rep->first_failed = -1;
    rep->max_cosine = NAN;
    rep->behave_match = NAN;
    o_now = o;
    gctx g = {.sb = sb, .file = filename, .src = src, .len = len, .o = o, .rep = rep};
    g.S = o->seeds > 0 ? o->seeds : 20;
    g.A = g.S < ANSWER_SEEDS ? g.S : ANSWER_SEEDS;
    int rc = -1;
    if (gctx_alloc(&g) < 0) {
        spade_errf(err, errlen, "gates: out of memory");
        goto done;
    }
    /* Each group judges its gates; between groups, go_on says whether the
     * rest can run (a timeout, or a failure the caller stops at). */
    gate_compile(&g);
    if (go_on(&g)) determinism_then_limits(&g);
    if (go_on(&g)) spade_gates_determinism(&g);
    if (go_on(&g)) {
        spade_gates_play_agents(&g);
        spade_gates_probes(&g);
    }
    static const spade_gate agent_gates[] = {SPADE_GATE_RANDOM,   SPADE_GATE_NOOP,      SPADE_GATE_CONSTANT,
                                             SPADE_GATE_OBS_ECHO, SPADE_GATE_HINT_ECHO, SPADE_GATE_SOLVE,
                                             SPADE_GATE_WINNABLE};
    for (size_t k = 0; k < sizeof agent_gates / sizeof *agent_gates && go_on(&g); k++)
        spade_gates_judge_agent(&g, agent_gates[k]);
    if (go_on(&g)) spade_gates_novelty(&g);
    go_on(&g);
    rc = 0;
done:
    gctx_free(&g);
    o_now = NULL;
    return rc;
}

void spade_gate_shown_clear(spade_gate_shown *sh) {
    for (int k = 0; k < sh->n_env; k++) spade_archive_env_clear(&sh->env[k]);
    memset(sh, 0, sizeof *sh);
}

void spade_gate_report_text(const spade_gate_report *rep, char *out, size_t cap) {
    static const char *const word[] = {"----", "PASS", "FAIL", "SKIP"};
    size_t at = 0;
    out[0] = 0;
    for (int g = 0; g < SPADE_GATE_COUNT && at < cap; g++) {
        int k = snprintf(out + at, cap - at, "%s %s: %s\n", word[rep->status[g] & 3], NAMES[g], rep->detail[g]);
        if (k < 0) break;
        at += (size_t)k;
    }
}
