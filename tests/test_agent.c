/* test_agent.c — Check suite for the agent role (agent/): the transcript
 * format, the policy as an agent of the episode layer, the fixed pool with
 * its refresh, and GRPO on a fixed pool actually learning.
 *
 * What it is: the rendered transcript and its mask, token for token; the
 * policy agent's transcripts hold exactly the observations the environment
 * sent and the actions it received (the mask covers exactly the sampled
 * action tokens), the same whatever the batch width; the hint arm gets the
 * hint once, after its own token; an episode that outgrows the context ends
 * as context_full; a pool directory's new and changed files join at refresh
 * and a broken change keeps the old version; and from a fixed seed, GRPO
 * takes a freshly initialised policy on a trivially learnable environment
 * from near 0 to >= 0.9 success within a bounded number of iterations.
 * What it is not: the decoder's or GRPO's own tests (test_decode, test_grpo).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/eval.h"
#include "agent/policy_agent.h"
#include "agent/pool.h"
#include "agent/rl.h"
#include "agent/transcript.h"
#include "episodes.h"
#include "testutil.h"

START_TEST(transcript_layout_and_mask) {
    spade_policy *p = tu_tiny_policy(64, 1);
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    spade_transcript t;
    spade_transcript_init(&t);
    spade_transcript_agent_open(&t, tok, "obs", 3, "hint", 4);
    int act[3] = {'a', 'b', SPADE_TOK_END};
    float lp[3] = {-1, -2, -3};
    spade_transcript_sampled(&t, act, lp, 3);
    spade_transcript_agent_turn(&t, tok, "o2", 2);
    spade_transcript_agent_action(&t, tok, "c", 1);
    char *text;
    ck_assert_int_eq(spade_transcript_render(&t, tok, &text, NULL), 0);
    ck_assert_str_eq(text,
                     "<|agent|><|observation|>obs<|hint|>hint<|action|>ab<|end|><|observation|>o2<|action|>c<|end|>");
    free(text);
    /* positions: agent obs o b s hint h i n t action | a b end | observation o 2 action | c end */
    static const unsigned char want[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1};
    ck_assert_int_eq(t.len, (int)sizeof want);
    int trained = 0;
    for (int i = 0; i < t.len; i++) {
        ck_assert_msg(t.mask[i] == want[i], "token %d (%d): mask %d", i, t.tok[i], t.mask[i]);
        trained += t.mask[i];
    }
    ck_assert_int_eq(trained, 5);
    ck_assert_float_eq(t.logp[12], -2); /* 'b' kept its sampling-time log-prob */
    spade_transcript t2;
    spade_transcript_init(&t2);
    spade_transcript_designer_open(&t2, tok, "P", 1);
    spade_transcript_designer_source(&t2, tok, "S", 1);
    ck_assert_int_eq(spade_transcript_render(&t2, tok, &text, NULL), 0);
    ck_assert_str_eq(text, "<|designer|>P<|source|>S<|end|>");
    ck_assert_int_eq(t2.mask[0] + t2.mask[1] + t2.mask[2], 0);
    ck_assert_int_eq(t2.mask[3] + t2.mask[4], 2);
    free(text);
    spade_transcript_free(&t);
    spade_transcript_free(&t2);
    spade_policy_free(p);
}
END_TEST

/* ---- the policy playing ---- */

#define MAXE 16
typedef struct seen {
    char actions[MAXE][4096]; /* every action the environment received, concatenated */
    char obs[MAXE][4096]; /* every observation, concatenated */
    spade_transcript tr[MAXE];
    spade_tokenizer *tok;
} seen;

static void on_event(void *ctx, const spade_ep_event *e) {
    seen *s = ctx;
    char *dst = e->kind == SPADE_EV_ACTION ? s->actions[e->episode] : s->obs[e->episode];
    size_t at = strlen(dst);
    snprintf(dst + at, 4096 - at, "%.*s|", (int)e->len, e->text);
}

static void on_episode(void *ctx, const spade_ep_outcome *o, const spade_transcript *t) {
    seen *s = ctx;
    spade_transcript *d = &s->tr[o->episode];
    spade_transcript_init(d);
    for (int i = 0; i < t->len; i++)
        if (t->mask[i])
            spade_transcript_sampled(d, &t->tok[i], &t->logp[i], 1);
        else
            spade_transcript_special(d, t->tok[i]);
}

static int g_arm_streams; /* spade_policy_agent_opts.arm_streams for play() */

static void play(spade_policy *p, const char *env, int max_live, int hint, seen *s, spade_ep_outcome *out, int n) {
    char err[1024];
    size_t len;
    char *src = tu_read_env(env, &len);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_ep_spec spec = {.filename = env, .source = src, .len = len, .expected = n};
    spade_ep_request req[MAXE];
    /* pairs of one seed: hint 1 plays the second of each with the hint, hint 2 as its repeat 1 */
    for (int i = 0; i < n; i++)
        req[i] = (spade_ep_request){
            .spec = 0, .seed = 100 + (uint64_t)i / 2, .hint = hint == 1 && (i % 2), .repeat = hint == 2 && (i % 2)};
    memset(s, 0, sizeof *s);
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ao.max_live = max_live;
    ao.max_action_tokens = 6;
    ao.seed = 7;
    ao.arm_streams = g_arm_streams;
    ao.on_episode = on_episode;
    ao.ctx = s;
    spade_agent *a = spade_agent_policy(p, &ao, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = max_live;
    eo.on_event = on_event;
    eo.ctx = s;
    ck_assert_msg(spade_episodes_play(sb, &spec, 1, req, n, a, &eo, out, err, sizeof err) == 0, "%s", err);
    spade_agent_free(a);
    spade_sandbox_free(sb);
    free(src);
}

/* The text of the tokens of t with mask m (m = -1: all), special tokens written out (m = -1) or left out. */
static void text_of(const spade_transcript *t, spade_tokenizer *tok, int m, char *out, size_t cap) {
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < t->len && at + 32 < cap; i++) {
        if (m >= 0 && t->mask[i] != m) continue;
        size_t got;
        spade_tokenizer_decode(tok, &t->tok[i], 1, m < 0, out + at, cap - at, &got);
        at += got;
    }
}

/* selfplay.repeats rests on this: the same seed played again as another
 * repeat is another play (its own sampling stream), while the same seed and
 * repeat is the same play. */
START_TEST(a_repeat_of_a_seed_is_another_play) {
    spade_policy *p = tu_tiny_policy(256, 3);
    static seen same, rep;
    spade_ep_outcome os[MAXE], orp[MAXE];
    int n = 8, differ = 0;
    play(p, "two_turns.c", 8, 0, &same, os, n); /* pairs: seed s, repeat 0 twice */
    play(p, "two_turns.c", 8, 2, &rep, orp, n); /* pairs: seed s, repeats 0 and 1 */
    for (int i = 0; i < n; i += 2) {
        ck_assert_str_eq(same.actions[i], same.actions[i + 1]);
        ck_assert_str_eq(same.actions[i], rep.actions[i]); /* repeat 0 is the play without repeats */
        differ += strcmp(rep.actions[i], rep.actions[i + 1]) != 0;
    }
    ck_assert_msg(differ >= 3, "only %d of 4 seeds' repeats played differently", differ);
    spade_policy_free(p);
}
END_TEST

/* Common random numbers: the two arms of a seed draw the same stream, so an
 * untrained policy, whose distribution the hint moves only some, draws the
 * same first action token in both arms of many seeds (4 of 8 here); with
 * arm_streams = 1 (the hint arm on its own stream, as before) a match is a
 * 1-in-263 coincidence (0 of 8). */
static int first_trained(const spade_transcript *t) {
    for (int i = 0; i < t->len; i++)
        if (t->mask[i]) return t->tok[i];
    return -1;
}

START_TEST(both_arms_of_a_seed_draw_one_stream) {
    spade_policy *p = tu_tiny_policy(256, 3);
    static seen s;
    spade_ep_outcome o[MAXE];
    int n = 16, same[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        g_arm_streams = k;
        play(p, "two_turns.c", 8, 1, &s, o, n); /* pairs: seed s without, then with the hint */
        for (int i = 0; i < n; i += 2) {
            int a = first_trained(&s.tr[i]), b = first_trained(&s.tr[i + 1]);
            ck_assert(a >= 0 && b >= 0);
            same[k] += a == b;
            spade_transcript_free(&s.tr[i]);
            spade_transcript_free(&s.tr[i + 1]);
        }
    }
    g_arm_streams = 0;
    ck_assert_msg(same[0] >= 3 && same[1] <= 1,
                  "first action token alike in %d of 8 pairs with one stream, %d with two", same[0], same[1]);
    spade_policy_free(p);
}
END_TEST

START_TEST(policy_agent_transcripts_hold_what_was_played) {
    spade_policy *p = tu_tiny_policy(256, 3);
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    static seen a, b;
    spade_ep_outcome oa[MAXE], ob[MAXE];
    int n = 8;
    play(p, "two_turns.c", 8, 1, &a, oa, n);
    play(p, "two_turns.c", 1, 1, &b, ob, n);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(oa[i].end == ob[i].end && oa[i].steps == ob[i].steps, "episode %d differs across batch widths",
                      i);
        ck_assert_int_eq(a.tr[i].len, b.tr[i].len);
        ck_assert_mem_eq(a.tr[i].tok, b.tr[i].tok, (size_t)a.tr[i].len * sizeof(int));
        ck_assert_str_eq(a.actions[i], b.actions[i]);
        /* the trained tokens are the actions as sent, each ended by <|end|> (or cut at 6 tokens) */
        static char trained[8192], all[8192];
        text_of(&a.tr[i], tok, 1, trained, sizeof trained);
        char want[8192] = "", *q = a.actions[i];
        for (char *bar; (bar = strchr(q, '|')); q = bar + 1) {
            size_t k = strlen(want);
            snprintf(want + k, sizeof want - k, "%.*s", (int)(bar - q), q);
        }
        ck_assert_msg(!strcmp(trained, want), "episode %d: trained text '%s', actions '%s'", i, trained, want);
        /* every observation the environment sent is in the transcript, untrained, in order */
        text_of(&a.tr[i], tok, -1, all, sizeof all);
        const char *pos = all;
        q = a.obs[i];
        for (char *bar; (bar = strchr(q, '|')); q = bar + 1) {
            char piece[4096];
            snprintf(piece, sizeof piece, "%.*s", (int)(bar - q), q);
            char *hintp = strstr(piece, "\nHint: ");
            if (hintp) *hintp = 0; /* the hint arm's suffix goes after its own token */
            const char *f = strstr(pos, piece);
            ck_assert_msg(f != NULL, "episode %d: observation '%s' missing from '%s'", i, piece, all);
            pos = f + strlen(piece);
        }
        const char *h = strstr(all, "<|hint|>");
        if (i % 2) {
            ck_assert_msg(h && strstr(h, "Wait for the last turn.") && !strstr(all, "Hint: "), "episode %d: %s", i,
                          all);
        } else
            ck_assert_ptr_null(h);
    }
    spade_policy_free(p);
}
END_TEST

START_TEST(policy_agent_ends_episodes_that_fill_the_context) {
    spade_policy *p = tu_tiny_policy(24, 5);
    static seen s;
    spade_ep_outcome out[MAXE];
    play(p, "two_turns.c", 4, 0, &s, out, 4);
    int full = 0;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_ne(out[i].end, SPADE_EP_FAILED);
        full += out[i].end == SPADE_EP_AGENT_STOP && !strcmp(out[i].stop_reason, "context_full");
        ck_assert_int_le(s.tr[i].len, 24);
    }
    ck_assert_int_eq(full, 4); /* "turn 2 of 3, you said [...]" cannot fit after the first turn */
    spade_policy_free(p);
}
END_TEST

/* ---- the pool ---- */

static char lines[32][2048];
static int n_lines;
static void report(void *ctx, const char *line) {
    (void)ctx;
    if (n_lines < 32) snprintf(lines[n_lines++], sizeof lines[0], "%s", line);
}

static void put(const char *dir, const char *name, const char *text) {
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
}

START_TEST(pool_takes_new_and_changed_files_and_keeps_a_broken_change_out) {
    char dir[4096], err[2048];
    tu_mkdtemp(dir, sizeof dir, "pool");
    size_t len;
    char *src = tu_read_env("add.c", &len);
    put(dir, "one.c", src);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_registry *reg;
    ck_assert_int_eq(spade_registry_new(&reg, "", 0, err, sizeof err), 0);
    const char *specs[] = {"maze:size=2"};
    const char *dirs[] = {dir};
    spade_pool *pool;
    n_lines = 0;
    ck_assert_msg(spade_pool_new(&pool, sb, reg, specs, 1, dirs, 1, NULL, report, NULL, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_int_eq(spade_pool_count(pool), 2);
    ck_assert_str_eq(spade_pool_entry_at(pool, 0)->params, "size=2");
    ck_assert_str_eq(spade_pool_entry_at(pool, 1)->name, "one");
    ck_assert_int_eq(spade_pool_refresh(pool, err, sizeof err), 0);
    put(dir, "two.c", src);
    put(dir, "bad.c", "#include <spade/dsl.h>\nENV(\"bad\", \"d\")\nint x = ;\n");
    ck_assert_int_eq(spade_pool_refresh(pool, err, sizeof err), 1);
    ck_assert_int_eq(spade_pool_count(pool), 3);
    int said_bad = 0;
    for (int i = 0; i < n_lines; i++)
        said_bad |= strstr(lines[i], "bad.c") && strstr(lines[i], "does not load") != NULL;
    ck_assert_msg(said_bad, "the broken new file was not reported");
    /* a change that compiles replaces the entry; one that does not keeps the old version */
    char *changed = malloc(len + 64);
    snprintf(changed, len + 64, "%s/* v2 */\n", src);
    put(dir, "one.c", changed);
    ck_assert_int_eq(spade_pool_refresh(pool, err, sizeof err), 1);
    ck_assert_int_eq(spade_pool_entry_at(pool, 1)->version, 2);
    put(dir, "one.c", "#include <spade/dsl.h>\nENV(\"one\", \"d\")\nSTEP { nope }\n");
    n_lines = 0;
    ck_assert_int_eq(spade_pool_refresh(pool, err, sizeof err), 0);
    ck_assert_int_eq(spade_pool_entry_at(pool, 1)->version, 2);
    ck_assert_ptr_nonnull(strstr(spade_pool_entry_at(pool, 1)->source, "/* v2 */"));
    ck_assert_msg(n_lines == 1 && strstr(lines[0], "keeps serving"), "%s", n_lines ? lines[0] : "(nothing said)");
    spade_pool_free(pool);
    const char *bad_spec[] = {"no_such_env"};
    ck_assert_int_eq(spade_pool_new(&pool, sb, reg, bad_spec, 1, NULL, 0, NULL, NULL, NULL, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "no_such_env"));
    free(changed);
    free(src);
    spade_registry_free(reg);
    spade_sandbox_free(sb);
    ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

/* ---- learning ---- */

START_TEST(grpo_learns_a_trivial_environment) {
    char err[2048], path[8400];
    snprintf(path, sizeof path, "%s/tests/envs/digit_first.c", tu_srcdir());
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_registry *reg;
    ck_assert_int_eq(spade_registry_new(&reg, "", 0, err, sizeof err), 0);
    const char *specs[] = {path};
    spade_pool *pool;
    ck_assert_msg(spade_pool_new(&pool, sb, reg, specs, 1, NULL, 0, NULL, NULL, NULL, err, sizeof err) == 0, "%s", err);
    spade_policy *p = tu_tiny_policy(64, 11);
    spade_rl_opts o;
    spade_rl_opts_default(&o);
    o.plays = 64;
    o.max_live = 64;
    o.max_action_tokens = 4;
    o.seed = 2026;
    o.adamw.lr = 1e-2f;
    double first = -1, last = 0;
    int it;
    for (it = 0; it < 60; it++) {
        spade_rl_metrics m;
        ck_assert_msg(spade_rl_iteration(p, NULL, sb, pool, it, &o, NULL, &m, err, sizeof err) == 0, "%s", err);
        if (first < 0) first = m.success_rate;
        last = m.success_rate;
        if (last >= 0.9) break;
    }
    fprintf(stderr, "grpo_learns_a_trivial_environment: success %.3f at iteration 0, %.3f at iteration %d\n", first,
            last, it);
    ck_assert_msg(first < 0.2, "the fresh policy already wins %.2f: the test shows nothing", first);
    ck_assert_msg(last >= 0.9, "after %d iterations success is %.2f (from %.2f)", it, last, first);
    spade_policy_free(p);
    spade_pool_free(pool);
    spade_registry_free(reg);
    spade_sandbox_free(sb);
}
END_TEST

/* Each pool environment is a group of its own: its plays' rewards are
 * compared with each other, never with another environment's. */
START_TEST(each_pool_environment_is_its_own_group) {
    char err[2048], p1[8400], p2[8400];
    snprintf(p1, sizeof p1, "%s/tests/envs/digit_first.c", tu_srcdir());
    snprintf(p2, sizeof p2, "%s/tests/envs/lp_mark.c", tu_srcdir());
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_registry *reg;
    ck_assert_int_eq(spade_registry_new(&reg, "", 0, err, sizeof err), 0);
    const char *specs[] = {p1, p2};
    spade_pool *pool;
    ck_assert_msg(spade_pool_new(&pool, sb, reg, specs, 2, NULL, 0, NULL, NULL, NULL, err, sizeof err) == 0, "%s", err);
    spade_policy *p = tu_tiny_policy(64, 11);
    spade_rl_opts o;
    spade_rl_opts_default(&o);
    o.plays = 8;
    o.max_action_tokens = 2;
    spade_rl_metrics m;
    ck_assert_msg(spade_rl_iteration(p, NULL, sb, pool, 0, &o, NULL, &m, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(m.envs, 2);
    ck_assert_int_eq(m.n_groups, 2); /* a group whose rewards are all equal is counted, then dropped */
    ck_assert_int_ge(m.n_samples, 8);
    spade_policy_free(p);
    spade_pool_free(pool);
    spade_registry_free(reg);
    spade_sandbox_free(sb);
}
END_TEST

START_TEST(wilson_interval_known_values) {
    double lo, hi;
    spade_wilson(0, 10, 1.959964, &lo, &hi);
    ck_assert_double_eq(lo, 0);
    ck_assert_double_eq_tol(hi, 0.277533, 1e-5);
    spade_wilson(5, 10, 1.959964, &lo, &hi);
    ck_assert_double_eq_tol(lo, 0.236593, 1e-5);
    ck_assert_double_eq_tol(hi, 0.763407, 1e-5);
    spade_wilson(10, 10, 1.959964, &lo, &hi);
    ck_assert_double_eq_tol(lo, 0.722467, 1e-5);
    ck_assert_double_eq(hi, 1);
    spade_wilson(81, 263, 1.959964, &lo, &hi); /* Wilson's own worked example size: p = 0.308 */
    ck_assert_double_eq_tol(lo, 0.2553, 1e-4);
    ck_assert_double_eq_tol(hi, 0.3662, 1e-4);
    spade_wilson(0, 0, 1.959964, &lo, &hi);
    ck_assert(lo == 0 && hi == 1);
}
END_TEST

START_TEST(eval_pairs_its_arms_on_the_same_seeds) {
    char err[1024];
    size_t len;
    char *src = tu_read_env("add.c", &len);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_ep_spec spec = {.filename = "add.c", .source = src, .len = len, .params = "lo=1,hi=3"};
    spade_eval_opts o;
    spade_eval_opts_default(&o);
    o.episodes = 20;
    o.hint = 1;
    spade_eval_row row;
    spade_policy *p = tu_tiny_policy(64, 9);
    ck_assert_msg(spade_eval(p, sb, &spec, 1, &o, &row, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(row.policy.n, 20);
    ck_assert_int_eq(row.hint.n, 20);
    ck_assert_int_eq(row.solve.n, 20);
    ck_assert_double_eq(row.solve.success, 1);
    ck_assert(row.random.success >= 0 && row.random.success <= 1);
    ck_assert(row.policy.lo <= row.policy.success && row.policy.success <= row.policy.hi);
    /* the pairs: the difference of the arms' wins is the difference of their one-sided seeds */
    ck_assert_int_eq(row.hint.successes - row.policy.successes, row.hint_only - row.policy_only);
    ck_assert(row.hint_only <= row.hint.successes && row.policy_only <= row.policy.successes);
    /* what it wrote: one turn a step, at most max_action_tokens a turn, nothing for the references */
    for (int h = 0; h < 2; h++) {
        const spade_eval_arm *a = h ? &row.hint : &row.policy;
        ck_assert_int_eq(a->turns, (long)(a->mean_steps * a->n + 0.5));
        ck_assert(a->tokens >= a->turns && a->tokens <= a->turns * o.max_action_tokens);
        ck_assert(a->unboxed <= a->turns);
    }
    ck_assert_int_eq(row.solve.tokens + row.solve.turns + row.random.tokens, 0);
    spade_eval_row none;
    ck_assert_int_eq(spade_eval(NULL, sb, &spec, 1, &o, &none, err, sizeof err), 0); /* references only */
    ck_assert_int_eq(none.policy.n, 0);
    ck_assert_double_eq(none.random.success, row.random.success); /* same seeds, same floor */
    spade_policy_free(p);
    spade_sandbox_free(sb);
    free(src);
}
END_TEST

START_TEST(eval_counts_tokens_turns_and_unboxed_answers) {
    char err[256];
    spade_tokenizer *tok = NULL;
    ck_assert_msg(spade_tokenizer_new_bytes(&tok, err, sizeof err) == 0, "%s", err);
    spade_transcript t;
    spade_transcript_init(&t);
    static const char think[] = "3 + 4 is 7 \\boxed{7}", cut[] = "first I add the two num";
    int ids[64];
    size_t n1 = spade_tokenizer_encode(tok, think, sizeof think - 1, ids);
    spade_transcript_text(&t, tok, "observation one", 15);
    spade_transcript_sampled(&t, ids, NULL, (int)n1);
    spade_transcript_text(&t, tok, "observation two", 15);
    size_t n2 = spade_tokenizer_encode(tok, cut, sizeof cut - 1, ids);
    spade_transcript_sampled(&t, ids, NULL, (int)n2);
    long tokens = 5, turns = 1, unboxed = 0; /* added to, not set */
    spade_eval_count_writing(tok, &t, &tokens, &turns, &unboxed);
    ck_assert_int_eq(tokens, 5 + (long)(n1 + n2));
    ck_assert_int_eq(turns, 3);
    ck_assert_int_eq(unboxed, 1); /* the second turn, cut before its box */
    spade_transcript_free(&t);
    spade_tokenizer_free(tok);
}
END_TEST

int main(void) {
    Suite *s = suite_create("agent");
    TCase *c = tcase_create("agent");
    tcase_set_timeout(c, 120);
    tcase_add_test(c, transcript_layout_and_mask);
    tcase_add_test(c, policy_agent_transcripts_hold_what_was_played);
    tcase_add_test(c, a_repeat_of_a_seed_is_another_play);
    tcase_add_test(c, both_arms_of_a_seed_draw_one_stream);
    tcase_add_test(c, policy_agent_ends_episodes_that_fill_the_context);
    tcase_add_test(c, pool_takes_new_and_changed_files_and_keeps_a_broken_change_out);
    tcase_add_test(c, grpo_learns_a_trivial_environment);
    tcase_add_test(c, each_pool_environment_is_its_own_group);
    tcase_add_test(c, wilson_interval_known_values);
    tcase_add_test(c, eval_pairs_its_arms_on_the_same_seeds);
    tcase_add_test(c, eval_counts_tokens_turns_and_unboxed_answers);
    suite_add_tcase(s, c);
    return tu_run(s);
}
