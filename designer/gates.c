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
#include "episodes.h"
#include "errbuf.h"
#include "vendi.h"

static const char *const NAMES[SPADE_GATE_COUNT] = {
    "compile", "limits", "reset_deterministic", "replay_deterministic", "probe_actions",
    "random_agent", "noop_agent", "hint_echo", "solve", "novelty",
};

const char *spade_gate_name(spade_gate g) { return (unsigned)g < SPADE_GATE_COUNT ? NAMES[g] : "?"; }

void spade_gate_opts_default(spade_gate_opts *o) {
    memset(o, 0, sizeof *o);
    o->seeds = 20;
    o->random_max = 0.15;
    o->max_step_ms = 20;
    o->novelty_max = 0.95;
    o->dim = SPADE_VENDI_DIM;
    o->max_live = 32;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void verdict(spade_gate_report *r, spade_gate g, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void verdict(spade_gate_report *r, spade_gate g, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail[g], sizeof r->detail[g], fmt, ap);
    va_end(ap);
    r->status[g] = status;
    if (status == SPADE_GATE_FAIL && r->first_failed < 0) r->first_failed = (int)g;
}

/* ---- what an episode showed, hashed per episode (the determinism gates) ---- */

typedef struct trace {
    uint64_t *h;  /* [n] FNV-1a over every observation, action, reward and the end */
    long n;
} trace;

static void hash_bytes(uint64_t *h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * 1099511628211ULL;
}

static void on_event(void *ctx, const spade_ep_event *e) {
    trace *t = ctx;
    if (e->episode < 0 || e->episode >= t->n) return;
    uint64_t *h = &t->h[e->episode];
    int kind = (int)e->kind;
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

#define MUX_MAX 6
#define MAX_SPECS (2 * SPADE_INFO_MAX_PARAMS + 1)

typedef struct mux {
    int n;
    spade_agent *a[MUX_MAX];
    long base[MUX_MAX + 1]; /* agent k plays episodes [base[k], base[k + 1]) */
    spade_ep_view *v;       /* scratch: one agent's share of a round */
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
    unsigned char *wants;  /* [cap] */
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
    /* every spec is the one source (at some params): one given hint for all */
    const char *hints[MAX_SPECS];
    size_t hint_lens[MAX_SPECS];
    if (o->hint) {
        for (int s = 0; s < r->ns; s++) hints[s] = o->hint, hint_lens[s] = o->hint_len;
        eo.hints = hints;
        eo.hint_lens = hint_lens;
    }
    if (tr) {
        for (long i = 0; i < r->n && i < tr->n; i++) tr->h[i] = 1469598103934665603ULL;
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
    if (p->type == SPADE_PARAM_INT) snprintf(buf, cap, "%s=%.0f", p->name, v);
    else snprintf(buf, cap, "%s=%.17g", p->name, v);
}

/* the two determinism workers' fresh memory (both the same: see below) */
#define DET_POISON 0x5eed0001ULL
#define DET_SEEDS 6
#define LIMIT_SEEDS 4
#define INST_BYTES (320L << 20)

int spade_gates_run(spade_sandbox *sb, const char *filename, const char *src, size_t len, const spade_gate_opts *o,
                    spade_gate_report *rep, char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    rep->first_failed = -1;
    rep->max_cosine = NAN;
    int S = o->seeds > 0 ? o->seeds : 20;
    long cap = 2L * LIMIT_SEEDS * MAX_SPECS + N_PROBES * 2 + 4L * S + 4 * DET_SEEDS;
    gplay *r = calloc(1, sizeof *r);
    spade_ep_outcome *det = calloc(4 * DET_SEEDS, sizeof *det), *lim = calloc((size_t)cap, sizeof *lim),
                     *out = calloc((size_t)cap, sizeof *out);
    trace tr = {calloc(4 * DET_SEEDS, sizeof(uint64_t)), 4 * DET_SEEDS};
    spade_vecenv *V = NULL;
    char det_err[1024] = "";
    int rc = -1;
    if (r) {
        r->cap = cap;
        r->req = calloc((size_t)cap, sizeof *r->req);
        r->wants = calloc((size_t)cap, 1);
    }
    if (!r || !r->req || !r->wants || !det || !lim || !out || !tr.h) {
        spade_errf(err, errlen, "gates: out of memory");
        goto done;
    }
#define SKIP_REST(from)                                                                                   \
    for (int g_ = (from); g_ < SPADE_GATE_COUNT; g_++)                                                    \
        if (!rep->status[g_]) verdict(rep, (spade_gate)g_, SPADE_GATE_SKIP, "not run: %s failed", NAMES[rep->first_failed])
#define STOP_IF_FAILED(next)                                                    \
    if (rep->first_failed >= 0 && (o->stop_at_first || rep->first_failed == 0)) { \
        SKIP_REST(next);                                                        \
        rc = 0;                                                                 \
        goto done;                                                              \
    }

    /* The compile gate's vector serves every gate after it: two workers
     * (compiling at once), the determinism gates' pair. Env i is instance
     * i / 2 of worker i % 2. Its first block, at the defaults, holds the
     * determinism gates' episodes; after them a second block at the defaults
     * makes room for the gates that play at the defaults together (so none
     * waits for a free instance), as far as the state's size allows. */
    int n_default = 4 * DET_SEEDS;
    spade_failure f;
    if (spade_vecenv_new_poisoned(sb, filename, src, len, NULL, n_default, 2, SPADE_AUTORESET_DISABLED, DET_POISON, &V,
                                  &f) < 0) {
        verdict(rep, SPADE_GATE_COMPILE, SPADE_GATE_FAIL, "%s: %s", spade_outcome_name(f.outcome), f.message);
    } else {
        rep->info = *spade_vecenv_info(V);
        verdict(rep, SPADE_GATE_COMPILE, SPADE_GATE_PASS, "%s%s%s%s, %d params%s", rep->info.name, rep->info.family[0] ? " (" : "",
                rep->info.family, rep->info.family[0] ? ")" : "",
                rep->info.n_params, rep->info.has_solve ? ", SOLVE" : "");
    }
    STOP_IF_FAILED(SPADE_GATE_LIMITS);
    const spade_env_info *info = &rep->info;

    /* reset_deterministic and replay_deterministic first, while both workers
     * are fresh: the same seeds in opposite orders, one worker each. With one
     * poison seed in both (worker 1 is given worker 0's), adjacent instances
     * get complementary patterns (core/host.c); worker 0 plays seed i on
     * instance i (then 6 + i for the script), worker 1 on instance 5 - i
     * (11 - i), of the other parity, so every bit of an uninitialised read
     * differs between the workers. These are each worker's first episodes:
     * nothing ran before them in either process. Episode 2j + w is instance j
     * of worker w (the episode layer takes an episode's first free env). */
    int det_ok = 0;
    if (spade_vecenv_set_poison(V, 1, DET_POISON, &f) < 0) {
        snprintf(det_err, sizeof det_err, "%s: %.900s", spade_outcome_name(f.outcome), f.message);
    } else {
        static const char *const script[] = {"1", "north", "yes", "a", "42", "b", "2", "east"};
        int s = add_spec(r, filename, src, len, NULL, V, 0, n_default);
        for (int g = 0; g < 2; g++) {
            add_agent(r, g ? spade_agent_script(script, 8, SPADE_TAIL_STOP) : stop_agent());
            for (int j = 0; j < DET_SEEDS; j++)
                for (int w = 0; w < 2; w++) add_req(r, s, 77 + (uint64_t)(w ? DET_SEEDS - 1 - j : j));
        }
        det_ok = play(sb, r, o, det, &tr, det_err, sizeof det_err) == 0;
        /* The other gates need no poison (it costs each call a 32 KiB fill).
         * A failure here is a dead worker: the next play revives it, still
         * poisoned, which costs only time. */
        spade_failure ignore;
        spade_vecenv_set_poison(V, -1, 0, &ignore);
    }

    /* What a worker may hold: as many instances as the old gates' largest
     * play held of the largest state (20 of 16 MiB), or more of a smaller
     * one. The corners share the workers when they fit, else each plays on a
     * vector of its own (as the old gates did); the second default block
     * takes the room left, and the gates' episodes queue for what it lacks. */
    long per_worker = (long)(INST_BYTES / (info->state_size ? info->state_size : 1));
    int shared_corners = 2 * DET_SEEDS + 2L * info->n_params * LIMIT_SEEDS <= per_worker;
    long room = per_worker - 2 * DET_SEEDS - (shared_corners ? 2L * info->n_params * LIMIT_SEEDS : 0);
    long extra = N_PROBES * 2 + 4L * S - n_default;
    if (extra > 2 * room) extra = 2 * room;
    if (extra > 0) {
        int first;
        spade_failure ignore;
        if (spade_vecenv_add_block(V, NULL, (int)extra, &first, &ignore) == 0) n_default += (int)extra;
        /* else the vector is failed: the next play revives it (with the first block only) */
    }

    /* limits: random and SOLVE at the defaults and at every param's min and
     * max (a block of instances each, in both workers, or a vector each) */
    {
        long n = 0, half = 0;
        int ok = 1, ns = 1 + 2 * info->n_params, spec[2 * SPADE_INFO_MAX_PARAMS + 1];
        char lerr[1024] = "";
        spec[0] = add_spec(r, filename, src, len, NULL, V, 0, n_default);
        for (int c = 1; c < ns && ok; c++) {
            char p[256];
            int first;
            corner(&info->params[(c - 1) / 2], (c - 1) % 2, p, sizeof p);
            if (!shared_corners) {
                spec[c] = add_spec(r, filename, src, len, p, NULL, 0, 2 * LIMIT_SEEDS);
            } else if (spade_vecenv_add_block(V, p, 2 * LIMIT_SEEDS, &first, &f) < 0) {
                snprintf(lerr, sizeof lerr, "%s at %.200s: %.700s", spade_outcome_name(f.outcome), p, f.message);
                ok = 0;
            } else {
                spec[c] = add_spec(r, filename, src, len, p, V, first, 2 * LIMIT_SEEDS);
            }
        }
        for (int w = 0; w < 1 + (info->has_solve != 0); w++) {
            add_agent(r, w ? spade_agent_solve() : spade_agent_random(7));
            for (int c = 0; c < ns; c++)
                for (int k = 0; k < LIMIT_SEEDS; k++) add_req(r, spec[c], 1000 + (uint64_t)k);
            if (!w) half = r->n;
        }
        n = r->n;
        double t0 = now_s();
        if (ok) ok = play(sb, r, o, lim, NULL, lerr, sizeof lerr) == 0;
        else clear(r);
        double secs = now_s() - t0;
        long steps = 0;
        const spade_ep_outcome *bad = NULL, *big = NULL;
        for (long i = 0; ok && i < n; i++) {
            steps += lim[i].steps;
            if (!bad && lim[i].end == SPADE_EP_FAILED) bad = &lim[i];
            if (!big && fabs(lim[i].ret) > 1 + 1e-9) big = &lim[i];
        }
        rep->ms_per_step = steps ? 1000 * secs / (double)steps : 0;
        if (!ok) verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "could not play: %s", lerr);
        else if (!(info->success > -1 && info->success <= 1))
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "success threshold %g cannot be reached by a return in [-1, 1]",
                    info->success);
        else if (bad)
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "%s at %s, seed %llu (%s agent): %s: %.160s",
                    spade_outcome_name(bad->failure.outcome), r->params[bad->spec][0] ? r->params[bad->spec] : "defaults",
                    (unsigned long long)bad->seed, bad - lim < half ? "random" : "solve",
                    spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else if (big)
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "return %g outside [-1, 1] at %s, seed %llu", big->ret,
                    r->params[big->spec][0] ? r->params[big->spec] : "defaults", (unsigned long long)big->seed);
        else if (rep->ms_per_step > o->max_step_ms)
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "%.2f ms per step on average (designer.max_step_ms = %g)",
                    rep->ms_per_step, o->max_step_ms);
        else
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_PASS, "%d settings, %ld episodes, %.3f ms per step", ns, n,
                    rep->ms_per_step);
    }
    STOP_IF_FAILED(SPADE_GATE_RESET_DET);

    /* the determinism verdicts (played above): worker 0's episodes in seed
     * order, then worker 1's in its own order, as the failures are looked for */
    for (int g = SPADE_GATE_RESET_DET; g <= SPADE_GATE_REPLAY_DET; g++) {
        long base = (long)(g - SPADE_GATE_RESET_DET) * 2 * DET_SEEDS;
        const spade_ep_outcome *bad = NULL;
        int differ = -1;
        for (int w = 0; det_ok && w < 2 && !bad; w++)
            for (int j = 0; j < DET_SEEDS && !bad; j++)
                if (det[base + 2 * j + w].end == SPADE_EP_FAILED) bad = &det[base + 2 * j + w];
        for (int i = 0; det_ok && i < DET_SEEDS && differ < 0; i++) {
            long a = base + 2 * i, b = base + 2 * (DET_SEEDS - 1 - i) + 1; /* seed 77 + i in each worker */
            if (tr.h[a] != tr.h[b] || det[a].ret != det[b].ret) differ = i;
        }
        if (!det_ok) verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "could not play: %s", det_err);
        else if (bad)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "seed %llu: %s: %.160s", (unsigned long long)bad->seed,
                    spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else if (differ >= 0)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL,
                    "seed %llu plays differently in a second worker (state outside S, or uninitialised memory)",
                    (unsigned long long)(77 + differ));
        else
            verdict(rep, (spade_gate)g, SPADE_GATE_PASS, "%d seeds, two workers, opposite orders%s", DET_SEEDS,
                    g == SPADE_GATE_REPLAY_DET ? ", an 8-action script" : "");
    }
    STOP_IF_FAILED(SPADE_GATE_PROBE);

    /* probe_actions and the agent gates (random, no-op, hint-echo, solve): one
     * run at the defaults */
    long at[SPADE_GATE_COUNT] = {0};
    int ok = 1;
    char perr[1024] = "";
    {
        int s = add_spec(r, filename, src, len, NULL, V, 0, n_default);
        add_agent(r, probe_agent());
        at[SPADE_GATE_PROBE] = r->n;
        for (long i = 0; i < 2 * N_PROBES; i++) add_req(r, s, 500 + (uint64_t)(i / N_PROBES));
        for (int g = SPADE_GATE_RANDOM; g <= SPADE_GATE_SOLVE; g++) {
            if (g == SPADE_GATE_SOLVE && !info->has_solve) continue;
            add_agent(r, g == SPADE_GATE_RANDOM      ? spade_agent_random(11)
                         : g == SPADE_GATE_NOOP      ? spade_agent_noop()
                         : g == SPADE_GATE_HINT_ECHO ? spade_agent_hint_echo(SPADE_TAIL_CYCLE)
                                                     : spade_agent_solve());
            at[g] = r->n;
            for (int i = 0; i < S; i++) add_req(r, s, 9000 + (uint64_t)i);
        }
        ok = play(sb, r, o, out, NULL, perr, sizeof perr) == 0;
    }
    {
        long n = 2 * N_PROBES;
        const spade_ep_outcome *po = out + at[SPADE_GATE_PROBE];
        const spade_ep_outcome *bad = ok ? first_failure(po, n) : NULL;
        static const char *const what[N_PROBES] = {"the empty action", "\"1\"", "\"test\"", "\"42\"", "\"\\boxed{1}\"",
                                                   "a 4 KiB line", "binary bytes"};
        if (!ok) verdict(rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "could not play: %s", perr);
        else if (bad)
            verdict(rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "%s made a failure: %s: %.160s", what[(bad - po) % N_PROBES],
                    spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else verdict(rep, SPADE_GATE_PROBE, SPADE_GATE_PASS, "%d probes, 2 seeds each, no failure", N_PROBES);
    }
    STOP_IF_FAILED(SPADE_GATE_RANDOM);

    for (int g = SPADE_GATE_RANDOM; g <= SPADE_GATE_SOLVE; g++) {
        if (g == SPADE_GATE_SOLVE && !info->has_solve) {
            if (o->require_solve) verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_FAIL, "no SOLVE (designer.require_solve = true)");
            else verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_PASS, "no SOLVE (not required)");
            continue;
        }
        const spade_ep_outcome *go = out + at[g];
        double rt = ok ? rate(go, S) : 0;
        long wins = (long)floor(rt * S + 0.5);
        const spade_ep_outcome *bad = ok ? first_failure(go, S) : NULL;
        if (g == SPADE_GATE_RANDOM) rep->random_rate = rt;
        if (g == SPADE_GATE_NOOP) rep->noop_rate = rt;
        if (g == SPADE_GATE_HINT_ECHO) rep->hint_echo_rate = rt;
        if (g == SPADE_GATE_SOLVE) rep->solve_rate = rt;
        if (!ok) verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "could not play: %s", perr);
        else if (bad)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "seed %llu: %s: %.160s", (unsigned long long)bad->seed,
                    spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else if (g == SPADE_GATE_RANDOM && rt > o->random_max + 1e-12)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "the random agent won %ld of %d seeds (at most %.0f%%)", wins, S,
                    100 * o->random_max);
        else if ((g == SPADE_GATE_NOOP || g == SPADE_GATE_HINT_ECHO) && wins > 0)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "%s won %ld of %d seeds",
                    g == SPADE_GATE_NOOP ? "the empty action" : "echoing the hint", wins, S);
        else if (g == SPADE_GATE_SOLVE && wins < S)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "SOLVE won only %ld of %d seeds", wins, S);
        else verdict(rep, (spade_gate)g, SPADE_GATE_PASS, "won %ld of %d seeds", wins, S);
        STOP_IF_FAILED(g + 1);
    }

    /* novelty */
    if (o->n_refs > 0 && o->refs) {
        double *x = malloc((size_t)o->dim * sizeof *x), best = -1, nx = 0;
        int at_ = -1;
        if (!x) {
            verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "out of memory");
        } else {
            if (o->embedding) memcpy(x, o->embedding, (size_t)o->dim * sizeof *x);
            else spade_vendi_embed(src, len, x, o->dim);
            for (int k = 0; k < o->dim; k++) nx += x[k] * x[k];
            for (int q = 0; q < o->n_refs; q++) {
                const double *y = o->refs + (size_t)q * o->dim;
                double dot = 0, ny = 0;
                for (int k = 0; k < o->dim; k++) dot += x[k] * y[k], ny += y[k] * y[k];
                double c = nx > 0 && ny > 0 ? dot / sqrt(nx * ny) : 0;
                if (c > best) best = c, at_ = q;
            }
            free(x);
            rep->max_cosine = best;
            const char *name = at_ >= 0 && o->ref_names ? o->ref_names[at_] : "a reference";
            if (best > o->novelty_max)
                verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "a near-duplicate of %s (cosine %.3f > %.2f)", name, best,
                        o->novelty_max);
            else verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "nearest %s at cosine %.3f", name, best);
        }
    } else verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "no reference environments to compare with");
    rc = 0;
done:
    spade_vecenv_free(V);
    if (r) {
        free(r->req);
        free(r->wants);
        free(r->m.v);
        free(r->m.act);
        free(r->m.at);
    }
    free(r);
    free(det);
    free(lim);
    free(out);
    free(tr.h);
    return rc;
#undef SKIP_REST
#undef STOP_IF_FAILED
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
