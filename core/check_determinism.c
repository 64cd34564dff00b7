/* check_determinism.c — the checks that an environment is a function of its
 * seed and actions: reset, reset_deterministic, step_deterministic, seeds_vary.
 *
 * What it is: reset and reset_deterministic by direct calls on two instances
 * side by side (their poisoned memory differs, so an uninitialised read or a
 * static shows), and two checks played through the episode layer with the
 * mixed agent (check_play.c): same seed and actions give the same episode, and
 * different seeds give different ones.
 * What it is not: the other checks (check_checks.c) or the self-play loop's
 * determinism gates (designer/gates_determinism.c, which play two workers in opposite orders).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"

/* Where two observations first differ, for the report. */
static size_t first_diff(const char *a, size_t al, const char *b, size_t bl) {
    size_t i = 0;
    while (i < al && i < bl && a[i] == b[i]) i++;
    return i;
}

/* Same reward, counting NaN == NaN (an environment that rewards NaN is odd but
 * deterministic). */
static int same_reward(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static int same_result(const spade_step_result *a, const spade_step_result *b) {
    return a->obs_len == b->obs_len && !memcmp(a->obs, b->obs, a->obs_len) && same_reward(a->reward, b->reward) &&
           a->terminated == b->terminated && a->truncated == b->truncated;
}

/* reset, reset_deterministic. Returns -1 when reset does not work
 * at all (the later checks cannot run). */
int spade_check_reset(ctx *c) {
    c->check = "reset";
    int ns = c->o.seeds;
    saved *first = calloc((size_t)ns, sizeof *first);
    if (!first) return -1;
    char buf[1400], sh[256];
    int reset_ok = 1, det_ok = 1, any_ok = 0;
    char det_why[600] = "";
    spade_failure f;
    for (int k = 0; k < ns; k++) {
        uint64_t s[2] = {seed_of(c, k), seed_of(c, k)};
        spade_step_result r[2];
        if (spade_check_reset_n(c, 2, s, r, &f) != 0) {
            if (reset_ok)
                spade_check_put(c, "FAIL", "reset", ": seed %llu: %s", (unsigned long long)s[0],
                                spade_check_why(&f, buf, sizeof buf));
            reset_ok = 0;
            break; /* a hang would cost a deadline per seed */
        }
        if (r[0].obs_len == 0 || r[0].terminated || r[0].truncated) {
            if (reset_ok)
                spade_check_put(c, "FAIL", "reset", ": seed %llu: %s", (unsigned long long)s[0],
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
                     (unsigned long long)s[0], d, spade_check_shown(r[1].obs + d, r[1].obs_len - d, sh, sizeof sh));
            det_ok = 0;
        }
        spade_check_save(&first[k], &r[0]);
        if (c->o.verbose && k == 0)
            spade_check_put(c, "INFO", "first_observation", " (seed %llu): %s", (unsigned long long)s[0],
                            spade_check_shown(r[0].obs, r[0].obs_len, sh, sizeof sh));
    }
    if (!any_ok) {
        for (int k = 0; k < ns; k++) free(first[k].obs);
        free(first);
        return -1;
    }
    /* Reset again after other episodes: a reset must not depend on history. */
    if (det_ok && first[0].obs) {
        uint64_t s[2] = {seed_of(c, 0), seed_of(c, 0)};
        spade_step_result r[2];
        /* play a step on instance 0 first, so leftovers in memory would show */
        if (spade_check_reset_n(c, 2, s, r, &f) == 0) {
            spade_step_result st;
            if (!r[0].terminated && !r[0].truncated) (void)spade_check_step_one(c, 0, "1", 1, &st, &f);
            if (spade_check_reset_n(c, 1, s, r, &f) == 0 &&
                (r[0].obs_len != first[0].len || memcmp(r[0].obs, first[0].obs, first[0].len))) {
                size_t d = first_diff(first[0].obs, first[0].len, r[0].obs, r[0].obs_len);
                snprintf(det_why, sizeof det_why,
                         ": seed %llu: reset after a played episode differs from the first reset at byte %zu",
                         (unsigned long long)s[0], d);
                det_ok = 0;
            }
        }
    }
    if (reset_ok) spade_check_put(c, "PASS", "reset", " (%d seed%s)", ns, ns == 1 ? "" : "s");
    if (det_ok)
        spade_check_put(c, "PASS", "reset_deterministic", NULL);
    else
        spade_check_put(c, "FAIL", "reset_deterministic", "%s", det_why);

    for (int k = 0; k < ns; k++) free(first[k].obs);
    free(first);
    return 0;
}

/* Different seeds should give different episodes. The first observation alone
 * is not enough to tell (a hidden-number game says the same thing every time),
 * so each seed's fingerprint is its first observation plus a few steps of
 * reference and fixed random moves with what they get back. The random moves
 * are the same for every seed; the reference moves enter the fingerprint too,
 * since moves that depend on the seed mean the seed matters. One episode at a
 * time, all on instance 0: its poisoned memory is the same for every seed, so
 * an uninitialised read cannot pass for a seed that matters. */
void spade_check_seeds_vary(ctx *c) {
    c->check = "seeds_vary";
    int ns = c->o.seeds;
    if (ns < 2) {
        spade_check_put(c, "SKIP", "seeds_vary", ": only one seed");
        return;
    }
    spade_ep_request *req = calloc((size_t)ns, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)ns, sizeof *out);
    ep_log *log = calloc((size_t)ns, sizeof *log);
    if (!req || !out || !log) {
        free(req), free(out), free(log);
        return;
    }
    for (int k = 0; k < ns; k++) req[k] = (spade_ep_request){0, seed_of(c, k), 0, 0};
    spade_ep_spec spec = spec_given(c);
    int limit = c->info.max_steps < 8 ? c->info.max_steps : 8;
    spade_agent *a = spade_check_mixed_agent(c->info.has_solve, 0, 12345, 0);
    if (spade_check_play_eps(c, &spec, 1, &c->vec, 1, req, ns, a, limit, 0, 0, log, 0, out) == 0) {
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
            for (int j = 0; j < k && !dup; j++) dup = log[j].hash == log[k].hash;
            distinct += !dup;
        }
        if (done < 2)
            spade_check_put(c, "SKIP", "seeds_vary", ": the episodes did not run");
        else if (distinct <= 1)
            spade_check_put(c, "WARN", "seeds_vary",
                            ": %d seeds all give the same episode for the same actions (use rand_range in RESET?)",
                            done);
        else
            spade_check_put(c, "PASS", "seeds_vary", " (%d distinct episodes of %d seeds)", distinct,
                            done); /* both >= 2 here */
    }
    free(req), free(out);
    spade_check_free_logs(log, ns);
}

/* Each seed played twice, side by side in one worker (whose poisoned memory
 * differs per instance), with the same actions; the two must agree at every
 * step. */
void spade_check_step_deterministic(ctx *c) {
    c->check = "step_deterministic";
    int ns = c->o.seeds;
    long n = 2L * ns;
    spade_ep_request *req = calloc((size_t)n, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)n, sizeof *out);
    ep_log *log = calloc((size_t)n, sizeof *log);
    if (!req || !out || !log) {
        free(req), free(out), free(log);
        spade_check_put(c, "FAIL", "step_deterministic", ": out of memory in the checker");
        return;
    }
    for (long i = 0; i < n; i++) req[i] = (spade_ep_request){0, seed_of(c, (int)(i / 2)), 0, 0};
    spade_ep_spec spec = spec_given(c);
    int limit = c->info.max_steps < DETERMINISM_STEPS ? c->info.max_steps : DETERMINISM_STEPS;
    int steps_total = 0;
    spade_agent *a = spade_check_mixed_agent(c->info.has_solve, 0x2545F4914F6CDD1DULL, 7, 1);
    if (spade_check_play_eps(c, &spec, 1, &c->vec, 0, req, n, a, limit, 0, 0, log, 1, out) != 0) goto done;
    char buf[1400], sh[256];
    for (int k = 0; k < ns; k++) {
        const spade_ep_outcome *o[2] = {&out[2 * k], &out[2 * k + 1]};
        const ep_log *l[2] = {&log[2 * k], &log[2 * k + 1]};
        unsigned long long s = (unsigned long long)o[0]->seed;
        /* the step each one failed at (0: its reset), INT_MAX when it did not */
        int fail_at[2];
        for (int j = 0; j < 2; j++)
            fail_at[j] = o[j]->end != SPADE_EP_FAILED ? 1 << 30
                         : o[j]->failed_in == SPADE_EP_OP_RESET || o[j]->failed_in == SPADE_EP_OP_LOAD
                             ? 0
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
                spade_check_put(c, "FAIL", "step_deterministic", ": reset seed %llu: %s", s,
                                spade_check_why(&x->failure, buf, sizeof buf));
            else if (x->failed_in == SPADE_EP_OP_SOLVE)
                spade_check_put(c, "FAIL", "step_deterministic", ": seed %llu step %d: solve: %s", s, tf,
                                spade_check_why(&x->failure, buf, sizeof buf));
            else {
                const ep_log *xl = l[f];
                const char *a = tf - 1 < xl->n_act ? xl->act[tf - 1] : "";
                size_t al = tf - 1 < xl->n_act ? xl->act_len[tf - 1] : 0;
                spade_check_put(c, "FAIL", "step_deterministic", ": seed %llu step %d action \"%s\": %s", s, tf,
                                spade_check_shown(a, al, sh, sizeof sh), spade_check_why(&x->failure, buf, sizeof buf));
            }
            goto done;
        }
        if (tm != 1 << 30) {
            int t = tm - 1;
            const char *a = t < l[0]->n_act ? l[0]->act[t] : "";
            size_t al = t < l[0]->n_act ? l[0]->act_len[t] : 0;
            double r0 = t < l[0]->n ? l[0]->obs[t].reward : 0, r1 = t < l[1]->n ? l[1]->obs[t].reward : 0;
            spade_check_put(
                c, "FAIL", "step_deterministic",
                ": seed %llu step %d action \"%s\": two instances with the same seed and actions differ (%s at "
                "byte %zu; rewards %g vs %g): state outside S, or an uninitialised local?",
                s, tm, spade_check_shown(a, al, sh, sizeof sh), what, d, r0, r1);
            goto done;
        }
        steps_total += o[0]->steps;
    }
    if (!c->timed_out)
        spade_check_put(c, "PASS", "step_deterministic", " (%d step%s over %d seed%s)", steps_total,
                        steps_total == 1 ? "" : "s", c->o.seeds, c->o.seeds == 1 ? "" : "s");
done:
    free(req), free(out);
    spade_check_free_logs(log, n);
}
