/* test_episodes.c — the episode layer (core/episodes.h) and the agents of
 * core/agents.h.
 *
 * What it is: Check tests that (1) the vector env steps a chosen subset and
 * resets chosen envs with chosen seeds, and a revived worker plays on; (2)
 * paired seeds give the same episodes, observation for observation, whatever
 * max_live and the number of workers; (3) an episode that crashes or hangs its
 * worker is that episode's outcome, with its class, and every other episode
 * plays as it would have; an environment that does not compile fails its own
 * requests only; (4) the scripted agents send what they claim (no-op: empty;
 * hint-echo: each number, word and line of the hint; observation-echo;
 * script); (5) the hint arm appends the hint (the run's own hint for a spec,
 * when it gives one, instead of the environment's); outcomes come in episode
 * order.
 * What it is not: a test of spade run's printing (tests/test_cli.sh).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents.h"
#include "episodes.h"
#include "sandbox/sandbox.h"
#include "testutil.h"

static spade_sandbox *sb;

static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.call_timeout_s = 5.0}); }

static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* What a run showed of each episode: a hash over every event, the texts of
 * its actions and observations in order (as one string each, '|'-joined,
 * capped), and the order outcomes came in. */
enum { MAXEP = 64, TXT = 4096 };
typedef struct record {
    uint64_t hash[MAXEP];
    char acts[MAXEP][TXT];
    char obs[MAXEP][TXT];
    int n_acts[MAXEP], n_obs[MAXEP];
    long order[MAXEP];
    int n_out;
} record;

static void cat(char *dst, int *count, const char *s, size_t n) {
    size_t k = strlen(dst);
    if ((*count)++ && k + 1 < TXT) dst[k++] = '|';
    if (n > TXT - 1 - k) n = TXT - 1 - k;
    memcpy(dst + k, s, n);
    dst[k + n] = 0;
}

static void on_event(void *ctx, const spade_ep_event *e) {
    record *r = ctx;
    ck_assert(e->episode >= 0 && e->episode < MAXEP);
    uint64_t h = r->hash[e->episode];
    h = fnv(h, &e->kind, sizeof e->kind);
    h = fnv(h, &e->step, sizeof e->step);
    h = fnv(h, e->text, e->len);
    h = fnv(h, &e->reward, sizeof e->reward);
    r->hash[e->episode] = h;
    ck_assert_uint_eq(strlen(e->text), e->len);
    if (e->kind == SPADE_EV_ACTION)
        cat(r->acts[e->episode], &r->n_acts[e->episode], e->text, e->len);
    else
        cat(r->obs[e->episode], &r->n_obs[e->episode], e->text, e->len);
}

static void on_outcome(void *ctx, const spade_ep_outcome *o) {
    record *r = ctx;
    ck_assert_int_lt(r->n_out, MAXEP);
    r->order[r->n_out++] = o->episode;
}

/* Plays reqs with agent, max_live and workers; fills out and rec. */
static int play(const spade_ep_spec *specs, int n_specs, const spade_ep_request *reqs, long n, spade_agent *agent,
                int max_live, int workers, spade_ep_outcome *out, record *rec) {
    spade_episodes_opts o;
    spade_episodes_opts_default(&o);
    o.max_live = max_live;
    o.workers = workers;
    o.on_event = on_event;
    o.on_outcome = on_outcome;
    memset(rec, 0, sizeof *rec);
    o.ctx = rec;
    char err[512];
    int rc = spade_episodes_play(sb, specs, n_specs, reqs, n, agent, &o, out, err, sizeof err);
    ck_assert_msg(rc >= 0, "episodes: %s", err);
    for (long i = 0; i < n; i++) ck_assert_int_eq(rec->order[i], i); /* episode order, whatever finished first */
    ck_assert_int_eq(rec->n_out, n);
    return rc;
}

static spade_ep_spec spec_of(const char *file, char **keep, const char *params) {
    size_t len;
    *keep = tu_read_env(file, &len);
    spade_ep_spec s = {.filename = file, .source = *keep, .len = len, .params = params};
    return s;
}

static void assert_same_outcome(const spade_ep_outcome *a, const spade_ep_outcome *b) {
    ck_assert_int_eq(a->episode, b->episode);
    ck_assert_msg(a->end == b->end, "episode %ld: %s vs %s", a->episode, spade_ep_end_name(a->end),
                  spade_ep_end_name(b->end));
    ck_assert_msg(memcmp(&a->ret, &b->ret, sizeof a->ret) == 0, "episode %ld: return %.17g vs %.17g", a->episode,
                  a->ret, b->ret);
    ck_assert_int_eq(a->steps, b->steps);
    ck_assert_int_eq(a->success, b->success);
    ck_assert_int_eq(a->failure.outcome, b->failure.outcome);
}

/* ---- the vector env's subsets ------------------------------------------------- */

START_TEST(vecenv_subsets) {
    size_t len;
    char *src = tu_read_env("sb_walk.c", &len);
    spade_vecenv *v, *ref;
    spade_failure f;
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_walk.c", src, len, NULL, 4, 2, SPADE_AUTORESET_DISABLED, &v, &f), 0);
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_walk.c", src, len, NULL, 1, 1, SPADE_AUTORESET_DISABLED, &ref, &f), 0);
    /* env 1 was never reset: stepping it is the caller's mistake */
    const char *l = "L";
    ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){1}, &l, NULL, NULL, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL);
    /* envs 2 and 0 with seeds 11 and 12; results in the order asked */
    spade_step_result r[4], q;
    ck_assert_int_eq(spade_vecenv_reset_some(v, 2, (int[]){2, 0}, (uint64_t[]){11, 12}, r, &f), 0);
    char first2[256], first0[256];
    snprintf(first2, sizeof first2, "%s", r[0].obs);
    snprintf(first0, sizeof first0, "%s", r[1].obs);
    ck_assert_int_eq(spade_vecenv_reset_one(ref, 0, 11, &q, &f), 0);
    ck_assert_str_eq(first2, q.obs);
    ck_assert_int_eq(spade_vecenv_reset_one(ref, 0, 12, &q, &f), 0);
    ck_assert_str_eq(first0, q.obs);
    ck_assert_int_eq(spade_vecenv_reset_some(v, 2, (int[]){1, 1}, (uint64_t[]){1, 2}, r, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL); /* listed twice */
    /* step env 2 alone three times: env 0 must not move meanwhile */
    ck_assert_int_eq(spade_vecenv_reset_one(ref, 0, 11, &q, &f), 0);
    const char *moves[3] = {"L", "R", "L"};
    for (int t = 0; t < 3; t++) {
        ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){2}, &moves[t], NULL, r, &f), 0);
        char got[256];
        snprintf(got, sizeof got, "%s", r[0].obs);
        ck_assert_int_eq(spade_vecenv_step_some(ref, 1, (int[]){0}, &moves[t], NULL, &q, &f), 0);
        ck_assert_str_eq(got, q.obs);
        if (r[0].terminated || r[0].truncated) break;
    }
    /* env 0's first step is still its first: compare with a fresh seed 12 */
    ck_assert_int_eq(spade_vecenv_reset_one(ref, 0, 12, &q, &f), 0);
    const char *acts[4] = {"R", NULL, NULL, NULL};
    unsigned char mask[4] = {1, 0, 0, 0};
    ck_assert_int_eq(spade_vecenv_step_mask(v, mask, acts, NULL, r, &f), 0);
    char got[256];
    snprintf(got, sizeof got, "%s", r[0].obs);
    ck_assert_int_eq(spade_vecenv_step_some(ref, 1, (int[]){0}, &acts[0], NULL, &q, &f), 0);
    ck_assert_str_eq(got, q.obs);
    /* hint and solve per env */
    const char *t;
    size_t tl;
    ck_assert_int_eq(spade_vecenv_hint(v, 0, &t, &tl, &f), 0);
    ck_assert(strstr(t, "The goal is") != NULL);
    ck_assert_int_eq(spade_vecenv_solve(v, 0, &t, &tl, &f), 0);
    ck_assert(tl == 1 && (t[0] == 'L' || t[0] == 'R'));
    spade_vecenv_free(v);
    spade_vecenv_free(ref);
    free(src);
}
END_TEST

/* Under NEXT_STEP a subset step auto-resets the listed envs that ended, with
 * the documented seed, and leaves the others alone. */
START_TEST(vecenv_subset_autoreset) {
    size_t len;
    char *src = tu_read_env("sb_walk.c", &len);
    spade_vecenv *v, *ref;
    spade_failure f;
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_walk.c", src, len, NULL, 3, 1, SPADE_AUTORESET_NEXT_STEP, &v, &f), 0);
    ck_assert_int_eq(spade_vecenv_new(sb, "sb_walk.c", src, len, NULL, 1, 1, SPADE_AUTORESET_DISABLED, &ref, &f), 0);
    spade_step_result r[3], q;
    ck_assert_int_eq(spade_vecenv_reset(v, 50, r, &f), 0);
    char other[256];
    snprintf(other, sizeof other, "%s", r[2].obs);
    const char *a = "L";
    int t = 0;
    do {
        ck_assert_int_lt(++t, 50);
        ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){1}, &a, NULL, r, &f), 0);
    } while (!r[0].terminated && !r[0].truncated);
    /* env 1's next episode: seed 50 + 1 + 1 * 3 */
    ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){1}, &a, NULL, r, &f), 0);
    ck_assert_int_eq(spade_vecenv_reset_one(ref, 0, 54, &q, &f), 0);
    ck_assert_str_eq(r[0].obs, q.obs);
    /* env 2 never moved: its first step from seed 52 is still ahead */
    ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){2}, &a, NULL, r, &f), 0);
    char got[256];
    snprintf(got, sizeof got, "%s", r[0].obs);
    ck_assert_int_eq(spade_vecenv_reset_one(ref, 0, 52, &q, &f), 0);
    ck_assert_str_eq(other, q.obs);
    ck_assert_int_eq(spade_vecenv_step_some(ref, 1, (int[]){0}, &a, NULL, &q, &f), 0);
    ck_assert_str_eq(got, q.obs);
    spade_vecenv_free(v);
    spade_vecenv_free(ref);
    free(src);
}
END_TEST

/* A crash kills one worker: its envs are lost, the other worker's go on, and
 * a revive loads it again. */
START_TEST(vecenv_revive) {
    size_t len;
    char *src = tu_read_env("ep_len.c", &len);
    spade_vecenv *v;
    spade_failure f;
    ck_assert_int_eq(spade_vecenv_new(sb, "ep_len.c", src, len, "fail=1", 2, 2, SPADE_AUTORESET_DISABLED, &v, &f), 0);
    /* find a seed whose token is a multiple of 5 (crashes at step 2) and one whose is not */
    uint64_t bad = 0, good = 0;
    int have_bad = 0, have_good = 0;
    for (uint64_t s = 0; s < 200 && !(have_bad && have_good); s++) {
        spade_step_result r;
        ck_assert_int_eq(spade_vecenv_reset_one(v, 0, s, &r, &f), 0);
        long tok;
        ck_assert_int_eq(sscanf(r.obs, "Token %ld.", &tok), 1);
        if (tok % 5 == 0 && !have_bad) bad = s, have_bad = 1;
        if (tok % 5 != 0 && !have_good) good = s, have_good = 1;
    }
    ck_assert(have_bad && have_good);
    spade_step_result r[2];
    ck_assert_int_eq(spade_vecenv_reset_some(v, 2, (int[]){0, 1}, (uint64_t[]){bad, good}, r, &f), 0);
    const char *a[2] = {"1", "1"};
    ck_assert_int_eq(spade_vecenv_step_some(v, 2, (int[]){0, 1}, a, NULL, r, &f), 0);
    ck_assert_int_eq(spade_vecenv_step_some(v, 2, (int[]){0, 1}, a, NULL, r, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_CRASH);
    ck_assert_int_eq(spade_vecenv_env_lost(v, 0), 1);
    ck_assert_int_eq(spade_vecenv_env_lost(v, 1), 0);
    ck_assert(strstr(r[1].obs, "step 2") != NULL); /* the live worker's result came back */
    ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){1}, a, NULL, r, &f), -1); /* sticky */
    ck_assert_int_eq(spade_vecenv_revive(v, &f), 0);
    ck_assert_int_eq(spade_vecenv_env_lost(v, 0), 0);
    ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){0}, a, NULL, r, &f), -1);
    ck_assert_int_eq(f.outcome, SPADE_OUT_BAD_CALL); /* a revived env needs its reset */
    if (!r[1].terminated) {
        ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){1}, a, NULL, r, &f), 0); /* env 1 kept its episode */
        ck_assert(strstr(r[0].obs, "step 3") != NULL);
    }
    ck_assert_int_eq(spade_vecenv_reset_some(v, 1, (int[]){0}, &good, r, &f), 0);
    ck_assert_int_eq(spade_vecenv_step_some(v, 1, (int[]){0}, a, NULL, r, &f), 0);
    spade_vecenv_free(v);
    free(src);
}
END_TEST

/* ---- determinism ------------------------------------------------------------------- */

enum { NREQ = 24 };

static void requests(spade_ep_request *reqs, int n, int spec, uint64_t base) {
    for (int i = 0; i < n; i++) {
        reqs[i].spec = spec;
        reqs[i].seed = base + (uint64_t)(i / 2); /* paired: each seed twice, the second with the hint */
        reqs[i].hint = i % 2;
    }
}

START_TEST(paired_seeds_same_whatever_the_batch) {
    char *src;
    spade_ep_spec spec = spec_of("ep_len.c", &src, NULL);
    spade_ep_request reqs[NREQ];
    requests(reqs, NREQ, 0, 100);
    static const int widths[][2] = {{1, 1}, {3, 1}, {8, 2}, {32, 3}};
    spade_agent *agents[3] = {spade_agent_random(7), spade_agent_obs_echo(), spade_agent_solve()};
    static record ref, got;
    spade_ep_outcome ro[NREQ], o[NREQ];
    for (int a = 0; a < 3; a++) {
        play(&spec, 1, reqs, NREQ, agents[a], 1, 1, ro, &ref);
        int ends[5] = {0};
        for (int i = 0; i < NREQ; i++) {
            ends[ro[i].end]++;
            ck_assert_int_eq(ro[i].success, ro[i].ret >= 1.5);
        }
        ck_assert_int_eq(ends[SPADE_EP_FAILED] + ends[SPADE_EP_STOPPED], 0);
        if (a == 2) /* lengths 2..10 with max_steps 8: both ends happen */
            ck_assert(ends[SPADE_EP_TERMINATED] > 0 && ends[SPADE_EP_TRUNCATED] > 0);
        for (size_t w = 1; w < sizeof widths / sizeof widths[0]; w++) {
            play(&spec, 1, reqs, NREQ, agents[a], widths[w][0], widths[w][1], o, &got);
            for (int i = 0; i < NREQ; i++) {
                assert_same_outcome(&ro[i], &o[i]);
                ck_assert_msg(ref.hash[i] == got.hash[i], "agent %d, width %d, workers %d: episode %d differs", a,
                              widths[w][0], widths[w][1], i);
            }
        }
        /* the hint arm: same first observation plus the hint; same seed, same
         * token */
        for (int i = 0; i + 1 < NREQ; i += 2) {
            const char *plain = ref.obs[i], *hinted = ref.obs[i + 1];
            size_t k = strcspn(plain, "|");
            ck_assert_int_eq(strncmp(plain, hinted, k), 0);
            ck_assert_msg(strncmp(hinted + k, "\nHint: The token is ", 20) == 0, "%s", hinted);
        }
        spade_agent_free(agents[a]);
    }
    free(src);
}
END_TEST

/* ---- failures are outcomes ---------------------------------------------------------- */

/* The token of each request's seed, from a run that does not fail. */
static void tokens(const spade_ep_spec *plain, const spade_ep_request *reqs, int n, long *tok) {
    static record rec;
    spade_ep_outcome o[MAXEP];
    spade_agent *a = spade_agent_noop();
    play(plain, 1, reqs, n, a, 8, 1, o, &rec);
    for (int i = 0; i < n; i++) ck_assert_int_eq(sscanf(rec.obs[i], "Token %ld.", &tok[i]), 1);
    spade_agent_free(a);
}

START_TEST(crash_is_an_outcome) {
    char *s1, *s2;
    spade_ep_spec specs[2] = {spec_of("ep_len.c", &s1, NULL), spec_of("ep_len.c", &s2, "fail=1")};
    spade_ep_request reqs[NREQ];
    requests(reqs, NREQ, 0, 300);
    long tok[NREQ];
    tokens(&specs[0], reqs, NREQ, tok);
    spade_ep_outcome plain[NREQ], o[NREQ], o1[NREQ];
    static record rec;
    spade_agent *a = spade_agent_random(3);
    play(specs, 2, reqs, NREQ, a, 6, 2, plain, &rec);
    for (int i = 0; i < NREQ; i++) reqs[i].spec = 1;
    play(specs, 2, reqs, NREQ, a, 6, 2, o, &rec);
    play(specs, 2, reqs, NREQ, a, 1, 1, o1, &rec);
    int failed = 0, done = 0;
    for (int i = 0; i < NREQ; i++) {
        assert_same_outcome(&o[i], &o1[i]);
        if (tok[i] % 5 == 0) {
            ck_assert_msg(o[i].end == SPADE_EP_FAILED, "episode %d (token %ld): %s", i, tok[i],
                          spade_ep_end_name(o[i].end));
            ck_assert_int_eq(o[i].failure.outcome, SPADE_OUT_CRASH);
            ck_assert_str_eq(spade_ep_op_name(o[i].failed_in), "step");
            ck_assert_int_eq(o[i].steps, 1); /* the crashing step is not counted */
            ck_assert_int_eq(o[i].success, 0);
            ck_assert(strstr(o[i].failure.message, "SIGSEGV") || strstr(o[i].failure.message, "signal"));
            failed++;
        } else {
            /* played as if nothing had happened beside it */
            assert_same_outcome(&plain[i], &o[i]);
            done++;
        }
    }
    ck_assert(failed > 0 && done > 0);
    spade_agent_free(a);
    free(s1);
    free(s2);
}
END_TEST

START_TEST(hang_is_an_outcome) {
    /* 1 s, not 0.3: the three other episodes are played again after the hang and must end
     * within the deadline of each call, whatever else a loaded machine runs meanwhile. */
    spade_sandbox_free(sb);
    sb = tu_sandbox(&(spade_sandbox_opts){.call_timeout_s = 1.0});
    char *s1;
    spade_ep_spec spec = spec_of("ep_len.c", &s1, "fail=2");
    /* seeds 0..: find 1 hanging and 3 other ones */
    spade_ep_request all[40];
    requests(all, 40, 0, 0);
    for (int i = 0; i < 40; i++) all[i].hint = 0, all[i].seed = (uint64_t)i;
    long tok[40];
    spade_ep_spec plain = spec;
    plain.params = NULL;
    tokens(&plain, all, 40, tok);
    spade_ep_request reqs[4];
    int n = 0, hangs = 0, others = 0;
    for (int i = 0; i < 40 && n < 4; i++) {
        if (tok[i] % 5 == 0 && hangs < 1)
            reqs[n++] = all[i], hangs++;
        else if (tok[i] % 5 != 0 && others < 3)
            reqs[n++] = all[i], others++;
    }
    ck_assert_int_eq(n, 4);
    spade_ep_outcome o[4];
    static record rec;
    spade_agent *a = spade_agent_solve();
    play(&spec, 1, reqs, 4, a, 4, 1, o, &rec);
    int timeouts = 0;
    for (int i = 0; i < 4; i++) {
        long t;
        ck_assert_int_eq(sscanf(rec.obs[i], "Token %ld.", &t), 1);
        if (t % 5 == 0) {
            ck_assert_int_eq(o[i].end, SPADE_EP_FAILED);
            ck_assert_int_eq(o[i].failure.outcome, SPADE_OUT_TIMEOUT);
            ck_assert_int_eq(o[i].failed_in, SPADE_EP_OP_STEP);
            timeouts++;
        } else {
            ck_assert_msg(o[i].end == SPADE_EP_TERMINATED || o[i].end == SPADE_EP_TRUNCATED, "%s: %s",
                          spade_ep_end_name(o[i].end), o[i].failure.message);
        }
    }
    ck_assert_int_eq(timeouts, 1);
    spade_agent_free(a);
    free(s1);
}
END_TEST

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* stop_on_timeout: of two hanging episodes in one batch, the first (in
 * episode order) is blamed and the run stops there: two deadlines, not one
 * per hanging episode, and the second is never played alone. */
START_TEST(timeout_stops_the_run) {
    spade_sandbox_free(sb);
    /* The hang never ends, so any deadline finds it; 1 s leaves the healthy
     * calls (a revived worker's first) room on a loaded machine, where 0.3 s
     * was seen to run out in a revive and end the run DONE. */
    sb = tu_sandbox(&(spade_sandbox_opts){.call_timeout_s = 1.0});
    char *s1;
    spade_ep_spec spec = spec_of("ep_len.c", &s1, "fail=2");
    spade_ep_request all[60];
    for (int i = 0; i < 60; i++) all[i] = (spade_ep_request){.spec = 0, .seed = (uint64_t)i};
    long tok[60];
    spade_ep_spec plain = spec;
    plain.params = NULL;
    tokens(&plain, all, 60, tok);
    /* other, hang, other, hang, other */
    spade_ep_request reqs[5];
    int n = 0;
    for (int i = 0; i < 60 && n < 5; i++)
        if ((tok[i] % 5 == 0) == (n == 1 || n == 3)) reqs[n++] = all[i];
    ck_assert_int_eq(n, 5);
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = 5;
    eo.stop_on_timeout = 1;
    spade_ep_outcome o[5];
    char err[512];
    spade_agent *a = spade_agent_solve();
    double t0 = now_s();
    int rc = spade_episodes_play(sb, &spec, 1, reqs, 5, a, &eo, o, err, sizeof err);
    double took = now_s() - t0;
    for (int i = 0; i < 5 && rc != SPADE_EPISODES_STOPPED; i++)
        fprintf(stderr, "# timeout_stops_the_run: episode %d %s in op %d: %s\n", i, spade_ep_end_name(o[i].end),
                o[i].failed_in, o[i].failure.message);
    ck_assert_msg(rc == SPADE_EPISODES_STOPPED, "rc %d: %s", rc, err);
    ck_assert_int_eq(o[1].end, SPADE_EP_FAILED);
    ck_assert_int_eq(o[1].failure.outcome, SPADE_OUT_TIMEOUT);
    ck_assert_int_eq(o[1].failed_in, SPADE_EP_OP_STEP);
    /* every episode lasts 2 steps or more, and the hang is at the second: all
     * were live when the run stopped */
    for (int i = 0; i < 5; i++)
        if (i != 1) ck_assert_msg(o[i].end == SPADE_EP_STOPPED, "episode %d: %s", i, spade_ep_end_name(o[i].end));
    /* Two deadlines, not one per hanging episode, is what the ends above say: the
     * second hang (episode 3) was stopped, never replayed alone and blamed. The
     * wall time is only printed: a loaded machine stretches it (3.2 s was seen). */
    fprintf(stderr, "# timeout_stops_the_run: stopped after %.2f s (two deadlines of 1 s)\n", took);
    /* without the option both hanging episodes are found */
    eo.stop_on_timeout = 0;
    rc = spade_episodes_play(sb, &spec, 1, reqs, 5, a, &eo, o, err, sizeof err);
    ck_assert_msg(rc == SPADE_EPISODES_DONE, "rc %d: %s", rc, err);
    ck_assert_int_eq(o[1].end, SPADE_EP_FAILED);
    ck_assert_int_eq(o[3].end, SPADE_EP_FAILED);
    ck_assert_int_ne(o[4].end, SPADE_EP_FAILED);
    spade_agent_free(a);
    free(s1);
}
END_TEST

/* opts.places: runs on a caller's vector env play as on their own, leave it
 * to the caller, and use the envs they were placed on, however many episodes
 * may be live; a worker a crash killed is loaded again for the next run. */
START_TEST(given_vector_env) {
    char *s1, *s2;
    spade_ep_spec spec = spec_of("ep_len.c", &s1, NULL), crash = spec_of("ep_len.c", &s2, "fail=1");
    spade_ep_request reqs[NREQ];
    requests(reqs, NREQ, 0, 700);
    spade_ep_outcome own[NREQ], given[NREQ];
    static record rec;
    spade_agent *a = spade_agent_random(5);
    play(&spec, 1, reqs, NREQ, a, 8, 1, own, &rec);
    spade_vecenv *v[1];
    spade_failure f;
    ck_assert_int_eq(
        spade_vecenv_new(sb, spec.filename, spec.source, spec.len, NULL, 3, 1, SPADE_AUTORESET_DISABLED, &v[0], &f), 0);
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = 8; /* more than the vector env has: it plays on its 3 */
    spade_ep_place pl[1] = {{.vec = v[0], .count = 3}};
    eo.places = pl;
    char err[512];
    for (int run = 0; run < 2; run++) {
        ck_assert_int_eq(spade_episodes_play(sb, &spec, 1, reqs, NREQ, a, &eo, given, err, sizeof err),
                         SPADE_EPISODES_DONE);
        for (int i = 0; i < NREQ; i++) assert_same_outcome(&own[i], &given[i]);
    }
    spade_vecenv_free(v[0]);
    ck_assert_int_eq(spade_vecenv_new(sb, crash.filename, crash.source, crash.len, crash.params, 4, 1,
                                      SPADE_AUTORESET_DISABLED, &v[0], &f),
                     0);
    pl[0] = (spade_ep_place){.vec = v[0], .count = 4};
    /* the plain spec on a crashing vector env: the crashes show that the run
     * played on the vector env it was given */
    int failed[2] = {0, 0};
    for (int run = 0; run < 2; run++) {
        ck_assert_int_eq(spade_episodes_play(sb, &spec, 1, reqs, NREQ, a, &eo, given, err, sizeof err),
                         SPADE_EPISODES_DONE);
        for (int i = 0; i < NREQ; i++) failed[run] += given[i].end == SPADE_EP_FAILED;
    }
    ck_assert_int_gt(failed[0], 0);
    ck_assert_int_eq(failed[0], failed[1]); /* the second run found the worker the first one's crash killed alive */
    spade_vecenv_free(v[0]);
    spade_agent_free(a);
    free(s1);
    free(s2);
}
END_TEST

START_TEST(broken_spec_fails_its_own_requests) {
    char *s1, *s2;
    spade_ep_spec specs[2] = {spec_of("ep_len.c", &s1, NULL), spec_of("cli_broken.c", &s2, NULL)};
    spade_ep_request reqs[6];
    for (int i = 0; i < 6; i++) reqs[i] = (spade_ep_request){.spec = i % 2, .seed = (uint64_t)i};
    spade_ep_outcome o[6];
    static record rec;
    spade_agent *a = spade_agent_solve();
    play(specs, 2, reqs, 6, a, 4, 1, o, &rec);
    for (int i = 0; i < 6; i++) {
        if (i % 2) {
            ck_assert_int_eq(o[i].end, SPADE_EP_FAILED);
            ck_assert_int_eq(o[i].failure.outcome, SPADE_OUT_COMPILE);
            ck_assert(strstr(o[i].failure.message, "cli_broken.c:7") != NULL);
            ck_assert_int_eq(o[i].failed_in, SPADE_EP_OP_LOAD);
        } else {
            ck_assert(o[i].end == SPADE_EP_TERMINATED || o[i].end == SPADE_EP_TRUNCATED);
        }
    }
    spade_agent_free(a);
    free(s1);
    free(s2);
}
END_TEST

/* ---- the scripted agents ------------------------------------------------------------------ */

START_TEST(text_pieces) {
    static const char hint[] = "Try 42 or -7, then 2.5.\n  Say (left), right!\nTry 42";
    static const char *const want[] = {"42",
                                       "-7",
                                       "2.5",
                                       "Try",
                                       "or",
                                       "then",
                                       "Say",
                                       "left",
                                       "right",
                                       "Try 42 or -7, then 2.5.",
                                       "Say (left), right!",
                                       "Try 42"};
    spade_pieces pc;
    ck_assert_int_eq(spade_text_pieces(hint, sizeof hint - 1, &pc), 0);
    ck_assert_int_eq(pc.n, (int)(sizeof want / sizeof want[0]));
    for (int i = 0; i < pc.n; i++) {
        ck_assert_str_eq(pc.p[i], want[i]);
        ck_assert_uint_eq(pc.len[i], strlen(want[i]));
    }
    spade_pieces_free(&pc);
    ck_assert_int_eq(spade_text_pieces("x3-4 a-5", 8, &pc), 0);
    ck_assert_int_eq(pc.n, 6); /* 3, 4, 5 (a "-" after a letter or digit is no sign); x3-4, a-5; the line */
    ck_assert_str_eq(pc.p[0], "3");
    ck_assert_str_eq(pc.p[1], "4");
    ck_assert_str_eq(pc.p[2], "5");
    ck_assert_str_eq(pc.p[5], "x3-4 a-5");
    spade_pieces_free(&pc);
    ck_assert_int_eq(spade_text_pieces("", 0, &pc), 0);
    ck_assert_int_eq(pc.n, 0);
    spade_pieces_free(&pc);
}
END_TEST

static const char *pipes(int n) {
    static char buf[64];
    memset(buf, '|', (size_t)n);
    buf[n] = 0;
    return buf;
}

START_TEST(scripted_agents_do_what_they_claim) {
    char *src;
    spade_ep_spec spec = spec_of("ep_record.c", &src, NULL);
    spade_ep_request reqs[3] = {{.spec = 0, .seed = 1}, {.spec = 0, .seed = 2, .hint = 1}, {.spec = 0, .seed = 3}};
    spade_ep_outcome o[3];
    static record rec;

    /* no-op: every action empty, to max_steps */
    spade_agent *a = spade_agent_noop();
    play(&spec, 1, reqs, 3, a, 2, 1, o, &rec);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(o[i].end, SPADE_EP_TRUNCATED);
        ck_assert_int_eq(o[i].steps, 20);
        ck_assert_str_eq(rec.acts[i], pipes(19)); /* 20 empty actions */
        ck_assert(strstr(rec.obs[i], "got [] at 20") != NULL);
    }
    spade_agent_free(a);

    /* hint-echo: the 12 pieces of the hint in order, then the episode ends;
     * also without the hint appended (it asks for the hint itself) */
    a = spade_agent_hint_echo(SPADE_TAIL_STOP);
    play(&spec, 1, reqs, 3, a, 3, 1, o, &rec);
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(rec.acts[i], "42|-7|2.5|Try|or|then|Say|left|right|Try 42 or -7, then 2.5.|"
                                      "Say (left), right!|Try 42");
        ck_assert_int_eq(o[i].end, SPADE_EP_AGENT_STOP);
        ck_assert_str_eq(o[i].stop_reason, "script_end");
        ck_assert_int_eq(o[i].steps, 12);
        ck_assert(strstr(rec.obs[i], "got [Say (left), right!] at 11") != NULL); /* the environment got them */
    }
    spade_agent_free(a);
    a = spade_agent_hint_echo(SPADE_TAIL_CYCLE);
    play(&spec, 1, reqs, 1, a, 1, 1, o, &rec);
    ck_assert_int_eq(o[0].end, SPADE_EP_TRUNCATED);
    ck_assert(strstr(rec.acts[0], "|Try 42|42|-7|2.5|Try|or|then|Say|left") != NULL);
    spade_agent_free(a);

    /* script: replayed, then stop / cycle / empty */
    const char *script[] = {"a", "bb", "ccc"};
    a = spade_agent_script(script, 3, SPADE_TAIL_STOP);
    play(&spec, 1, reqs, 3, a, 2, 1, o, &rec);
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(rec.acts[i], "a|bb|ccc");
        ck_assert_int_eq(o[i].end, SPADE_EP_AGENT_STOP);
        ck_assert_int_eq(o[i].steps, 3);
    }
    spade_agent_free(a);
    a = spade_agent_script(script, 3, SPADE_TAIL_CYCLE);
    play(&spec, 1, reqs, 1, a, 1, 1, o, &rec);
    ck_assert_str_eq(rec.acts[0], "a|bb|ccc|a|bb|ccc|a|bb|ccc|a|bb|ccc|a|bb|ccc|a|bb|ccc|a|bb");
    spade_agent_free(a);
    a = spade_agent_script(script, 3, SPADE_TAIL_EMPTY);
    play(&spec, 1, reqs, 1, a, 1, 1, o, &rec);
    char want[128];
    snprintf(want, sizeof want, "a|bb|ccc%s", pipes(17)); /* then 17 empty actions */
    ck_assert_str_eq(rec.acts[0], want);
    spade_agent_free(a);

    /* probes: episode e plays probe e % 2 at each of its first 2 steps, then stops */
    const char *probes[] = {"x", "yy"};
    const size_t plens[] = {1, 2};
    a = spade_agent_probes(probes, plens, 2, 2);
    play(&spec, 1, reqs, 3, a, 3, 1, o, &rec);
    ck_assert_str_eq(rec.acts[0], "x|x");
    ck_assert_str_eq(rec.acts[1], "yy|yy");
    ck_assert_str_eq(rec.acts[2], "x|x");
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(o[i].end, SPADE_EP_AGENT_STOP);
        ck_assert_str_eq(o[i].stop_reason, "script_end");
        ck_assert_int_eq(o[i].steps, 2);
    }
    spade_agent_free(a);
    ck_assert_ptr_null(spade_agent_probes(probes, plens, 0, 1));

    /* observation-echo: at step t, piece t mod P of the observation it saw */
    a = spade_agent_obs_echo();
    play(&spec, 1, reqs, 1, a, 1, 1, o, &rec);
    /* step 0: "Say: alpha 12 beta\nsecond line" -> 12, Say, alpha, ...: piece 0 is "12" */
    ck_assert(strncmp(rec.acts[0], "12|", 3) == 0);
    /* step 1: "got [12] at 1" -> 12, 1, got, ...: piece 1 is "1" */
    ck_assert(strncmp(rec.acts[0] + 3, "1|", 2) == 0);
    /* and so on: check every step against the pieces of the observation before it */
    char obs[TXT], acts[TXT];
    snprintf(obs, sizeof obs, "%s", rec.obs[0]);
    snprintf(acts, sizeof acts, "%s", rec.acts[0]);
    /* the first observation has a newline, so split observations on "|got" */
    char *op[32], *ap[32];
    int no = 0, na = 0;
    op[no++] = obs;
    for (char *p = obs; (p = strstr(p, "|got")) != NULL; p++) *p = 0, op[no++] = p + 1;
    for (char *p = strtok(acts, "|"); p && na < 32; p = strtok(NULL, "|")) ap[na++] = p;
    ck_assert_int_eq(na, 20);
    for (int t = 0; t < na; t++) {
        spade_pieces pc;
        ck_assert_int_eq(spade_text_pieces(op[t], strlen(op[t]), &pc), 0);
        ck_assert_str_eq(ap[t], pc.p[t % pc.n]);
        spade_pieces_free(&pc);
    }
    spade_agent_free(a);
    free(src);
}
END_TEST

/* A stop flag ends the run between round trips; live episodes end as stopped,
 * in order, and the agent's end is called for each. */
typedef struct counting {
    spade_agent inner;
    int begins, ends;
    volatile sig_atomic_t *stop;
    int acts;
} counting;

static int c_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    counting *c = ctx;
    c->begins++;
    return c->inner.begin ? c->inner.begin(c->inner.ctx, v, state, err, errlen) : 0;
}

static int c_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    counting *c = ctx;
    if (++c->acts == 3) *c->stop = 1;
    return c->inner.act(c->inner.ctx, n, views, acts, err, errlen);
}

static void c_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    counting *c = ctx;
    c->ends++;
    if (c->inner.end) c->inner.end(c->inner.ctx, v, state, o);
}

START_TEST(stop_flag) {
    char *src;
    spade_ep_spec spec = spec_of("ep_record.c", &src, NULL);
    spade_ep_request reqs[10];
    for (int i = 0; i < 10; i++) reqs[i] = (spade_ep_request){.spec = 0, .seed = (uint64_t)i};
    spade_agent *inner = spade_agent_random(1);
    volatile sig_atomic_t stop = 0;
    counting c = {.inner = *inner, .stop = &stop};
    spade_agent a = {.name = "counting", .ctx = &c, .begin = c_begin, .act = c_act, .end = c_end};
    spade_episodes_opts o;
    spade_episodes_opts_default(&o);
    o.max_live = 4;
    o.stop = &stop;
    spade_ep_outcome out[10];
    char err[256];
    ck_assert_int_eq(spade_episodes_play(sb, &spec, 1, reqs, 10, &a, &o, out, err, sizeof err), SPADE_EPISODES_STOPPED);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(out[i].end, SPADE_EP_STOPPED);
        ck_assert_int_eq(out[i].steps, i < 4 ? 3 : 0);
    }
    ck_assert_int_eq(c.begins, 4);
    ck_assert_int_eq(c.ends, 4);
    spade_agent_free(inner);
    free(src);
}
END_TEST

/* A run's hint for a spec (spade_episodes_opts.hints, the self-written hint)
 * is what the hint arm appends and what a hint-wanting agent sees, in place
 * of the environment's HINT; a spec without one keeps its own. */
START_TEST(run_hint_replaces_the_environments) {
    char *src;
    spade_ep_spec specs[2];
    specs[0] = spec_of("ep_record.c", &src, NULL);
    specs[1] = specs[0];
    spade_ep_request reqs[4] = {{.spec = 0, .seed = 1, .hint = 1},
                                {.spec = 1, .seed = 1, .hint = 1},
                                {.spec = 0, .seed = 2},
                                {.spec = 1, .seed = 2}};
    spade_ep_outcome o[4];
    static record rec;
    static const char given[] = "Say 7 twice.";
    const char *hints[2] = {given, NULL};
    size_t lens[2] = {sizeof given - 1, 0};
    spade_agent *a = spade_agent_hint_echo(SPADE_TAIL_STOP);
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.on_event = on_event;
    eo.on_outcome = on_outcome;
    eo.ctx = &rec;
    eo.hints = hints;
    eo.hint_lens = lens;
    memset(&rec, 0, sizeof rec);
    char err[512];
    ck_assert_msg(spade_episodes_play(sb, specs, 2, reqs, 4, a, &eo, o, err, sizeof err) >= 0, "%s", err);
    spade_agent_free(a);
    /* the hint arm's first observation: the given hint on spec 0, the environment's on spec 1 */
    static const char first[] = "Say: alpha 12 beta\nsecond line\nHint: Say 7 twice.|";
    ck_assert_msg(strncmp(rec.obs[0], first, sizeof first - 1) == 0, "%s", rec.obs[0]);
    ck_assert_msg(strstr(rec.obs[1], "\nHint: Try 42 or -7, then 2.5.") != NULL, "%s", rec.obs[1]);
    ck_assert(strstr(rec.obs[0], "Try 42") == NULL);
    /* what the hint-echo agent echoes, with and without the hint appended */
    for (int i = 0; i < 4; i += 2) {
        ck_assert_str_eq(rec.acts[i], "7|Say|twice|Say 7 twice.");
        ck_assert_str_eq(rec.acts[i + 1], "42|-7|2.5|Try|or|then|Say|left|right|Try 42 or -7, then 2.5.|"
                                          "Say (left), right!|Try 42");
    }
    free(src);
}
END_TEST

/* With a given hint no episode is failed by the environment's HINT (this one's
 * crashes its worker), with several hint episodes in one worker, where the
 * hints are fetched in a batch; without it they are. (The prefetch also skips
 * such specs, so the HINT is not called at all; a crash there would only cost
 * a revive, since the episodes are rebuilt and take the given hint.) */
START_TEST(a_given_hint_never_calls_the_environments) {
    char *src;
    spade_ep_spec spec = spec_of("ep_hintcrash.c", &src, NULL);
    spade_ep_request reqs[4] = {{.spec = 0, .seed = 1, .hint = 1},
                                {.spec = 0, .seed = 2, .hint = 1},
                                {.spec = 0, .seed = 3, .hint = 1},
                                {.spec = 0, .seed = 4, .hint = 1}};
    spade_ep_outcome o[4];
    static const char given[] = "Anything wins.";
    const char *hints[1] = {given};
    size_t lens[1] = {sizeof given - 1};
    spade_agent *a = spade_agent_hint_echo(SPADE_TAIL_STOP);
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.hints = hints;
    eo.hint_lens = lens;
    char err[512];
    ck_assert_msg(spade_episodes_play(sb, &spec, 1, reqs, 4, a, &eo, o, err, sizeof err) >= 0, "%s", err);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(o[i].end != SPADE_EP_FAILED && o[i].success, "episode %d: end %d", i, (int)o[i].end);
    /* and without it, the hint episodes do fail: the HINT is what crashes */
    eo.hints = NULL;
    eo.hint_lens = NULL;
    ck_assert_msg(spade_episodes_play(sb, &spec, 1, reqs, 4, a, &eo, o, err, sizeof err) >= 0, "%s", err);
    ck_assert_int_eq(o[0].end, SPADE_EP_FAILED);
    spade_agent_free(a);
    free(src);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("episodes");
    TCase *t = tcase_create("episodes");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, vecenv_subsets);
    tcase_add_test(t, vecenv_subset_autoreset);
    tcase_add_test(t, vecenv_revive);
    tcase_add_test(t, paired_seeds_same_whatever_the_batch);
    tcase_add_test(t, crash_is_an_outcome);
    tcase_add_test(t, hang_is_an_outcome);
    tcase_add_test(t, timeout_stops_the_run);
    tcase_add_test(t, given_vector_env);
    tcase_add_test(t, broken_spec_fails_its_own_requests);
    tcase_add_test(t, text_pieces);
    tcase_add_test(t, scripted_agents_do_what_they_claim);
    tcase_add_test(t, stop_flag);
    tcase_add_test(t, run_hint_replaces_the_environments);
    tcase_add_test(t, a_given_hint_never_calls_the_environments);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(suite()); }
