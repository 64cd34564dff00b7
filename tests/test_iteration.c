/* test_iteration.c — Check suite for the phases of a self-play iteration
 * (selfplay/iteration.h), each run alone on a struct the test fills: the
 * agent's advantages z-scored within each environment's arm, invalid
 * designs penalised unless designer.invalid = drop, the memory's negatives
 * labelled by the side they miss on, an out-of-memory in the writing phase
 * and an unreadable memory row stopping the iteration with a message, the
 * archive's per-play seeds being the seeds played (selfplay.repeats = 2), and
 * the look-ahead replaying the paired plays' own stream, and novelty against
 * what each slot's prompt showed.
 * What it is not: the run around them (tests/test_selfplay.sh drives spade
 * train, its kill points and resumes).
 */
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents.h"
#include "selfplay/iteration.h"
#include "testutil.h"

/* Options for a micro iteration: n environments from the given files, no
 * corpus, no memory, small gates. */
static void micro_opts(spade_selfplay_opts *o, int envs, int plays) {
    spade_selfplay_opts_default(o);
    o->seed = 7;
    o->envs = envs;
    o->plays = plays;
    o->max_source_tokens = 16;
    o->use_corpus = 0;
    o->use_memory = 0;
    o->gates.seeds = 10;
    o->gates.max_step_ms = 200;
    o->rl.max_action_tokens = 4;
}

/* A transcript with one sampled token (so the play is trainable). */
static void trainable(spade_transcript *t) {
    spade_transcript_clear(t);
    spade_transcript_special(t, SPADE_TOK_AGENT);
    int tok = 'a';
    float lp = -1.0f;
    spade_transcript_sampled(t, &tok, &lp, 1);
}

START_TEST(agent_advantages_are_z_scored_within_each_environment) {
    spade_selfplay s = {0};
    spade_selfplay_opts o;
    spade_selfplay_metrics m;
    spade_sp_iter x;
    char err[512];
    micro_opts(&o, 2, 4);
    ck_assert_msg(spade_sp_begin(&x, &s, &o, 0, NULL, &m, err, sizeof err) == 0, "%s", err);
    /* environment 0 returns 0 or 1, environment 1 the same pattern at 100 times the scale and offset by 5 */
    const double ret[2][4] = {{0, 1, 0, 1}, {5, 105, 5, 105}};
    for (int i = 0; i < 2; i++) {
        x.n_all = x.n = 2;
        x.w[i].plays = calloc(8, sizeof *x.w[i].plays);
        for (int k = 0; k < 8; k++) x.w[i].plays[k] = (spade_ep_outcome){.episode = k, .ret = ret[i][k % 4]};
        for (int k = 0; k < 8; k++) trainable(&x.ae.tr[k]);
        ck_assert_msg(spade_sp_agent_samples(&x, i, err, sizeof err) == 0, "%s", err);
    }
    ck_assert_int_eq(x.n_agent, 8);
    for (int j = 0; j < 8; j++) {
        const spade_grpo_sample *g = &x.samples[j];
        int i = j / 4, k = j % 4;
        ck_assert_int_eq(g->group, 1000 + i);
        ck_assert_int_eq(g->role, 1);
        /* (r - mean) / std within the environment: +-1 at both scales */
        ck_assert_msg(fabsf(g->advantage - (k % 2 ? 1.0f : -1.0f)) < 1e-5f, "environment %d play %d: advantage %g", i,
                      k, g->advantage);
    }
    /* an arm whose returns are all equal gives no sample; nor does a failed play */
    int before = x.n_agent;
    for (int k = 0; k < 8; k++) x.w[1].plays[k].ret = 3;
    for (int k = 0; k < 8; k++) trainable(&x.ae.tr[k]);
    ck_assert_int_eq(spade_sp_agent_samples(&x, 1, err, sizeof err), 0);
    ck_assert_int_eq(x.n_agent, before);
    for (int k = 0; k < 8; k++) trainable(&x.ae.tr[k]);
    x.w[0].plays[1].end = SPADE_EP_FAILED;
    ck_assert_int_eq(spade_sp_agent_samples(&x, 0, err, sizeof err), 0);
    ck_assert_int_eq(x.n_agent, before + 3);
    spade_sp_end(&x, 0);
}
END_TEST

START_TEST(invalid_designs_are_penalised_unless_dropped) {
    for (int drop = 0; drop < 2; drop++) {
        spade_selfplay s = {0};
        spade_selfplay_opts o;
        spade_selfplay_metrics m;
        spade_sp_iter x;
        char err[512];
        micro_opts(&o, 3, 4);
        o.invalid_drop = drop;
        o.reward = SPADE_DREWARD_REGRET;
        ck_assert_msg(spade_sp_begin(&x, &s, &o, 0, NULL, &m, err, sizeof err) == 0, "%s", err);
        x.n_all = x.n = 3;
        for (int i = 0; i < 3; i++) {
            snprintf(x.w[i].family, sizeof x.w[i].family, "logic");
            trainable(&x.w[i].tr);
            x.w[i].gates.first_failed = -1;
            x.w[i].paired = (spade_paired){.n = 4, .pass_nohint = 0.25, .pass_hint = 0.25 + 0.05 * i};
            x.w[i].paired.regret = x.w[i].paired.pass_hint - x.w[i].paired.pass_nohint;
        }
        x.w[2].gates.first_failed = SPADE_GATE_COMPILE;
        m.valid = 2;
        ck_assert_int_eq(spade_sp_rewards(&x, err, sizeof err), 0);
        ck_assert(x.w[2].reward == o.invalid_reward);
        ck_assert_int_eq(x.keep[2], !drop);
        spade_sp_designer_samples(&x);
        int invalid_sampled = 0;
        for (int k = 0; k < x.ns; k++) invalid_sampled += x.samples[k].group == 2 && x.samples[k].role == 0;
        ck_assert_msg(invalid_sampled == !drop, "designer.invalid = %s: the invalid design is %s the update",
                      drop ? "drop" : "penalise", invalid_sampled ? "in" : "not in");
        if (!drop) ck_assert_msg(x.r[2] < 0, "a penalised design pulls down: centred reward %g", x.r[2]);
        spade_sp_end(&x, 0);
    }
}
END_TEST

START_TEST(memory_negatives_are_labelled_by_the_side_they_miss) {
    spade_archive_env hard = {.source = "x", .source_len = 1, .family = "logic", .pass_nohint = 0.02};
    spade_archive_env easy = hard;
    easy.pass_nohint = 0.97;
    ck_assert_int_eq(spade_sp_memory_entry(&hard, 1).kind, -1); /* prompt.h: -1 too hard */
    ck_assert_int_eq(spade_sp_memory_entry(&easy, 1).kind, +1); /* +1 too easy */
    ck_assert_int_eq(spade_sp_memory_entry(&hard, 0).kind, 0); /* a positive */
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = 100000;
    spade_prompt_memory mem = spade_sp_memory_entry(&hard, 1);
    char *prompt, err[300];
    size_t len;
    ck_assert_int_eq(spade_prompt_build(&po, "logic", NULL, NULL, 0, &mem, 1, &prompt, &len, err, sizeof err), 0);
    ck_assert_msg(strstr(prompt, "too hard") && !strstr(prompt, "too easy"), "%s", prompt);
    free(prompt);
}
END_TEST

/* Fails allocation number fail_at (0, 1, ...) and every later one. */
static int allocs, fail_at;
static void *failing_alloc(size_t n) { return allocs++ >= fail_at ? NULL : malloc(n); }

START_TEST(out_of_memory_in_the_writing_phase_stops_the_iteration) {
    spade_policy *p = tu_tiny_policy(2048, 3);
    spade_selfplay s = {.p = p};
    spade_selfplay_opts o;
    spade_selfplay_metrics m;
    char err[512];
    micro_opts(&o, 2, 4);
    int total = -1;
    for (fail_at = 0; fail_at < 64; fail_at++) {
        spade_sp_iter x;
        ck_assert_msg(spade_sp_begin(&x, &s, &o, 0, NULL, &m, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(spade_sp_prompts(&x, err, sizeof err) == 0, "%s", err);
        allocs = 0;
        x.alloc = failing_alloc;
        err[0] = 0;
        int rc = spade_sp_write(&x, err, sizeof err);
        if (allocs <= fail_at) { /* nothing failed: every allocation was counted */
            ck_assert_msg(rc == 0, "%s", err);
            for (int i = 0; i < 2; i++) ck_assert_ptr_nonnull(x.w[i].source);
            total = allocs;
            spade_sp_end(&x, 0);
            break;
        }
        ck_assert_msg(rc == -1 && strstr(err, "out of memory"),
                      "allocation %d failed: the writing phase returned %d (\"%s\"), not an out-of-memory error",
                      fail_at, rc, err);
        spade_sp_end(&x, rc);
    }
    ck_assert_msg(total >= 4, "the writing phase made %d allocations through its hook", total);
    spade_policy_free(p);
}
END_TEST

/* Overwrites the next-page number of the first overflow page holding a run
 * of 'Q' bytes: reading that column finds a corrupt database, the rest of
 * the file reads as before. */
static void corrupt_overflow(const char *db) {
    FILE *f = fopen(db, "r+b");
    ck_assert_ptr_nonnull(f);
    unsigned char page[4096];
    long at = -1;
    for (long pg = 1; at < 0 && fseek(f, pg * 4096, SEEK_SET) == 0 && fread(page, 1, 4096, f) == 4096; pg++) {
        int run = 0;
        for (int k = 4; k < 68; k++) run += page[k] == 'Q';
        if (run == 64) at = pg * 4096;
    }
    ck_assert_msg(at > 0, "no overflow page of the source found in %s", db);
    const unsigned char bad[4] = {0x7f, 0xff, 0xff, 0xff};
    ck_assert_int_eq(fseek(f, at, SEEK_SET), 0);
    ck_assert_int_eq(fwrite(bad, 1, 4, f), 4);
    fclose(f);
}

START_TEST(an_unreadable_memory_row_stops_the_iteration) {
    char dir[4096], db[4200], err[1024];
    tu_mkdtemp(dir, sizeof dir, "iteration");
    snprintf(db, sizeof db, "%s/spade.db", dir);
    spade_archive *a;
    ck_assert_msg(spade_archive_open(&a, db, err, sizeof err) == 0, "%s", err);
    /* the embedding is the row's last column: the memory's walk does not read it, the row's read does */
    enum { DIM = 3 * 1024 };
    float *emb = malloc(DIM * sizeof *emb);
    memset(emb, 'Q', DIM * sizeof *emb);
    spade_archive_env e = {.iteration = 0,
                           .source = "int x;",
                           .source_len = 6,
                           .pass_nohint = 0.5,
                           .pass_hint = 0.8,
                           .regret = 0.3,
                           .plays = 4,
                           .embedding = emb,
                           .embed_dim = DIM};
    snprintf(e.family, sizeof e.family, "any");
    long id;
    ck_assert_msg(spade_archive_add_env(a, &e, &id, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(spade_archive_add_iteration(a, 0, "{}", err, sizeof err) == 0, "%s", err);
    spade_archive_close(a);
    free(emb);
    corrupt_overflow(db);
    ck_assert_msg(spade_archive_open(&a, db, err, sizeof err) == 0, "%s", err);
    spade_policy *p = tu_tiny_policy(2048, 3);
    spade_selfplay s = {.p = p, .archive = a};
    spade_selfplay_opts o;
    spade_selfplay_metrics m;
    micro_opts(&o, 1, 4);
    o.use_memory = 1;
    spade_sp_iter x;
    ck_assert_msg(spade_sp_begin(&x, &s, &o, 1, NULL, &m, err, sizeof err) == 0, "%s", err);
    err[0] = 0;
    int rc = spade_sp_prompts(&x, err, sizeof err);
    ck_assert_msg(rc == -1, "the prompts phase returned %d over an unreadable memory row", rc);
    ck_assert_msg(strstr(err, "designer memory") && strstr(err, "environment 1"), "%s", err);
    spade_sp_end(&x, rc);
    spade_archive_close(a);
    spade_policy_free(p);
    tu_rm_rf(dir);
}
END_TEST

/* The return hint_seedreturn.c gives seed `seed` (its return is the seed's alone). */
static double return_of(spade_sandbox *sb, const char *src, size_t len, uint64_t seed) {
    spade_ep_spec spec = {.filename = "hint_seedreturn.c", .source = src, .len = len};
    spade_ep_request req = {.seed = seed};
    spade_ep_outcome out;
    spade_agent *a = spade_agent_noop();
    char err[512];
    ck_assert_msg(spade_episodes_play(sb, &spec, 1, &req, 1, a, NULL, &out, err, sizeof err) == 0, "%s", err);
    spade_agent_free(a);
    return out.ret;
}

START_TEST(the_archive_keeps_the_seed_each_play_was_played_on) {
    char dir[4096], db[4200], err[1024];
    tu_mkdtemp(dir, sizeof dir, "iteration");
    snprintf(db, sizeof db, "%s/spade.db", dir);
    size_t len;
    char *src = tu_read_env("hint_seedreturn.c", &len);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_archive *a;
    ck_assert_msg(spade_archive_open(&a, db, err, sizeof err) == 0, "%s", err);
    spade_policy *p = tu_tiny_policy(512, 5);
    spade_selfplay s = {.p = p, .sb = sb, .archive = a};
    spade_selfplay_opts o;
    micro_opts(&o, 1, 8);
    o.repeats = 2;
    const char *files[1] = {src}, *names[1] = {"hint_seedreturn.c"};
    o.files = files;
    o.file_names = names;
    o.file_lens = &len;
    o.n_files = 1;
    spade_selfplay_metrics m;
    ck_assert_msg(spade_selfplay_iteration(&s, &o, 0, NULL, &m, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(m.valid, 1);
    spade_archive_close(a);
    sqlite3 *raw;
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_prepare_v2(raw, "SELECT seed, return_nohint, return_hint FROM plays ORDER BY rowid", -1, &st, NULL),
        SQLITE_OK);
    uint64_t seeds[8];
    int n = 0, differ = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; n++) {
        ck_assert_int_lt(n, 8);
        seeds[n] = (uint64_t)sqlite3_column_int64(st, 0);
        double want = return_of(sb, src, len, seeds[n]);
        /* the return is the seed's alone: a row whose seed is not the one played shows another return */
        double got0 = sqlite3_column_double(st, 1), got1 = sqlite3_column_double(st, 2);
        ck_assert_msg(fabs(got0 - want) < 1e-9 && fabs(got1 - want) < 1e-9,
                      "play %d: seed %llu returns %g, the archive says %g without the hint and %g with it", n,
                      (unsigned long long)seeds[n], want, got0, got1);
        if (n % 2 == 1)
            ck_assert_msg(seeds[n] == seeds[n - 1], "repeats = 2: play %d is the seed of play %d again", n, n - 1);
        if (n >= 2 && n % 2 == 0) differ += seeds[n] != seeds[n - 2];
    }
    sqlite3_finalize(st);
    sqlite3_close(raw);
    ck_assert_int_eq(n, 8);
    ck_assert_int_eq(differ, 3); /* plays / repeats = 4 distinct seeds */
    double r0 = return_of(sb, src, len, seeds[0]);
    int varies = 0;
    for (int k = 2; k < 8; k += 2) varies |= return_of(sb, src, len, seeds[k]) != r0;
    ck_assert_msg(varies, "every seed returns %g: the test cannot tell seeds apart", r0);
    spade_policy_free(p);
    spade_sandbox_free(sb);
    free(src);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(the_lookahead_replays_the_paired_plays_stream) {
    /* lr = 0: the look-ahead's copy of the policy is the policy, so its replays are the no-hint plays
     * again, play for play, exactly when they draw the same seeds, repeats and sampling stream */
    char err[1024];
    size_t len;
    char *src = tu_read_env("lp_mark.c", &len);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_policy *p = tu_tiny_policy(1024, 9);
    spade_selfplay s = {.p = p, .sb = sb};
    spade_selfplay_opts o;
    micro_opts(&o, 3, 16);
    o.repeats = 2;
    o.reward = SPADE_DREWARD_LEARNING_POTENTIAL;
    o.rl.adamw.lr = 0;
    o.gates.novelty_max = 1.01; /* the three slots write the same file */
    const char *files[1] = {src}, *names[1] = {"lp_mark.c"};
    o.files = files;
    o.file_names = names;
    o.file_lens = &len;
    o.n_files = 1;
    spade_selfplay_metrics m;
    spade_sp_iter x;
    ck_assert_msg(spade_sp_begin(&x, &s, &o, 0, NULL, &m, err, sizeof err) == 0, "%s", err);
    const spade_sp_phase upto[] = {spade_sp_prompts, spade_sp_replays, spade_sp_write,    spade_sp_hints,
                                   spade_sp_gates,   spade_sp_plays,   spade_sp_lookahead};
    for (size_t k = 0; k < sizeof upto / sizeof *upto; k++) ck_assert_msg(upto[k](&x, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(m.valid, 3);
    ck_assert_msg(x.n_agent > 0, "no agent sample: the look-ahead took no step");
    int mixed = 0;
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(x.after[i] == x.w[i].paired.pass_nohint, "environment %d: the look-ahead passed %g, the plays %g",
                      i, x.after[i], x.w[i].paired.pass_nohint);
        mixed += x.after[i] > 0 && x.after[i] < 1;
    }
    ck_assert_msg(mixed > 0, "every pass rate is 0 or 1: the test cannot tell streams apart");
    spade_sp_end(&x, 0);
    spade_policy_free(p);
    spade_sandbox_free(sb);
    free(src);
}
END_TEST

/* What a slot's prompt showed stays with the slot for its gates: a source that
 * is the prompt's memory environment again (not in any corpus) fails novelty
 * against it, by name; the same source written from no memory passes it. */
START_TEST(novelty_compares_against_what_the_prompt_showed) {
    char dir[4096], db[4200], err[1024];
    tu_mkdtemp(dir, sizeof dir, "iteration");
    snprintf(db, sizeof db, "%s/spade.db", dir);
    size_t len;
    char *src = tu_read_env("hint_seedreturn.c", &len);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_archive *a;
    ck_assert_msg(spade_archive_open(&a, db, err, sizeof err) == 0, "%s", err);
    float emb[SPADE_VENDI_DIM] = {0};
    spade_archive_env e = {.iteration = 0,
                           .source = src,
                           .source_len = len,
                           .pass_nohint = 0.5,
                           .pass_hint = 0.8,
                           .regret = 0.3,
                           .plays = 4,
                           .embedding = emb,
                           .embed_dim = SPADE_VENDI_DIM};
    snprintf(e.family, sizeof e.family, "any");
    long id;
    ck_assert_msg(spade_archive_add_env(a, &e, &id, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(spade_archive_add_iteration(a, 0, "{}", err, sizeof err) == 0, "%s", err);
    spade_policy *p = tu_tiny_policy(2048, 3);
    for (int memory = 1; memory >= 0; memory--) {
        spade_selfplay s = {.p = p, .sb = sb, .archive = a};
        spade_selfplay_opts o;
        spade_selfplay_metrics m;
        micro_opts(&o, 1, 4);
        o.use_memory = memory;
        spade_sp_iter x;
        ck_assert_msg(spade_sp_begin(&x, &s, &o, 1, NULL, &m, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(spade_sp_prompts(&x, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(x.w[0].shown.n, memory);
        x.w[0].source = malloc(len + 1); /* the designer "writes" the memory's environment again */
        memcpy(x.w[0].source, src, len + 1);
        x.w[0].source_len = len;
        ck_assert_msg(spade_sp_gates(&x, err, sizeof err) == 0, "%s", err);
        const spade_gate_report *r = &x.w[0].gates;
        if (memory)
            ck_assert_msg(r->first_failed == SPADE_GATE_NOVELTY &&
                              strstr(r->detail[SPADE_GATE_NOVELTY], "in the memory"),
                          "first failed %d: %s", r->first_failed, r->detail[SPADE_GATE_NOVELTY]);
        else
            ck_assert_msg(r->first_failed < 0, "with no memory shown: first failed %d: %s", r->first_failed,
                          r->first_failed >= 0 ? r->detail[r->first_failed] : "");
        spade_sp_end(&x, 0);
    }
    spade_archive_close(a);
    spade_policy_free(p);
    spade_sandbox_free(sb);
    free(src);
    tu_rm_rf(dir);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("iteration");
    TCase *c = tcase_create("phases");
    tcase_set_timeout(c, 600);
    tcase_add_test(c, agent_advantages_are_z_scored_within_each_environment);
    tcase_add_test(c, invalid_designs_are_penalised_unless_dropped);
    tcase_add_test(c, memory_negatives_are_labelled_by_the_side_they_miss);
    tcase_add_test(c, out_of_memory_in_the_writing_phase_stops_the_iteration);
    tcase_add_test(c, an_unreadable_memory_row_stops_the_iteration);
    tcase_add_test(c, the_archive_keeps_the_seed_each_play_was_played_on);
    tcase_add_test(c, the_lookahead_replays_the_paired_plays_stream);
    tcase_add_test(c, novelty_compares_against_what_the_prompt_showed);
    suite_add_tcase(s, c);
    return s;
}

int main(void) { return tu_run(suite()); }
