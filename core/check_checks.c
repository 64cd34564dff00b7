/* check_checks.c — the checks of what an environment does with any agent:
 * arbitrary_actions, max_steps, hint, solve, random_agent, param_extremes.
 *
 * What it is: odd actions, the empty action, SOLVE and a random agent played
 * through the episode layer (check_play.c), at the params given and at each
 * param's extremes, and the hint by direct calls (check.c).
 * What it is not: the determinism checks (check_determinism.c), or the gates a
 * generated environment must pass in self-play (designer/gates.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "check_internal.h"
#include "host.h"

typedef struct odd_action {
    const char *label;
    char *text;
    size_t len;
} odd_action;

/* Each odd action is an episode of its own (two steps of it: the second step
 * meets whatever state the first one left), all of them in one batch; the
 * episode layer finds the one that broke a worker. */
void spade_check_arbitrary_actions(ctx *c) {
    c->check = "arbitrary_actions";
    enum { N = 16 };
    odd_action a[N];
    int n = 0;
    size_t big = SPADE_ACTION_MAX;
    char *mb_a = malloc(big + 1), *mb_9 = malloc(big + 1), *bin = malloc(256);
    if (!mb_a || !mb_9 || !bin) {
        free(mb_a), free(mb_9), free(bin);
        spade_check_put(c, "FAIL", "arbitrary_actions", ": out of memory in the checker");
        return;
    }
    memset(mb_a, 'a', big);
    mb_a[big] = 0;
    memset(mb_9, '9', big);
    mb_9[big] = 0;
    for (int i = 0; i < 256; i++) bin[i] = (char)i;
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
    if (spade_check_play_eps(c, &spec, 1, &c->vec, 0, req, n, probes, 0, 0, 0, NULL, 0, out) != 0) return;
    char buf[1400];
    int failed = 0;
    char first_fail[1400] = "";
    for (int i = 0; i < n; i++) {
        if (out[i].end != SPADE_EP_FAILED) continue;
        if (!failed++) {
            if (out[i].failed_in == SPADE_EP_OP_RESET)
                snprintf(first_fail, sizeof first_fail, "reset before %s: %s", a[i].label,
                         spade_check_why(&out[i].failure, buf, sizeof buf));
            else
                snprintf(first_fail, sizeof first_fail, "%s on %s", spade_check_why(&out[i].failure, buf, sizeof buf),
                         a[i].label);
        }
    }
    if (failed)
        spade_check_put(c, "FAIL", "arbitrary_actions", ": %s (%d of %d odd actions failed%s)", first_fail, failed, n,
                        c->timed_out ? "; the rest were not tried" : "");
    else
        spade_check_put(c, "PASS", "arbitrary_actions", " (%d odd actions)", n);
}

/* The empty action, on two seeds, must neither win nor keep the episode
 * running past max_steps, nor end it early by truncation. */
void spade_check_max_steps(ctx *c) {
    c->check = "max_steps";
    char buf[1400];
    int ms = c->info.max_steps;
    spade_ep_request req[2] = {{0, seed_of(c, 0), 0, 0}, {0, seed_of(c, 1), 0, 0}};
    spade_ep_outcome out[2];
    spade_ep_spec spec = spec_given(c);
    if (spade_check_play_eps(c, &spec, 1, &c->vec, 0, req, 2, spade_agent_noop(), ms, 1, 0, NULL, 0, out) != 0) return;
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
            snprintf(m, sizeof m, ": reset: %s", spade_check_why(&o->failure, buf, sizeof buf));
        } else if (o->end == SPADE_EP_FAILED) {
            t = o->steps + 1;
            snprintf(m, sizeof m, ": seed %llu step %d of the empty action: %s", s, t,
                     spade_check_why(&o->failure, buf, sizeof buf));
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
        spade_check_put(c, "FAIL", "max_steps", "%s", msg);
    else if (out[0].end == SPADE_EP_STOPPED || out[1].end == SPADE_EP_STOPPED)
        spade_check_put(c, "FAIL", "max_steps", ": the episodes were stopped");
    else
        spade_check_put(c, "PASS", "max_steps", " (episodes ended after %d and %d steps; max_steps %d)", out[0].steps,
                        out[1].steps, ms);
}

#define HINT_TRY_SEEDS 3
#define HINT_TRY_PIECES 16

/* Whether a piece of hint h (the whole of it, or one of its numbers, words
 * and lines) played as the first action of seed s wins at once; the piece
 * into won (cap bytes). -1 when a call failed (its check is another's). */
static int hint_wins(ctx *c, uint64_t s, const char *h, size_t len, char *won, size_t cap) {
    spade_pieces pc;
    if (spade_text_pieces(h, len, &pc) < 0) return -1;
    int hit = 0;
    for (int k = -1; k < pc.n && k < HINT_TRY_PIECES && !hit; k++) {
        const char *p = k < 0 ? h : pc.p[k];
        size_t pl = k < 0 ? len : pc.len[k];
        spade_step_result r;
        spade_failure f;
        if (spade_check_reset_n(c, 1, &s, &r, &f) != 0 || r.terminated || r.truncated ||
            spade_check_step_one(c, 0, p, pl, &r, &f) != 0) {
            hit = -1;
            break;
        }
        if (r.reward >= c->info.success) {
            hit = 1;
            spade_check_shown(p, pl, won, cap);
        }
    }
    spade_pieces_free(&pc);
    return hit;
}

void spade_check_hint(ctx *c) {
    c->check = "hint";
    char buf[1400], sh[256], act[64], won[256] = "", leak_seed[32] = "";
    int leaks = 0;
    spade_failure f;
    for (int k = 0; k < c->o.seeds; k++) {
        uint64_t s = seed_of(c, k);
        spade_step_result r;
        if (spade_check_reset_n(c, 1, &s, &r, &f) != 0) {
            spade_check_put(c, "FAIL", "hint", ": reset seed %llu: %s", (unsigned long long)s,
                            spade_check_why(&f, buf, sizeof buf));
            return;
        }
        size_t len = 0;
        char *h = spade_check_text_call(c, 0, &len, &f);
        if (!h) {
            spade_check_put(c, "FAIL", "hint", ": seed %llu: %s", (unsigned long long)s,
                            spade_check_why(&f, buf, sizeof buf));
            return;
        }
        if (c->o.verbose && k == 0)
            spade_check_put(c, "INFO", "hint", " (seed %llu): %s", (unsigned long long)s,
                            spade_check_shown(h, len, sh, sizeof sh));
        if (k < HINT_TRY_SEEDS && len > 0 && hint_wins(c, s, h, len, sh, sizeof sh) == 1 && !leaks++) {
            snprintf(won, sizeof won, "%s", sh);
            snprintf(leak_seed, sizeof leak_seed, "%llu", (unsigned long long)s);
        }
        free(h);
        if (k < HINT_TRY_SEEDS && spade_check_reset_n(c, 1, &s, &r, &f) != 0) {
            spade_check_put(c, "FAIL", "hint", ": reset seed %llu: %s", (unsigned long long)s,
                            spade_check_why(&f, buf, sizeof buf));
            return;
        }
        if (len == 0) {
            spade_check_put(c, "FAIL", "hint", ": seed %llu: the hint is empty after reset (say() a strategy in HINT)",
                            (unsigned long long)s);
            return;
        }
        /* mid-episode too: a hint that only works at reset misleads later */
        uint64_t rng = s + 99;
        size_t al = spade_random_action(&rng, act, sizeof act);
        if (spade_check_step_one(c, 0, act, al, &r, &f) != 0) continue; /* step failures belong to other checks */
        if (r.terminated || r.truncated) continue;
        h = spade_check_text_call(c, 0, &len, &f);
        if (!h) {
            spade_check_put(c, "FAIL", "hint", ": seed %llu after one step: %s", (unsigned long long)s,
                            spade_check_why(&f, buf, sizeof buf));
            return;
        }
        free(h);
        if (len == 0) {
            spade_check_put(c, "FAIL", "hint", ": seed %llu: the hint is empty after one step", (unsigned long long)s);
            return;
        }
    }
    spade_check_put(c, "PASS", "hint", NULL);
    /* The hint works; one that holds the answer is what the self-play loop
     * refuses (its hint_echo gate), so say so here too. */
    int tried = c->o.seeds < HINT_TRY_SEEDS ? c->o.seeds : HINT_TRY_SEEDS;
    if (leaks >= (tried > 1 ? 2 : 1))
        spade_check_put(
            c, "WARN", "hint",
            ": playing \"%s\" from the hint won seed %s at the first step (%d of %d seeds tried): a hint that gives "
            "the answer is refused by the self-play gates (see spade check --gates)",
            won, leak_seed, leaks, tried);
}

/* One episode on each of the solve_seeds seeds, by SOLVE or by the random
 * agent; returns the wins, or -1 after a FAIL line for the check c->check when
 * an episode could not be played. lost (lostcap bytes, may be NULL) gets the
 * first seed that did not win. */
static int play_seeds(ctx *c, int use_solve, char *lost, size_t lostcap) {
    int n = c->o.solve_seeds;
    if (n <= 0) return 0;
    spade_ep_request *req = calloc((size_t)n, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)n, sizeof *out);
    if (!req || !out) {
        free(req), free(out);
        spade_check_put(c, "FAIL", c->check, ": out of memory in the checker");
        return -1;
    }
    for (int k = 0; k < n; k++) req[k] = (spade_ep_request){0, seed_of(c, k), 0, 0};
    spade_ep_spec spec = spec_given(c);
    spade_agent *a = use_solve ? spade_agent_solve() : spade_agent_random(RANDOM_AGENT_SEED);
    int wins = -1;
    if (spade_check_play_eps(c, &spec, 1, &c->vec, 0, req, n, a, 0, 0, use_solve, NULL, 0, out) == 0) {
        char buf[1400];
        wins = 0;
        /* the first failed seed; a timeout stops the run, and the episodes
         * still live then (before it too) end as stopped, blamed for nothing */
        const spade_ep_outcome *bad = NULL;
        for (int k = 0; k < n && !bad; k++)
            if (out[k].end == SPADE_EP_FAILED) bad = &out[k];
        for (int k = 0; k < n && !bad; k++)
            if (out[k].end == SPADE_EP_STOPPED) bad = &out[k];
        if (bad) {
            spade_check_put(c, "FAIL", c->check, ": seed %llu: %s", (unsigned long long)bad->seed,
                            bad->end == SPADE_EP_STOPPED ? "stopped" : spade_check_ep_why(bad, buf, sizeof buf));
            wins = -1;
        }
        for (int k = 0; k < n && wins >= 0; k++) {
            wins += out[k].success;
            if (!out[k].success && lost && !*lost)
                snprintf(lost, lostcap, "seed %llu returned %g (success needs >= %g)", (unsigned long long)out[k].seed,
                         out[k].ret, c->info.success);
        }
    }
    free(req), free(out);
    return wins;
}

void spade_check_solve(ctx *c) {
    c->check = "solve";
    if (!c->info.has_solve) {
        spade_check_put(c, "WARN", "solve", ": no SOLVE block, so nothing proves the environment can be won");
        return;
    }
    int n = c->o.solve_seeds;
    char lost[600] = "";
    int wins = play_seeds(c, 1, lost, sizeof lost);
    if (wins < 0) return;
    if (wins < n)
        spade_check_put(c, "FAIL", "solve", ": SOLVE won %d of %d seeds; %s", wins, n, lost);
    else
        spade_check_put(c, "PASS", "solve", " (won %d of %d seed%s)", wins, n, n == 1 ? "" : "s");
}

void spade_check_random_agent(ctx *c) {
    c->check = "random_agent";
    int n = c->o.solve_seeds;
    int wins = play_seeds(c, 0, NULL, 0);
    if (wins < 0) return;
    if (n > 0 && (double)wins / n > RANDOM_WIN_MAX)
        spade_check_put(
            c, "FAIL", "random_agent",
            ": a random agent won %d of %d episode%s, more than %.0f%%: the task can be won by guessing (fewer "
            "choices per step than it looks, or a reward for any answer?)",
            wins, n, n == 1 ? "" : "s", RANDOM_WIN_MAX * 100);
    else
        spade_check_put(c, "PASS", "random_agent", " (won %d of %d)", wins, n);
}

/* Plays at each parameter's min and at its max (the others at their values),
 * and at a few random combinations: a SOLVE episode (which must win) and a
 * long random one on each of EXTREME_SEEDS seeds. A parameter range the code
 * does not hold (STATE sized for 10 tries, `tries` allowed up to 100) crashes
 * here, where the defaults alone never reach it. Every setting is a spec of
 * its own (instances take their params when created), all of them played in
 * one run of the episode layer per agent. */
static void describe_params(const ctx *c, const double *pvals, char *out, size_t cap) {
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < c->info.n_params && o + 1 < cap; i++) {
        int n = snprintf(out + o, cap - o, "%s%s=%.17g", i ? "," : "", c->info.params[i].name, pvals[i]);
        if (n < 0) break;
        o += (size_t)n;
    }
}

enum { MAX_SETTINGS = 2 * SPADE_INFO_MAX_PARAMS + EXTREME_RANDOM_COMBOS };

void spade_check_param_extremes(ctx *c) {
    c->check = "param_extremes";
    int np = c->info.n_params;
    if (np == 0) {
        spade_check_put(c, "SKIP", "param_extremes", ": no params");
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
            if (v == c->pvals[s / 2]) continue; /* the other checks played this one */
            pv[s / 2] = v;
        } else {
            for (int i = 0; i < np; i++) {
                const spade_param_info *p = &c->info.params[i];
                double u = (double)(spade_splitmix64(&rng) >> 11) / 9007199254740992.0;
                double v = p->min + u * (p->max - p->min);
                if (p->type == SPADE_PARAM_INT) {
                    v = floor(p->min + u * (p->max - p->min + 1));
                    if (v > p->max) v = p->max;
                }
                pv[i] = v;
            }
        }
        describe_params(c, pv, desc[settings], sizeof desc[settings]);
        specs[settings] = (spade_ep_spec){c->filename, c->source, c->len, desc[settings], 0};
        settings++;
    }
    if (settings == 0) {
        spade_check_put(c, "SKIP", "param_extremes", ": every param has a single value");
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
    for (long i = 0; i < n; i++) rnd[i].end = sol[i].end = SPADE_EP_STOPPED; /* a run a timeout skipped */
    for (long i = 0; i < n; i++)
        req[i] = (spade_ep_request){(int)(i / EXTREME_SEEDS), seed_of(c, (int)(i % EXTREME_SEEDS)), 0, 0};
    int cap_t = c->info.max_steps < LONG_EPISODE_CAP ? c->info.max_steps : LONG_EPISODE_CAP;
    int played = !c->info.has_solve || spade_check_play_eps(c, specs, settings, vecs, 0, req, n, spade_agent_solve(), 0,
                                                            0, 1, NULL, 0, sol) == 0;
    if (played && !c->timed_out)
        played = spade_check_play_eps(c, specs, settings, vecs, 0, req, n, spade_agent_random(RANDOM_AGENT_SEED), cap_t,
                                      0, 0, NULL, 0, rnd) == 0;
    for (int s = 0; s < settings; s++) spade_vecenv_free(vecs[s]);
    if (!played) return;
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
                         spade_check_ep_why(&sol[i], buf, sizeof buf));
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
                         spade_check_ep_why(&rnd[i], buf, sizeof buf));
        }
    }
    if (*failed)
        spade_check_put(c, "FAIL", "param_extremes", ": %s", failed);
    else if (!c->timed_out)
        spade_check_put(c, "PASS", "param_extremes", " (%d settings: each param's min and max, %d random; %d episodes)",
                        settings, EXTREME_RANDOM_COMBOS, episodes);
}
