/* test_template.c — Check suite for the template designer ([designer] source
 * = template): designer/template.h (parsing and its errors by file and line,
 * the text a hole keeps, the splice, the filling embedding) and
 * selfplay/template.h (decoding the holes with a policy: the transcript's
 * layout, its mask on exactly the hole tokens, the recorded log-probs against
 * the policy's own, the splice of what the holes kept, the context check),
 * and the shipped templates/cups.c filled with known values through the gates.
 * What it is not: the loop around it (tests/test_template.sh runs a micro
 * self-play run in template mode).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/transcript.h"
#include "designer/gates.h"
#include "designer/template.h"
#include "registry.h"
#include "rng.h"
#include "selfplay/template.h"
#include "testutil.h"
#include "vendi.h"

static spade_template *parse(const char *name, const char *text) {
    spade_template *t;
    char err[400];
    ck_assert_msg(spade_template_parse(&t, name, text, strlen(text), err, sizeof err) == 0, "%s", err);
    return t;
}

static char *piece(const spade_template *t, int k) {
    size_t n;
    const char *p = spade_template_piece(t, k, &n);
    char *s = malloc(n + 1);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

START_TEST(parse_pieces_lines_family_and_errors) {
    spade_template *t = parse("t.c", "ENV(\"x\", \"d\", .family = \"logic\")\nint a = @@;\nint b = @@\n/* end */\n");
    ck_assert_int_eq(spade_template_holes(t), 2);
    char *p0 = piece(t, 0), *p1 = piece(t, 1), *p2 = piece(t, 2);
    ck_assert_str_eq(p0, "ENV(\"x\", \"d\", .family = \"logic\")\nint a = ");
    ck_assert_str_eq(p1, ";\nint b = ");
    ck_assert_str_eq(p2, "\n/* end */\n");
    free(p0), free(p1), free(p2);
    ck_assert_int_eq(spade_template_hole_line(t, 0), 2);
    ck_assert_int_eq(spade_template_hole_line(t, 1), 3);
    ck_assert_str_eq(spade_template_family(t), "logic");
    ck_assert_str_eq(spade_template_name(t), "t.c");
    spade_template_free(t);
    t = parse("u.c", "@@");
    ck_assert_int_eq(spade_template_holes(t), 1);
    ck_assert_str_eq(spade_template_family(t), "any");
    spade_template_free(t);

    char err[400];
    ck_assert_int_eq(spade_template_parse(&t, "none.c", "int x;\n", 7, err, sizeof err), -1);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, "none.c") && strstr(err, "no hole"), "%s", err);
    ck_assert_int_eq(spade_template_parse(&t, "at.c", "a\nb\nc @@@\n", 10, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "at.c:3:") && strstr(err, "@@@"), "%s", err);
    ck_assert_int_eq(spade_template_parse(&t, "nul.c", "a\n@@\0b", 6, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "nul.c:2:") && strstr(err, "NUL"), "%s", err);
    ck_assert_int_eq(spade_template_load(&t, "/nonexistent/dir/missing.c", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "/nonexistent/dir/missing.c"), "%s", err);
}
END_TEST

START_TEST(hole_text_is_cut_at_the_first_newline) {
    ck_assert_uint_eq(spade_template_hole_text("6, 2, 30)\nPARAM(", 16), 9);
    ck_assert_uint_eq(spade_template_hole_text("abc", 3), 3);
    ck_assert_uint_eq(spade_template_hole_text("\nabc", 4), 0);
    ck_assert_uint_eq(spade_template_hole_text("ab\0c\n", 5), 2);
    ck_assert_uint_eq(spade_template_hole_text("", 0), 0);
}
END_TEST

/* The template's text with its holes replaced in order, the slow obvious way. */
static char *replace_holes(const char *text, const char *const *fills) {
    size_t cap = strlen(text) + 1;
    for (int k = 0; fills[k]; k++) cap += strlen(fills[k]);
    char *out = malloc(cap), *o = out;
    int k = 0;
    for (const char *p = text; *p;) {
        if (p[0] == '@' && p[1] == '@') {
            o += sprintf(o, "%s", fills[k++]);
            p += 2;
        } else
            *o++ = *p++;
    }
    *o = 0;
    return out;
}

START_TEST(splice_gives_the_expected_source) {
    char path[4096], err[400];
    snprintf(path, sizeof path, "%s/templates/cups.c", tu_srcdir());
    spade_template *t;
    ck_assert_msg(spade_template_load(&t, path, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(spade_template_holes(t), 2);
    ck_assert_str_eq(spade_template_family(t), "logic");
    const char *fills[] = {"6", "four, 4", NULL};
    size_t lens[] = {1, 7};
    char *src, *text;
    size_t n, tl;
    ck_assert_int_eq(spade_template_fill(t, fills, lens, &src, &n), 0);
    ck_assert_int_eq(spade_read_source(path, &text, &tl, err, sizeof err), 0);
    char *want = replace_holes(text, fills);
    ck_assert_str_eq(src, want);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert_ptr_nonnull(strstr(src, "\"cups = 6\\\n\";\n"));
    ck_assert_ptr_nonnull(strstr(src, "\"tries = four, 4\\\n\";\n"));
    free(src), free(text), free(want);
    spade_template_free(t);
}
END_TEST

static double cosine(const double *a, const double *b, int d) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < d; i++) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
    return ab / sqrt(aa * bb);
}

START_TEST(filling_embedding_tells_fillings_apart) {
    enum { D = SPADE_VENDI_DIM };
    static double a[D], b[D], c[D], e[D], z[D];
    const char *f1[] = {"6, 2, 30)", "4, 1, 30)"}, *f2[] = {"6,2,30)", " 4, 1, 30) "},
               *f3[] = {"6, 2, 30)", "5, 1, 30)"}, *f4[] = {"7, 2, 30)", "5, 1, 30)"}, *f5[] = {"", ""};
    size_t l1[] = {9, 9}, l2[] = {7, 11}, l3[] = {9, 9}, l4[] = {9, 9}, l5[] = {0, 0};
    spade_template_embed(f1, l1, 2, a, D);
    spade_template_embed(f2, l2, 2, b, D);
    spade_template_embed(f3, l3, 2, c, D);
    spade_template_embed(f4, l4, 2, e, D);
    spade_template_embed(f5, l5, 2, z, D);
    ck_assert_double_eq_tol(cosine(a, b, D), 1.0, 1e-12); /* blank space does not count */
    ck_assert_double_eq_tol(cosine(a, c, D), 0.5, 1e-12); /* one hole of two differs */
    ck_assert_double_eq_tol(cosine(a, e, D), 0.0, 1e-12); /* both differ */
    double nz = 0;
    for (int i = 0; i < D; i++) nz += z[i] * z[i];
    ck_assert_double_eq_tol(nz, 1.0, 1e-12); /* empty fills still embed (Vendi refuses a zero row) */
    /* Vendi/n of four fillings, two identical: what the loop reports in this mode */
    static double X[4 * D];
    memcpy(X, a, sizeof a), memcpy(X + D, b, sizeof b), memcpy(X + 2 * D, c, sizeof c), memcpy(X + 3 * D, e, sizeof e);
    double v, v1;
    char err[200];
    ck_assert_int_eq(spade_vendi(X, 4, D, &v, err, sizeof err), 0);
    memcpy(X + D, a, sizeof a), memcpy(X + 2 * D, a, sizeof a), memcpy(X + 3 * D, a, sizeof a);
    ck_assert_int_eq(spade_vendi(X, 4, D, &v1, err, sizeof err), 0);
    ck_assert_double_eq_tol(v1, 1.0, 1e-9);
    ck_assert(v > 1.5);
}
END_TEST

START_TEST(game_embedding_counts_games_not_texts) {
    enum { D = SPADE_VENDI_DIM };
    static double a[D], b[D], c[D], t[D], u[D], z[D], z2[D];
    /* cups.c reads each hole with parse_int: these two set 1 cup and 2 tries, as different texts */
    const char *f1[] = {"ine, 4, 1", "s, 2"}, *f2[] = {"1", " 7 then 2 "}, *f3[] = {"ine, 4, 3", "s, 2"},
               *f4[] = {"cups", "two"}, *f5[] = {"cup s", "two"};
    size_t l1[] = {9, 4}, l2[] = {1, 11}, l3[] = {9, 4}, l4[] = {4, 3}, l5[] = {5, 3};
    spade_template_embed_games(f1, l1, 2, a, D);
    spade_template_embed_games(f2, l2, 2, b, D);
    spade_template_embed_games(f3, l3, 2, c, D);
    ck_assert_double_eq_tol(cosine(a, b, D), 1.0, 1e-12); /* one game */
    ck_assert_double_eq_tol(cosine(a, c, D), 0.5, 1e-12); /* 1 cup against 3: one hole of two */
    spade_template_embed(f1, l1, 2, t, D);
    spade_template_embed(f2, l2, 2, u, D);
    ck_assert_double_eq_tol(cosine(t, u, D), 0.0, 1e-12); /* what the text embedding sees: two fillings */
    /* no number in a hole: its text decides, blank space aside, as in spade_template_embed */
    spade_template_embed_games(f4, l4, 2, z, D);
    spade_template_embed_games(f5, l5, 2, z2, D);
    ck_assert_double_eq_tol(cosine(z, z2, D), 1.0, 1e-12);
    ck_assert_double_eq_tol(cosine(z, a, D), 0.0, 1e-12);
    /* Vendi of four fillings setting two games, two each: 2; the texts are three (f4 and f5 are
     * one text without blank space), in shares 1/4, 1/4, 1/2: exp(1.5 ln 2) */
    static double X[4 * D];
    double vg, vt;
    char err[200];
    memcpy(X, a, sizeof a), memcpy(X + D, b, sizeof b), memcpy(X + 2 * D, z, sizeof z),
        memcpy(X + 3 * D, z2, sizeof z2);
    ck_assert_int_eq(spade_vendi(X, 4, D, &vg, err, sizeof err), 0);
    spade_template_embed(f4, l4, 2, z, D);
    spade_template_embed(f5, l5, 2, z2, D);
    memcpy(X, t, sizeof t), memcpy(X + D, u, sizeof u), memcpy(X + 2 * D, z, sizeof z),
        memcpy(X + 3 * D, z2, sizeof z2);
    ck_assert_int_eq(spade_vendi(X, 4, D, &vt, err, sizeof err), 0);
    ck_assert_double_eq_tol(vg, 2.0, 1e-9);
    ck_assert_double_eq_tol(vt, pow(2, 1.5), 1e-9);
}
END_TEST

/* Decodes n slots of t; the transcripts are left in tr[]. */
static float g_temp = 1.0f, g_top_p = 1.0f; /* decode()'s sampling */

static void decode(spade_policy *p, const spade_template *t, int n, uint64_t seed, int hole_tokens,
                   spade_transcript *tr, spade_template_slot *s) {
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    char *prompt, err[400];
    size_t plen;
    ck_assert_int_eq(spade_template_prompt(t, &prompt, &plen), 0);
    for (int i = 0; i < n; i++) {
        spade_transcript_init(&tr[i]);
        spade_transcript_designer_open(&tr[i], tok, prompt, plen);
        memset(&s[i], 0, sizeof s[i]);
        s[i].tpl = t;
        s[i].seed = seed + 1000 * (uint64_t)i;
        s[i].tr = &tr[i];
    }
    free(prompt);
    spade_template_opts o = {.temperature = g_temp, .top_p = g_top_p, .hole_tokens = hole_tokens};
    ck_assert_msg(spade_template_decode(p, s, n, &o, err, sizeof err) == 0, "%s", err);
}

START_TEST(decode_masks_exactly_the_hole_tokens) {
    enum { N = 3, HT = 6 };
    spade_policy *p = tu_tiny_policy(256, 7);
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    spade_template *t = parse("mini.c", "int a = @@;\nint b = @@ + 1;\n");
    spade_transcript tr[N], tr2[N];
    spade_template_slot s[N], s2[N];
    decode(p, t, N, 42, HT, tr, s);
    char *prompt;
    size_t plen;
    ck_assert_int_eq(spade_template_prompt(t, &prompt, &plen), 0);
    spade_transcript open;
    spade_transcript_init(&open);
    spade_transcript_designer_open(&open, tok, prompt, plen);
    free(prompt);
    int stop_nl = 0, stop_end = 0, stop_max = 0;
    for (int i = 0; i < N; i++) {
        spade_transcript *x = &tr[i];
        /* the layout: opening, piece 0, hole 1, piece 1, hole 2, piece 2, <|end|>; pieces mask 0, holes mask 1 */
        ck_assert_int_ge(x->len, open.len);
        for (int j = 0; j < open.len; j++) {
            ck_assert_int_eq(x->tok[j], open.tok[j]);
            ck_assert_int_eq(x->mask[j], 0);
        }
        int at = open.len, sampled = 0;
        char *fills[2];
        size_t fl[2];
        for (int k = 0; k <= 2; k++) {
            size_t pl;
            const char *pc = spade_template_piece(t, k, &pl);
            int enc[64];
            size_t ne = spade_tokenizer_encode(tok, pc, pl, enc);
            for (size_t j = 0; j < ne; j++, at++) {
                ck_assert_int_lt(at, x->len);
                ck_assert_int_eq(x->tok[at], enc[j]);
                ck_assert_int_eq(x->mask[at], 0);
                ck_assert(x->logp[at] == 0.0f);
            }
            if (k == 2) break;
            int h0 = at;
            while (at < x->len && x->mask[at]) {
                ck_assert_msg(x->logp[at] < 0.0f, "a sampled token keeps its log-prob");
                at++;
            }
            int run = at - h0;
            ck_assert_int_ge(run, 1);
            ck_assert_int_le(run, HT);
            sampled += run;
            /* how the hole stopped: <|end|>, a token with a newline, or its limit */
            int last = x->tok[at - 1];
            size_t ll = 0;
            const unsigned char *lp = spade_tokenizer_piece(tok, last, &ll);
            if (last == SPADE_TOK_END)
                stop_end++;
            else if (lp && memchr(lp, '\n', ll))
                stop_nl++;
            else {
                ck_assert_int_eq(run, HT);
                stop_max++;
            }
            for (int j = h0; j < at - 1; j++) { /* nothing before the last token would have stopped it */
                size_t l2 = 0;
                const unsigned char *p2 = spade_tokenizer_piece(tok, x->tok[j], &l2);
                ck_assert(x->tok[j] != SPADE_TOK_END && !(p2 && memchr(p2, '\n', l2)));
            }
            /* the hole kept the sampled text before its first newline */
            char text[512];
            size_t got = 0;
            spade_tokenizer_decode(tok, x->tok + h0, (size_t)(run - (last == SPADE_TOK_END)), 0, text, sizeof text,
                                   &got);
            size_t kept = spade_template_hole_text(text, got);
            ck_assert_uint_eq(s[i].fill_len[k], kept);
            ck_assert(memcmp(s[i].fill[k], text, kept) == 0);
            fills[k] = s[i].fill[k], fl[k] = s[i].fill_len[k];
        }
        ck_assert_int_eq(at, x->len - 1);
        ck_assert_int_eq(x->tok[at], SPADE_TOK_END);
        ck_assert_int_eq(x->mask[at], 0);
        ck_assert_int_eq(s[i].sampled, sampled);
        char *want;
        size_t wl;
        ck_assert_int_eq(spade_template_fill(t, (const char *const *)fills, fl, &want, &wl), 0);
        ck_assert_uint_eq(s[i].source_len, wl);
        ck_assert_str_eq(s[i].source, want);
        free(want);
        /* the recorded log-probs are the policy's own over the whole transcript: the decoder read exactly it */
        float *lp = malloc((size_t)x->len * sizeof *lp);
        char err[400];
        ck_assert_msg(spade_policy_logprobs(p, x->tok, 1, x->len, lp, err, sizeof err) == 0, "%s", err);
        for (int j = 1; j < x->len; j++)
            if (x->mask[j])
                ck_assert_msg(fabsf(lp[j - 1] - x->logp[j]) < 2e-3f, "token %d: %g vs %g", j, lp[j - 1], x->logp[j]);
        free(lp);
    }
    ck_assert_int_eq(stop_nl + stop_end + stop_max, 2 * N);
    /* the same seeds write the same fillings */
    decode(p, t, N, 42, HT, tr2, s2);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(tr2[i].len, tr[i].len);
        ck_assert(memcmp(tr2[i].tok, tr[i].tok, (size_t)tr[i].len * sizeof *tr[i].tok) == 0);
        ck_assert_str_eq(s2[i].source, s[i].source);
    }
    for (int i = 0; i < N; i++) {
        spade_template_slot_clear(&s[i]), spade_template_slot_clear(&s2[i]);
        spade_transcript_free(&tr[i]), spade_transcript_free(&tr2[i]);
    }
    spade_transcript_free(&open);
    spade_template_free(t);
    spade_policy_free(p);
}
END_TEST

/* A hole's token drawn at the designer's temperature 0.8 with top_p 0.9
 * carries the log-prob of that distribution (GRPO's old log-prob): log
 * softmax(z / 0.8) renormalised over the nucleus, against tu_sampled_logprob
 * over the policy's temperature-1 log-probs after the same prefix; at least
 * one token's temperature-1 log-prob differs from it by more than 1e-3. */
START_TEST(hole_tokens_carry_the_drawn_distribution) {
    enum { N = 2, HT = 6 };
    spade_policy *p = tu_tiny_policy(256, 7);
    spade_template *t = parse("mini.c", "int a = @@;\nint b = @@ + 1;\n");
    spade_transcript tr[N];
    spade_template_slot s[N];
    g_temp = 0.8f, g_top_p = 0.9f;
    decode(p, t, N, 42, HT, tr, s);
    g_temp = 1.0f, g_top_p = 1.0f;
    float l1[SPADE_VOCAB];
    int checked = 0, off = 0;
    for (int i = 0; i < N; i++) {
        for (int j = 1; j < tr[i].len; j++) {
            if (!tr[i].mask[j]) continue;
            tu_next_logprobs(p, tr[i].tok, j, l1);
            double want = tu_sampled_logprob(l1, SPADE_VOCAB, 0.8, 0.9, tr[i].tok[j]);
            ck_assert_msg(fabs(want - tr[i].logp[j]) < 1e-3, "slot %d token %d: recorded %g, drawn from %g", i, j,
                          tr[i].logp[j], want);
            off += fabs(l1[tr[i].tok[j]] - tr[i].logp[j]) > 1e-3;
            checked++;
        }
        spade_template_slot_clear(&s[i]);
        spade_transcript_free(&tr[i]);
    }
    ck_assert_int_ge(checked, 2 * N);
    ck_assert_int_gt(off, 0);
    spade_template_free(t);
    spade_policy_free(p);
}
END_TEST

/* The stop tokens of a hole, as template.h documents them: <|end|> and every
 * token whose text holds a newline. */
static int hole_stops(spade_tokenizer *tok, int *stop) {
    int k = 0;
    stop[k++] = SPADE_TOK_END;
    for (int id = 0; id < spade_tokenizer_vocab(tok); id++) {
        size_t len = 0;
        const unsigned char *piece = spade_tokenizer_piece(tok, id, &len);
        if (piece && memchr(piece, '\n', len)) stop[k++] = id;
    }
    return k;
}

/* The runs of trained (hole) tokens of a transcript: [at[h], at[h] + run[h]). */
static int hole_runs(const spade_transcript *x, int *at, int *run, int cap) {
    int h = 0;
    for (int j = 0; j < x->len && h < cap; j++)
        if (x->mask[j] && (j == 0 || !x->mask[j - 1])) {
            at[h] = j;
            run[h] = 0;
            while (j < x->len && x->mask[j]) run[h]++, j++;
            h++;
        }
    return h;
}

START_TEST(a_hole_stops_at_its_first_newline) {
    /* holes long enough that a newline token comes up: each then ends the hole there */
    enum { N = 8, HT = 32 };
    spade_policy *p = tu_tiny_policy(1024, 5);
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    spade_template *t = parse("mini.c", "int a = @@;\nint b = @@ + 1;\n");
    int at_newline = 0;
    for (uint64_t seed = 1; seed <= 20 && !at_newline; seed++) {
        spade_transcript tr[N];
        spade_template_slot s[N];
        decode(p, t, N, seed, HT, tr, s);
        for (int i = 0; i < N; i++) {
            int at[4], run[4], nh = hole_runs(&tr[i], at, run, 4);
            ck_assert_int_eq(nh, 2);
            for (int h = 0; h < nh; h++) {
                for (int j = at[h]; j < at[h] + run[h]; j++) {
                    size_t l = 0;
                    const unsigned char *pc = spade_tokenizer_piece(tok, tr[i].tok[j], &l);
                    int nl = pc && memchr(pc, '\n', l);
                    ck_assert_msg(!nl || j == at[h] + run[h] - 1,
                                  "seed %llu slot %d hole %d: a newline at token %d of %d", (unsigned long long)seed, i,
                                  h, j - at[h], run[h]);
                    at_newline += nl;
                }
                ck_assert(!memchr(s[i].fill[h], '\n', s[i].fill_len[h]));
            }
            spade_template_slot_clear(&s[i]);
            spade_transcript_free(&tr[i]);
        }
    }
    ck_assert_msg(at_newline > 0, "no hole of 20 x %d slots ended at a newline token", N);
    spade_template_free(t);
    spade_policy_free(p);
}
END_TEST

START_TEST(each_hole_draws_from_its_own_stream) {
    /* hole 1 of a slot seeded s is what one decoder slot fed the same prefix samples from mix64(s + 1) */
    enum { HT = 6 };
    const uint64_t seed = 77;
    spade_policy *p = tu_tiny_policy(512, 7);
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    spade_template *t = parse("mini.c", "int a = @@;\nint b = @@ + 1;\n");
    spade_transcript tr[1];
    spade_template_slot s[1];
    decode(p, t, 1, seed, HT, tr, s);
    int at[4], run[4];
    ck_assert_int_eq(hole_runs(&tr[0], at, run, 4), 2);
    int *stop = malloc((size_t)(spade_tokenizer_vocab(tok) + 1) * sizeof *stop);
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = 1.0f;
    so.top_p = 1.0f;
    so.max_tokens = HT;
    so.stop = stop;
    so.n_stop = hole_stops(tok, stop);
    spade_decoder *dec;
    char err[400];
    ck_assert_msg(spade_decoder_new(&dec, p, 1, err, sizeof err) == 0, "%s", err);
    int slot = 0, count = at[1], status, maxt = HT, out[HT], len, st2;
    const int *toks = tr[0].tok;
    float lp[HT];
    ck_assert_msg(spade_decoder_append_batch(dec, &slot, &toks, &count, 1, &status, err, sizeof err) == 0, "%s", err);
    uint64_t hs = spade_mix64(seed + 1);
    ck_assert_msg(spade_decoder_sample(dec, &slot, 1, &so, &hs, &maxt, out, lp, &len, &st2, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_int_eq(len, run[1]);
    for (int j = 0; j < len; j++) ck_assert_int_eq(out[j], tr[0].tok[at[1] + j]);
    spade_decoder_free(dec);
    free(stop);
    spade_template_slot_clear(&s[0]);
    spade_transcript_free(&tr[0]);
    spade_template_free(t);
    spade_policy_free(p);
}
END_TEST

START_TEST(a_template_over_the_context_is_refused_by_name) {
    char path[4096], err[600];
    snprintf(path, sizeof path, "%s/templates/cups.c", tu_srcdir());
    spade_template *t;
    ck_assert_msg(spade_template_load(&t, path, err, sizeof err) == 0, "%s", err);
    spade_policy *p = tu_tiny_policy(256, 1); /* bytes: a token per byte; cups.c is longer */
    ck_assert_int_eq(spade_template_fits(p, t, 8, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cups.c") && strstr(err, "2 holes x designer.hole_tokens 8") &&
                      strstr(err, "context of 256"),
                  "%s", err);
    int pieces, need = spade_template_tokens(p, t, 8, &pieces);
    ck_assert_int_eq(need, pieces + 16 + 3 + (int)strlen("Fill in the blanks of this environment (family logic).\n"));
    spade_policy_free(p);
    p = tu_tiny_policy(4096, 1);
    ck_assert_int_eq(spade_template_fits(p, t, 8, err, sizeof err), 0);
    spade_policy_free(p);
    spade_template_free(t);
}
END_TEST

static spade_sandbox *sb;
static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 10.0, .call_timeout_s = 2.0}); }
static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

/* cups.c with the two holes filled, through the loop's gates (all of them). */
static int first_failed(const char *cups, const char *tries, spade_gate_report *rep) {
    char path[4096], err[400];
    snprintf(path, sizeof path, "%s/templates/cups.c", tu_srcdir());
    spade_template *t;
    ck_assert_msg(spade_template_load(&t, path, err, sizeof err) == 0, "%s", err);
    const char *fills[] = {cups, tries};
    size_t lens[] = {strlen(cups), strlen(tries)}, n;
    char *src;
    ck_assert_int_eq(spade_template_fill(t, fills, lens, &src, &n), 0);
    spade_gate_opts o;
    spade_gate_opts_default(&o);
    o.max_step_ms = 200; /* a busy machine: the step budget is not what this test is about */
    ck_assert_msg(spade_gates_run(sb, "cups-filled.c", src, n, &o, rep, err, sizeof err) == 0, "%s", err);
    free(src);
    spade_template_free(t);
    return rep->first_failed;
}

START_TEST(cups_fillings_pass_or_fail_the_gates) {
    spade_gate_report rep;
    ck_assert_msg(first_failed("6", "4", &rep) == -1, "%s", rep.detail[rep.first_failed < 0 ? 0 : rep.first_failed]);
    for (int g = 0; g < SPADE_GATE_COUNT; g++) ck_assert_int_eq(rep.status[g], SPADE_GATE_PASS);
    ck_assert_int_eq(first_failed("a row of 10 cups", "5 tries", &rep), -1); /* the last number of each text counts */
    ck_assert_int_eq(first_failed("10", "2", &rep), SPADE_GATE_SOLVE); /* too few tries even with the hint */
    ck_assert_int_eq(first_failed("many", "4", &rep), SPADE_GATE_SOLVE); /* no number of cups: no game */
    ck_assert_int_eq(first_failed("1", "30", &rep), SPADE_GATE_RANDOM); /* one cup, thirty tries: a giveaway */
    ck_assert_int_eq(first_failed("six \"6\"", "4", &rep), SPADE_GATE_COMPILE); /* a quote ends the string */
}
END_TEST

int main(void) {
    Suite *s = suite_create("template");
    TCase *c = tcase_create("text");
    tcase_add_test(c, parse_pieces_lines_family_and_errors);
    tcase_add_test(c, hole_text_is_cut_at_the_first_newline);
    tcase_add_test(c, splice_gives_the_expected_source);
    tcase_add_test(c, filling_embedding_tells_fillings_apart);
    tcase_add_test(c, game_embedding_counts_games_not_texts);
    suite_add_tcase(s, c);
    TCase *d = tcase_create("decode");
    tcase_set_timeout(d, 120);
    tcase_add_test(d, decode_masks_exactly_the_hole_tokens);
    tcase_add_test(d, hole_tokens_carry_the_drawn_distribution);
    tcase_add_test(d, a_hole_stops_at_its_first_newline);
    tcase_add_test(d, each_hole_draws_from_its_own_stream);
    tcase_add_test(d, a_template_over_the_context_is_refused_by_name);
    suite_add_tcase(s, d);
    TCase *g = tcase_create("gates");
    tcase_add_checked_fixture(g, setup, teardown);
    tcase_set_timeout(g, 120);
    tcase_add_test(g, cups_fillings_pass_or_fail_the_gates);
    suite_add_tcase(s, g);
    return tu_run(s);
}
