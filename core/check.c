/* check.c — the environment checker's frame (see check.h for the list of checks).
 *
 * Every check runs on one poisoned vector env at the params given (one
 * worker): reset and hint call its instances 0 and 1 directly (two instances
 * side by side is what exposes hidden global state: a static counter makes the
 * second reset differ from the first); the checks that play episodes are runs
 * of the episode layer (core/episodes.h) on it, with core's agents (solve,
 * random, noop, probes) or the mixed probing agent, so a crash mid-episode
 * is that episode's outcome, found by the layer's replays. A failure kills the
 * worker (the sandbox trusts nothing after one); the next call loads it again.
 * param_extremes has a vector env per setting (instances take their params
 * when created).
 *
 * What it is: the checker's state and report, the direct calls on instances
 * 0 and 1, and spade_check, which runs the checks in order. The checks
 * themselves are check_determinism.c and check_checks.c; playing through the
 * episode layer is check_play.c; what they share is check_internal.h.
 * What it is not: a sandbox (core/sandbox contains the code), a second episode
 * loop, or a trainer gate (designer/gates.c).
 */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"
#include "errbuf.h"

void spade_check_opts_default(spade_check_opts *o) {
    memset(o, 0, sizeof *o);
    o->seeds = 5;
    o->solve_seeds = 20;
}

size_t spade_random_action(uint64_t *rng, char *buf, size_t cap) {
    static const char *const dirs[] = {"up",   "down", "left", "right", "north", "south", "east",
                                       "west", "n",    "s",    "e",     "w",     "stay"};
    static const char *const words[] = {"yes",  "no", "a",    "b",    "c",    "d",    "true", "false", "hello",
                                        "stop", "go", "help", "look", "take", "open", "pass", "0",     "1"};
    if (!cap) return 0;
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
        for (int i = 0; i < len && (size_t)n + 1 < cap; i++) buf[n++] = (char)('a' + spade_splitmix64(rng) % 26);
        buf[n] = 0;
    }
    if (n < 0) n = 0;
    if ((size_t)n >= cap) n = (int)cap - 1;
    return (size_t)n;
}

/* ---- the report ------------------------------------------------------------- */

void spade_check_put(ctx *c, const char *kind, const char *name, const char *fmt, ...) {
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
const char *spade_check_shown(const char *s, size_t len, char *buf, size_t cap) {
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

const char *spade_check_why(const spade_failure *f, char *buf, size_t cap) {
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

void spade_check_note_failure(ctx *c, const spade_failure *f, const char *where) {
    /* One timeout stops the check: an environment that loops would cost a
     * deadline per call of every later check (28 s of silence, before). */
    if (f->outcome == SPADE_OUT_TIMEOUT && !c->timed_out) {
        c->timed_out = 1;
        snprintf(c->timeout_what, sizeof c->timeout_what, "%s during the %s check", where, c->check);
        spade_check_why(f, c->timeout_why, sizeof c->timeout_why);
        c->failed_at_timeout = c->rep->failed;
    }
    if (f->outcome == SPADE_OUT_OUTPUT && !c->over) {
        c->over = 1;
        snprintf(c->over_where, sizeof c->over_where, "%s during the %s check", where, c->check);
    }
}

void spade_check_note_obs(ctx *c, size_t len) {
    if (len > c->max_obs) c->max_obs = len;
}

/* The shared vector env, its worker loaded again after a failure killed it
 * (the sandbox trusts nothing after one). */
static spade_vecenv *vec_live(ctx *c, spade_failure *f) {
    memset(f, 0, sizeof *f);
    if (!c->vec || spade_vecenv_revive(c->vec, f) != 0) {
        c->internal = 1;
        return NULL;
    }
    return c->vec;
}

int spade_check_reset_n(ctx *c, int n, const uint64_t *seeds, spade_step_result *res, spade_failure *f) {
    spade_vecenv *v = vec_live(c, f);
    if (!v) return -1;
    if (spade_vecenv_reset_some(v, n, c->id, seeds, res, f) != 0) {
        spade_check_note_failure(c, f, "reset");
        return -1;
    }
    for (int i = 0; i < n; i++) spade_check_note_obs(c, res[i].obs_len);
    return 0;
}

/* Steps instances ids[0..n) (a subset of c->id) with one action each. */
static int step_ids(ctx *c, int n, const int *ids, const char *const *acts, const size_t *lens, spade_step_result *res,
                    spade_failure *f) {
    spade_vecenv *v = vec_live(c, f);
    if (!v) return -1;
    if (spade_vecenv_step_some(v, n, ids, acts, lens, res, f) != 0) {
        spade_check_note_failure(c, f, "step");
        return -1;
    }
    for (int i = 0; i < n; i++) spade_check_note_obs(c, res[i].obs_len);
    return 0;
}

int spade_check_step_one(ctx *c, int inst, const char *act, size_t len, spade_step_result *res, spade_failure *f) {
    return step_ids(c, 1, &c->id[inst], &act, &len, res, f);
}

/* The hint or the solve action of instance 0, copied (the worker's buffer is
 * reused by the next call). */
char *spade_check_text_call(ctx *c, int solve, size_t *len, spade_failure *f) {
    spade_vecenv *v = vec_live(c, f);
    if (!v) return NULL;
    const char *t = NULL;
    size_t n = 0;
    int rc = solve ? spade_vecenv_solve(v, c->id[0], &t, &n, f) : spade_vecenv_hint(v, c->id[0], &t, &n, f);
    if (rc != 0) {
        spade_check_note_failure(c, f, solve ? "solve" : "hint");
        return NULL;
    }
    spade_check_note_obs(c, n);
    char *copy = malloc(n + 1);
    if (!copy) return NULL;
    memcpy(copy, t ? t : "", n);
    copy[n] = 0;
    *len = n;
    return copy;
}

void spade_check_save(saved *s, const spade_step_result *r) {
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

/* ---- the order of the checks ------------------------------------------------ */

static void check_obs_size(ctx *c) {
    if (c->over)
        spade_check_put(c, "FAIL", "obs_size",
                        ": output larger than %d bytes in %s (an observation that grows with the episode?)",
                        SPADE_OBS_MAX, c->over_where);
    else
        spade_check_put(c, "PASS", "obs_size", " (largest output %zu of %d bytes)", c->max_obs, SPADE_OBS_MAX);
}

static const char *const later_checks[] = {
    "reset_deterministic", "step_deterministic", "seeds_vary", "arbitrary_actions", "max_steps", "hint", "solve",
    "random_agent",        "param_extremes",     "obs_size"};

typedef struct check_step {
    const char *name;
    void (*run)(ctx *c);
} check_step;

static const check_step steps[] = {
    {"step_deterministic", spade_check_step_deterministic},
    {"seeds_vary", spade_check_seeds_vary},
    {"arbitrary_actions", spade_check_arbitrary_actions},
    {"max_steps", spade_check_max_steps},
    {"hint", spade_check_hint},
    {"solve", spade_check_solve},
    {"random_agent", spade_check_random_agent},
    {"param_extremes", spade_check_param_extremes},
};

int spade_check(spade_sandbox *sb, const char *filename, const char *source, size_t len, const char *params,
                const spade_check_opts *opts, spade_check_report *rep) {
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
    if (c->o.seeds < 1) c->o.seeds = 1;
    timeout_option = c->o.timeout_option;
    if (c->o.solve_seeds < 0) c->o.solve_seeds = 0;

    char buf[1400];
    int rc = 0;
    spade_failure f;
    memset(&f, 0, sizeof f);
    /* Instances take their params when created, so the vector env is made at
     * the params given; when that fails, a worker alone says why: the
     * compiler, the params, or the instances. */
    int n_envs = 2 * c->o.seeds > 16 ? 2 * c->o.seeds : 16; /* step_deterministic's pairs, the odd actions */
    if (n_envs < c->o.solve_seeds) n_envs = c->o.solve_seeds;
    if (n_envs > 256) n_envs = 256;
    spade_failure vf;
    memset(&vf, 0, sizeof vf);
    if (spade_vecenv_new_poisoned(sb, c->filename, source, len, params, n_envs, 1, SPADE_AUTORESET_DISABLED,
                                  CHECK_POISON, &c->vec, &vf) != 0)
        c->vec = NULL;
    spade_worker *w = NULL;
    if (!c->vec && (spade_worker_load_poisoned(sb, c->filename, source, len, CHECK_POISON, &w, &f) != 0 || !w)) {
        if (f.outcome == SPADE_OUT_INTERNAL || f.outcome == SPADE_OUT_OK) {
            spade_check_put(c, "FAIL", "compile", ": the sandbox failed: %s", spade_check_why(&f, buf, sizeof buf));
            rc = -1;
        } else {
            spade_check_put(c, "FAIL", "compile", ": %s", spade_check_why(&f, buf, sizeof buf));
            spade_check_put(c, "SKIP", "other checks", ": the environment does not compile");
            rc = 1;
        }
        free(c);
        return rc;
    }
    c->info = c->vec ? *spade_vecenv_info(c->vec) : *spade_worker_info(w);
    spade_worker_free(w);
    spade_check_put(c, "PASS", "compile", " (%s: %d params, %d tools, max_steps %d, success >= %g%s)", c->info.name,
                    c->info.n_params, c->info.n_tools, c->info.max_steps, c->info.success,
                    c->info.has_solve ? ", has SOLVE" : "");
    char perr[512];
    if (spade_params_parse(&c->info, params, c->pvals, perr, sizeof perr) != 0) {
        spade_check_put(c, "FAIL", "params", ": %s", perr);
        spade_check_put(c, "SKIP", "other checks", ": the params do not apply");
        goto done;
    }
    if (params && *params) spade_check_put(c, "PASS", "params", " (%s)", params);
    if (!c->vec) {
        spade_check_put(c, "FAIL", "reset", ": cannot create instances: %s", spade_check_why(&vf, buf, sizeof buf));
        spade_check_put(c, "SKIP", "other checks", ": no instance");
        goto done;
    }
    c->id[0] = 0;
    c->id[1] = 1;

    if (c->o.progress) c->o.progress("reset", c->o.progress_arg);
    if (spade_check_reset(c) != 0) {
        for (size_t i = 0; i < sizeof later_checks / sizeof *later_checks; i++)
            spade_check_put(c, "SKIP", later_checks[i], ": reset does not work");
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
                spade_check_put(c, "FAIL", steps[j++].name, ": a call timed out (%s): %s", c->timeout_what,
                                c->timeout_why);
            for (; j < sizeof steps / sizeof *steps; j++)
                spade_check_put(c, "SKIP", steps[j].name, ": an earlier call timed out (%s)", c->timeout_what);
            break;
        }
        if (c->o.progress) c->o.progress(steps[i].name, c->o.progress_arg);
        steps[i].run(c);
    }
    if (c->timed_out && c->rep->failed == c->failed_at_timeout)
        spade_check_put(c, "FAIL", "timeout", ": a call timed out (%s): %s", c->timeout_what, c->timeout_why);
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
