/* gates_ref.c — the slow reference of the designer's gates: designer/gates.c
 * as it was before the gates shared workers and runs (a vector env, so a
 * spawn and a compile, for every gate's play and every param corner; one
 * play per gate), with the gates' seeds of spade_gate_seed. It judges the
 * gates that were there then (constant_agent, obs_echo and winnable are
 * newer, hint_echo then echoed the hint's pieces in order only, novelty
 * compared text only); tests/test_gates_fast.c checks that the fast gates
 * give the same lines for the gates both judge alike, on every environment
 * it plays.
 * What it is not: built into spade; only the test links it.
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

int gates_run_reference(spade_sandbox *sb, const char *filename, const char *src, size_t len, const spade_gate_opts *o,
                        spade_gate_report *rep, char *err, size_t errlen);

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
    uint64_t *h; /* [n] FNV-1a over every observation, action, reward and the end */
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

/* Plays reqs through agent; out gets the outcomes. tr (may be NULL) the
 * traces; poison: the workers' fresh memory (0: off). */
static int play_poisoned(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, const spade_ep_request *reqs,
                         long n, spade_agent *agent, const spade_gate_opts *o, spade_ep_outcome *out, trace *tr,
                         uint64_t poison, char *err, size_t errlen) {
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = o->max_live;
    eo.poison = poison;
    if (tr) {
        for (long i = 0; i < n; i++) tr->h[i] = 1469598103934665603ULL;
        eo.on_event = on_event;
        eo.ctx = tr;
    }
    int rc = agent ? spade_episodes_play(sb, specs, n_specs, reqs, n, agent, &eo, out, err, errlen) : -1;
    if (!agent) spade_errf(err, errlen, "out of memory for an agent");
    if (agent) spade_agent_free(agent);
    return rc < 0 ? -1 : 0;
}

static int play(spade_sandbox *sb, const spade_ep_spec *specs, int n_specs, const spade_ep_request *reqs, long n,
                spade_agent *agent, const spade_gate_opts *o, spade_ep_outcome *out, trace *tr, char *err,
                size_t errlen) {
    return play_poisoned(sb, specs, n_specs, reqs, n, agent, o, out, tr, 0, err, errlen);
}

static const spade_ep_outcome *first_failure(const spade_ep_outcome *out, long n) {
    for (long i = 0; i < n; i++)
        if (out[i].end == SPADE_EP_FAILED) return &out[i];
    return NULL;
}

/* ---- the probe agent: episode e sends probe e % n every step ---- */

#define N_PROBES 7
static char long_line[4097];
static const char binary_probe[] = {'\x01', '\x00', '\xff', 'A', '\x7f', '\n', '\x1b', '[', '2', 'J'};

static int probe_act(void *ctx, int n, const spade_ep_view *v, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx, (void)err, (void)errlen;
    static const char *const text[] = {"", "1", "test", "42", "\\boxed{1}"};
    for (int i = 0; i < n; i++) {
        int k = (int)(v[i].episode % N_PROBES);
        acts[i] = (spade_ep_act){0};
        if (k < 5)
            acts[i].text = text[k], acts[i].len = strlen(text[k]);
        else if (k == 5)
            acts[i].text = long_line, acts[i].len = sizeof long_line - 1;
        else
            acts[i].text = binary_probe, acts[i].len = sizeof binary_probe;
    }
    return 0;
}

static spade_agent *probe_agent(void) {
    spade_agent *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    memset(long_line, 'x', sizeof long_line - 1);
    a->name = "probe";
    a->act = probe_act;
    return a;
}

/* ---- the first-observation agent: ends every episode before its first step ---- */

static int stop_act(void *ctx, int n, const spade_ep_view *v, spade_ep_act *acts, char *err, size_t errlen) {
    (void)ctx, (void)v, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) acts[i] = (spade_ep_act){.text = NULL, .stop = "first_observation"};
    return 0;
}

static spade_agent *stop_agent(void) {
    spade_agent *a = calloc(1, sizeof *a);
    if (a) a->name = "first-observation", a->act = stop_act;
    return a;
}

/* ---- the gates ---- */

static double rate(const spade_ep_outcome *out, long n) {
    long k = 0;
    for (long i = 0; i < n; i++) k += out[i].success;
    return n ? (double)k / (double)n : 0;
}

/* A spec per param corner: defaults, then each param alone at its min and at its max. */
static int corner_specs(const spade_env_info *info, const char *file, const char *src, size_t len, spade_ep_spec *specs,
                        char (*params)[256]) {
    int n = 0;
    specs[n++] = (spade_ep_spec){.filename = file, .source = src, .len = len};
    for (int k = 0; k < info->n_params && n + 2 <= 2 * SPADE_INFO_MAX_PARAMS + 1; k++)
        for (int m = 0; m < 2; m++) {
            const spade_param_info *p = &info->params[k];
            double v = m ? p->max : p->min;
            if (p->type == SPADE_PARAM_INT)
                snprintf(params[n], 256, "%s=%.0f", p->name, v);
            else
                snprintf(params[n], 256, "%s=%.17g", p->name, v);
            specs[n] = (spade_ep_spec){.filename = file, .source = src, .len = len, .params = params[n]};
            n++;
        }
    return n;
}

int gates_run_reference(spade_sandbox *sb, const char *filename, const char *src, size_t len, const spade_gate_opts *o,
                        spade_gate_report *rep, char *err, size_t errlen) {
    memset(rep, 0, sizeof *rep);
    rep->first_failed = -1;
    rep->max_cosine = NAN;
    int S = o->seeds > 0 ? o->seeds : 20;
    long cap = (long)S * (2 * SPADE_INFO_MAX_PARAMS + 1) * 2 + N_PROBES * 2;
    spade_ep_request *req = calloc((size_t)cap, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)cap, sizeof *out), *out2 = calloc((size_t)cap, sizeof *out2);
    trace t1 = {.h = calloc((size_t)cap, sizeof(uint64_t)), .n = cap},
          t2 = {.h = calloc((size_t)cap, sizeof(uint64_t)), .n = cap};
    static spade_ep_spec specs[2 * SPADE_INFO_MAX_PARAMS + 1];
    static char params[2 * SPADE_INFO_MAX_PARAMS + 1][256];
    spade_ep_spec def = {.filename = filename, .source = src, .len = len};
    int rc = -1;
    if (!req || !out || !out2 || !t1.h || !t2.h) {
        spade_errf(err, errlen, "gates: out of memory");
        goto done;
    }
#define SKIP_REST(from)                                                                                                \
    for (int g_ = (from); g_ < SPADE_GATE_COUNT; g_++)                                                                 \
        if (!rep->status[g_])                                                                                          \
    verdict(rep, (spade_gate)g_, SPADE_GATE_SKIP, "not run: %s failed", NAMES[rep->first_failed])
#define STOP_IF_FAILED(next)                                                                                           \
    if (rep->first_failed >= 0 && (o->stop_at_first || rep->first_failed == 0)) {                                      \
        SKIP_REST(next);                                                                                               \
        rc = 0;                                                                                                        \
        goto done;                                                                                                     \
    }

    /* compile */
    spade_worker *w = NULL;
    spade_failure f;
    if (spade_worker_load(sb, filename, src, len, &w, &f) < 0) {
        verdict(rep, SPADE_GATE_COMPILE, SPADE_GATE_FAIL, "%s: %s", spade_outcome_name(f.outcome), f.message);
    } else {
        rep->info = *spade_worker_info(w);
        spade_worker_free(w);
        verdict(rep, SPADE_GATE_COMPILE, SPADE_GATE_PASS, "%s%s%s%s, %d params%s", rep->info.name,
                rep->info.family[0] ? " (" : "", rep->info.family, rep->info.family[0] ? ")" : "", rep->info.n_params,
                rep->info.has_solve ? ", SOLVE" : "");
    }
    STOP_IF_FAILED(SPADE_GATE_LIMITS);
    const spade_env_info *info = &rep->info;

    /* limits: random and SOLVE at the defaults and at every param's min and max */
    {
        int ns = corner_specs(info, filename, src, len, specs, params), per = 4;
        long n = 0;
        for (int s = 0; s < ns; s++)
            for (int k = 0; k < per; k++)
                req[n++] = (spade_ep_request){.spec = s, .seed = spade_gate_seed(o, src, len, 1, k)};
        double t0 = now_s();
        int ok = play(sb, specs, ns, req, n, spade_agent_random(7), o, out, NULL, err, errlen) == 0;
        long half = n;
        if (ok && info->has_solve) {
            ok = play(sb, specs, ns, req, n, spade_agent_solve(), o, out + n, NULL, err, errlen) == 0;
            n *= 2;
        }
        double secs = now_s() - t0;
        long steps = 0;
        const spade_ep_outcome *bad = NULL, *big = NULL;
        for (long i = 0; ok && i < n; i++) {
            steps += out[i].steps;
            if (!bad && out[i].end == SPADE_EP_FAILED) bad = &out[i];
            if (!big && fabs(out[i].ret) > 1 + 1e-9) big = &out[i];
        }
        rep->ms_per_step = steps ? 1000 * secs / (double)steps : 0;
        if (!ok)
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "could not play: %s", err);
        else if (!(info->success > -1 && info->success <= 1))
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL,
                    "success threshold %g cannot be reached by a return in [-1, 1]", info->success);
        else if (bad)
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "%s at %s, seed %llu (%s agent): %s: %.160s",
                    spade_outcome_name(bad->failure.outcome),
                    specs[bad->spec].params ? specs[bad->spec].params : "defaults", (unsigned long long)bad->seed,
                    bad - out < half ? "random" : "solve", spade_outcome_name(bad->failure.outcome),
                    bad->failure.message);
        else if (big)
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "return %g outside [-1, 1] at %s, seed %llu", big->ret,
                    specs[big->spec].params ? specs[big->spec].params : "defaults", (unsigned long long)big->seed);
        else if (rep->ms_per_step > o->max_step_ms)
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_FAIL, "%.2f ms per step on average (designer.max_step_ms = %g)",
                    rep->ms_per_step, o->max_step_ms);
        else
            verdict(rep, SPADE_GATE_LIMITS, SPADE_GATE_PASS, "%d settings, %ld episodes, %.3f ms per step", ns, n,
                    rep->ms_per_step);
    }
    STOP_IF_FAILED(SPADE_GATE_RESET_DET);

    /* reset_deterministic and replay_deterministic: the same seeds in opposite orders, two workers */
    for (int g = SPADE_GATE_RESET_DET; g <= SPADE_GATE_REPLAY_DET; g++) {
        static const char *const script[] = {"1", "north", "yes", "a", "42", "b", "2", "east"};
        int nseeds = 6;
        for (int i = 0; i < nseeds; i++)
            req[i] = (spade_ep_request){.spec = 0, .seed = spade_gate_seed(o, src, len, 0, i)};
        for (int i = 0; i < nseeds; i++) req[nseeds + i] = req[nseeds - 1 - i];
        int reset = g == SPADE_GATE_RESET_DET;
        /* two workers whose fresh stack and heap hold different garbage: with one poison seed,
         * adjacent instances get complementary patterns (core/host.c), and the opposite order puts
         * each of the 6 seeds on an instance of the other parity, so every bit of an uninitialised
         * read differs between the runs */
        int ok = play_poisoned(sb, &def, 1, req, nseeds,
                               reset ? stop_agent() : spade_agent_script(script, 8, SPADE_TAIL_STOP), o, out, &t1,
                               0x5eed0001ULL, err, errlen) == 0 &&
                 play_poisoned(sb, &def, 1, req + nseeds, nseeds,
                               reset ? stop_agent() : spade_agent_script(script, 8, SPADE_TAIL_STOP), o, out2, &t2,
                               0x5eed0001ULL, err, errlen) == 0;
        int differ = -1;
        for (int i = 0; ok && i < nseeds && differ < 0; i++)
            if (t1.h[i] != t2.h[nseeds - 1 - i] || out[i].ret != out2[nseeds - 1 - i].ret) differ = i;
        const spade_ep_outcome *bad = ok ? first_failure(out, nseeds) : NULL;
        if (!bad && ok) bad = first_failure(out2, nseeds);
        if (!ok)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "could not play: %s", err);
        else if (bad)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "seed %llu: %s: %.160s", (unsigned long long)bad->seed,
                    spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else if (differ >= 0)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL,
                    "seed %llu plays differently in a second worker (state outside S, or uninitialised memory)",
                    (unsigned long long)req[differ].seed);
        else
            verdict(rep, (spade_gate)g, SPADE_GATE_PASS, "%d seeds, two workers, opposite orders%s", nseeds,
                    g == SPADE_GATE_REPLAY_DET ? ", an 8-action script" : "");
    }
    STOP_IF_FAILED(SPADE_GATE_PROBE);

    /* probe_actions */
    {
        long n = 2 * N_PROBES;
        for (long i = 0; i < n; i++)
            req[i] = (spade_ep_request){0, spade_gate_seed(o, src, len, 2, (int)(i / N_PROBES)), 0, 0};
        int ok = play(sb, &def, 1, req, n, probe_agent(), o, out, NULL, err, errlen) == 0;
        const spade_ep_outcome *bad = ok ? first_failure(out, n) : NULL;
        static const char *const what[N_PROBES] = {"the empty action", "\"1\"",        "\"test\"",    "\"42\"",
                                                   "\"\\boxed{1}\"",   "a 4 KiB line", "binary bytes"};
        if (!ok)
            verdict(rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "could not play: %s", err);
        else if (bad)
            verdict(rep, SPADE_GATE_PROBE, SPADE_GATE_FAIL, "%s made a failure: %s: %.160s",
                    what[bad->episode % N_PROBES], spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else
            verdict(rep, SPADE_GATE_PROBE, SPADE_GATE_PASS, "%d probes, 2 seeds each, no failure", N_PROBES);
    }
    STOP_IF_FAILED(SPADE_GATE_RANDOM);

    /* the agent gates: random, no-op, hint-echo, solve */
    for (int g = SPADE_GATE_RANDOM; g <= SPADE_GATE_SOLVE; g++) {
        if (g == SPADE_GATE_CONSTANT || g == SPADE_GATE_OBS_ECHO) continue; /* newer than the reference */
        if (g == SPADE_GATE_SOLVE && !info->has_solve) {
            if (o->require_solve)
                verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_FAIL, "no SOLVE (designer.require_solve = true)");
            else
                verdict(rep, SPADE_GATE_SOLVE, SPADE_GATE_PASS, "no SOLVE (not required)");
            continue;
        }
        for (int i = 0; i < S; i++) req[i] = (spade_ep_request){.spec = 0, .seed = spade_gate_seed(o, src, len, 3, i)};
        spade_agent *a = g == SPADE_GATE_RANDOM      ? spade_agent_random(11)
                         : g == SPADE_GATE_NOOP      ? spade_agent_noop()
                         : g == SPADE_GATE_HINT_ECHO ? spade_agent_hint_echo(SPADE_TAIL_CYCLE)
                                                     : spade_agent_solve();
        int ok = play(sb, &def, 1, req, S, a, o, out, NULL, err, errlen) == 0;
        double r = ok ? rate(out, S) : 0;
        long wins = (long)floor(r * S + 0.5);
        const spade_ep_outcome *bad = ok ? first_failure(out, S) : NULL;
        if (g == SPADE_GATE_RANDOM) rep->random_rate = r;
        if (g == SPADE_GATE_NOOP) rep->noop_rate = r;
        if (g == SPADE_GATE_HINT_ECHO) rep->hint_echo_rate = r;
        if (g == SPADE_GATE_SOLVE) rep->solve_rate = r;
        if (!ok)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "could not play: %s", err);
        else if (bad)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "seed %llu: %s: %.160s", (unsigned long long)bad->seed,
                    spade_outcome_name(bad->failure.outcome), bad->failure.message);
        else if (g == SPADE_GATE_RANDOM && r > o->random_max + 1e-12)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "the random agent won %ld of %d seeds (at most %.0f%%)", wins,
                    S, 100 * o->random_max);
        else if ((g == SPADE_GATE_NOOP || g == SPADE_GATE_HINT_ECHO) && wins > 0)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "%s won %ld of %d seeds",
                    g == SPADE_GATE_NOOP ? "the empty action" : "echoing the hint", wins, S);
        else if (g == SPADE_GATE_SOLVE && wins < S)
            verdict(rep, (spade_gate)g, SPADE_GATE_FAIL, "SOLVE won only %ld of %d seeds", wins, S);
        else
            verdict(rep, (spade_gate)g, SPADE_GATE_PASS, "won %ld of %d seeds", wins, S);
        STOP_IF_FAILED(g + 1 + (g == SPADE_GATE_NOOP) * 2);
    }

    /* novelty */
    if (o->n_refs > 0 && o->refs) {
        double *x = malloc((size_t)o->dim * sizeof *x), best = -1, nx = 0;
        int at = -1;
        if (!x) {
            verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "out of memory");
        } else {
            spade_vendi_embed(src, len, x, o->dim);
            for (int k = 0; k < o->dim; k++) nx += x[k] * x[k];
            for (int r = 0; r < o->n_refs; r++) {
                const double *y = o->refs + (size_t)r * o->dim;
                double dot = 0, ny = 0;
                for (int k = 0; k < o->dim; k++) dot += x[k] * y[k], ny += y[k] * y[k];
                double c = nx > 0 && ny > 0 ? dot / sqrt(nx * ny) : 0;
                if (c > best) best = c, at = r;
            }
            free(x);
            rep->max_cosine = best;
            const char *name = at >= 0 && o->ref_names ? o->ref_names[at] : "a reference";
            if (best > o->novelty_max)
                verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_FAIL, "a near-duplicate of %s (cosine %.3f > %.2f)", name,
                        best, o->novelty_max);
            else
                verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "nearest %s at cosine %.3f", name, best);
        }
    } else
        verdict(rep, SPADE_GATE_NOVELTY, SPADE_GATE_PASS, "no reference environments to compare with");
    rc = 0;
done:
    free(req);
    free(out);
    free(out2);
    free(t1.h);
    free(t2.h);
    return rc;
#undef SKIP_REST
#undef STOP_IF_FAILED
}
