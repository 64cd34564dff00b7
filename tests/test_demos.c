/* test_demos.c — spade demos (cli/cmd_demos.c), reading transcripts back
 * (cli/transcript_text.h) and source variants (designer/variants.h).
 *
 * What it checks: the file spade demos writes equals, byte for byte, the
 * renders of transcripts built here by the transcript API from the episode
 * layer's own events (an independent path: the events, not the agent's
 * views); encoding that file back (bytes and a BPE) gives exactly the
 * transcripts' tokens, special tokens included; every variant passes spade
 * check and differs from its source where the rewrite says; the answers
 * spade pretrain's loss = answers reads back from a rendered file are exactly
 * the transcript layer's mask (spade's format and a chat model's ChatML: the
 * designer's source with its end of turn, the agent's actions; never the
 * card, the request or the hint line), and each transcript starts once.
 * What it is not: the CLI's option errors and determinism (tests/test_demos.sh).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/transcript.h"
#include "agents.h"
#include "check.h"
#include "cli/transcript_text.h"
#include "designer/variants.h"
#include "episodes.h"
#include "registry.h"
#include "sandbox/sandbox.h"
#include "testutil.h"
#include "tiny_gguf.h"

enum { EPS = 6, MAXEV = 64 };

typedef struct ev {
    int kind;
    char text[2048];
} ev;

typedef struct events {
    ev e[EPS][MAXEV];
    int n[EPS];
} events;

static void on_event(void *ctx, const spade_ep_event *e) {
    events *r = ctx;
    ck_assert(e->episode >= 0 && e->episode < EPS && r->n[e->episode] < MAXEV);
    ev *x = &r->e[e->episode][r->n[e->episode]++];
    x->kind = e->kind;
    ck_assert(e->len < sizeof x->text);
    memcpy(x->text, e->text, e->len);
    x->text[e->len] = 0;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *b = malloc(1 << 20);
    *len = fread(b, 1, (1 << 20) - 1, f);
    b[*len] = 0;
    fclose(f);
    return b;
}

static char *read_stdenv(const char *name, size_t *len) {
    char path[2048], err[512], *src;
    snprintf(path, sizeof path, "%s/stdenv/%s.c", tu_srcdir(), name);
    ck_assert_msg(spade_read_source(path, &src, len, err, sizeof err) == 0, "%s", err);
    return src;
}

/* The transcript of episode k from its events: the first observation (the
 * "Hint: " the layer appended split off into the hint), then each action and
 * the observation after it, the last observation dropped (no action follows). */
static void build(const events *r, int k, int hint, spade_tokenizer *tok, spade_transcript *t) {
    spade_transcript_init(t);
    for (int i = 0; i < r->n[k]; i++) {
        const ev *x = &r->e[k][i];
        if (x->kind == SPADE_EV_ACTION) {
            spade_transcript_agent_action(t, tok, x->text, strlen(x->text));
        } else if (i == 0) {
            const char *h = hint ? strstr(x->text, "Hint: ") : NULL;
            ck_assert(!hint || h);
            size_t ol = h ? (size_t)(h - x->text) : strlen(x->text);
            spade_transcript_agent_open(t, tok, x->text, ol, h ? h + 6 : NULL, h ? strlen(h + 6) : 0);
        } else if (i + 1 < r->n[k]) {
            spade_transcript_agent_turn(t, tok, x->text, strlen(x->text));
        }
    }
    ck_assert(!t->oom);
}

START_TEST(demos_file_is_the_api_render) {
    const char *params = "back=1,rounds=3,letters=2";
    size_t len;
    char *src = read_stdenv("n_back", &len);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_ep_spec spec = {.filename = "n_back.c", .source = src, .len = len, .params = params, .expected = EPS};
    spade_ep_request reqs[EPS];
    for (int k = 0; k < EPS; k++) reqs[k] = (spade_ep_request){.spec = 0, .seed = (uint64_t)k, .hint = k & 1};
    static events r;
    memset(&r, 0, sizeof r);
    spade_episodes_opts o;
    spade_episodes_opts_default(&o);
    o.on_event = on_event;
    o.ctx = &r;
    spade_ep_outcome out[EPS];
    spade_agent *a = spade_agent_solve();
    char err[1024];
    ck_assert_msg(spade_episodes_play(sb, &spec, 1, reqs, EPS, a, &o, out, err, sizeof err) == 0, "%s", err);
    spade_agent_free(a);
    spade_sandbox_free(sb);

    char dir[1024], cmd[4096], path[1200];
    tu_mkdtemp(dir, sizeof dir, "demos");
    const char *bin = getenv("SPADE_BIN") ? getenv("SPADE_BIN") : "./spade";
    snprintf(cmd, sizeof cmd, "SPADE_PATH=%s/stdenv %s demos n_back:%s --episodes %d --hint --out %s >/dev/null",
             tu_srcdir(), bin, params, EPS, dir);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    snprintf(path, sizeof path, "%s/n_back.transcript", dir);
    size_t flen;
    char *file = slurp(path, &flen);

    spade_tokenizer *bytes;
    ck_assert_int_eq(spade_tokenizer_new_bytes(&bytes, err, sizeof err), 0);
    char *want = calloc(1, 1 << 20);
    size_t wl = 0;
    int *want_tok = malloc(sizeof(int) << 20);
    size_t wt = 0;
    for (int k = 0; k < EPS; k++) {
        ck_assert(out[k].success);
        spade_transcript t;
        build(&r, k, k & 1, bytes, &t);
        char *txt;
        size_t tl;
        ck_assert_int_eq(spade_transcript_render(&t, bytes, &txt, &tl), 0);
        memcpy(want + wl, txt, tl);
        wl += tl;
        want[wl++] = '\n';
        memcpy(want_tok + wt, t.tok, (size_t)t.len * sizeof(int));
        wt += (size_t)t.len;
        free(txt);
        spade_transcript_free(&t);
    }
    ck_assert_uint_eq(flen, wl);
    ck_assert_msg(!memcmp(file, want, wl), "the demos file differs from the API's renders");
    ck_assert(strstr(file, "<|hint|>") != NULL);

    /* read back with the byte tokenizer: exactly the transcripts' tokens */
    int *got = malloc(sizeof(int) * (flen + 1));
    size_t n = spade_transcript_text_encode(bytes, file, flen, got);
    ck_assert_uint_eq(n, wt);
    ck_assert(!memcmp(got, want_tok, wt * sizeof(int)));

    /* and with a BPE: the tokens the transcript API lays out with that BPE */
    spade_bpe_trainer *tr;
    spade_tokenizer *bpe;
    ck_assert_int_eq(spade_bpe_trainer_new(&tr, err, sizeof err), 0);
    ck_assert_int_eq(spade_bpe_trainer_add(tr, file, flen, err, sizeof err), 0);
    ck_assert_int_eq(spade_bpe_trainer_finish(tr, 500, &bpe, err, sizeof err), 0);
    spade_bpe_trainer_free(tr);
    wt = 0;
    for (int k = 0; k < EPS; k++) {
        spade_transcript t;
        build(&r, k, k & 1, bpe, &t);
        memcpy(want_tok + wt, t.tok, (size_t)t.len * sizeof(int));
        wt += (size_t)t.len;
        spade_transcript_free(&t);
    }
    n = spade_transcript_text_encode(bpe, file, flen, got);
    ck_assert_uint_eq(n, wt);
    ck_assert(!memcmp(got, want_tok, wt * sizeof(int)));
    ck_assert(wt < flen / 2); /* the BPE did merge: a real second tokenizer */

    spade_tokenizer_free(bpe);
    spade_tokenizer_free(bytes);
    free(got);
    free(want_tok);
    free(want);
    free(file);
    free(src);
    tu_rm_rf(dir);
}
END_TEST

static void text_cb(void *ctx, const char *p, size_t n) {
    char *b = ctx;
    strncat(b, "[", 4000);
    strncat(b, p, n);
    strncat(b, "]", 4000);
}
static void special_cb(void *ctx, int tok) {
    char *b = ctx;
    strcat(b, "#");
    strcat(b, spade_tok_name(tok));
}

/* Renders t, encodes the render back as spade pretrain does, and checks the
 * tokens, the answers against t's mask, and one start at token 0. */
static void check_answers(spade_tokenizer *tok, const spade_transcript *t, int n_tr) {
    char *text;
    size_t len;
    ck_assert_int_eq(spade_transcript_render(t, tok, &text, &len), 0);
    /* n_tr copies, separated as spade demos writes them */
    size_t cap = (len + 1) * (size_t)n_tr;
    char *all = malloc(cap);
    for (int k = 0; k < n_tr; k++) memcpy(all + k * (len + 1), text, len), all[k * (len + 1) + len] = '\n';
    int *back = malloc(cap * sizeof *back);
    size_t n = spade_transcript_text_encode(tok, all, cap, back);
    /* ChatML's "\n" between transcripts is a token of its own (cli/transcript_text.h) */
    size_t stride = (size_t)t->len + (spade_tokenizer_is_chat(tok) ? 1 : 0);
    ck_assert_uint_eq(n, stride * n_tr);
    unsigned char *ans = malloc(n), *start = malloc(n);
    spade_transcript_text_answers(tok, back, n, ans, start);
    long trained = 0, starts = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = i % stride;
        if (j == (size_t)t->len) { /* the separator */
            ck_assert_int_eq(ans[i], 0);
            ck_assert_int_eq(start[i], 0);
            continue;
        }
        ck_assert_int_eq(back[i], t->tok[j]);
        ck_assert_msg(ans[i] == t->mask[j], "token %zu (%d): answer %d, mask %d", i, back[i], ans[i], t->mask[j]);
        ck_assert_int_eq(start[i], j == 0);
        trained += ans[i], starts += start[i];
    }
    ck_assert_int_gt(trained, 0);
    ck_assert_int_eq(starts, n_tr);
    free(ans);
    free(start);
    free(back);
    free(all);
    free(text);
}

START_TEST(answers_are_the_transcript_mask) {
    char err[512], dir[4096], path[4200];
    tu_mkdtemp(dir, sizeof dir, "demos-answers");
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    ck_assert_msg(tiny_gguf_write(path, "llama", 3, err, sizeof err) == 0, "%s", err);
    spade_tokenizer *toks[2] = {NULL, NULL};
    ck_assert_int_eq(spade_tokenizer_new_bytes(&toks[0], err, sizeof err), 0);
    ck_assert_msg(spade_tokenizer_from_model(&toks[1], path, err, sizeof err) == 0, "%s", err);
    static const char src[] = "#include <spade/dsl.h>\nENV(\"x\", \"X.\", .family = \"math\")\n";
    for (int k = 0; k < 2; k++) {
        spade_transcript t;
        spade_transcript_init(&t); /* a designer's: card, request, the source in a block */
        spade_transcript_designer_open(&t, toks[k], "Family: math.\nWrite one.\n", 26);
        spade_transcript_designer_source(&t, toks[k], src, sizeof src - 1);
        check_answers(toks[k], &t, 3);
        spade_transcript_free(&t);
        spade_transcript_init(&t); /* an agent's in the hint arm: two system lines, two turns */
        spade_transcript_agent_open(&t, toks[k], "Add 2 and 3.", 12, "Count on.", 9);
        spade_transcript_agent_action(&t, toks[k], "5", 1);
        spade_transcript_agent_turn(&t, toks[k], "Again: 1 and 1.", 15);
        spade_transcript_agent_action(&t, toks[k], "2", 1);
        check_answers(toks[k], &t, 2);
        spade_transcript_free(&t);
    }
    spade_tokenizer_free(toks[0]);
    spade_tokenizer_free(toks[1]);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(walk_separators_and_unknown_markers) {
    static char b[4096];
    b[0] = 0;
    const char *s = "\n<|agent|><|observation|>a <|nope|> b\n<|action|>x<|end|>\n\n<|designer|>p<|source|>q<|end|>\n";
    spade_transcript_text_walk(s, strlen(s), text_cb, special_cb, b);
    ck_assert_str_eq(b, "#agent#observation[a <|nope|> b\n]#action[x]#end#designer[p]#source[q]#end");
    /* whitespace is only dropped between transcripts, never inside a turn */
    b[0] = 0;
    s = "<|agent|><|observation|> <|action|>\n<|end|>";
    spade_transcript_text_walk(s, strlen(s), text_cb, special_cb, b);
    ck_assert_str_eq(b, "#agent#observation[ ]#action[\n]#end");
}
END_TEST

START_TEST(variants_pass_check) {
    static const char *const envs[] = {"analogy", "bank", "nim", "maze", "tally"};
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_check_opts co;
    spade_check_opts_default(&co);
    static spade_check_report rep;
    int renamed = 0;
    for (size_t i = 0; i < sizeof envs / sizeof *envs; i++) {
        size_t len;
        char *src = read_stdenv(envs[i], &len);
        spade_worker *w;
        spade_failure f;
        ck_assert_int_eq(spade_worker_load(sb, envs[i], src, len, &w, &f), 0);
        spade_env_info info = *spade_worker_info(w);
        spade_worker_free(w);
        for (uint64_t seed = 1; seed <= 2; seed++) {
            char *v, err[256];
            size_t vl;
            ck_assert_int_eq(spade_variant_make(src, len, &info, seed * 77, &v, &vl, err, sizeof err), 0);
            ck_assert_msg(spade_check(sb, envs[i], v, vl, NULL, &co, &rep) == 0, "%s variant %d:\n%s", envs[i],
                          (int)seed, rep.text);
            char want[96];
            snprintf(want, sizeof want, "ENV(\"%s_", envs[i]);
            ck_assert_msg(strstr(v, want) != NULL, "%s: the name did not change", envs[i]);
            /* a default moved: some PARAM line differs */
            int moved = 0;
            for (const char *p = src; (p = strstr(p, "\nPARAM(")); p++) {
                const char *e = strchr(p + 1, '\n');
                char line[256];
                snprintf(line, sizeof line, "%.*s", (int)(e - p), p);
                moved |= strstr(v, line) == NULL;
            }
            ck_assert_msg(moved, "%s: no param default moved", envs[i]);
            /* a helper renamed: some "static T name(" of the source is gone */
            for (const char *p = src; (p = strstr(p, "\nstatic ")); p++) {
                const char *e = strchr(p + 1, '(');
                char head[256];
                snprintf(head, sizeof head, "%.*s", (int)(e - p + 1), p);
                renamed |= strchr(head + 1, '\n') == NULL && strstr(v, head) == NULL;
            }
            free(v);
        }
        free(src);
    }
    ck_assert(renamed);
    spade_sandbox_free(sb);
}
END_TEST

START_TEST(rename_leaves_strings_and_comments) {
    const char *src = "ENV(\"toy\", \"d\")\nPARAM(int, n, 2, 1, 5)\n"
                      "static int foo(int x) { return x; } /* foo */\n"
                      "STEP { say(\"foo\"); foo(1); }\n";
    spade_env_info info;
    memset(&info, 0, sizeof info);
    info.n_params = 1;
    snprintf(info.params[0].name, sizeof info.params[0].name, "n");
    info.params[0].type = 1;
    info.params[0].def = 2, info.params[0].min = 1, info.params[0].max = 5;
    int seen = 0;
    for (uint64_t seed = 0; seed < 32 && !seen; seed++) {
        char *v, err[256];
        size_t vl;
        ck_assert_int_eq(spade_variant_make(src, strlen(src), &info, seed, &v, &vl, err, sizeof err), 0);
        ck_assert(strstr(v, "say(\"foo\")") && strstr(v, "/* foo */"));
        ck_assert(!strstr(v, "PARAM(int, n, 2,"));
        if (!strstr(v, "static int foo(")) {
            const char *d = strstr(v, "static int foo_");
            ck_assert(d);
            char call[64];
            snprintf(call, sizeof call, "%.*s(1)", (int)(strchr(d, '(') - d - 11), d + 11);
            ck_assert_msg(strstr(v, call) != NULL, "the call was not renamed with the definition:\n%s", v);
            seen = 1;
        }
        free(v);
    }
    ck_assert(seen);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("demos");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, demos_file_is_the_api_render);
    tcase_add_test(tc, walk_separators_and_unknown_markers);
    tcase_add_test(tc, answers_are_the_transcript_mask);
    tcase_add_test(tc, variants_pass_check);
    tcase_add_test(tc, rename_leaves_strings_and_comments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(suite()); }
