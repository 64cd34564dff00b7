/* gates.c — the validation gates (gates.h), over the episode layer.
 *
 * What it is not: a second episode loop. Every play goes through
 * spade_episodes_play with agents of core/agents.h (the probes agent
 * answers each episode with its own probe, as in spade check's
 * arbitrary_actions), several gates' agents in one run through the mux agent
 * below, on one vector env of two workers that every gate shares.
 */
#include "designer/gates.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents.h"
#include "check.h"
#include "episodes.h"
#include "errbuf.h"
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

static void verdict(spade_gate_report *r, spade_gate g, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void verdict(spade_gate_report *r, spade_gate g, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail[g], sizeof r->detail[g], fmt, ap);
    va_end(ap);
    r->status[g] = status;
    if (status == SPADE_GATE_FAIL && r->first_failed < 0) r->first_failed = (int)g;
    if (o_now && o_now->on_verdict) o_now->on_verdict(o_now->on_verdict_arg, r, g);
}

/* ---- what an episode showed, hashed per episode (the determinism gates) ---- */

#define FIRST_OBS_MAX 2048
#define ACT_KEEP 40

typedef struct trace {
    uint64_t *h; /* [n] FNV-1a over every observation, action, reward and the end */
    long n;
    char *first_obs; /* non-NULL: episode 0's first observation lands here (FIRST_OBS_MAX bytes, NUL-ended) */
    char (*act)[ACT_KEEP]; /* non-NULL: each episode's first action, for the reasons (n of them) */
    int masked; /* numbers in observations hashed as one '#' (behavioural novelty) */
} trace;

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

static const spade_ep_outcome *first_failure(const spade_ep_outcome *out, long n) {
    for (long i = 0; i < n; i++)
        if (out[i].end == SPADE_EP_FAILED) return &out[i];
    return NULL;
}

/* ---- the probes: episode e sends probe e % n every step (spade_agent_probes) ---- */

#define N_PROBES 7

static spade_agent *probe_agent(void) {
    char long_line[4096]; /* copied by the agent */
    static const char binary_probe[] = {'\x01', '\x00', '\xff', 'A', '\x7f', '\n', '\x1b', '[', '2', 'J'};
    memset(long_line, 'x', sizeof long_line);
    const char *const p[N_PROBES] = {"", "1", "test", "42", "\\boxed{1}", long_line, binary_probe};
    const size_t l[N_PROBES] = {0, 1, 4, 2, 9, sizeof long_line, sizeof binary_probe};
    return spade_agent_probes(p, l, N_PROBES, 0);
}

/* ---- the first-observation agent: ends every episode before its first step ---- */

static int stop_act(void *ctx, int n, const spade_ep_view *v, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx, (void)v, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) acts[i] = (spade_ep_act){NULL, 0, "first_observation"};
    return 0;
}

static spade_agent *stop_agent(void) {
    spade_agent *a = calloc(1, sizeof *a);
    if (a) a->name = "first-observation", a->act = stop_act;
    return a;
}

/* ---- one run of several gates' episodes ----
 * Each gate used to be a run of its own on vector envs of its own: two dozen
 * worker spawns and compiles an environment, and as many rounds of batches
 * as the gates' longest episodes added up. Now two workers serve every gate
 * (the determinism gates' pair), the param corners are blocks of instances
 * in them (spade_vecenv_add_block), and the gates that can share a run do:
 * each gate's agent plays its own range of the run's episodes (the mux
 * agent below), as if alone: it sees its episodes numbered from 0, and SOLVE
 * or the hint is fetched only for the episodes of an agent that wants it. */

#define MUX_MAX 10
#define MAX_SPECS (2 * SPADE_INFO_MAX_PARAMS + 1)

typedef struct mux {
    int n;
    spade_agent *a[MUX_MAX];
    long base[MUX_MAX + 1]; /* agent k plays episodes [base[k], base[k + 1]) */
    spade_ep_view *v; /* scratch: one agent's share of a round */
    spade_ep_act *act;
    int *at, cap;
} mux;

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

typedef struct gplay {
    spade_ep_spec spec[MAX_SPECS];
    spade_ep_place place[MAX_SPECS];
    char params[MAX_SPECS][256];
    int ns;
    spade_ep_request *req; /* [cap] */
    unsigned char *wants; /* [cap] */
    long n, cap;
    int oom;
    mux m;
} gplay;

static int add_spec(gplay *r, const char *file, const char *src, size_t len, const char *params, spade_vecenv *v,
                    int first, int count) {
    int s = r->ns++;
    r->params[s][0] = 0;
    if (params) snprintf(r->params[s], sizeof r->params[s], "%s", params);
    r->spec[s] = (spade_ep_spec){file, src, len, params ? r->params[s] : NULL, count};
    r->place[s] = (spade_ep_place){v, first, count};
    return s;
}

/* The next requests are agent a's (taken over: freed by the play). */
static void add_agent(gplay *r, spade_agent *a) {
    if (!a || r->m.n == MUX_MAX) {
        r->oom = 1;
        spade_agent_free(a);
        return;
    }
    r->m.base[r->m.n] = r->n;
    r->m.a[r->m.n++] = a;
}

static void add_req(gplay *r, int spec, uint64_t seed) {
    if (r->n == r->cap || !r->m.n) {
        r->oom = 1;
        return;
    }
    r->req[r->n] = (spade_ep_request){spec, seed, 0, 0};
    r->wants[r->n++] = (unsigned char)r->m.a[r->m.n - 1]->wants;
}

/* Empties r for the next play (its agents freed). */
static void clear(gplay *r) {
    for (int k = 0; k < r->m.n; k++) spade_agent_free(r->m.a[k]);
    r->m.n = 0;
    r->n = 0;
    r->ns = 0;
    r->oom = 0;
}

/* Plays r's requests into out (tr: their traces, may be NULL) and empties
 * r for the next play. Each gate keeps max_live episodes of its own live at
 * once, as when it ran alone. */
static int play(spade_sandbox *sb, gplay *r, const spade_gate_opts *o, spade_ep_outcome *out, trace *tr, char *err,
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
    clear(r);
    return rc;
}

/* ---- the gates ---- */

static double rate(const spade_ep_outcome *out, long n) {
    long k = 0;
    for (long i = 0; i < n; i++) k += out[i].success;
    return n ? (double)k / (double)n : 0;
}

/* "name=min" / "name=max" of param k. */
static void corner(const spade_param_info *p, int max, char *buf, size_t cap) {
    double v = max ? p->max : p->min;
    if (p->type == SPADE_PARAM_INT)
        snprintf(buf, cap, "%s=%.0f", p->name, v);
    else
        snprintf(buf, cap, "%s=%.17g", p->name, v);
}

/* the two determinism workers' fresh memory (both the same: see below) */
#define DET_POISON 0x5eed0001ULL
#define DET_SEEDS 6
#define LIMIT_SEEDS 4
#define INST_BYTES (320L << 20)
#define MAX_CONST 40 /* constant answers tried (the fixed ones, the defaults, the first observation's) */
#define MAX_PIECES 17 /* an echo's pieces tried: the whole text and its first 16 numbers, words and lines */
#define ANSWER_SEEDS 8 /* seeds per answer of those (an answer that ignores the seed wins them all) */
#define BEHAVE_SEEDS 4 /* seeds per scripted agent in the behavioural comparison */
#define BEHAVE_MAX 4 /* sources played beside the candidate there */
#define BEHAVE_COPY 0.75 /* share of like episodes that makes a copy */

enum { SEED_DET = 0, SEED_LIMITS, SEED_PROBES, SEED_AGENTS, SEED_BEHAVE };

uint64_t spade_gate_seed(const spade_gate_opts *o, const char *src, size_t len, int tag, int i) {
    uint64_t h = spade_source_fingerprint(src ? src : "", src ? len : 0);
    uint64_t x = spade_mix64(h ^ spade_mix64(o->run_seed ^ 0x6761746573ULL));
    x = spade_mix64(x + (uint64_t)tag * 0x9E3779B97F4A7C15ULL + (uint64_t)i);
    return 1 + x % 999983; /* short enough to read in a reason */
}

/* ---- the gates, one function per group, over one context ---- */

typedef struct gctx {
    spade_sandbox *sb;
    const char *file, *src;
    size_t len;
    const spade_gate_opts *o;
    spade_gate_report *rep;
    const spade_env_info *info;
    gplay *r;
    spade_vecenv *V;
    int S, n_default, shared_corners;
    int A; /* seeds per answer of the many-answer plays: min(S, ANSWER_SEEDS) */
    long cap;
    spade_ep_outcome *det, *lim, *out;
    trace tr; /* the determinism gates' */
    char (*act)[ACT_KEEP]; /* [cap] the agent run's first actions */
    int det_ok;
    char det_err[1024];
    char first_obs[FIRST_OBS_MAX]; /* of the first determinism seed */
    int n_const;
    char consts[MAX_CONST][64];
    long at[SPADE_GATE_COUNT]; /* where each gate's episodes start in out */
    long n_at[SPADE_GATE_COUNT];
    long at_obs_cycle, at_hint_seq, at_probe;
    int agents_ok;
    char agents_err[1024];
    int too_slow; /* limits found it over max_step_ms: the agent run would cost that a step, 2,000 times */
} gctx;

static uint64_t seed_of(const gctx *g, int tag, int i) { return spade_gate_seed(g->o, g->src, g->len, tag, i); }

/* A timed-out call among out[0..n): noted on the report (the gates stop after this group). */
static void note_timeouts(gctx *g, const spade_ep_outcome *out, long n) {
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
                verdict(rep, (spade_gate)k, SPADE_GATE_SKIP,
                        "not run: a call timed out in %s (it would time out again)", why);
            else if (g->too_slow)
                verdict(rep, (spade_gate)k, SPADE_GATE_SKIP, "not run: too slow to play (limits failed)");
            else
                verdict(rep, (spade_gate)k, SPADE_GATE_SKIP, "not run: %s failed", why);
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
        verdict(g->rep, SPADE_GATE_COMPILE, SPADE_GATE_FAIL, "%s: %s", spade_outcome_name(f.outcome), f.message);
        return;
    }
    g->rep->info = *spade_vecenv_info(g->V);
    g->info = &g->rep->info;
    verdict(g->rep, SPADE_GATE_COMPILE, SPADE_GATE_PASS, "%s%s%s%s, %d params%s", g->info->name,
            g->info->family[0] ? " (" : "", g->info->family, g->info->family[0] ? ")" : "", g->info->n_params,
            g->info->has_solve ? ", SOLVE" : "");
}

/* The determinism gates' episodes, played first, while both workers are
 * fresh: the same seeds in opposite orders, one worker each. With one
 * poison seed in both (worker 1 is given worker 0's), adjacent instances get
 * complementary patterns (core/host.c); worker 0 plays seed i on instance i
 * (then 6 + i for the script), worker 1 on instance 5 - i (11 - i), of the
 * other parity, so every bit of an uninitialised read differs between the
 * workers. These are each worker's first episodes: nothing ran before them
 * in either process. Episode 2j + w is instance j of worker w (the episode
 * layer takes an episode's first free env). Judged after limits. */
static void play_determinism(gctx *g) {
    spade_failure f;
    if (spade_vecenv_set_poison(g->V, 1, DET_POISON, &f) < 0) {
        snprintf(g->det_err, sizeof g->det_err, "%s: %.900s", spade_outcome_name(f.outcome), f.message);
        return;
    }
    static const char *const script[] = {"1", "north", "yes", "a", "42", "b", "2", "east"};
    gplay *r = g->r;
    int s = add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    for (int k = 0; k < 2; k++) {
        add_agent(r, k ? spade_agent_script(script, 8, SPADE_TAIL_STOP) : stop_agent());
        for (int j = 0; j < DET_SEEDS; j++)
            for (int w = 0; w < 2; w++) add_req(r, s, seed_of(g, SEED_DET, w ? DET_SEEDS - 1 - j : j));
    }
    g->tr.first_obs = g->first_obs;
    g->det_ok = play(g->sb, r, g->o, g->det, &g->tr, g->det_err, sizeof g->det_err) == 0;
    g->tr.first_obs = NULL;
    if (g->det_ok) note_timeouts(g, g->det, 4 * DET_SEEDS);
    /* The other gates need no poison (it costs each call a 32 KiB fill). A
     * failure here is a dead worker: the next play revives it, still
     * poisoned, which costs only time. */
    spade_failure ignore;
    spade_vecenv_set_poison(g->V, -1, 0, &ignore);
}

/* The agent run's requests at the defaults (the room it wants). */
static long agent_requests(const gctx *g) {
    return 2L * N_PROBES + (long)g->S * (5 + (g->info->has_solve != 0)) + (long)g->A * (g->n_const + 2 * MAX_PIECES);
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
    long want = agent_requests(g), live = (long)(g->o->max_live > 0 ? g->o->max_live : 32) * 4;
    long extra = (want < live ? want : live) - g->n_default;
    if (extra > 2 * room) extra = 2 * room;
    if (extra > 0) {
        int first;
        spade_failure ignore;
        if (spade_vecenv_add_block(g->V, NULL, (int)extra, &first, &ignore) == 0) g->n_default += (int)extra;
        /* else the vector is failed: the next play revives it (with the first block only) */
    }
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
    spec[0] = add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    for (int c = 1; c < ns && ok; c++) {
        char p[256];
        int first;
        corner(&info->params[(c - 1) / 2], (c - 1) % 2, p, sizeof p);
        if (!g->shared_corners) {
            spec[c] = add_spec(r, g->file, g->src, g->len, p, NULL, 0, 2 * LIMIT_SEEDS);
        } else if (spade_vecenv_add_block(g->V, p, 2 * LIMIT_SEEDS, &first, &f) < 0) {
            snprintf(lerr, sizeof lerr, "%s at %.200s: %.700s", spade_outcome_name(f.outcome), p, f.message);
            ok = 0;
        } else {
            spec[c] = add_spec(r, g->file, g->src, g->len, p, g->V, first, 2 * LIMIT_SEEDS);
        }
    }
    for (int w = 0; w < 1 + (info->has_solve != 0); w++) {
        add_agent(r, w ? spade_agent_solve() : spade_agent_random(7));
        for (int c = 0; c < ns; c++)
            for (int k = 0; k < LIMIT_SEEDS; k++) add_req(r, spec[c], seed_of(g, SEED_LIMITS, k));
        if (!w) half = r->n;
    }
    n = r->n;
    double t0 = now_s();
    if (ok)
        ok = play(g->sb, r, g->o, g->lim, NULL, lerr, sizeof lerr) == 0;
    else
        clear(r);
    double secs = now_s() - t0;
    long steps = 0;
    const spade_ep_outcome *bad = NULL, *big = NULL;
    for (long i = 0; ok && i < n; i++) {
        steps += g->lim[i].steps;
        if (!bad && g->lim[i].end == SPADE_EP_FAILED) bad = &g->lim[i];
        if (!big && fabs(g->lim[i].ret) > 1 + 1e-9) big = &g->lim[i];
    }
    if (ok) note_timeouts(g, g->lim, n);
    rep->ms_per_step = steps ? 1000 * secs / (double)steps : 0;
    if (!ok)
        verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "could not play: %s", lerr);
    else if (!(info->success > -1 && info->success <= 1))
        verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL,
                "success threshold %g cannot be reached by a return in [-1, 1]", info->success);
    else if (bad)
        verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "%s at %s, seed %llu (%s agent): %s: %.160s",
                spade_outcome_name(bad->failure.outcome), r->params[bad->spec][0] ? r->params[bad->spec] : "defaults",
                (unsigned long long)bad->seed, bad - g->lim < half ? "random" : "solve",
                spade_outcome_name(bad->failure.outcome), bad->failure.message);
    else if (big)
        verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "return %g outside [-1, 1] at %s, seed %llu", big->ret,
                r->params[big->spec][0] ? r->params[big->spec] : "defaults", (unsigned long long)big->seed);
    else if (rep->ms_per_step > g->o->max_step_ms) {
        verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "%.2f ms per step on average (designer.max_step_ms = %g)",
                rep->ms_per_step, g->o->max_step_ms);
        g->too_slow = 1;
    } else
        verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_PASS, "%d settings, %ld episodes, %.3f ms per step", ns, n,
                rep->ms_per_step);
}

/* the determinism verdicts (played first): worker 0's episodes in seed
 * order, then worker 1's in its own order, as the failures are looked for */
static void gate_determinism(gctx *g) {
    for (int k = SPADE_GATE_RESET_DET; k <= SPADE_GATE_REPLAY_DET; k++) {
        long base = (long)(k - SPADE_GATE_RESET_DET) * 2 * DET_SEEDS;
        const spade_ep_outcome *bad = NULL;
        int differ = -1;
        for (int w = 0; g->det_ok && w < 2 && !bad; w++)
            for (int j = 0; j < DET_SEEDS && !bad; j++)
                if (g->det[base + 2 * j + w].end == SPADE_EP_FAILED) bad = &g->det[base + 2 * j + w];
        for (int i = 0; g->det_ok && i < DET_SEEDS && differ < 0; i++) {
            long a = base + 2 * i, b = base + 2 * (DET_SEEDS - 1 - i) + 1; /* seed i in each worker */
            if (g->tr.h[a] != g->tr.h[b] || g->det[a].ret != g->det[b].ret) differ = i;
        }
        if (!g->det_ok)
            verdict(g->rep, (spade_gate)k, SPADE_GATE_FAIL, "could not play: %s", g->det_err);
        else if (bad)
            verdict(g->rep, (spade_gate)k, SPADE_GATE_FAIL, "seed %llu: %s: %.160s", (unsigned long long)bad->seed,
                    spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else if (differ >= 0)
            verdict(g->rep, (spade_gate)k, SPADE_GATE_FAIL,
                    "seed %llu plays differently in a second worker (state outside S, or uninitialised memory)",
                    (unsigned long long)seed_of(g, SEED_DET, differ));
        else
            verdict(g->rep, (spade_gate)k, SPADE_GATE_PASS, "%d seeds, two workers, opposite orders%s", DET_SEEDS,
                    k == SPADE_GATE_REPLAY_DET ? ", an 8-action script" : "");
    }
}

/* The constant answers: answers that ignore the seed. */
static void add_const(gctx *g, const char *c, size_t n) {
    if (g->n_const >= MAX_CONST || n >= sizeof g->consts[0]) return;
    for (int k = 0; k < g->n_const; k++)
        if (strlen(g->consts[k]) == n && !memcmp(g->consts[k], c, n)) return;
    memcpy(g->consts[g->n_const], c, n);
    g->consts[g->n_const++][n] = 0;
}

static int collect_consts(gctx *g) {
    static const char *const fixed[] = {"1", "test", "42", "\\boxed{1}", "done", "yes", "no", "0", "-1",
                                        "2", "3",    "4",  "5",          "6",    "7",   "8",  "9", "10"};
    for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++) add_const(g, fixed[k], strlen(fixed[k]));
    for (int k = 0; k < g->info->n_params; k++) {
        char v[64];
        const spade_param_info *p = &g->info->params[k];
        int n =
            p->type == SPADE_PARAM_INT ? snprintf(v, sizeof v, "%.0f", p->def) : snprintf(v, sizeof v, "%g", p->def);
        if (n > 0) add_const(g, v, (size_t)n);
    }
    spade_pieces pc;
    if (spade_text_pieces(g->first_obs, strlen(g->first_obs), &pc) < 0) return -1;
    for (int k = 0; k < pc.n; k++)
        if (!memchr(pc.p[k], '\n', pc.len[k]))
            add_const(g, pc.p[k], pc.len[k]); /* numbers and words; lines are echoes */
    spade_pieces_free(&pc);
    return 0;
}

/* probe_actions and the agent gates: one run at the defaults. Each gate's
 * agent plays its own range of episodes; a gate that tries many answers
 * (constants, pieces) plays answer e % n on seed e / n of its range. */
static void play_agents(gctx *g) {
    gplay *r = g->r;
    int S = g->S;
    if (collect_consts(g) < 0) {
        snprintf(g->agents_err, sizeof g->agents_err, "out of memory");
        return;
    }
    int s = add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    add_agent(r, probe_agent());
    g->at_probe = r->n;
    for (long i = 0; i < 2 * N_PROBES; i++) add_req(r, s, seed_of(g, SEED_PROBES, (int)(i / N_PROBES)));
    const char *cp[MAX_CONST];
    size_t cl[MAX_CONST];
    for (int k = 0; k < g->n_const; k++) cp[k] = g->consts[k], cl[k] = strlen(g->consts[k]);
    for (int k = SPADE_GATE_RANDOM; k <= SPADE_GATE_SOLVE; k++) {
        int per = 1; /* answers per seed */
        switch (k) {
        case SPADE_GATE_RANDOM: add_agent(r, spade_agent_random(11)); break;
        case SPADE_GATE_NOOP: add_agent(r, spade_agent_noop()); break;
        case SPADE_GATE_CONSTANT: add_agent(r, spade_agent_probes(cp, cl, g->n_const, 0)), per = g->n_const; break;
        case SPADE_GATE_OBS_ECHO: add_agent(r, spade_agent_piece_echo(0, MAX_PIECES)), per = MAX_PIECES; break;
        case SPADE_GATE_HINT_ECHO: add_agent(r, spade_agent_piece_echo(1, MAX_PIECES)), per = MAX_PIECES; break;
        case SPADE_GATE_SOLVE:
            if (!g->info->has_solve) continue;
            add_agent(r, spade_agent_solve());
            break;
        }
        int seeds = per > 1 ? g->A : S;
        g->at[k] = r->n;
        g->n_at[k] = (long)seeds * per;
        for (long i = 0; i < (long)seeds * per; i++) add_req(r, s, seed_of(g, SEED_AGENTS, (int)(i / per)));
        if (k == SPADE_GATE_OBS_ECHO || k == SPADE_GATE_HINT_ECHO) { /* and the pieces in turn, one per step */
            add_agent(r, k == SPADE_GATE_OBS_ECHO ? spade_agent_obs_echo() : spade_agent_hint_words(SPADE_TAIL_CYCLE));
            *(k == SPADE_GATE_OBS_ECHO ? &g->at_obs_cycle : &g->at_hint_seq) = r->n;
            for (int i = 0; i < S; i++) add_req(r, s, seed_of(g, SEED_AGENTS, i));
        }
    }
    trace t = {.h = calloc((size_t)g->cap, sizeof(uint64_t)), .n = g->cap, .act = g->act};
    if (!t.h) {
        clear(r);
        snprintf(g->agents_err, sizeof g->agents_err, "out of memory");
        return;
    }
    long n = r->n;
    g->agents_ok = play(g->sb, r, g->o, g->out, &t, g->agents_err, sizeof g->agents_err) == 0;
    free(t.h);
    if (g->agents_ok) note_timeouts(g, g->out, n);
}

static void gate_probes(gctx *g) {
    long n = 2 * N_PROBES;
    const spade_ep_outcome *po = g->out + g->at_probe;
    const spade_ep_outcome *bad = g->agents_ok ? first_failure(po, n) : NULL;
    static const char *const what[N_PROBES] = {"the empty action", "\"1\"",        "\"test\"",    "\"42\"",
                                               "\"\\boxed{1}\"",   "a 4 KiB line", "binary bytes"};
    if (!g->agents_ok)
        verdict(g->rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "could not play: %s", g->agents_err);
    else if (bad)
        verdict(g->rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "%s made a failure: %s: %.160s", what[(bad - po) % N_PROBES],
                spade_outcome_name(bad->failure.outcome), bad->failure.message);
    else
        verdict(g->rep, SPADE_GATE_PROBE, SPADE_GATE_PASS, "%d probes, 2 seeds each, no failure", N_PROBES);
}

/* The best of `per` answers played on S seeds each (episode i plays answer
 * i % per): its wins, and an episode of it that won (NULL: none won). */
static long best_answer(const spade_ep_outcome *o, int S, int per, long *at_win) {
    long best = 0;
    *at_win = -1;
    for (int a = 0; a < per; a++) {
        long w = 0, first = -1;
        for (int j = 0; j < S; j++)
            if (o[(long)j * per + a].success) {
                w++;
                if (first < 0) first = (long)j * per + a;
            }
        if (w > best) best = w, *at_win = first;
    }
    return best;
}

static long wins_of(const spade_ep_outcome *o, long n) {
    long w = 0;
    for (long i = 0; i < n; i++) w += o[i].success;
    return w;
}

/* A verdict from the agent run: a failed episode fails the gate (naming its
 * seed), else the caller's judgement. Returns 1 when the gate was judged here. */
static int agent_failed(gctx *g, spade_gate k, const spade_ep_outcome *o, long n) {
    const spade_ep_outcome *bad = g->agents_ok ? first_failure(o, n) : NULL;
    if (!g->agents_ok)
        verdict(g->rep, k, SPADE_GATE_FAIL, "could not play: %s", g->agents_err);
    else if (bad)
        verdict(g->rep, k, SPADE_GATE_FAIL, "seed %llu: %s: %.160s", (unsigned long long)bad->seed,
                spade_outcome_name(bad->failure.outcome), bad->failure.message);
    else
        return 0;
    return 1;
}

static int over(const gctx *g, long wins, int of) { return (double)wins / of > g->o->constant_max + 1e-12; }

static void gate_random_noop(gctx *g, spade_gate k) {
    const spade_ep_outcome *o = g->out + g->at[k];
    int S = g->S;
    double rt = g->agents_ok ? rate(o, S) : 0;
    long wins = (long)floor(rt * S + 0.5);
    if (k == SPADE_GATE_RANDOM)
        g->rep->random_rate = rt;
    else
        g->rep->noop_rate = rt;
    if (agent_failed(g, k, o, S)) return;
    if (k == SPADE_GATE_RANDOM && rt > g->o->random_max + 1e-12)
        verdict(g->rep, k, SPADE_GATE_FAIL, "the random agent won %ld of %d seeds (at most %.0f%%)", wins, S,
                100 * g->o->random_max);
    else if (k == SPADE_GATE_NOOP && wins > 0)
        verdict(g->rep, k, SPADE_GATE_FAIL, "the empty action won %ld of %d seeds", wins, S);
    else
        verdict(g->rep, k, SPADE_GATE_PASS, "won %ld of %d seeds", wins, S);
}

static void gate_constant(gctx *g) {
    const spade_ep_outcome *o = g->out + g->at[SPADE_GATE_CONSTANT];
    long at = 0, best = g->agents_ok ? best_answer(o, g->A, g->n_const, &at) : 0;
    g->rep->constant_rate = (double)best / g->A;
    if (agent_failed(g, SPADE_GATE_CONSTANT, o, g->n_at[SPADE_GATE_CONSTANT])) return;
    if (over(g, best, g->A))
        verdict(g->rep, SPADE_GATE_CONSTANT, SPADE_GATE_FAIL,
                "the constant answer \"%.40s\" won %ld of %d seeds (at most %.0f%%): the answer does not depend on the "
                "seed",
                g->consts[at % g->n_const], best, g->A, 100 * g->o->constant_max);
    else
        verdict(g->rep, SPADE_GATE_CONSTANT, SPADE_GATE_PASS, "%d constant answers, the best won %ld of %d seeds",
                g->n_const, best, g->A);
}

/* obs_echo and hint_echo: each piece alone, then all in turn */
static void gate_echo(gctx *g, spade_gate k) {
    int hint = k == SPADE_GATE_HINT_ECHO, S = g->S, A = g->A;
    const spade_ep_outcome *o = g->out + g->at[k];
    long seq_at = hint ? g->at_hint_seq : g->at_obs_cycle;
    long at = 0, best = g->agents_ok ? best_answer(o, A, MAX_PIECES, &at) : 0;
    long seq = g->agents_ok ? wins_of(g->out + seq_at, S) : 0;
    double rt = (double)best / A > (double)seq / S ? (double)best / A : (double)seq / S;
    if (hint)
        g->rep->hint_echo_rate = rt;
    else
        g->rep->obs_echo_rate = rt;
    if (agent_failed(g, k, o, g->n_at[k]) || agent_failed(g, k, g->out + seq_at, S)) return;
    const char *what = hint ? "the hint" : "the observation";
    if (over(g, best, A))
        verdict(g->rep, k, SPADE_GATE_FAIL, "echoing %s's %s \"%.40s\" won %ld of %d seeds", what,
                at % MAX_PIECES ? "piece" : "whole text", g->act[g->at[k] + at], best, A);
    else if (over(g, seq, S))
        verdict(g->rep, k, SPADE_GATE_FAIL, "echoing %s won %ld of %d seeds (its %s, one per step)", what, seq, S,
                hint ? "words in order" : "pieces in turn");
    else
        verdict(g->rep, k, SPADE_GATE_PASS,
                "%s whole and each of its pieces: at most %ld of %d seeds won; all in turn: %ld of %d", what, best, A,
                seq, S);
}

static void gate_solve(gctx *g) {
    spade_gate_report *rep = g->rep;
    if (!g->info->has_solve) {
        if (g->o->require_solve)
            verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_FAIL, "no SOLVE (designer.require_solve = true)");
        else
            verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_PASS, "no SOLVE (not required)");
        return;
    }
    const spade_ep_outcome *o = g->out + g->at[SPADE_GATE_SOLVE];
    double rt = g->agents_ok ? rate(o, g->S) : 0;
    long wins = (long)floor(rt * g->S + 0.5);
    rep->solve_rate = rt;
    if (agent_failed(g, SPADE_GATE_SOLVE, o, g->S)) return;
    if (wins < g->S)
        verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_FAIL, "SOLVE won only %ld of %d seeds", wins, g->S);
    else
        verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_PASS, "won %ld of %d seeds", wins, g->S);
}

/* winnable: some play of the agent run won a seed (SOLVE's, or a scripted
 * agent's within its limit: the gates before passed). */
static void gate_winnable(gctx *g) {
    if (!g->agents_ok) {
        verdict(g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_FAIL, "could not play: %s", g->agents_err);
        return;
    }
    static const spade_gate order[] = {SPADE_GATE_SOLVE, SPADE_GATE_RANDOM, SPADE_GATE_CONSTANT, SPADE_GATE_OBS_ECHO,
                                       SPADE_GATE_HINT_ECHO};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        if (order[k] == SPADE_GATE_SOLVE && !g->info->has_solve) continue;
        long n = g->n_at[order[k]], w = wins_of(g->out + g->at[order[k]], n);
        if (w > 0) {
            verdict(g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_PASS, "%s won %ld of %ld episodes",
                    order[k] == SPADE_GATE_SOLVE ? "SOLVE" : NAMES[order[k]], w, n);
            return;
        }
    }
    long w = wins_of(g->out + g->at_hint_seq, g->S) + wins_of(g->out + g->at_obs_cycle, g->S);
    if (w > 0)
        verdict(g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_PASS, "an echo won %ld episodes", w);
    else
        verdict(g->rep, SPADE_GATE_WINNABLE, SPADE_GATE_FAIL,
                "nothing won a seed: no SOLVE, and none of the gates' agents won any (write a SOLVE that wins)");
}

/* ---- novelty ---- */

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
    spec[0] = add_spec(r, g->file, g->src, g->len, NULL, g->V, 0, g->n_default);
    for (int q = 0; q < m; q++) spec[q + 1] = add_spec(r, nb[q].name, nb[q].src, nb[q].len, NULL, NULL, 0, PER_SRC);
    size_t cl[NC];
    for (int k = 0; k < NC; k++) cl[k] = strlen(cs[k]);
    /* episode of (agent a, source q, seed j, constant c): per agent, sources in turn */
    for (int a = 0; a < 3; a++) {
        add_agent(r, a == 0   ? spade_agent_solve()
                     : a == 1 ? spade_agent_random(13)
                              : spade_agent_probes(cs, cl, NC, 0));
        int per = a == 2 ? NC : 1;
        for (int q = 0; q <= m; q++)
            for (int i = 0; i < BEHAVE_SEEDS * per; i++) add_req(r, spec[q], seed_of(g, SEED_BEHAVE, i / per));
    }
    long n = r->n;
    trace t = {.h = calloc((size_t)n + 1, sizeof(uint64_t)), .n = n, .masked = 1};
    spade_ep_outcome *o = calloc((size_t)n + 1, sizeof *o);
    if (!t.h || !o) {
        clear(r);
        free(t.h);
        free(o);
        return spade_errf(err, errlen, "out of memory"), -1;
    }
    int rc = play(g->sb, r, g->o, o, &t, err, errlen);
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

static void gate_novelty(gctx *g) {
    const spade_gate_opts *o = g->o;
    spade_gate_report *rep = g->rep;
    int nr = o->refs ? o->n_refs : 0, ns = o->shown ? o->n_shown : 0;
    if (nr + ns == 0) {
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "no reference environments to compare with");
        return;
    }
    double *x = malloc((size_t)o->dim * sizeof *x), *y = malloc((size_t)o->dim * sizeof *y);
    near *all = calloc((size_t)(nr + ns), sizeof *all);
    if (!x || !y || !all) {
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "out of memory");
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
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "a near-duplicate of %s%s (cosine %.3f > %.2f)", all[at].name,
                from, best, o->novelty_max);
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
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "could not play the behavioural comparison: %s", berr);
        goto done;
    }
    int copy = -1;
    for (int q = 0; q < m; q++) {
        if (!(rep->behave_match >= match[q])) rep->behave_match = match[q];
        if (match[q] >= BEHAVE_COPY && (copy < 0 || match[q] > match[copy])) copy = q;
    }
    if (copy >= 0)
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL,
                "behaves like %s: %.0f%% of episodes on the same seeds showed and paid the same (numbers masked; text "
                "cosine %.3f)",
                nb[copy].name, 100 * match[copy], nb[copy].cos);
    else if (m > 0)
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS,
                "nearest %s at cosine %.3f; behaves like none of %d played (at most %.0f%% alike)", all[at].name, best,
                m, 100 * rep->behave_match);
    else
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "nearest %s at cosine %.3f", all[at].name, best);
done:
    free(x);
    free(y);
    free(all);
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
    g.cap = 2L * LIMIT_SEEDS * MAX_SPECS + 2 * N_PROBES + (long)g.S * (6 + MAX_CONST + 2 * MAX_PIECES) + 4 * DET_SEEDS +
            (long)(BEHAVE_MAX + 1) * BEHAVE_SEEDS * 5;
    int rc = -1;
    g.r = calloc(1, sizeof *g.r);
    g.det = calloc(4 * DET_SEEDS, sizeof *g.det);
    g.lim = calloc((size_t)g.cap, sizeof *g.lim);
    g.out = calloc((size_t)g.cap, sizeof *g.out);
    g.act = calloc((size_t)g.cap, sizeof *g.act);
    g.tr = (trace){.h = calloc(4 * DET_SEEDS, sizeof(uint64_t)), .n = 4 * DET_SEEDS};
    if (g.r) {
        g.r->cap = g.cap;
        g.r->req = calloc((size_t)g.cap, sizeof *g.r->req);
        g.r->wants = calloc((size_t)g.cap, 1);
    }
    if (!g.r || !g.r->req || !g.r->wants || !g.det || !g.lim || !g.out || !g.act || !g.tr.h) {
        spade_errf(err, errlen, "gates: out of memory");
        goto done;
    }
    /* Each group judges its gates; between groups, go_on says whether the
     * rest can run (a timeout, or a failure the caller stops at). The
     * determinism episodes play before limits (fresh workers), and are
     * judged after it. */
    gate_compile(&g);
    if (go_on(&g)) {
        play_determinism(&g);
        const spade_ep_outcome *t = NULL;
        for (long i = 0; rep->timed_out && i < 4 * DET_SEEDS && !t; i++)
            if (g.det[i].end == SPADE_EP_FAILED && g.det[i].failure.outcome == SPADE_OUT_TIMEOUT) t = &g.det[i];
        if (t) /* the first play hung: limits (a step's time is one) fails with it, and nothing more is played */
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "seed %llu: %s: %.200s", (unsigned long long)t->seed,
                    spade_outcome_name(t->failure.outcome), t->failure.message);
        else {
            make_room(&g);
            gate_limits(&g);
        }
    }
    if (go_on(&g)) gate_determinism(&g);
    if (go_on(&g)) {
        play_agents(&g);
        gate_probes(&g);
    }
    static const spade_gate agent_gates[] = {SPADE_GATE_RANDOM,   SPADE_GATE_NOOP,      SPADE_GATE_CONSTANT,
                                             SPADE_GATE_OBS_ECHO, SPADE_GATE_HINT_ECHO, SPADE_GATE_SOLVE,
                                             SPADE_GATE_WINNABLE};
    for (size_t k = 0; k < sizeof agent_gates / sizeof *agent_gates && go_on(&g); k++) {
        switch (agent_gates[k]) {
        case SPADE_GATE_RANDOM:
        case SPADE_GATE_NOOP: gate_random_noop(&g, agent_gates[k]); break;
        case SPADE_GATE_CONSTANT: gate_constant(&g); break;
        case SPADE_GATE_OBS_ECHO:
        case SPADE_GATE_HINT_ECHO: gate_echo(&g, agent_gates[k]); break;
        case SPADE_GATE_SOLVE: gate_solve(&g); break;
        default: gate_winnable(&g); break;
        }
    }
    if (go_on(&g)) gate_novelty(&g);
    go_on(&g);
    rc = 0;
done:
    spade_vecenv_free(g.V);
    if (g.r) {
        free(g.r->req);
        free(g.r->wants);
        free(g.r->m.v);
        free(g.r->m.act);
        free(g.r->m.at);
    }
    free(g.r);
    free(g.det);
    free(g.lim);
    free(g.out);
    free(g.act);
    free(g.tr.h);
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
