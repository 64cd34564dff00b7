/* test_designer.c — Check suite for the designer's pieces that stand without
 * the policy: the grounding corpus (designer/corpus.h), the prompt and its
 * budget (designer/prompt.h), family rotation, and the reward arithmetic
 * (designer/reward.h).
 *
 * What it is: file kinds and order of the corpus walk, JSONL items and their
 * errors by file:line, the held-out guard keeping the suite and copies of it
 * out, seeded draws; prompts that never exceed the budget under two token
 * counters, cut at line boundaries, with the memory labels; the hint
 * writer's prompt (the source, then the instruction); the rotation of
 * families over windows; plateau, blend, paired regret and its standard
 * error, learning potential, per-family centring.
 * What it is not: the gates or the paired plays (they need the episode layer).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "designer/corpus.h"
#include "designer/prompt.h"
#include "designer/reward.h"
#include "heldout.h"
#include "registry.h"
#include "testutil.h"

static void write_file(const char *dir, const char *name, const char *text) {
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(json_field_is_decoded_and_bad_lines_refused) {
    char *v, err[256];
    size_t n;
    const char *ok = "{\"id\": 3, \"meta\": {\"text\": \"inner\"}, \"arr\": [1, \"x\", null],"
                     " \"text\": \"a\\n\\\"b\\\" \\u00e9 \\ud83d\\ude00\", \"more\": true}";
    ck_assert_int_eq(spade_json_string_field(ok, strlen(ok), "text", &v, &n, err, sizeof err), 0);
    ck_assert_str_eq(v, "a\n\"b\" \xc3\xa9 \xf0\x9f\x98\x80");
    ck_assert_uint_eq(n, strlen(v));
    free(v);
    const char *none = "{\"title\": \"x\", \"text\": 5}";
    ck_assert_int_eq(spade_json_string_field(none, strlen(none), "text", &v, &n, err, sizeof err), 1);
    static const char *const bad[] = {"[\"text\"]",
                                      "{\"text\": \"x\"",
                                      "{\"text\": \"x\"} junk",
                                      "{text: \"x\"}",
                                      "{\"text\": \"a\\q\"}",
                                      "{\"a\": [1, }",
                                      "",
                                      "{\"text\":\"\x01\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(spade_json_string_field(bad[i], strlen(bad[i]), "text", &v, &n, err, sizeof err) == -1,
                      "accepted: %s", bad[i]);
}
END_TEST

START_TEST(corpus_reads_kinds_in_order_and_names_jsonl_lines) {
    char dir[4096], sub[4200], err[1024];
    tu_mkdtemp(dir, sizeof dir, "corpus");
    write_file(dir, "b.c", "ENV(\"b\", \"d\", .family = \"math\")\n");
    write_file(dir, "a.md", "# notes\n");
    write_file(dir, "c.txt", "plain text\n");
    write_file(dir, "d.jsonl", "{\"text\": \"first\"}\n\n{\"id\": 1, \"text\": \"second\"}\n");
    write_file(dir, "e.bin", "ignored");
    write_file(dir, ".hidden.c", "ignored too");
    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(sub, 0755);
    write_file(sub, "f.c", "ENV(\"f\", \"d\", .family = \"grid\")\n");
    const char *paths[] = {dir};
    spade_corpus *c;
    int refused = -1;
    ck_assert_msg(spade_corpus_new(&c, paths, 1, NULL, 1, &refused, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(refused, 0);
    ck_assert_int_eq(spade_corpus_count(c), 6);
    static const char *const want[] = {"a.md", "b.c", "c.txt", "d.jsonl:1", "d.jsonl:3", "sub/f.c"};
    for (int i = 0; i < 6; i++) {
        const spade_corpus_item *it = spade_corpus_item_at(c, i);
        size_t nl = strlen(it->name), nw = strlen(want[i]);
        ck_assert_msg(nl >= nw && !strcmp(it->name + nl - nw, want[i]), "item %d is %s, not %s", i, it->name, want[i]);
    }
    ck_assert_str_eq(spade_corpus_item_at(c, 1)->family, "math");
    ck_assert_str_eq(spade_corpus_item_at(c, 5)->family, "grid");
    ck_assert_str_eq(spade_corpus_item_at(c, 0)->family, "");
    ck_assert_str_eq(spade_corpus_item_at(c, 4)->text, "second");
    int hits[6] = {0};
    uint64_t r1 = 9, r2 = 9;
    for (int k = 0; k < 600; k++) {
        int a = spade_corpus_draw(c, &r1), b = spade_corpus_draw(c, &r2);
        ck_assert_int_eq(a, b);
        hits[a]++;
    }
    for (int i = 0; i < 6; i++) ck_assert_msg(hits[i] > 60, "item %d drawn %d of 600", i, hits[i]);
    spade_corpus_free(c);
    write_file(dir, "d.jsonl", "{\"text\": \"first\"}\n{\"text\": 7}\n");
    ck_assert_int_eq(spade_corpus_new(&c, paths, 1, NULL, 1, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "d.jsonl:2") && strstr(err, "\"text\""), "%s", err);
    write_file(dir, "d.jsonl", "{\"text\": \"first\"\n");
    ck_assert_int_eq(spade_corpus_new(&c, paths, 1, NULL, 1, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "d.jsonl:1") && strstr(err, "not a JSON object"), "%s", err);
    const char *missing[] = {"/nonexistent/corpus"};
    ck_assert_int_eq(spade_corpus_new(&c, missing, 1, NULL, 1, NULL, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/corpus"));
    ck_assert_int_eq(spade_corpus_new(&c, paths, 1, NULL, 0, NULL, err, sizeof err), -1); /* no guard, not allowed */
    ck_assert_ptr_nonnull(strstr(err, "held-out guard"));
    ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

START_TEST(corpus_keeps_the_heldout_suite_out) {
    char dir[4096], err[2048], suite[4096], path[8400];
    spade_heldout_guard *g;
    ck_assert_msg(spade_heldout_dir(suite, sizeof suite, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(spade_heldout_guard_new(&g, NULL, err, sizeof err) == 0, "%s", err);
    tu_mkdtemp(dir, sizeof dir, "corpus-guard");
    write_file(dir, "mine.c", "ENV(\"mine\", \"d\", .family = \"math\")\n");
    snprintf(path, sizeof path, "%s/pancake.c", suite);
    char *src;
    size_t len;
    ck_assert_int_eq(spade_read_source(path, &src, &len, err, sizeof err), 0);
    write_file(dir, "renamed.c", src); /* a copy of a held-out file under another name */
    FILE *f = fopen(strcat(strcpy(path, dir), "/docs.jsonl"), "w");
    fputs("{\"text\": \"", f);
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '"' || src[i] == '\\') fputc('\\', f);
        if (src[i] == '\n')
            fputs("\\n", f);
        else
            fputc(src[i], f);
    }
    fputs("\"}\n{\"text\": \"a real document\"}\n", f);
    fclose(f);
    free(src);
    const char *paths[] = {dir, suite};
    spade_corpus *c;
    int refused = 0;
    ck_assert_msg(spade_corpus_new(&c, paths, 2, g, 0, &refused, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(spade_corpus_count(c), 2); /* mine.c and the real document */
    ck_assert_int_ge(refused, 2 + 12); /* the copy, the JSONL copy, and the suite's own files */
    for (int i = 0; i < spade_corpus_count(c); i++)
        ck_assert_msg(!strstr(spade_corpus_item_at(c, i)->name, "renamed") &&
                          !strstr(spade_corpus_item_at(c, i)->name, "eval/heldout"),
                      "%s reached the corpus", spade_corpus_item_at(c, i)->name);
    spade_corpus_free(c);
    const char *only[] = {suite};
    ck_assert_int_eq(spade_corpus_new(&c, only, 1, g, 0, &refused, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "held out"));
    spade_heldout_guard_free(g);
    ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

static size_t double_count(void *ctx, const char *s, size_t n) {
    (void)ctx;
    (void)s;
    return 2 * n + 1; /* a tokenizer that overcounts and is not additive over lines */
}

START_TEST(prompt_fits_its_budget_and_cuts_at_lines) {
    char err[512], excerpt[8192] = "", src[2048] = "";
    for (int i = 0; i < 200; i++)
        snprintf(excerpt + strlen(excerpt), sizeof excerpt - strlen(excerpt), "excerpt line %d\n", i);
    for (int i = 0; i < 60; i++) snprintf(src + strlen(src), sizeof src - strlen(src), "code %d;\n", i);
    spade_prompt_memory mem[2] = {{.source = src, .len = strlen(src), .family = "math", .pass = 0.42, .regret = 0.31},
                                  {.source = src, .len = strlen(src), .family = "math", .pass = 0.97, .kind = +1}};
    spade_prompt_opts o;
    spade_prompt_opts_default(&o);
    for (int counter = 0; counter < 2; counter++)
        for (int budget = counter ? 800 : 350; budget <= 6000; budget += 450) {
            o.budget = budget;
            o.count = counter ? double_count : NULL;
            char *p;
            size_t n;
            ck_assert_msg(spade_prompt_build(&o, "math", "stdenv/x.c", excerpt, strlen(excerpt), mem, 2, &p, &n, err,
                                             sizeof err) == 0,
                          "budget %d: %s", budget, err);
            size_t used = counter ? double_count(NULL, p, n) : n;
            ck_assert_msg(used <= (size_t)budget, "budget %d, counter %d: prompt takes %zu", budget, counter, used);
            ck_assert_uint_eq(strlen(p), n);
            ck_assert(n >= 8 && !strcmp(p + n - 8, "Source:\n"));
            ck_assert_ptr_nonnull(strstr(p, "Family: math."));
            /* every excerpt line that is there is whole */
            for (const char *q = strstr(p, "excerpt line "); q; q = strstr(q + 1, "excerpt line ")) {
                int k;
                char nl;
                ck_assert_msg(sscanf(q, "excerpt line %d%c", &k, &nl) == 2 && nl == '\n', "a cut line: %.30s", q);
            }
            if (!counter && budget >= 1700) {
                ck_assert_ptr_nonnull(strstr(p, "(good)"));
                ck_assert_ptr_nonnull(strstr(p, "too easy"));
                ck_assert_ptr_nonnull(strstr(p, "A document to draw on (stdenv/x.c)"));
            }
            free(p);
        }
    o.budget = 100000;
    o.count = NULL;
    char *p;
    ck_assert_int_eq(spade_prompt_build(&o, "grid", "n", excerpt, strlen(excerpt), NULL, 0, &p, NULL, err, sizeof err),
                     0);
    ck_assert_ptr_nonnull(strstr(p, "excerpt line 199\n")); /* a large budget keeps all of it */
    ck_assert_ptr_null(strstr(p, "..."));
    ck_assert_ptr_null(strstr(p, "built before"));
    free(p);
    ck_assert_int_eq(spade_prompt_build(&o, "grid", NULL, NULL, 0, NULL, 0, &p, NULL, err, sizeof err), 0);
    ck_assert_ptr_null(strstr(p, "document")); /* no corpus: no excerpt */
    free(p);
    o.budget = 50;
    ck_assert_int_eq(spade_prompt_build(&o, "grid", NULL, NULL, 0, NULL, 0, &p, NULL, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "budget of 50"));
}
END_TEST

/* designer.hint = self: the hint writer reads the source, then is asked for
 * a hint without the answer; a long source is cut at a line within the budget. */
START_TEST(hint_prompt_holds_the_source_then_the_instruction) {
    char err[512], src[4096] = "";
    for (int i = 0; i < 200; i++) snprintf(src + strlen(src), sizeof src - strlen(src), "code %d;\n", i);
    spade_prompt_opts o;
    spade_prompt_opts_default(&o);
    o.budget = 100000;
    char *p;
    size_t n;
    ck_assert_int_eq(spade_hint_prompt_build(&o, src, strlen(src), &p, &n, err, sizeof err), 0);
    const char *at = strstr(p, "code 0;\ncode 1;\n"), *ask = strstr(p, "without giving the answer");
    ck_assert(at && ask && at < ask && strstr(p, "code 199;\n") < ask); /* the whole source, then the instruction */
    ck_assert(n >= 6 && !strcmp(p + n - 6, "Hint:\n"));
    ck_assert_ptr_null(strstr(p, "..."));
    free(p);
    for (int counter = 0; counter < 2; counter++)
        for (int budget = counter ? 700 : 300; budget <= (counter ? 3000 : 1500); budget += 350) {
            o.budget = budget;
            o.count = counter ? double_count : NULL;
            ck_assert_msg(spade_hint_prompt_build(&o, src, strlen(src), &p, &n, err, sizeof err) == 0, "budget %d: %s",
                          budget, err);
            size_t used = counter ? double_count(NULL, p, n) : n;
            ck_assert_msg(used <= (size_t)budget, "budget %d, counter %d: hint prompt takes %zu", budget, counter,
                          used);
            ck_assert_ptr_nonnull(strstr(p, "code 0;\n"));
            ck_assert_ptr_nonnull(strstr(p, "...\nWrite the HINT")); /* cut, marked, instruction kept */
            for (const char *q = strstr(p, "code "); q; q = strstr(q + 1, "code ")) {
                int k;
                char semi, nl;
                ck_assert_msg(sscanf(q, "code %d%c%c", &k, &semi, &nl) == 3 && semi == ';' && nl == '\n',
                              "a cut line: %.20s", q);
            }
            free(p);
        }
    o.budget = 40;
    o.count = NULL;
    ck_assert_int_eq(spade_hint_prompt_build(&o, src, strlen(src), &p, &n, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "budget of 40"));
}
END_TEST

START_TEST(families_rotate_in_windows) {
    int got[3][6];
    for (int it = 0; it < 3; it++)
        for (int s = 0; s < 6; s++) got[it][s] = spade_family_for_slot(6, 3, it, s);
    int want[3][6] = {{0, 1, 2, 0, 1, 2}, {3, 4, 5, 3, 4, 5}, {0, 1, 2, 0, 1, 2}};
    ck_assert_mem_eq(got, want, sizeof got);
    ck_assert_int_eq(spade_family_for_slot(4, 3, 1, 1), 4 % 4); /* a short last window wraps */
    ck_assert_int_eq(spade_family_for_slot(5, 0, 7, 3), 3); /* window 0: all families */
    ck_assert_int_eq(spade_family_for_slot(0, 3, 0, 0), -1);
}
END_TEST

START_TEST(family_lists_match_whole_names) {
    ck_assert_int_eq(spade_family_listed("math,memory", "memory"), 1);
    ck_assert_int_eq(spade_family_listed("math,memory", "math"), 1);
    ck_assert_int_eq(spade_family_listed("mathx,grid", "math"), 0); /* a prefix is not the name */
    ck_assert_int_eq(spade_family_listed("math", "mat"), 0);
    ck_assert_int_eq(spade_family_listed("a,,b", ""), 1); /* an empty item matches the empty name */
    ck_assert_int_eq(spade_family_listed("", "math"), 0);
    ck_assert_int_eq(spade_family_listed(NULL, "math"), 0);
}
END_TEST

START_TEST(reward_arithmetic) {
    ck_assert_double_eq(spade_plateau(0.5), 1);
    ck_assert_double_eq(spade_plateau(0.4), 1);
    ck_assert_double_eq(spade_plateau(0.6), 1);
    ck_assert_double_eq_tol(spade_plateau(0.275), 0.5, 1e-12);
    ck_assert_double_eq_tol(spade_plateau(0.725), 0.5, 1e-12);
    ck_assert_double_eq(spade_plateau(0.15), 0);
    ck_assert_double_eq(spade_plateau(0.85), 0);
    ck_assert_double_eq(spade_plateau(1.0), 0);
    ck_assert_double_eq(spade_plateau(NAN), 0);
    double s0[8] = {0, 0, 1, 0, 0, 1, 0, 0}, s1[8] = {1, 1, 1, 0, 1, 1, 0, 1};
    spade_paired m;
    spade_paired_measure(s0, s1, 8, 1, &m);
    ck_assert_double_eq_tol(m.pass_nohint, 0.25, 1e-12);
    ck_assert_double_eq_tol(m.pass_hint, 0.75, 1e-12);
    ck_assert_double_eq_tol(m.regret, 0.5, 1e-12);
    ck_assert_double_eq_tol(m.regret_se, sqrt(0.25 * 8 / 7 / 8), 1e-12); /* differences: four 1s, four 0s */
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_BLEND, &m, NULL), 0.4 * 1 + 0.6 * 0.4, 1e-12);
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_REGRET, &m, NULL), 1, 1e-12);
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_SOLVE_RATE, &m, NULL), 0.4, 1e-12);
    /* an impossible environment: no lift, no plateau */
    double z[8] = {0};
    spade_paired_measure(z, z, 8, 1, &m);
    ck_assert_double_eq(spade_dreward(SPADE_DREWARD_BLEND, &m, NULL), 0);
    /* a hint that hurts is not negative reward beyond 0 regret */
    spade_paired_measure(s1, s0, 8, 1, &m);
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_REGRET, &m, NULL), 0, 1e-12);
    /* learning potential: the look-ahead's gain in pass rate, clipped at 0 */
    ck_assert_double_eq_tol(spade_lp_lookahead(0.25, 0.625), 0.375, 1e-12);
    ck_assert_double_eq(spade_lp_lookahead(0.625, 0.25), 0); /* a step that made it worse: no potential */
    ck_assert_double_eq(spade_lp_lookahead(0.5, 0.5), 0);
    ck_assert_double_eq(spade_lp_lookahead(NAN, 0.5), 0);
    ck_assert_double_eq(spade_lp_lookahead(0.5, NAN), 0);
    spade_paired_measure(s0, s1, 8, 1, &m); /* pass 0.25 */
    double after = 0.625;
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_LEARNING_POTENTIAL, &m, &after), 0.375, 1e-12);
    ck_assert_double_eq(spade_dreward(SPADE_DREWARD_LEARNING_POTENTIAL, &m, NULL), 0);
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_BLEND, &m, &after), 0.4 * 1 + 0.6 * 0.4,
                            1e-12); /* read by LP only */
    after = 0.125;
    ck_assert_double_eq(spade_dreward(SPADE_DREWARD_LEARNING_POTENTIAL, &m, &after), 0);
    /* centred per family like the other rewards: potentials 0.375, 0.125 (family a) and 0.5 (b) */
    double lp[3] = {spade_lp_lookahead(0.25, 0.625), spade_lp_lookahead(0.5, 0.625), spade_lp_lookahead(0, 0.5)};
    const char *lfam[3] = {"a", "a", "b"};
    spade_center_per_family(lp, lfam, NULL, 3);
    ck_assert_double_eq_tol(lp[0], 0.125, 1e-12);
    ck_assert_double_eq_tol(lp[1], -0.125, 1e-12);
    ck_assert_double_eq_tol(lp[2], 0, 1e-12);
    ck_assert_int_eq(spade_dreward_parse("learning_potential"), SPADE_DREWARD_LEARNING_POTENTIAL);
    ck_assert_int_eq(spade_dreward_parse("nope"), -1);
    double r[5] = {1, 3, 10, 20, -1};
    const char *fam[5] = {"a", "a", "b", "b", "a"};
    int keep[5] = {1, 1, 1, 1, 0};
    spade_center_per_family(r, fam, keep, 5);
    double want[5] = {-1, 1, -5, 5, -1};
    for (int i = 0; i < 5; i++) ck_assert_double_eq_tol(r[i], want[i], 1e-12);
}
END_TEST

/* The reference's pitfall 6: a game trivial on some seeds and impossible on
 * the others has a mean pass rate of 0.5. Two repeats a seed see it. */
START_TEST(bimodal_environments_lose_the_plateau_with_repeats) {
    /* 4 seeds x 2 repeats, consecutive: seeds 0 and 2 always won, 1 and 3 never */
    double bimodal[8] = {1, 1, 0, 0, 1, 1, 0, 0}, even[8] = {1, 0, 0, 1, 1, 0, 0, 1};
    double hint[8] = {1, 1, 1, 1, 1, 1, 0, 0};
    spade_paired m;
    spade_paired_measure(bimodal, hint, 8, 1, &m); /* one play a seed: only the mean is seen */
    ck_assert_double_eq(m.plateau, 1);
    spade_paired_measure(bimodal, hint, 8, 2, &m);
    ck_assert_double_eq_tol(m.pass_nohint, 0.5, 1e-12);
    ck_assert_double_eq(m.plateau, 0);
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_SOLVE_RATE, &m, NULL), 0, 1e-12);
    /* regret is the same mean; its standard error is over the 4 seeds' mean differences 0, 1, 0, 0 */
    ck_assert_double_eq_tol(m.regret, 0.25, 1e-12);
    ck_assert_double_eq_tol(m.regret_se, sqrt(0.75 / 3 / 4), 1e-12);
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_BLEND, &m, NULL), 0.4 * 1 + 0.6 * 0, 1e-12);
    /* the same mean, at 0.5 on every seed: the whole plateau */
    spade_paired_measure(even, hint, 8, 2, &m);
    ck_assert_double_eq(m.plateau, 1);
    ck_assert_double_eq_tol(spade_dreward(SPADE_DREWARD_SOLVE_RATE, &m, NULL), 1, 1e-12);
    /* per seed 0.5, 0.5, 1, 0 (mean 0.5): plateau (1 + 1 + 0 + 0) / 4 */
    double mixed[8] = {1, 0, 0, 1, 1, 1, 0, 0};
    spade_paired_measure(mixed, hint, 8, 2, &m);
    ck_assert_double_eq_tol(m.plateau, 0.5, 1e-12);
}
END_TEST

int main(void) {
    Suite *s = suite_create("designer");
    TCase *c = tcase_create("designer");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, json_field_is_decoded_and_bad_lines_refused);
    tcase_add_test(c, corpus_reads_kinds_in_order_and_names_jsonl_lines);
    tcase_add_test(c, corpus_keeps_the_heldout_suite_out);
    tcase_add_test(c, prompt_fits_its_budget_and_cuts_at_lines);
    tcase_add_test(c, hint_prompt_holds_the_source_then_the_instruction);
    tcase_add_test(c, families_rotate_in_windows);
    tcase_add_test(c, family_lists_match_whole_names);
    tcase_add_test(c, reward_arithmetic);
    tcase_add_test(c, bimodal_environments_lose_the_plateau_with_repeats);
    suite_add_tcase(s, c);
    return tu_run(s);
}
