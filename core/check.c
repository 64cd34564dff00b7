/* check.c — the environment checker (see check.h for the list of checks).
 *
 * Every check runs on one poisoned vector env at the params given (one
 * worker): reset and hint call its instances 0 and 1 directly (two instances
 * side by side is what exposes hidden global state: a static counter makes the
 * second reset differ from the first); the checks that play episodes are runs
 * of the episode layer (core/episodes.h) on it, with core's agents (solve,
 * random, noop, probes) or the mixed probing agent here, so a crash mid-episode
 * is that episode's outcome, found by the layer's replays. A failure kills the
 * worker (the sandbox trusts nothing after one); the next call loads it again.
 * param_extremes has a vector env per setting (instances take their params
 * when created).
 *
 * What it is not: a sandbox (core/sandbox contains the code), a second episode
 * loop, or a trainer gate (designer/gates.c).
 */
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "episodes.h"
#include "errbuf.h"
#include "host.h"

#define RANDOM_WIN_MAX 0.15 /* docs/architecture.md: a random guesser wins at most 15% */
#define DETERMINISM_STEPS 64
#define EXTREME_RANDOM_COMBOS 4 /* random parameter combinations, besides each one's min and max */
#define EXTREME_SEEDS 2 /* seeds played at each parameter setting */
#define LONG_EPISODE_CAP 2000 /* steps of a long random episode, at most (max_steps may be 1e6) */
/* Worker memory is poisoned for uninitialised reads (spade_host_set_poison);
 * the pattern also depends on the instance, so the two side-by-side
 * instances see different garbage. Any nonzero seed does. */
#define CHECK_POISON 0x5ade5ade0badf00dULL
#define RANDOM_AGENT_SEED 0x5eed5eedULL /* spade_agent_random's, for random_agent and param_extremes */

void spade_check_opts_default(spade_check_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seeds = 5;
    o->solve_seeds = 20;
}

size_t spade_random_action(uint64_t *rng, char *buf, size_t cap)
{
    static const char *const dirs[] = {"up",   "down", "left", "right", "north", "south", "east",
                                       "west", "n",    "s",    "e",     "w",     "stay"};
    static const char *const words[] = {"yes",  "no", "a",    "b",    "c",    "d",    "true", "false", "hello",
                                        "stop", "go", "help", "look", "take", "open", "pass", "0",     "1"};
    if (!cap)
        return 0;
    uint64_t r = spade_splitmix64(rng);
    int kind = (int)(r % 10);
    int n;
    if (kind < 4) { /* small integers are what most answers are */
        long v = (long)(spade_splitmix64(rng) % 211) - 10;
        n = snprintf(buf, cap, "%ld", v);
    } else if (kind < 5) {
        long v = (long)(spade_splitmix64(rng) % 2000001) - 1000000;
        n = snprintf(buf, cap, "%ld", v);
    } else if (kind < 7) {
        n = snprintf(buf, cap, "%s", dirs[spade_splitmix64(rng) % (sizeof dirs / sizeof *dirs)]);
    } else if (kind < 9) {
        n = snprintf(buf, cap, "%s", words[spade_splitmix64(rng) % (sizeof words / sizeof *words)]);
    } else {
        int len = 1 + (int)(spade_splitmix64(rng) % 6);
        n = 0;
        for (int i = 0; i < len && (size_t)n + 1 < cap; i++)
            buf[n++] = (char)('a' + spade_splitmix64(rng) % 26);
        buf[n] = 0;
    }
    if (n < 0)
        n = 0;
    if ((size_t)n >= cap)
        n = (int)cap - 1;
    return (size_t)n;
}

/* ---- the checker's state --------------------------------------------------- */

typedef struct ctx {
    spade_sandbox *sb;
    const char *filename, *source;
    size_t len;
    const char *params;
    spade_check_opts o;
    spade_check_report *rep;
    size_t off; /* end of rep->text */

    /* the vector env every check plays on at the params given (one worker
     * start for all of them): instances id[0] and id[1] side by side for the
     * direct calls of reset and hint, all of them for the episode layer */
    spade_vecenv *vec;
    int id[2];
    spade_env_info info;
    double pvals[SPADE_INFO_MAX_PARAMS];
    int internal; /* a worker could not be spawned again */

    const char *check; /* the check running now, for obs_size's report */
    int timed_out; /* a call timed out: the remaining checks are skipped */
    char timeout_what[600];
    char timeout_why[1400]; /* the failure, with the deadline */
    int failed_at_timeout;  /* rep->failed when it happened: no FAIL since means none named it */
    size_t max_obs;
    int over; /* an output exceeded the cap */
    char over_where[256];
} ctx;

static void put(ctx *c, const char *kind, const char *name, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(ctx *c, const char *kind, const char *name, const char *fmt, ...)
{
    char line[1536];
    int n = snprintf(line, sizeof line, "%s %s", kind, name);
    if (fmt && *fmt && n >= 0 && (size_t)n < sizeof line) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
    }
    if (!strcmp(kind, "PASS"))
        c->rep->passed++;
    else if (!strcmp(kind, "FAIL"))
        c->rep->failed++;
    else if (!strcmp(kind, "WARN"))
        c->rep->warned++;
    size_t cap = sizeof c->rep->text;
    size_t need = strlen(line) + 1;
    if (c->off + need + 4 >= cap) {
        if (c->off + 4 < cap && strcmp(c->rep->text + (c->off >= 4 ? c->off - 4 : 0), "...\n")) {
            memcpy(c->rep->text + c->off, "...\n", 5);
            c->off += 4;
        }
        return;
    }
    memcpy(c->rep->text + c->off, line, need - 1);
    c->off += need - 1;
    c->rep->text[c->off++] = '\n';
    c->rep->text[c->off] = 0;
}

/* A short printable rendering of text for report lines. */
static const char *shown(const char *s, size_t len, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 8 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n')
            buf[o++] = '\\', buf[o++] = 'n';
        else if (ch == '\t')
            buf[o++] = '\\', buf[o++] = 't';
        else if (ch < 32 || ch >= 127)
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
        else
            buf[o++] = (char)ch;
        if (o > 120) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
    }
    buf[o] = 0;
    return buf;
}

static _Thread_local const char *timeout_option; /* of the spade_check call in progress (opts.timeout_option) */

static const char *why(const spade_failure *f, char *buf, size_t cap)
{
    if (f->signal)
        snprintf(buf, cap, "%s (signal %d): %s", spade_outcome_name(f->outcome), f->signal, f->message);
    else
        snprintf(buf, cap, "%s: %s", spade_outcome_name(f->outcome), f->message);
    size_t n = strlen(buf);
    if (f->outcome == SPADE_OUT_TIMEOUT && timeout_option && n < cap)
        snprintf(buf + n, cap - n, " (%s sets the deadline)", timeout_option);
    /* One line per check; what follows a newline (the source excerpt of a
     * compile error) is indented, so a reader of the report can still take
     * the lines that start with PASS/FAIL/WARN/SKIP as the checks. */
    return buf;
}

static void note_failure(ctx *c, const spade_failure *f, const char *where)
{
    /* One timeout stops the check: an environment that loops would cost a
     * deadline per call of every later check (28 s of silence, before). */
    if (f->outcome == SPADE_OUT_TIMEOUT && !c->timed_out) {
        c->timed_out = 1;
        snprintf(c->timeout_what, sizeof c->timeout_what, "%s during the %s check", where, c->check);
        why(f, c->timeout_why, sizeof c->timeout_why);
        c->failed_at_timeout = c->rep->failed;
    }
    if (f->outcome == SPADE_OUT_OUTPUT && !c->over) {
        c->over = 1;
        snprintf(c->over_where, sizeof c->over_where, "%s during the %s check", where, c->check);
    }
}

static void note_obs(ctx *c, size_t len)
{
    if (len > c->max_obs)
        c->max_obs = len;
}

/* The shared vector env, its worker loaded again after a failure killed it
 * (the sandbox trusts nothing after one). */
static spade_vecenv *vec_live(ctx *c, spade_failure *f)
{
    memset(f, 0, sizeof *f);
    if (!c->vec || spade_vecenv_revive(c->vec, f) != 0) {
        c->internal = 1;
        return NULL;
    }
    return c->vec;
}

static int reset_n(ctx *c, int n, const uint64_t *seeds, spade_step_result *res, spade_failure *f)
{
    spade_vecenv *v = vec_live(c, f);
    if (!v)
        return -1;
    if (spade_vecenv_reset_some(v, n, c->id, seeds, res, f) != 0) {
        note_failure(c, f, "reset");
        return -1;
    }
    for (int i = 0; i < n; i++)
        note_obs(c, res[i].obs_len);
    return 0;
}

/* Steps instances ids[0..n) (a subset of c->id) with one action each. */
static int step_ids(ctx *c, int n, const int *ids, const char *const *acts, const size_t *lens, spade_step_result *res,
                    spade_failure *f)
{
    spade_vecenv *v = vec_live(c, f);
    if (!v)
        return -1;
    if (spade_vecenv_step_some(v, n, ids, acts, lens, res, f) != 0) {
        note_failure(c, f, "step");
        return -1;
    }
    for (int i = 0; i < n; i++)
        note_obs(c, res[i].obs_len);
    return 0;
}

static int step_one(ctx *c, int inst, const char *act, size_t len, spade_step_result *res, spade_failure *f)
{
    return step_ids(c, 1, &c->id[inst], &act, &len, res, f);
}

/* The hint or the solve action of instance 0, copied (the worker's buffer is
 * reused by the next call). */
static char *text_call(ctx *c, int solve, size_t *len, spade_failure *f)
{
    spade_vecenv *v = vec_live(c, f);
    if (!v)
        return NULL;
    const char *t = NULL;
    size_t n = 0;
    int rc = solve ? spade_vecenv_solve(v, c->id[0], &t, &n, f) : spade_vecenv_hint(v, c->id[0], &t, &n, f);
    if (rc != 0) {
        note_failure(c, f, solve ? "solve" : "hint");
        return NULL;
    }
    note_obs(c, n);
    char *copy = malloc(n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, t ? t : "", n);
    copy[n] = 0;
    *len = n;
    return copy;
}

typedef struct saved {
    char *obs;
    size_t len;
    double reward;
    int terminated, truncated;
} saved;

static void save(saved *s, const spade_step_result *r)
{
    s->obs = malloc(r->obs_len + 1);
    if (s->obs) {
        memcpy(s->obs, r->obs, r->obs_len);
        s->obs[r->obs_len] = 0;
    }
    s->len = r->obs_len;
    s->reward = r->reward;
    s->terminated = r->terminated;
    s->truncated = r->truncated;
}

/* Where two observations first differ, for the report. */
static size_t first_diff(const char *a, size_t al, const char *b, size_t bl)
{
    size_t i = 0;
    while (i < al && i < bl && a[i] == b[i])
        i++;
    return i;
}

/* Same reward, counting NaN == NaN (an environment that rewards NaN is odd but
 * deterministic). */
static int same_reward(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

static int same_result(const spade_step_result *a, const spade_step_result *b)
{
    return a->obs_len == b->obs_len && !memcmp(a->obs, b->obs, a->obs_len) && same_reward(a->reward, b->reward) &&
           a->terminated == b->terminated && a->truncated == b->truncated;
}

/* ---- the checks ------------------------------------------------------------ */

static uint64_t seed_of(const ctx *c, int k)
{
    return c->o.first_seed + (uint64_t)k;
}

/* reset, reset_deterministic. Returns -1 when reset does not work
 * at all (the later checks cannot run). */
static int check_reset(ctx *c)
{
    c->check = "reset";
    int ns = c->o.seeds;
    saved *first = calloc((size_t)ns, sizeof *first);
    if (!first)
        return -1;
    char buf[1400], sh[256];
    int reset_ok = 1, det_ok = 1, any_ok = 0;
    char det_why[600] = "";
    spade_failure f;
    for (int k = 0; k < ns; k++) {
        uint64_t s[2] = {seed_of(c, k), seed_of(c, k)};
        spade_step_result r[2];
        if (reset_n(c, 2, s, r, &f) != 0) {
            if (reset_ok)
                put(c, "FAIL", "reset", ": seed %llu: %s", (unsigned long long)s[0], why(&f, buf, sizeof buf));
            reset_ok = 0;
            break; /* a hang would cost a deadline per seed */
        }
        if (r[0].obs_len == 0 || r[0].terminated || r[0].truncated) {
            if (reset_ok)
                put(c, "FAIL", "reset", ": seed %llu: %s", (unsigned long long)s[0],
                    r[0].obs_len == 0 ? "the first observation is empty (say() something in RESET)"
                                      : "the episode is over before the first step");
            reset_ok = 0;
        }
        any_ok = 1;
        if (det_ok && !same_result(&r[0], &r[1])) {
            size_t d = first_diff(r[0].obs, r[0].obs_len, r[1].obs, r[1].obs_len);
            snprintf(det_why, sizeof det_why,
                     ": seed %llu: two instances reset with the same seed differ at byte %zu (\"%s\"): state "
                     "outside S, such as a static variable written in RESET or STEP, or an uninitialised local "
                     "(the checker fills fresh memory differently for each instance)?",
                     (unsigned long long)s[0], d, shown(r[1].obs + d, r[1].obs_len - d, sh, sizeof sh));
            det_ok = 0;
        }
        save(&first[k], &r[0]);
        if (c->o.verbose && k == 0)
            put(c, "INFO", "first_observation", " (seed %llu): %s", (unsigned long long)s[0],
                shown(r[0].obs, r[0].obs_len, sh, sizeof sh));
    }
    if (!any_ok) {
        for (int k = 0; k < ns; k++)
            free(first[k].obs);
        free(first);
        return -1;
    }
    /* Reset again after other episodes: a reset must not depend on history. */
    if (det_ok && first[0].obs) {
        uint64_t s[2] = {seed_of(c, 0), seed_of(c, 0)};
        spade_step_result r[2];
        /* play a step on instance 0 first, so leftovers in memory would show */
        if (reset_n(c, 2, s, r, &f) == 0) {
            spade_step_result st;
            if (!r[0].terminated && !r[0].truncated)
                (void)step_one(c, 0, "1", 1, &st, &f);
            if (reset_n(c, 1, s, r, &f) == 0 &&
                (r[0].obs_len != first[0].len || memcmp(r[0].obs, first[0].obs, first[0].len))) {
                size_t d = first_diff(first[0].obs, first[0].len, r[0].obs, r[0].obs_len);
                snprintf(det_why, sizeof det_why,
                         ": seed %llu: reset after a played episode differs from the first reset at byte %zu",
                         (unsigned long long)s[0], d);
                det_ok = 0;
            }
        }
    }
    if (reset_ok)
        put(c, "PASS", "reset", " (%d seed%s)", ns, ns == 1 ? "" : "s");
    if (det_ok)
        put(c, "PASS", "reset_deterministic", NULL);
    else
        put(c, "FAIL", "reset_deterministic", "%s", det_why);

    for (int k = 0; k < ns; k++)
        free(first[k].obs);
    free(first);
    return 0;
}

/* ---- playing through the episode layer ------------------------------------- */

/* What one episode showed, step by step, for the determinism checks: a hash
 * of everything (seeds_vary) and, when kept, every observation and action
 * (step_deterministic names the byte where two episodes part). */
typedef struct ep_log {
    uint64_t hash; /* FNV-1a: first observation, then each action, observation and reward */
    int n, cap;    /* steps kept */
    saved *obs;    /* [n]: the result of step t + 1 */
    char **act;    /* [n]: the action of step t + 1 */
    size_t *act_len;
    int n_act;
} ep_log;

typedef struct play_ctx {
    ctx *c;
    ep_log *log; /* [episodes] or NULL */
    long n_log;
    int keep;
} play_ctx;

static void mix(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        *h = (*h ^ b[i]) * 1099511628211ULL;
}

static void on_event(void *arg, const spade_ep_event *e)
{
    play_ctx *pc = arg;
    if (e->kind == SPADE_EV_OBS)
        note_obs(pc->c, e->len);
    if (!pc->log || e->episode < 0 || e->episode >= pc->n_log)
        return;
    ep_log *l = &pc->log[e->episode];
    mix(&l->hash, e->text, e->len);
    if (e->kind == SPADE_EV_OBS && e->step > 0)
        mix(&l->hash, &e->reward, sizeof e->reward);
    if (!pc->keep || (e->kind == SPADE_EV_OBS && e->step == 0))
        return;
    if ((e->kind == SPADE_EV_OBS ? l->n : l->n_act) >= l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        saved *o = realloc(l->obs, (size_t)cap * sizeof *o);
        if (o)
            l->obs = o;
        char **a = realloc(l->act, (size_t)cap * sizeof *a);
        if (a)
            l->act = a;
        size_t *al = realloc(l->act_len, (size_t)cap * sizeof *al);
        if (al)
            l->act_len = al;
        if (!o || !a || !al)
            return; /* out of memory: the log ends here, and looks like an episode that ended */
        l->cap = cap;
    }
    if (e->kind == SPADE_EV_OBS) {
        spade_step_result r;
        memset(&r, 0, sizeof r);
        r.obs = e->text;
        r.obs_len = e->len;
        r.reward = e->reward;
        save(&l->obs[l->n++], &r);
    } else {
        char *a = malloc(e->len + 1);
        if (!a)
            return;
        memcpy(a, e->text, e->len);
        a[e->len] = 0;
        l->act[l->n_act] = a;
        l->act_len[l->n_act++] = e->len;
    }
}

static void free_logs(ep_log *log, long n)
{
    for (long i = 0; log && i < n; i++) {
        for (int t = 0; t < log[i].n; t++)
            free(log[i].obs[t].obs);
        for (int t = 0; t < log[i].n_act; t++)
            free(log[i].act[t]);
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

static int watch_begin(void *arg, const spade_ep_view *v, void **state, char *err, size_t errlen)
{
    watch *w = arg;
    return w->inner->begin ? w->inner->begin(w->inner->ctx, v, state, err, errlen) : 0;
}

static void watch_end(void *arg, const spade_ep_view *v, void *state, const spade_ep_outcome *o)
{
    watch *w = arg;
    if (w->inner->end)
        w->inner->end(w->inner->ctx, v, state, o);
}

static int watch_act(void *arg, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen)
{
    watch *w = arg;
    ctx *c = w->c;
    if (n > w->n_cap) {
        spade_ep_view *v = realloc(w->v, (size_t)n * sizeof *v);
        if (v)
            w->v = v;
        spade_ep_act *a = realloc(w->a, (size_t)n * sizeof *a);
        if (a)
            w->a = a;
        int *at = realloc(w->at, (size_t)n * sizeof *at);
        if (at)
            w->at = at;
        if (!v || !a || !at)
            return spade_errf(err, errlen, "checker: out of memory"), -1;
        w->n_cap = n;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        const spade_ep_view *v = &views[i];
        if (v->solve) {
            note_obs(c, v->solve_len);
            if (w->show_solve && c->o.verbose && v->step == 0 && v->seed == seed_of(c, 0)) {
                char sh[256];
                put(c, "INFO", "solve_action", " (seed %llu): %s", (unsigned long long)v->seed,
                    shown(v->solve, v->solve_len, sh, sizeof sh));
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
    if (!m)
        return 0;
    int rc = w->inner->act(w->inner->ctx, m, w->v, w->a, err, errlen);
    for (int j = 0; rc == 0 && j < m; j++)
        acts[w->at[j]] = w->a[j];
    return rc;
}

/* The default spec: the source at the params given. */
static spade_ep_spec spec_given(const ctx *c)
{
    spade_ep_spec s = {c->filename, c->source, c->len, c->params, 0};
    return s;
}

/* Plays reqs[0..n) through inner (freed here; NULL: out of memory) wrapped
 * in a watch, every worker poisoned, the first timeout stopping the run;
 * vecs (may be NULL): the specs' vector envs (a NULL one: the spec's own),
 * each played on all its envs (opts.places of episodes.h);
 * max_live: episodes at once (0: all of them, up to 256).
 * Failed episodes are noted (timeouts, oversized outputs). log (may be NULL)
 * gets what each episode showed. Returns 0, or -1 after a FAIL line for the
 * check c->check when the run itself could not go on. */
static int play_eps(ctx *c, const spade_ep_spec *specs, int n_specs, spade_vecenv *const *vecs, int max_live,
                    const spade_ep_request *reqs, long n,
                    spade_agent *inner, int cap, int stop_on_win, int show_solve, ep_log *log, int keep,
                    spade_ep_outcome *out)
{
    char err[1024] = "";
    int rc = -1;
    if (!inner) {
        spade_errf(err, sizeof err, "out of memory for an agent");
    } else {
        watch w = {c, inner, cap, stop_on_win, show_solve, NULL, NULL, NULL, 0};
        spade_agent a = {inner->name, inner->wants, &w, watch_begin, watch_act, watch_end, NULL};
        play_ctx pc = {c, log, log ? n : 0, keep};
        for (long i = 0; log && i < n; i++)
            log[i].hash = 1469598103934665603ULL;
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
        put(c, "FAIL", c->check, ": the episode layer failed: %s", err);
        return -1;
    }
    for (long i = 0; i < n; i++)
        if (out[i].end == SPADE_EP_FAILED) {
            note_failure(c, &out[i].failure, spade_ep_op_name(out[i].failed_in));
            if (out[i].failure.outcome == SPADE_OUT_INTERNAL)
                c->internal = 1;
        }
    return 0;
}

/* Why a failed episode failed, as the report says it: "reset: ...",
 * "step 3: ...", "step 3: solve: ...". */
static const char *ep_why(const spade_ep_outcome *o, char *buf, size_t cap)
{
    char w[1400];
    why(&o->failure, w, sizeof w);
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
    default:
        snprintf(buf, cap, "step %d: %.1300s", o->steps + 1, w);
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

static int mixed_begin(void *arg, const spade_ep_view *v, void **state, char *err, size_t errlen)
{
    const mixed *m = arg;
    mixed_ep *e = malloc(sizeof *e);
    if (!e)
        return spade_errf(err, errlen, "checker: out of memory"), -1;
    e->rng = v->seed * m->mul + m->add;
    *state = e;
    return 0;
}

static void mixed_end(void *arg, const spade_ep_view *v, void *state, const spade_ep_outcome *o)
{
    (void)arg, (void)v, (void)o;
    free(state);
}

static int mixed_act(void *arg, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen)
{
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

static spade_agent *mixed_agent(int use_solve, uint64_t mul, uint64_t add, int pairs)
{
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

/* Different seeds should give different episodes. The first observation alone
 * is not enough to tell (a hidden-number game says the same thing every time),
 * so each seed's fingerprint is its first observation plus a few steps of
 * reference and fixed random moves with what they get back. The random moves
 * are the same for every seed; the reference moves enter the fingerprint too,
 * since moves that depend on the seed mean the seed matters. One episode at a
 * time, all on instance 0: its poisoned memory is the same for every seed, so
 * an uninitialised read cannot pass for a seed that matters. */
static void check_seeds_vary(ctx *c)
{
    c->check = "seeds_vary";
    int ns = c->o.seeds;
    if (ns < 2) {
        put(c, "SKIP", "seeds_vary", ": only one seed");
        return;
    }
    spade_ep_request *req = calloc((size_t)ns, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)ns, sizeof *out);
    ep_log *log = calloc((size_t)ns, sizeof *log);
    if (!req || !out || !log) {
        free(req), free(out), free(log);
        return;
    }
    for (int k = 0; k < ns; k++)
        req[k] = (spade_ep_request){0, seed_of(c, k), 0, 0};
    spade_ep_spec spec = spec_given(c);
    int limit = c->info.max_steps < 8 ? c->info.max_steps : 8;
    spade_agent *a = mixed_agent(c->info.has_solve, 0, 12345, 0);
    if (play_eps(c, &spec, 1, &c->vec, 1, req, ns, a, limit, 0, 0, log, 0, out) == 0) {
        int done = 0;
        /* the seeds before the first that could not reset (a crash later in
         * an episode still leaves the fingerprint of what it showed) */
        while (done < ns && out[done].end != SPADE_EP_STOPPED &&
               !(out[done].end == SPADE_EP_FAILED &&
                 (out[done].failed_in == SPADE_EP_OP_RESET || out[done].failed_in == SPADE_EP_OP_LOAD)))
            done++;
        int distinct = 0;
        for (int k = 0; k < done; k++) {
            int dup = 0;
            for (int j = 0; j < k && !dup; j++)
                dup = log[j].hash == log[k].hash;
            distinct += !dup;
        }
        if (done < 2)
            put(c, "SKIP", "seeds_vary", ": the episodes did not run");
        else if (distinct <= 1)
            put(c, "WARN", "seeds_vary",
                ": %d seeds all give the same episode for the same actions (use rand_range in RESET?)", done);
        else
            put(c, "PASS", "seeds_vary", " (%d distinct episodes of %d seeds)", distinct, done); /* both >= 2 here */
    }
    free(req), free(out);
    free_logs(log, ns);
}

/* Each seed played twice, side by side in one worker (whose poisoned memory
 * differs per instance), with the same actions; the two must agree at every
 * step. */
static void check_step_deterministic(ctx *c)
{
    c->check = "step_deterministic";
    int ns = c->o.seeds;
    long n = 2L * ns;
    spade_ep_request *req = calloc((size_t)n, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)n, sizeof *out);
    ep_log *log = calloc((size_t)n, sizeof *log);
    if (!req || !out || !log) {
        free(req), free(out), free(log);
        put(c, "FAIL", "step_deterministic", ": out of memory in the checker");
        return;
    }
    for (long i = 0; i < n; i++)
        req[i] = (spade_ep_request){0, seed_of(c, (int)(i / 2)), 0, 0};
    spade_ep_spec spec = spec_given(c);
    int limit = c->info.max_steps < DETERMINISM_STEPS ? c->info.max_steps : DETERMINISM_STEPS;
    int steps_total = 0;
    spade_agent *a = mixed_agent(c->info.has_solve, 0x2545F4914F6CDD1DULL, 7, 1);
    if (play_eps(c, &spec, 1, &c->vec, 0, req, n, a, limit, 0, 0, log, 1, out) != 0)
        goto done;
    char buf[1400], sh[256];
    for (int k = 0; k < ns; k++) {
        const spade_ep_outcome *o[2] = {&out[2 * k], &out[2 * k + 1]};
        const ep_log *l[2] = {&log[2 * k], &log[2 * k + 1]};
        unsigned long long s = (unsigned long long)o[0]->seed;
        /* the step each one failed at (0: its reset), INT_MAX when it did not */
        int fail_at[2];
        for (int j = 0; j < 2; j++)
            fail_at[j] = o[j]->end != SPADE_EP_FAILED                                                 ? 1 << 30
                         : o[j]->failed_in == SPADE_EP_OP_RESET || o[j]->failed_in == SPADE_EP_OP_LOAD ? 0
                                                                                                      : o[j]->steps + 1;
        int f = fail_at[1] < fail_at[0];
        int tf = fail_at[f];
        /* the first step where both have a result and they differ */
        int tm = 1 << 30;
        const char *what = "observation";
        size_t d = 0;
        int common = l[0]->n < l[1]->n ? l[0]->n : l[1]->n;
        for (int t = 0; t < common && tm == 1 << 30; t++) {
            const saved *a = &l[0]->obs[t], *b = &l[1]->obs[t];
            int end0 = o[0]->steps == t + 1 && (o[0]->end == SPADE_EP_TERMINATED || o[0]->end == SPADE_EP_TRUNCATED);
            int end1 = o[1]->steps == t + 1 && (o[1]->end == SPADE_EP_TERMINATED || o[1]->end == SPADE_EP_TRUNCATED);
            int act_same = t < l[0]->n_act && t < l[1]->n_act && l[0]->act_len[t] == l[1]->act_len[t] &&
                           !memcmp(l[0]->act[t], l[1]->act[t], l[0]->act_len[t]);
            if (!act_same) {
                tm = t + 1, what = "SOLVE's action";
                d = t < l[0]->n_act && t < l[1]->n_act
                        ? first_diff(l[0]->act[t], l[0]->act_len[t], l[1]->act[t], l[1]->act_len[t])
                        : 0;
            } else if (a->len != b->len || memcmp(a->obs, b->obs, a->len) || !same_reward(a->reward, b->reward) ||
                       end0 != end1 || (end0 && o[0]->end != o[1]->end)) {
                tm = t + 1;
                what = end0 != end1 || (end0 && o[0]->end != o[1]->end) ? "termination" : "observation";
                d = first_diff(a->obs, a->len, b->obs, b->len);
            }
        }
        if (tf <= tm && tf != 1 << 30) {
            const spade_ep_outcome *x = o[f];
            if (tf == 0)
                put(c, "FAIL", "step_deterministic", ": reset seed %llu: %s", s, why(&x->failure, buf, sizeof buf));
            else if (x->failed_in == SPADE_EP_OP_SOLVE)
                put(c, "FAIL", "step_deterministic", ": seed %llu step %d: solve: %s", s, tf,
                    why(&x->failure, buf, sizeof buf));
            else {
                const ep_log *xl = l[f];
                const char *a = tf - 1 < xl->n_act ? xl->act[tf - 1] : "";
                size_t al = tf - 1 < xl->n_act ? xl->act_len[tf - 1] : 0;
                put(c, "FAIL", "step_deterministic", ": seed %llu step %d action \"%s\": %s", s, tf,
                    shown(a, al, sh, sizeof sh), why(&x->failure, buf, sizeof buf));
            }
            goto done;
        }
        if (tm != 1 << 30) {
            int t = tm - 1;
            const char *a = t < l[0]->n_act ? l[0]->act[t] : "";
            size_t al = t < l[0]->n_act ? l[0]->act_len[t] : 0;
            double r0 = t < l[0]->n ? l[0]->obs[t].reward : 0, r1 = t < l[1]->n ? l[1]->obs[t].reward : 0;
            put(c, "FAIL", "step_deterministic",
                ": seed %llu step %d action \"%s\": two instances with the same seed and actions differ (%s at "
                "byte %zu; rewards %g vs %g): state outside S, or an uninitialised local?",
                s, tm, shown(a, al, sh, sizeof sh), what, d, r0, r1);
            goto done;
        }
        steps_total += o[0]->steps;
    }
    if (!c->timed_out)
        put(c, "PASS", "step_deterministic", " (%d step%s over %d seed%s)", steps_total, steps_total == 1 ? "" : "s",
            c->o.seeds, c->o.seeds == 1 ? "" : "s");
done:
    free(req), free(out);
    free_logs(log, n);
}

typedef struct odd_action {
    const char *label;
    char *text;
    size_t len;
} odd_action;

/* Each odd action is an episode of its own (two steps of it: the second step
 * meets whatever state the first one left), all of them in one batch; the
 * episode layer finds the one that broke a worker. */
static void check_arbitrary_actions(ctx *c)
{
    c->check = "arbitrary_actions";
    enum { N = 16 };
    odd_action a[N];
    int n = 0;
    size_t big = SPADE_ACTION_MAX;
    char *mb_a = malloc(big + 1), *mb_9 = malloc(big + 1), *bin = malloc(256);
    if (!mb_a || !mb_9 || !bin) {
        free(mb_a), free(mb_9), free(bin);
        put(c, "FAIL", "arbitrary_actions", ": out of memory in the checker");
        return;
    }
    memset(mb_a, 'a', big);
    mb_a[big] = 0;
    memset(mb_9, '9', big);
    mb_9[big] = 0;
    for (int i = 0; i < 256; i++)
        bin[i] = (char)i;
    static char utf8[] = "\xff\xfe\xc0\x80 \xed\xa0\x80 \xf8\x88\x80\x80\x80 \xe2\x82 caf\xc3";
#define ODD(lbl, t, l) a[n].label = (lbl), a[n].text = (char *)(t), a[n].len = (l), n++
    ODD("the empty action", "", 0);
    ODD("a 1 MB action", mb_a, big);
    ODD("a 1 MB number", mb_9, big);
    ODD("binary bytes 0-255", bin, 256);
    ODD("invalid UTF-8", utf8, sizeof utf8 - 1);
    ODD("a NUL byte first", "\0abc", 4);
    ODD("LONG_MIN", "-9223372036854775808", 20);
    ODD("an overflowing number", "99999999999999999999999999", 26);
    ODD("blanks and newlines", " \n\t\r\n ", 6);
    ODD("printf directives", "%s%s%n%x%p", 10);
    ODD("unbalanced markup", "\\boxed{ <answer> ((( \"", 22);
    ODD("a malformed tool call", "f(\"unterminated, 1e999, ", 24);
    ODD("NaN and infinities", "nan -inf 1e999 0x", 17);
#undef ODD
    const char *texts[N];
    size_t lens[N];
    spade_ep_request req[N];
    spade_ep_outcome out[N];
    for (int i = 0; i < n; i++) {
        texts[i] = a[i].text;
        lens[i] = a[i].len;
        req[i] = (spade_ep_request){0, seed_of(c, i % (c->o.seeds > 0 ? c->o.seeds : 1)), 0, 0};
    }
    spade_ep_spec spec = spec_given(c);
    spade_agent *probes = spade_agent_probes(texts, lens, n, 2);
    free(mb_a), free(mb_9), free(bin); /* the agent has its copies */
    if (play_eps(c, &spec, 1, &c->vec, 0, req, n, probes, 0, 0, 0, NULL, 0, out) != 0)
        return;
    char buf[1400];
    int failed = 0;
    char first_fail[1400] = "";
    for (int i = 0; i < n; i++) {
        if (out[i].end != SPADE_EP_FAILED)
            continue;
        if (!failed++) {
            if (out[i].failed_in == SPADE_EP_OP_RESET)
                snprintf(first_fail, sizeof first_fail, "reset before %s: %s", a[i].label,
                         why(&out[i].failure, buf, sizeof buf));
            else
                snprintf(first_fail, sizeof first_fail, "%s on %s", why(&out[i].failure, buf, sizeof buf), a[i].label);
        }
    }
    if (failed)
        put(c, "FAIL", "arbitrary_actions", ": %s (%d of %d odd actions failed%s)", first_fail, failed, n,
            c->timed_out ? "; the rest were not tried" : "");
    else
        put(c, "PASS", "arbitrary_actions", " (%d odd actions)", n);
}

/* The empty action, on two seeds, must neither win nor keep the episode
 * running past max_steps, nor end it early by truncation. */
static void check_max_steps(ctx *c)
{
    c->check = "max_steps";
    char buf[1400];
    int ms = c->info.max_steps;
    spade_ep_request req[2] = {{0, seed_of(c, 0), 0, 0}, {0, seed_of(c, 1), 0, 0}};
    spade_ep_outcome out[2];
    spade_ep_spec spec = spec_given(c);
    if (play_eps(c, &spec, 1, &c->vec, 0, req, 2, spade_agent_noop(), ms, 1, 0, NULL, 0, out) != 0)
        return;
    /* the earliest thing that went wrong, by step, then by seed */
    int best = -1, best_t = 1 << 30;
    char msg[1600] = "";
    for (int j = 0; j < 2; j++) {
        const spade_ep_outcome *o = &out[j];
        unsigned long long s = (unsigned long long)o->seed;
        int t = 1 << 30;
        char m[1600] = "";
        if (o->end == SPADE_EP_FAILED && (o->failed_in == SPADE_EP_OP_RESET || o->failed_in == SPADE_EP_OP_LOAD)) {
            t = 0;
            snprintf(m, sizeof m, ": reset: %s", why(&o->failure, buf, sizeof buf));
        } else if (o->end == SPADE_EP_FAILED) {
            t = o->steps + 1;
            snprintf(m, sizeof m, ": seed %llu step %d of the empty action: %s", s, t,
                     why(&o->failure, buf, sizeof buf));
        } else if (o->success) {
            t = o->steps;
            snprintf(m, sizeof m,
                     ": seed %llu: the empty action wins (return %g at step %d, success >= %g): the episode is won "
                     "without doing anything",
                     s, o->ret, t, c->info.success);
        } else if (o->end == SPADE_EP_TRUNCATED && o->steps < ms) {
            t = o->steps;
            snprintf(m, sizeof m, ": seed %llu: truncated at step %d, before max_steps = %d", s, t, ms);
        } else if (o->end == SPADE_EP_AGENT_STOP) {
            t = ms + 1;
            snprintf(m, sizeof m, ": seed %llu: still running after max_steps = %d steps of the empty action", s, ms);
        }
        if (t < best_t) {
            best = j, best_t = t;
            memcpy(msg, m, sizeof msg);
        }
    }
    if (best >= 0)
        put(c, "FAIL", "max_steps", "%s", msg);
    else if (out[0].end == SPADE_EP_STOPPED || out[1].end == SPADE_EP_STOPPED)
        put(c, "FAIL", "max_steps", ": the episodes were stopped");
    else
        put(c, "PASS", "max_steps", " (episodes ended after %d and %d steps; max_steps %d)", out[0].steps,
            out[1].steps, ms);
}

#define HINT_TRY_SEEDS 3
#define HINT_TRY_PIECES 16

/* Whether a piece of hint h (the whole of it, or one of its numbers, words
 * and lines) played as the first action of seed s wins at once; the piece
 * into won (cap bytes). -1 when a call failed (its check is another's). */
static int hint_wins(ctx *c, uint64_t s, const char *h, size_t len, char *won, size_t cap)
{
    spade_pieces pc;
    if (spade_text_pieces(h, len, &pc) < 0)
        return -1;
    int hit = 0;
    for (int k = -1; k < pc.n && k < HINT_TRY_PIECES && !hit; k++) {
        const char *p = k < 0 ? h : pc.p[k];
        size_t pl = k < 0 ? len : pc.len[k];
        spade_step_result r;
        spade_failure f;
        if (reset_n(c, 1, &s, &r, &f) != 0 || r.terminated || r.truncated || step_one(c, 0, p, pl, &r, &f) != 0) {
            hit = -1;
            break;
        }
        if (r.reward >= c->info.success) {
            hit = 1;
            shown(p, pl, won, cap);
        }
    }
    spade_pieces_free(&pc);
    return hit;
}

static void check_hint(ctx *c)
{
    c->check = "hint";
    char buf[1400], sh[256], act[64], won[256] = "", leak_seed[32] = "";
    int leaks = 0;
    spade_failure f;
    for (int k = 0; k < c->o.seeds; k++) {
        uint64_t s = seed_of(c, k);
        spade_step_result r;
        if (reset_n(c, 1, &s, &r, &f) != 0) {
            put(c, "FAIL", "hint", ": reset seed %llu: %s", (unsigned long long)s, why(&f, buf, sizeof buf));
            return;
        }
        size_t len = 0;
        char *h = text_call(c, 0, &len, &f);
        if (!h) {
            put(c, "FAIL", "hint", ": seed %llu: %s", (unsigned long long)s, why(&f, buf, sizeof buf));
            return;
        }
        if (c->o.verbose && k == 0)
            put(c, "INFO", "hint", " (seed %llu): %s", (unsigned long long)s, shown(h, len, sh, sizeof sh));
        if (k < HINT_TRY_SEEDS && len > 0 && hint_wins(c, s, h, len, sh, sizeof sh) == 1 && !leaks++) {
            snprintf(won, sizeof won, "%s", sh);
            snprintf(leak_seed, sizeof leak_seed, "%llu", (unsigned long long)s);
        }
        free(h);
        if (k < HINT_TRY_SEEDS && reset_n(c, 1, &s, &r, &f) != 0) {
            put(c, "FAIL", "hint", ": reset seed %llu: %s", (unsigned long long)s, why(&f, buf, sizeof buf));
            return;
        }
        if (len == 0) {
            put(c, "FAIL", "hint", ": seed %llu: the hint is empty after reset (say() a strategy in HINT)",
                (unsigned long long)s);
            return;
        }
        /* mid-episode too: a hint that only works at reset misleads later */
        uint64_t rng = s + 99;
        size_t al = spade_random_action(&rng, act, sizeof act);
        if (step_one(c, 0, act, al, &r, &f) != 0)
            continue; /* step failures belong to other checks */
        if (r.terminated || r.truncated)
            continue;
        h = text_call(c, 0, &len, &f);
        if (!h) {
            put(c, "FAIL", "hint", ": seed %llu after one step: %s", (unsigned long long)s, why(&f, buf, sizeof buf));
            return;
        }
        free(h);
        if (len == 0) {
            put(c, "FAIL", "hint", ": seed %llu: the hint is empty after one step", (unsigned long long)s);
            return;
        }
    }
    put(c, "PASS", "hint", NULL);
    /* The hint works; one that holds the answer is what the self-play loop
     * refuses (its hint_echo gate), so say so here too. */
    int tried = c->o.seeds < HINT_TRY_SEEDS ? c->o.seeds : HINT_TRY_SEEDS;
    if (leaks >= (tried > 1 ? 2 : 1))
        put(c, "WARN", "hint",
            ": playing \"%s\" from the hint won seed %s at the first step (%d of %d seeds tried): a hint that gives "
            "the answer is refused by the self-play gates (see spade check --gates)",
            won, leak_seed, leaks, tried);
}

/* One episode on each of the solve_seeds seeds, by SOLVE or by the random
 * agent; returns the wins, or -1 after a FAIL line for the check c->check when
 * an episode could not be played. lost (lostcap bytes, may be NULL) gets the
 * first seed that did not win. */
static int play_seeds(ctx *c, int use_solve, char *lost, size_t lostcap)
{
    int n = c->o.solve_seeds;
    if (n <= 0)
        return 0;
    spade_ep_request *req = calloc((size_t)n, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)n, sizeof *out);
    if (!req || !out) {
        free(req), free(out);
        put(c, "FAIL", c->check, ": out of memory in the checker");
        return -1;
    }
    for (int k = 0; k < n; k++)
        req[k] = (spade_ep_request){0, seed_of(c, k), 0, 0};
    spade_ep_spec spec = spec_given(c);
    spade_agent *a = use_solve ? spade_agent_solve() : spade_agent_random(RANDOM_AGENT_SEED);
    int wins = -1;
    if (play_eps(c, &spec, 1, &c->vec, 0, req, n, a, 0, 0, use_solve, NULL, 0, out) == 0) {
        char buf[1400];
        wins = 0;
        /* the first failed seed; a timeout stops the run, and the episodes
         * still live then (before it too) end as stopped, blamed for nothing */
        const spade_ep_outcome *bad = NULL;
        for (int k = 0; k < n && !bad; k++)
            if (out[k].end == SPADE_EP_FAILED)
                bad = &out[k];
        for (int k = 0; k < n && !bad; k++)
            if (out[k].end == SPADE_EP_STOPPED)
                bad = &out[k];
        if (bad) {
            put(c, "FAIL", c->check, ": seed %llu: %s", (unsigned long long)bad->seed,
                bad->end == SPADE_EP_STOPPED ? "stopped" : ep_why(bad, buf, sizeof buf));
            wins = -1;
        }
        for (int k = 0; k < n && wins >= 0; k++) {
            wins += out[k].success;
            if (!out[k].success && lost && !*lost)
                snprintf(lost, lostcap, "seed %llu returned %g (success needs >= %g)",
                         (unsigned long long)out[k].seed, out[k].ret, c->info.success);
        }
    }
    free(req), free(out);
    return wins;
}

static void check_solve(ctx *c)
{
    c->check = "solve";
    if (!c->info.has_solve) {
        put(c, "WARN", "solve", ": no SOLVE block, so nothing proves the environment can be won");
        return;
    }
    int n = c->o.solve_seeds;
    char lost[600] = "";
    int wins = play_seeds(c, 1, lost, sizeof lost);
    if (wins < 0)
        return;
    if (wins < n)
        put(c, "FAIL", "solve", ": SOLVE won %d of %d seeds; %s", wins, n, lost);
    else
        put(c, "PASS", "solve", " (won %d of %d seed%s)", wins, n, n == 1 ? "" : "s");
}

static void check_random_agent(ctx *c)
{
    c->check = "random_agent";
    int n = c->o.solve_seeds;
    int wins = play_seeds(c, 0, NULL, 0);
    if (wins < 0)
        return;
    if (n > 0 && (double)wins / n > RANDOM_WIN_MAX)
        put(c, "FAIL", "random_agent",
            ": a random agent won %d of %d episode%s, more than %.0f%%: the task can be won by guessing (fewer "
            "choices per step than it looks, or a reward for any answer?)",
            wins, n, n == 1 ? "" : "s", RANDOM_WIN_MAX * 100);
    else
        put(c, "PASS", "random_agent", " (won %d of %d)", wins, n);
}

/* Plays at each parameter's min and at its max (the others at their values),
 * and at a few random combinations: a SOLVE episode (which must win) and a
 * long random one on each of EXTREME_SEEDS seeds. A parameter range the code
 * does not hold (STATE sized for 10 tries, `tries` allowed up to 100) crashes
 * here, where the defaults alone never reach it. Every setting is a spec of
 * its own (instances take their params when created), all of them played in
 * one run of the episode layer per agent. */
static void describe_params(const ctx *c, const double *pvals, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < c->info.n_params && o + 1 < cap; i++) {
        int n = snprintf(out + o, cap - o, "%s%s=%.17g", i ? "," : "", c->info.params[i].name, pvals[i]);
        if (n < 0)
            break;
        o += (size_t)n;
    }
}

enum { MAX_SETTINGS = 2 * SPADE_INFO_MAX_PARAMS + EXTREME_RANDOM_COMBOS };

static void check_param_extremes(ctx *c)
{
    c->check = "param_extremes";
    int np = c->info.n_params;
    if (np == 0) {
        put(c, "SKIP", "param_extremes", ": no params");
        return;
    }
    uint64_t rng = c->o.first_seed ^ 0xe1e1e1e1ULL;
    static _Thread_local char desc[MAX_SETTINGS][600];
    spade_ep_spec specs[MAX_SETTINGS];
    int settings = 0;
    for (int s = 0; s < 2 * np + EXTREME_RANDOM_COMBOS; s++) {
        double pv[SPADE_INFO_MAX_PARAMS];
        memcpy(pv, c->pvals, sizeof pv);
        if (s < 2 * np) {
            const spade_param_info *p = &c->info.params[s / 2];
            double v = s % 2 ? p->max : p->min;
            if (v == c->pvals[s / 2])
                continue; /* the other checks played this one */
            pv[s / 2] = v;
        } else {
            for (int i = 0; i < np; i++) {
                const spade_param_info *p = &c->info.params[i];
                double u = (double)(spade_splitmix64(&rng) >> 11) / 9007199254740992.0;
                double v = p->min + u * (p->max - p->min);
                if (p->type == SPADE_PARAM_INT) {
                    v = floor(p->min + u * (p->max - p->min + 1));
                    if (v > p->max)
                        v = p->max;
                }
                pv[i] = v;
            }
        }
        describe_params(c, pv, desc[settings], sizeof desc[settings]);
        specs[settings] = (spade_ep_spec){c->filename, c->source, c->len, desc[settings], 0};
        settings++;
    }
    if (settings == 0) {
        put(c, "SKIP", "param_extremes", ": every param has a single value");
        return;
    }
    /* one vector env per setting, for both agents' runs: a worker start per
     * setting, as when the settings were played one by one (one that cannot
     * be made is left to the episode layer, which reports its failure) */
    spade_vecenv *vecs[MAX_SETTINGS];
    for (int s = 0; s < settings; s++) {
        spade_failure f;
        if (spade_vecenv_new_poisoned(c->sb, c->filename, c->source, c->len, desc[s], EXTREME_SEEDS, 1,
                                      SPADE_AUTORESET_DISABLED, CHECK_POISON, &vecs[s], &f) != 0)
            vecs[s] = NULL;
    }
    long n = (long)settings * EXTREME_SEEDS;
    spade_ep_request req[MAX_SETTINGS * EXTREME_SEEDS];
    spade_ep_outcome sol[MAX_SETTINGS * EXTREME_SEEDS], rnd[MAX_SETTINGS * EXTREME_SEEDS];
    for (long i = 0; i < n; i++)
        rnd[i].end = sol[i].end = SPADE_EP_STOPPED; /* a run a timeout skipped */
    for (long i = 0; i < n; i++)
        req[i] = (spade_ep_request){(int)(i / EXTREME_SEEDS), seed_of(c, (int)(i % EXTREME_SEEDS)), 0, 0};
    int cap_t = c->info.max_steps < LONG_EPISODE_CAP ? c->info.max_steps : LONG_EPISODE_CAP;
    int played = !c->info.has_solve ||
                 play_eps(c, specs, settings, vecs, 0, req, n, spade_agent_solve(), 0, 0, 1, NULL, 0, sol) == 0;
    if (played && !c->timed_out)
        played = play_eps(c, specs, settings, vecs, 0, req, n, spade_agent_random(RANDOM_AGENT_SEED), cap_t, 0, 0,
                          NULL, 0, rnd) == 0;
    for (int s = 0; s < settings; s++)
        spade_vecenv_free(vecs[s]);
    if (!played)
        return;
    /* the first setting, seed and agent that went wrong, in the order they were once played one by one */
    char failed[1600] = "", buf[1400];
    int episodes = 0;
    for (long i = 0; i < n && !*failed; i++) {
        unsigned long long seed = (unsigned long long)req[i].seed;
        const char *at = desc[req[i].spec];
        if (c->info.has_solve) {
            episodes++;
            if (sol[i].end == SPADE_EP_FAILED) {
                snprintf(failed, sizeof failed, "at %s: seed %llu, SOLVE agent: %.1200s", at, seed,
                         ep_why(&sol[i], buf, sizeof buf));
                break;
            }
            if (sol[i].end != SPADE_EP_STOPPED && !sol[i].success) {
                snprintf(failed, sizeof failed, "at %s: seed %llu: SOLVE did not win (return %g, success needs >= %g)",
                         at, seed, sol[i].ret, c->info.success);
                break;
            }
        }
        episodes++;
        if (!c->timed_out || rnd[i].end == SPADE_EP_FAILED) {
            if (rnd[i].end == SPADE_EP_FAILED)
                snprintf(failed, sizeof failed, "at %s: seed %llu, random agent: %.1200s", at, seed,
                         ep_why(&rnd[i], buf, sizeof buf));
        }
    }
    if (*failed)
        put(c, "FAIL", "param_extremes", ": %s", failed);
    else if (!c->timed_out)
        put(c, "PASS", "param_extremes", " (%d settings: each param's min and max, %d random; %d episodes)", settings,
            EXTREME_RANDOM_COMBOS, episodes);
}

static void check_obs_size(ctx *c)
{
    if (c->over)
        put(c, "FAIL", "obs_size", ": output larger than %d bytes in %s (an observation that grows with the episode?)",
            SPADE_OBS_MAX, c->over_where);
    else
        put(c, "PASS", "obs_size", " (largest output %zu of %d bytes)", c->max_obs, SPADE_OBS_MAX);
}

static const char *const later_checks[] = {
    "reset_deterministic", "step_deterministic", "seeds_vary", "arbitrary_actions", "max_steps", "hint", "solve",
    "random_agent",        "param_extremes",     "obs_size"};

typedef struct check_step {
    const char *name;
    void (*run)(ctx *c);
} check_step;

static const check_step steps[] = {
    {"step_deterministic", check_step_deterministic},
    {"seeds_vary", check_seeds_vary},
    {"arbitrary_actions", check_arbitrary_actions},
    {"max_steps", check_max_steps},
    {"hint", check_hint},
    {"solve", check_solve},
    {"random_agent", check_random_agent},
    {"param_extremes", check_param_extremes},
};

int spade_check(spade_sandbox *sb, const char *filename, const char *source, size_t len, const char *params,
                const spade_check_opts *opts, spade_check_report *rep)
{
    memset(rep, 0, sizeof *rep);
    ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(rep->text, sizeof rep->text, "FAIL internal: out of memory\n");
        return -1;
    }
    c->sb = sb;
    c->filename = filename ? filename : "<env>";
    c->source = source;
    c->len = len;
    c->params = params;
    c->rep = rep;
    if (opts)
        c->o = *opts;
    else
        spade_check_opts_default(&c->o);
    if (c->o.seeds < 1)
        c->o.seeds = 1;
    timeout_option = c->o.timeout_option;
    if (c->o.solve_seeds < 0)
        c->o.solve_seeds = 0;

    char buf[1400];
    int rc = 0;
    spade_failure f;
    memset(&f, 0, sizeof f);
    /* Instances take their params when created, so the vector env is made at
     * the params given; when that fails, a worker alone says why: the
     * compiler, the params, or the instances. */
    int n_envs = 2 * c->o.seeds > 16 ? 2 * c->o.seeds : 16; /* step_deterministic's pairs, the odd actions */
    if (n_envs < c->o.solve_seeds)
        n_envs = c->o.solve_seeds;
    if (n_envs > 256)
        n_envs = 256;
    spade_failure vf;
    memset(&vf, 0, sizeof vf);
    if (spade_vecenv_new_poisoned(sb, c->filename, source, len, params, n_envs, 1, SPADE_AUTORESET_DISABLED,
                                  CHECK_POISON, &c->vec, &vf) != 0)
        c->vec = NULL;
    spade_worker *w = NULL;
    if (!c->vec && (spade_worker_load_poisoned(sb, c->filename, source, len, CHECK_POISON, &w, &f) != 0 || !w)) {
        if (f.outcome == SPADE_OUT_INTERNAL || f.outcome == SPADE_OUT_OK) {
            put(c, "FAIL", "compile", ": the sandbox failed: %s", why(&f, buf, sizeof buf));
            rc = -1;
        } else {
            put(c, "FAIL", "compile", ": %s", why(&f, buf, sizeof buf));
            put(c, "SKIP", "other checks", ": the environment does not compile");
            rc = 1;
        }
        free(c);
        return rc;
    }
    c->info = c->vec ? *spade_vecenv_info(c->vec) : *spade_worker_info(w);
    spade_worker_free(w);
    put(c, "PASS", "compile", " (%s: %d params, %d tools, max_steps %d, success >= %g%s)", c->info.name,
        c->info.n_params, c->info.n_tools, c->info.max_steps, c->info.success, c->info.has_solve ? ", has SOLVE" : "");
    char perr[512];
    if (spade_params_parse(&c->info, params, c->pvals, perr, sizeof perr) != 0) {
        put(c, "FAIL", "params", ": %s", perr);
        put(c, "SKIP", "other checks", ": the params do not apply");
        goto done;
    }
    if (params && *params)
        put(c, "PASS", "params", " (%s)", params);
    if (!c->vec) {
        put(c, "FAIL", "reset", ": cannot create instances: %s", why(&vf, buf, sizeof buf));
        put(c, "SKIP", "other checks", ": no instance");
        goto done;
    }
    c->id[0] = 0;
    c->id[1] = 1;

    if (c->o.progress)
        c->o.progress("reset", c->o.progress_arg);
    if (check_reset(c) != 0) {
        for (size_t i = 0; i < sizeof later_checks / sizeof *later_checks; i++)
            put(c, "SKIP", later_checks[i], ": reset does not work");
        goto done;
    }
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        if (c->timed_out) {
            /* A timeout already failed its check; every later one would wait
             * out a deadline per call. One that no check judged (reset's
             * replay step) fails the next: a hang is a failure, never only a
             * reason to skip. */
            size_t j = i;
            if (c->rep->failed == c->failed_at_timeout)
                put(c, "FAIL", steps[j++].name, ": a call timed out (%s): %s", c->timeout_what, c->timeout_why);
            for (; j < sizeof steps / sizeof *steps; j++)
                put(c, "SKIP", steps[j].name, ": an earlier call timed out (%s)", c->timeout_what);
            break;
        }
        if (c->o.progress)
            c->o.progress(steps[i].name, c->o.progress_arg);
        steps[i].run(c);
    }
    if (c->timed_out && c->rep->failed == c->failed_at_timeout)
        put(c, "FAIL", "timeout", ": a call timed out (%s): %s", c->timeout_what, c->timeout_why);
    check_obs_size(c);
done:
    if (c->internal && rep->failed == 0)
        rc = -1;
    else
        rc = rep->failed ? 1 : 0;
    spade_vecenv_free(c->vec);
    free(c);
    return rc;
}
