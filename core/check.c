/* check.c — the environment checker (see check.h for the list of checks).
 *
 * Every call goes through one sandbox worker holding two instances of the
 * environment: two instances side by side is what exposes hidden global state
 * (a static counter makes the second reset differ from the first). A failure
 * kills the worker (the sandbox trusts nothing after one), so the next check
 * spawns a fresh worker from the same source.
 *
 * What it is not: a sandbox (core/sandbox contains the code) or a trainer gate.
 */
#include "check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void spade_check_opts_default(spade_check_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seeds = 5;
    o->solve_seeds = 20;
}

uint64_t spade_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t spade_mix64(uint64_t x) { return spade_splitmix64(&x); }

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

    spade_worker *w;
    int id[2];
    spade_env_info info;
    double pvals[SPADE_INFO_MAX_PARAMS];
    int internal; /* a worker could not be spawned again */

    const char *check; /* the check running now, for obs_size's report */
    int timed_out; /* a call timed out: the remaining checks are skipped */
    char timeout_what[600];
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

/* The live worker with its two instances; respawned after a failure killed it. */
static spade_worker *worker(ctx *c, spade_failure *f)
{
    if (c->w && spade_worker_alive(c->w))
        return c->w;
    spade_worker_free(c->w);
    c->w = NULL;
    memset(f, 0, sizeof *f);
    if (spade_worker_load_poisoned(c->sb, c->filename, c->source, c->len, CHECK_POISON, &c->w, f) != 0 || !c->w) {
        c->w = NULL;
        c->internal = 1;
        return NULL;
    }
    int first = -1;
    if (spade_worker_add_instances(c->w, 2, c->info.n_params ? c->pvals : NULL, &first, f) != 0) {
        spade_worker_free(c->w);
        c->w = NULL;
        c->internal = 1;
        return NULL;
    }
    c->id[0] = first;
    c->id[1] = first + 1;
    return c->w;
}

static int reset_n(ctx *c, int n, const uint64_t *seeds, spade_step_result *res, spade_failure *f)
{
    spade_worker *w = worker(c, f);
    if (!w)
        return -1;
    if (spade_worker_reset(w, n, c->id, seeds, res, f) != 0) {
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
    spade_worker *w = worker(c, f);
    if (!w)
        return -1;
    if (spade_worker_step(w, n, ids, acts, lens, res, f) != 0) {
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
    spade_worker *w = worker(c, f);
    if (!w)
        return NULL;
    const char *t = NULL;
    size_t n = 0;
    int rc = solve ? spade_worker_solve(w, c->id[0], &t, &n, f) : spade_worker_hint(w, c->id[0], &t, &n, f);
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

/* Different seeds should give different episodes. The first observation alone
 * is not enough to tell (a hidden-number game says the same thing every time),
 * so each seed's fingerprint is its first observation plus a few steps of
 * reference and fixed random moves with what they get back. */
static void check_seeds_vary(ctx *c)
{
    c->check = "seeds_vary";
    int ns = c->o.seeds;
    if (ns < 2) {
        put(c, "SKIP", "seeds_vary", ": only one seed");
        return;
    }
    uint64_t *fp = calloc((size_t)ns, sizeof *fp);
    if (!fp)
        return;
    char act[64];
    spade_failure f;
    int done = 0;
    for (int k = 0; k < ns; k++) {
        uint64_t s = seed_of(c, k), rng = 12345;
        spade_step_result r;
        if (reset_n(c, 1, &s, &r, &f) != 0)
            break;
        uint64_t h = 1469598103934665603ULL;
#define MIX(p, n)                                                                                                      \
    for (size_t i_ = 0; i_ < (n); i_++)                                                                                \
    h = (h ^ (unsigned char)(p)[i_]) * 1099511628211ULL
        MIX(r.obs, r.obs_len);
        int limit = c->info.max_steps < 8 ? c->info.max_steps : 8;
        for (int t = 0; t < limit && !r.terminated && !r.truncated; t++) {
            /* The reference moves reach what random ones do not (a hidden
             * number shows only when guessed at); they enter the fingerprint
             * too, since moves that depend on the seed mean the seed matters. */
            char *sol = NULL;
            size_t al;
            const char *a = act;
            if (c->info.has_solve && t % 2 == 0 && (sol = text_call(c, 1, &al, &f)) != NULL)
                a = sol;
            else
                al = spade_random_action(&rng, act, sizeof act);
            MIX(a, al);
            int rc = step_one(c, 0, a, al, &r, &f);
            free(sol);
            if (rc != 0)
                break;
            MIX(r.obs, r.obs_len);
            MIX((const char *)&r.reward, sizeof r.reward);
        }
#undef MIX
        fp[done++] = h;
    }
    int distinct = 0;
    for (int k = 0; k < done; k++) {
        int dup = 0;
        for (int j = 0; j < k && !dup; j++)
            dup = fp[j] == fp[k];
        distinct += !dup;
    }
    if (done < 2)
        put(c, "SKIP", "seeds_vary", ": the episodes did not run");
    else if (distinct <= 1)
        put(c, "WARN", "seeds_vary",
            ": %d seeds all give the same episode for the same actions (use rand_range in RESET?)", done);
    else
        put(c, "PASS", "seeds_vary", " (%d distinct episodes of %d seeds)", distinct, done); /* both >= 2 here */
    free(fp);
}

static void check_step_deterministic(ctx *c)
{
    c->check = "step_deterministic";
    char buf[1400], sh[256], act[64];
    spade_failure f;
    int steps_total = 0;
    for (int k = 0; k < c->o.seeds; k++) {
        uint64_t s[2] = {seed_of(c, k), seed_of(c, k)};
        spade_step_result r[2];
        if (reset_n(c, 2, s, r, &f) != 0) {
            put(c, "FAIL", "step_deterministic", ": reset seed %llu: %s", (unsigned long long)s[0],
                why(&f, buf, sizeof buf));
            return;
        }
        uint64_t rng = s[0] * 0x2545F4914F6CDD1DULL + 7;
        int limit = c->info.max_steps < DETERMINISM_STEPS ? c->info.max_steps : DETERMINISM_STEPS;
        for (int t = 0; t < limit && !r[0].terminated && !r[0].truncated; t++) {
            char *sol = NULL;
            size_t len;
            const char *a = act;
            /* Mix the reference moves in: random moves alone rarely get past
             * the first branch of an environment. */
            if (c->info.has_solve && t % 2 == 0) {
                sol = text_call(c, 1, &len, &f);
                if (!sol) {
                    put(c, "FAIL", "step_deterministic", ": seed %llu step %d: solve: %s", (unsigned long long)s[0],
                        t + 1, why(&f, buf, sizeof buf));
                    return;
                }
                a = sol;
            } else {
                len = spade_random_action(&rng, act, sizeof act);
            }
            const char *acts[2] = {a, a};
            size_t lens[2] = {len, len};
            if (step_ids(c, 2, c->id, acts, lens, r, &f) != 0) {
                put(c, "FAIL", "step_deterministic", ": seed %llu step %d action \"%s\": %s", (unsigned long long)s[0],
                    t + 1, shown(a, len, sh, sizeof sh), why(&f, buf, sizeof buf));
                free(sol);
                return;
            }
            steps_total++;
            if (!same_result(&r[0], &r[1])) {
                size_t d = first_diff(r[0].obs, r[0].obs_len, r[1].obs, r[1].obs_len);
                put(c, "FAIL", "step_deterministic",
                    ": seed %llu step %d action \"%s\": two instances with the same seed and actions differ (%s at "
                    "byte %zu; rewards %g vs %g): state outside S, or an uninitialised local?",
                    (unsigned long long)s[0], t + 1, shown(a, len, sh, sizeof sh),
                    r[0].terminated != r[1].terminated ? "termination" : "observation", d, r[0].reward, r[1].reward);
                free(sol);
                return;
            }
            free(sol);
        }
    }
    put(c, "PASS", "step_deterministic", " (%d step%s over %d seed%s)", steps_total, steps_total == 1 ? "" : "s",
        c->o.seeds, c->o.seeds == 1 ? "" : "s");
}

typedef struct odd_action {
    const char *label;
    char *text;
    size_t len;
} odd_action;

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
    char buf[1400];
    spade_failure f;
    int failed = 0;
    char first_fail[1400] = "";
    for (int i = 0; i < n && !c->timed_out; i++) {
        uint64_t s = seed_of(c, i % (c->o.seeds > 0 ? c->o.seeds : 1));
        spade_step_result r;
        if (reset_n(c, 1, &s, &r, &f) != 0) {
            if (!failed++)
                snprintf(first_fail, sizeof first_fail, "reset before %s: %s", a[i].label, why(&f, buf, sizeof buf));
            continue;
        }
        /* Twice: the second step meets whatever state the first one left. */
        for (int rep = 0; rep < 2 && !r.terminated && !r.truncated; rep++) {
            if (step_one(c, 0, a[i].text, a[i].len, &r, &f) != 0) {
                if (!failed++)
                    snprintf(first_fail, sizeof first_fail, "%s on %s", why(&f, buf, sizeof buf), a[i].label);
                break;
            }
        }
    }
    if (failed)
        put(c, "FAIL", "arbitrary_actions", ": %s (%d of %d odd actions failed%s)", first_fail, failed, n,
            c->timed_out ? "; the rest were not tried" : "");
    else
        put(c, "PASS", "arbitrary_actions", " (%d odd actions)", n);
    free(mb_a), free(mb_9), free(bin);
}

static void check_max_steps(ctx *c)
{
    c->check = "max_steps";
    char buf[1400];
    spade_failure f;
    int ms = c->info.max_steps;
    uint64_t s[2] = {seed_of(c, 0), seed_of(c, 1)};
    spade_step_result r[2];
    if (reset_n(c, 2, s, r, &f) != 0) {
        put(c, "FAIL", "max_steps", ": reset: %s", why(&f, buf, sizeof buf));
        return;
    }
    int ended[2] = {r[0].terminated || r[0].truncated ? 0 : -1, r[1].terminated || r[1].truncated ? 0 : -1};
    for (int t = 1; t <= ms + 1 && (ended[0] < 0 || ended[1] < 0); t++) {
        int ids[2], n = 0, which[2];
        for (int i = 0; i < 2; i++)
            if (ended[i] < 0)
                which[n] = i, ids[n++] = c->id[i];
        const char *acts[2] = {"", ""};
        size_t lens[2] = {0, 0};
        spade_step_result rr[2];
        if (t == ms + 1) {
            put(c, "FAIL", "max_steps", ": seed %llu: still running after max_steps = %d steps of the empty action",
                (unsigned long long)s[which[0]], ms);
            return;
        }
        if (step_ids(c, n, ids, acts, lens, rr, &f) != 0) {
            put(c, "FAIL", "max_steps", ": seed %llu step %d of the empty action: %s", (unsigned long long)s[which[0]],
                t, why(&f, buf, sizeof buf));
            return;
        }
        for (int j = 0; j < n; j++) {
            if (rr[j].truncated && !rr[j].terminated && t < ms) {
                put(c, "FAIL", "max_steps", ": seed %llu: truncated at step %d, before max_steps = %d",
                    (unsigned long long)s[which[j]], t, ms);
                return;
            }
            if (rr[j].success) {
                put(c, "FAIL", "max_steps",
                    ": seed %llu: the empty action wins (return %g at step %d, success >= %g): the episode is won "
                    "without doing anything",
                    (unsigned long long)s[which[j]], rr[j].episode_return, t, c->info.success);
                return;
            }
            if (rr[j].terminated || rr[j].truncated)
                ended[which[j]] = t;
        }
    }
    put(c, "PASS", "max_steps", " (episodes ended after %d and %d steps; max_steps %d)", ended[0], ended[1], ms);
}

static void check_hint(ctx *c)
{
    c->check = "hint";
    char buf[1400], sh[256], act[64];
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
        free(h);
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
}

/* Plays one episode on instance 0 with the SOLVE agent (solve != 0) or the
 * random agent. Returns 1 success, 0 not, -1 failure (why in buf). */
static int play_capped(ctx *c, uint64_t seed, int solve, int max_t, double *ret, char *buf, size_t cap);
static int play(ctx *c, uint64_t seed, int solve, double *ret, char *buf, size_t cap)
{
    return play_capped(c, seed, solve, c->info.max_steps, ret, buf, cap);
}

/* The same, for at most max_t + 1 steps. */
static int play_capped(ctx *c, uint64_t seed, int solve, int max_t, double *ret, char *buf, size_t cap)
{
    char w[1400];
    spade_failure f;
    spade_step_result r;
    char act[64];
    *ret = 0;
    if (reset_n(c, 1, &seed, &r, &f) != 0) {
        snprintf(buf, cap, "reset: %s", why(&f, w, sizeof w));
        return -1;
    }
    uint64_t rng = seed ^ 0x5eed5eedULL;
    for (int t = 0; t <= max_t && !r.terminated && !r.truncated; t++) {
        char *sol = NULL;
        size_t len;
        const char *a = act;
        if (solve) {
            sol = text_call(c, 1, &len, &f);
            if (!sol) {
                snprintf(buf, cap, "step %d: solve: %s", t + 1, why(&f, w, sizeof w));
                return -1;
            }
            if (c->o.verbose && t == 0 && seed == seed_of(c, 0)) {
                char sh[256];
                put(c, "INFO", "solve_action", " (seed %llu): %s", (unsigned long long)seed,
                    shown(sol, len, sh, sizeof sh));
            }
            a = sol;
        } else {
            len = spade_random_action(&rng, act, sizeof act);
        }
        int rc = step_one(c, 0, a, len, &r, &f);
        free(sol);
        if (rc != 0) {
            snprintf(buf, cap, "step %d: %s", t + 1, why(&f, w, sizeof w));
            return -1;
        }
    }
    *ret = r.episode_return;
    return r.success ? 1 : 0;
}

/* One episode on each of the solve_seeds seeds, by SOLVE or by the random
 * agent; returns the wins, or -1 after a FAIL line for the check c->check when
 * an episode could not be played. lost (lostcap bytes, may be NULL) gets the
 * first seed that did not win. */
static int play_seeds(ctx *c, int use_solve, char *lost, size_t lostcap)
{
    char buf[1400];
    int wins = 0;
    for (int k = 0; k < c->o.solve_seeds; k++) {
        double ret;
        int rc = play(c, seed_of(c, k), use_solve, &ret, buf, sizeof buf);
        if (rc < 0) {
            put(c, "FAIL", c->check, ": seed %llu: %s", (unsigned long long)seed_of(c, k), buf);
            return -1;
        }
        wins += rc;
        if (!rc && lost && !*lost)
            snprintf(lost, lostcap, "seed %llu returned %g (success needs >= %g)", (unsigned long long)seed_of(c, k),
                     ret, c->info.success);
    }
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
 * here, where the defaults alone never reach it. */
static void describe_params(const ctx *c, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < c->info.n_params && o + 1 < cap; i++) {
        int n = snprintf(out + o, cap - o, "%s%s=%.17g", i ? "," : "", c->info.params[i].name, c->pvals[i]);
        if (n < 0)
            break;
        o += (size_t)n;
    }
}

static int play_setting(ctx *c, char *why_buf, size_t cap, int *episodes)
{
    spade_failure f;
    /* A fresh worker for each setting: instances take their params when added. */
    spade_worker_free(c->w);
    c->w = NULL;
    if (!worker(c, &f)) {
        snprintf(why_buf, cap, "load: %s", f.message);
        return -1;
    }
    for (int k = 0; k < EXTREME_SEEDS; k++) {
        uint64_t seed = seed_of(c, k);
        double ret;
        char buf[1400];
        if (c->info.has_solve) {
            int rc = play(c, seed, 1, &ret, buf, sizeof buf);
            ++*episodes;
            if (rc < 0) {
                snprintf(why_buf, cap, "seed %llu, SOLVE agent: %.1200s", (unsigned long long)seed, buf);
                return -1;
            }
            if (rc == 0) {
                snprintf(why_buf, cap, "seed %llu: SOLVE did not win (return %g, success needs >= %g)",
                         (unsigned long long)seed, ret, c->info.success);
                return -1;
            }
        }
        int cap_t = c->info.max_steps < LONG_EPISODE_CAP ? c->info.max_steps : LONG_EPISODE_CAP;
        ++*episodes;
        if (play_capped(c, seed, 0, cap_t, &ret, buf, sizeof buf) < 0) {
            snprintf(why_buf, cap, "seed %llu, random agent: %.1200s", (unsigned long long)seed, buf);
            return -1;
        }
    }
    return 0;
}

static void check_param_extremes(ctx *c)
{
    c->check = "param_extremes";
    int np = c->info.n_params;
    if (np == 0) {
        put(c, "SKIP", "param_extremes", ": no params");
        return;
    }
    double given[SPADE_INFO_MAX_PARAMS];
    memcpy(given, c->pvals, sizeof given);
    uint64_t rng = c->o.first_seed ^ 0xe1e1e1e1ULL;
    int settings = 0, episodes = 0;
    char failed[1600] = "";
    char desc[600];
    for (int s = 0; s < 2 * np + EXTREME_RANDOM_COMBOS && !*failed && !c->timed_out; s++) {
        memcpy(c->pvals, given, sizeof given);
        if (s < 2 * np) {
            const spade_param_info *p = &c->info.params[s / 2];
            double v = s % 2 ? p->max : p->min;
            if (v == given[s / 2])
                continue; /* the other checks played this one */
            c->pvals[s / 2] = v;
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
                c->pvals[i] = v;
            }
        }
        settings++;
        char w[1400];
        if (play_setting(c, w, sizeof w, &episodes) < 0) {
            describe_params(c, desc, sizeof desc);
            snprintf(failed, sizeof failed, "at %s: %s", desc, w);
        }
    }
    memcpy(c->pvals, given, sizeof given);
    spade_worker_free(c->w); /* back to the given params for whatever comes next */
    c->w = NULL;
    if (*failed)
        put(c, "FAIL", "param_extremes", ": %s", failed);
    else if (settings == 0)
        put(c, "SKIP", "param_extremes", ": every param has a single value");
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
    if (spade_worker_load_poisoned(sb, c->filename, source, len, CHECK_POISON, &c->w, &f) != 0 || !c->w) {
        c->w = NULL;
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
    c->info = *spade_worker_info(c->w);
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
    int first = -1;
    if (spade_worker_add_instances(c->w, 2, c->info.n_params ? c->pvals : NULL, &first, &f) != 0) {
        put(c, "FAIL", "reset", ": cannot create instances: %s", why(&f, buf, sizeof buf));
        put(c, "SKIP", "other checks", ": no instance");
        goto done;
    }
    c->id[0] = first;
    c->id[1] = first + 1;

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
             * out a deadline per call. */
            for (size_t j = i; j < sizeof steps / sizeof *steps; j++)
                put(c, "SKIP", steps[j].name, ": an earlier call timed out (%s)", c->timeout_what);
            break;
        }
        if (c->o.progress)
            c->o.progress(steps[i].name, c->o.progress_arg);
        steps[i].run(c);
    }
    check_obs_size(c);
done:
    if (c->internal && rep->failed == 0)
        rc = -1;
    else
        rc = rep->failed ? 1 : 0;
    spade_worker_free(c->w);
    free(c);
    return rc;
}
