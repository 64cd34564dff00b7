/* test_chat.c — the roles' turns on a chat model (core/chat.h) as
 * transcripts lay them out (agent/transcript.h): ChatML with a pretrained
 * model's tokens for both roles, the mask on exactly what the role wrote,
 * the end of turn and the stops a chat model samples to, the reasoning
 * budget, the designer's chat request (designer/prompt.h), the card taken
 * from docs/dsl.md, and the policy agent playing through the episode layer
 * on a tiny random Llama the test writes as a GGUF file itself. Also: spade's
 * own format is unchanged for its tokenizers.
 * Not a test of the BPE or of ChatML's rendering itself (tests/test_bpe), nor
 * of the real model (tests/test_chat.sh runs spade eval and run on it).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/policy_agent.h"
#include "agent/transcript.h"
#include "chat.h"
#include "designer/prompt.h"
#include "episodes.h"
#include "policy/bpe.h"
#include "policy/gguf.h"
#include "policy/pretrained.h"
#include "selfplay/template.h"
#include "testutil.h"

static char err[2048];

/* GPT-2's byte-to-unicode map: the token text of byte b, UTF-8, into out. */
static void byte_text(int b, char *out) {
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
        cp = b;
    } else {
        int n = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp, out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3F)), out[2] = 0;
    }
}

enum { N_BYTES = 256, TOK_IM_START = 256, TOK_IM_END, TOK_EOT, N_TOKENS };
#define TINY_C 16
#define TINY_F 32

/* A tiny ChatML model: the 256 byte tokens, <|im_start|>, <|im_end|> and
 * <|endoftext|> (EOS: so the stops are two), or three other control tokens
 * without chatml; with weights (a random one-layer Llama) when weights is
 * set. Written to path. */
static void write_tiny(const char *path, int weights, int chatml) {
    spade_gguf_writer *w;
    ck_assert_int_eq(spade_gguf_writer_new(&w, err, sizeof err), 0);
    static char texts[N_TOKENS][8];
    const char *toks[N_TOKENS];
    int32_t types[N_TOKENS];
    for (int b = 0; b < N_BYTES; b++) byte_text(b, texts[b]), toks[b] = texts[b], types[b] = 1;
    toks[TOK_IM_START] = chatml ? "<|im_start|>" : "<|a|>", toks[TOK_IM_END] = chatml ? "<|im_end|>" : "<|b|>";
    toks[TOK_EOT] = "<|endoftext|>";
    types[TOK_IM_START] = types[TOK_IM_END] = types[TOK_EOT] = 3;
    const char *merges[1] = {"x"}; /* no merges: an empty array */
    ck_assert_int_eq(spade_gguf_writer_set_str(w, "general.architecture", "llama"), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.block_count", 1), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.embedding_length", TINY_C), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.feed_forward_length", TINY_F), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.attention.head_count", 2), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.attention.head_count_kv", 1), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.context_length", 1024), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.rope.dimension_count", TINY_C / 2), 0);
    ck_assert_int_eq(spade_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f), 0);
    ck_assert_int_eq(spade_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f), 0);
    ck_assert_int_eq(spade_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2"), 0);
    ck_assert_int_eq(spade_gguf_writer_set_str(w, "tokenizer.ggml.pre", "smollm"), 0);
    ck_assert_int_eq(spade_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, N_TOKENS), 0);
    ck_assert_int_eq(spade_gguf_writer_set_array(w, "tokenizer.ggml.token_type", SPADE_GGUF_I32, types, N_TOKENS), 0);
    ck_assert_int_eq(spade_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, 0), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", TOK_IM_START), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", TOK_EOT), 0);
    ck_assert_int_eq(spade_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 0), 0);
    static float data[9][N_TOKENS * TINY_C];
    uint64_t s = 12345;
    for (int k = 0; k < 9; k++)
        for (int i = 0; i < N_TOKENS * TINY_C; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            data[k][i] = k == 1 || k == 5 || k == 8 ? 1.0f : ((float)(s >> 40) / (float)(1 << 24) - 0.5f) * 0.5f;
        }
    if (weights) {
        const int64_t KV = TINY_C / 2;
        struct {
            const char *name;
            int64_t d0, d1;
        } t[] = {{"token_embd.weight", TINY_C, N_TOKENS},
                 {"blk.0.attn_norm.weight", TINY_C, 1},
                 {"blk.0.attn_q.weight", TINY_C, TINY_C},
                 {"blk.0.attn_k.weight", TINY_C, KV},
                 {"blk.0.attn_v.weight", TINY_C, KV},
                 {"blk.0.ffn_norm.weight", TINY_C, 1},
                 {"blk.0.attn_output.weight", TINY_C, TINY_C},
                 {"blk.0.ffn_gate.weight", TINY_C, TINY_F},
                 {"output_norm.weight", TINY_C, 1},
                 {"blk.0.ffn_up.weight", TINY_C, TINY_F},
                 {"blk.0.ffn_down.weight", TINY_F, TINY_C}};
        for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
            int64_t d[2] = {t[i].d0, t[i].d1};
            ck_assert_msg(spade_gguf_writer_add_tensor(w, t[i].name, SPADE_GGML_F32, t[i].d1 == 1 ? 1 : 2, d,
                                                       data[i < 9 ? i : i - 9 + 2], err, sizeof err) == 0,
                          "%s", err);
        }
    }
    ck_assert_msg(spade_gguf_writer_write_path(w, path, err, sizeof err) == 0, "%s", err);
    spade_gguf_writer_free(w);
}

static char g_dir[4096], g_tok_path[4200], g_model_path[4200], g_plain_path[4200];

static void setup(void) {
    tu_mkdtemp(g_dir, sizeof g_dir, "chat");
    snprintf(g_tok_path, sizeof g_tok_path, "%s/tok.gguf", g_dir);
    snprintf(g_model_path, sizeof g_model_path, "%s/tiny.gguf", g_dir);
    snprintf(g_plain_path, sizeof g_plain_path, "%s/plain.gguf", g_dir);
    write_tiny(g_tok_path, 0, 1);
    write_tiny(g_model_path, 1, 1);
    write_tiny(g_plain_path, 1, 0);
}

static void teardown(void) { tu_rm_rf(g_dir); }

static spade_tokenizer *chat_tokenizer(void) {
    spade_tokenizer *t = NULL;
    ck_assert_msg(spade_tokenizer_from_model(&t, g_tok_path, err, sizeof err) == 0, "%s", err);
    ck_assert(spade_tokenizer_is_chat(t));
    return t;
}

/* The transcript rendered, and the text of its tokens with mask 1. */
static void render(const spade_transcript *t, spade_tokenizer *tok, char **all, char *trained, size_t cap) {
    size_t n;
    ck_assert_int_eq(spade_transcript_render(t, tok, all, &n), 0);
    size_t at = 0;
    trained[0] = 0;
    for (int i = 0; i < t->len; i++) {
        if (!t->mask[i]) continue;
        size_t got;
        spade_tokenizer_decode(tok, &t->tok[i], 1, 1, trained + at, cap - at, &got);
        at += got;
        ck_assert_uint_lt(at, cap);
    }
}

/* The ids of text with the control tokens parsed: what pretrain reads back. */
static void assert_reencodes(const spade_transcript *t, spade_tokenizer *tok, const char *text) {
    spade_bpe_out o = {0};
    ck_assert_int_eq(
        spade_bpe_encode(spade_tokenizer_bpe(tok), text, strlen(text), SPADE_BPE_PARSE_SPECIAL, &o, err, sizeof err),
        0);
    ck_assert_uint_eq(o.n, (size_t)t->len);
    for (size_t i = 0; i < o.n; i++) ck_assert_int_eq(o.ids[i], t->tok[i]);
    spade_bpe_out_free(&o);
}

/* The tokens of text, as the policy would sample them. */
static int sample_of(spade_tokenizer *tok, const char *text, int *out) {
    return (int)spade_tokenizer_encode(tok, text, strlen(text), out);
}

START_TEST(the_agent_in_chatml) {
    spade_tokenizer *tok = chat_tokenizer();
    ck_assert_int_eq(spade_tokenizer_end_of_turn(tok), TOK_IM_END);
    int stops[2];
    ck_assert_int_eq(spade_tokenizer_turn_stops(tok, stops, 2), 2);
    ck_assert_int_eq(stops[0], TOK_IM_END);
    ck_assert_int_eq(stops[1], TOK_EOT);
    spade_transcript t;
    spade_transcript_init(&t);
    spade_transcript_agent_open(&t, tok, "turn 1", 6, NULL, 0);
    for (int i = 0; i < t.len; i++) ck_assert_int_eq(t.mask[i], 0);
    int act[64], n = sample_of(tok, "wait", act);
    act[n++] = TOK_IM_END; /* the end of turn the policy sampled */
    float lp[64];
    for (int i = 0; i < n; i++) lp[i] = -0.5f - (float)i;
    spade_transcript_sampled(&t, act, lp, n);
    spade_transcript_agent_turn(&t, tok, "turn 2", 6);
    n = sample_of(tok, "go on", act); /* cut by its budget: no <|im_end|> */
    spade_transcript_sampled(&t, act, NULL, n);
    spade_transcript_close_turn(&t, tok);
    ck_assert_int_eq(t.tok[t.len - 1], TOK_IM_END);
    ck_assert_int_eq(t.mask[t.len - 1], 0); /* not the policy's */
    char *all, trained[1024];
    render(&t, tok, &all, trained, sizeof trained);
    ck_assert_str_eq(all, "<|im_start|>system\nYou play a text environment. Answer each observation with one action on "
                          "one line.<|im_end|>\n<|im_start|>user\nturn 1<|im_end|>\n<|im_start|>assistant\n"
                          "wait<|im_end|>\n<|im_start|>user\nturn 2<|im_end|>\n<|im_start|>assistant\ngo on<|im_end|>");
    ck_assert_str_eq(trained, "wait<|im_end|>go on");
    for (int i = 0; i < t.len; i++) { /* the log-probs recorded where the policy sampled, 0 elsewhere */
        if (!t.mask[i]) ck_assert_float_eq(t.logp[i], 0);
        ck_assert(t.tok[i] >= 0 && t.tok[i] < N_TOKENS);
    }
    assert_reencodes(&t, tok, all);
    free(all);
    /* the hint arm: the hint is a second system line, masked; the reasoning budget is in the first */
    spade_transcript_clear(&t);
    spade_transcript_agent_open_budget(&t, tok, "turn 1", 6, "Wait.", 5, 128);
    n = sample_of(tok, "I wait. \\boxed{wait}", act);
    act[n++] = TOK_IM_END;
    spade_transcript_sampled(&t, act, NULL, n);
    render(&t, tok, &all, trained, sizeof trained);
    char want[1024], sys[512];
    spade_chat_agent_system(128, sys, sizeof sys);
    ck_assert_ptr_nonnull(strstr(sys, "at most 128 tokens"));
    ck_assert_ptr_nonnull(strstr(sys, "\\boxed{"));
    snprintf(want, sizeof want,
             "<|im_start|>system\n%s<|im_end|>\n<|im_start|>system\nHint: Wait.<|im_end|>\n<|im_start|>user\nturn "
             "1<|im_end|>\n<|im_start|>assistant\nI wait. \\boxed{wait}<|im_end|>",
             sys);
    ck_assert_str_eq(all, want);
    ck_assert_str_eq(trained, "I wait. \\boxed{wait}<|im_end|>");
    free(all);
    /* a demonstrated action (spade demos): the action and its end of turn, trained */
    spade_transcript_clear(&t);
    spade_transcript_agent_open(&t, tok, "q", 1, NULL, 0);
    spade_transcript_agent_action(&t, tok, "42", 2);
    render(&t, tok, &all, trained, sizeof trained);
    ck_assert_str_eq(trained, "42<|im_end|>");
    assert_reencodes(&t, tok, all);
    free(all);
    spade_transcript_free(&t);
    spade_tokenizer_free(tok);
}
END_TEST

/* A grounding source too long for the budget, in the chat form: the block
 * stops at its last top-level boundary (after a closing brace), never with
 * "..." (a model shown "..." writes it into its own source), and a note after
 * the fence says it was cut; a whole one gets no note. */
START_TEST(a_cut_excerpt_ends_at_a_boundary) {
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.chat = 1;
    char excerpt[8192] = "#include <spade/dsl.h>\nENV(\"x\", \"y\")\n";
    for (int i = 0; i < 40; i++)
        snprintf(excerpt + strlen(excerpt), sizeof excerpt - strlen(excerpt),
                 "static int f%d(int a) {\n    int b = a * %d;\n    return b + 1;\n}\n", i, i);
    size_t cl;
    spade_chat_designer_card(&cl);
    po.budget = (int)cl + 16 + 700; /* the card, the markup and about 700 bytes: a part of the excerpt */
    char *req;
    size_t rl;
    ck_assert_msg(
        spade_prompt_build(&po, "math", "x.c", excerpt, strlen(excerpt), NULL, 0, &req, &rl, err, sizeof err) == 0,
        "%s", err);
    ck_assert_ptr_null(strstr(req, "..."));
    const char *end = strstr(req, "}\n```\n(This source is cut here to fit; an answer is always a whole source.)\n");
    ck_assert_msg(end != NULL, "no boundary cut and note in: %s", req);
    ck_assert_ptr_nonnull(strstr(req, "static int f0(int a) {"));
    ck_assert_ptr_null(strstr(req, "static int f39("));
    free(req);
    po.budget = (int)cl + 16 + 8192;
    ck_assert(spade_prompt_build(&po, "math", "x.c", excerpt, strlen(excerpt), NULL, 0, &req, &rl, err, sizeof err) ==
              0);
    ck_assert_ptr_nonnull(strstr(req, "static int f39("));
    ck_assert_ptr_null(strstr(req, "cut here"));
    free(req);
}
END_TEST

START_TEST(the_designer_in_chatml) {
    spade_tokenizer *tok = chat_tokenizer();
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = 4096;
    po.chat = 1;
    static const char excerpt[] = "#include <spade/dsl.h>\nENV(\"x\", \"y\")\n";
    char *req;
    size_t rl;
    ck_assert_msg(
        spade_prompt_build(&po, "math", "x.c", excerpt, strlen(excerpt), NULL, 0, &req, &rl, err, sizeof err) == 0,
        "%s", err);
    ck_assert_ptr_nonnull(strstr(req, "Family: math.\n"));
    ck_assert_ptr_nonnull(strstr(req, "```c\n#include <spade/dsl.h>\nENV(\"x\", \"y\")\n```\n")); /* fenced */
    ck_assert_ptr_null(strstr(req, "Source:\n"));
    ck_assert_ptr_null(strstr(req, "Write one new environment for spade in C")); /* the card says it */
    const char *tail = "in one ```c block.\n";
    ck_assert_str_eq(req + rl - strlen(tail), tail);
    spade_transcript t;
    spade_transcript_init(&t);
    spade_transcript_designer_open(&t, tok, req, rl);
    for (int i = 0; i < t.len; i++) ck_assert_int_eq(t.mask[i], 0);
    static const char src[] = "#include <spade/dsl.h>\nENV(\"z\", \"w\")";
    spade_transcript_designer_source(&t, tok, src, strlen(src));
    char *all, trained[4096];
    render(&t, tok, &all, trained, sizeof trained);
    size_t cl;
    const char *card = spade_chat_designer_card(&cl);
    char *want = malloc(cl + rl + 512);
    sprintf(want,
            "<|im_start|>system\n%.*s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n```c\n%s\n```<|"
            "im_end|>",
            (int)cl, card, req, src);
    ck_assert_str_eq(all, want);
    ck_assert_str_eq(trained, "```c\n#include <spade/dsl.h>\nENV(\"z\", \"w\")\n```<|im_end|>");
    assert_reencodes(&t, tok, all);
    /* the remote designer's messages are the same two turns */
    spade_chat_msg m[2];
    ck_assert_int_eq(spade_chat_designer_messages(req, rl, m), 2);
    ck_assert_str_eq(m[0].role, "system");
    ck_assert_uint_eq(m[0].len, cl);
    ck_assert_str_eq(m[1].role, "user");
    ck_assert_ptr_eq(m[1].content, req);
    free(want);
    free(all);
    free(req);
    spade_transcript_free(&t);
    spade_tokenizer_free(tok);
}
END_TEST

/* The card is docs/dsl.md's marked section, byte for byte. */
START_TEST(the_card_is_the_documented_one) {
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/dsl.md", tu_srcdir());
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    static char doc[1 << 17];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    const char *b = strstr(doc, "\n<!-- designer-card begin"), *e = strstr(doc, "\n<!-- designer-card end");
    ck_assert(b && e && e > b);
    b = strchr(b + 1, '\n') + 1;
    size_t cl;
    const char *card = spade_chat_designer_card(&cl);
    ck_assert_uint_eq(cl, (size_t)(e + 1 - b));
    ck_assert(!memcmp(card, b, cl));
    ck_assert_ptr_nonnull(strstr(card, "#include <spade/dsl.h>"));
    ck_assert_ptr_nonnull(strstr(card, "```c block"));
}
END_TEST

/* spade's own tokenizers keep spade's format: role tokens, <|end|>, one stop. */
START_TEST(spades_format_is_unchanged) {
    spade_tokenizer *tok;
    ck_assert_int_eq(spade_tokenizer_new_bytes(&tok, err, sizeof err), 0);
    ck_assert(!spade_tokenizer_is_chat(tok));
    ck_assert_int_eq(spade_tokenizer_end_of_turn(tok), SPADE_TOK_END);
    int stops[2];
    ck_assert_int_eq(spade_tokenizer_turn_stops(tok, stops, 2), 1);
    ck_assert_int_eq(stops[0], SPADE_TOK_END);
    spade_transcript t;
    spade_transcript_init(&t);
    spade_transcript_agent_open_budget(&t, tok, "ab", 2, "h", 1, 64); /* the budget shows in no token */
    int want[] = {SPADE_TOK_AGENT, SPADE_TOK_OBSERVATION, 'a', 'b', SPADE_TOK_HINT, 'h', SPADE_TOK_ACTION};
    ck_assert_int_eq(t.len, 7);
    for (int i = 0; i < 7; i++) ck_assert_int_eq(t.tok[i], want[i]);
    spade_transcript_agent_action(&t, tok, "x", 1);
    spade_transcript_agent_turn(&t, tok, "c", 1);
    spade_transcript_close_turn(&t, tok);
    int want2[] = {'x', SPADE_TOK_END, SPADE_TOK_OBSERVATION, 'c', SPADE_TOK_ACTION, SPADE_TOK_END};
    int mask2[] = {1, 1, 0, 0, 0, 0};
    ck_assert_int_eq(t.len, 13);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(t.tok[7 + i], want2[i]);
        ck_assert_int_eq(t.mask[7 + i], mask2[i]);
    }
    spade_transcript_clear(&t);
    spade_transcript_designer_open(&t, tok, "p", 1);
    spade_transcript_designer_source(&t, tok, "s", 1);
    int want3[] = {SPADE_TOK_DESIGNER, 'p', SPADE_TOK_SOURCE, 's', SPADE_TOK_END};
    ck_assert_int_eq(t.len, 5);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(t.tok[i], want3[i]);
    spade_transcript_free(&t);
    spade_tokenizer_free(tok);
    /* and the designer's prompt keeps its instructions and "Source:" */
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    char *req;
    size_t rl;
    ck_assert_int_eq(spade_prompt_build(&po, "math", NULL, NULL, 0, NULL, 0, &req, &rl, err, sizeof err), 0);
    ck_assert_str_eq(req + rl - 8, "Source:\n");
    ck_assert_ptr_nonnull(strstr(req, "Write one new environment for spade in C"));
    free(req);
}
END_TEST

typedef struct kept {
    spade_transcript tr[8];
    int n;
} kept;

static void keep(void *ctx, const spade_ep_outcome *o, const spade_transcript *t) {
    kept *k = ctx;
    if (o->episode < 0 || o->episode >= 8) return;
    spade_transcript *d = &k->tr[o->episode];
    spade_transcript_init(d);
    for (int i = 0; i < t->len; i++) {
        if (t->mask[i])
            spade_transcript_sampled(d, &t->tok[i], &t->logp[i], 1);
        else
            spade_transcript_special(d, t->tok[i]);
    }
    k->n++;
}

/* The policy agent on a pretrained (here: tiny random) model: ChatML
 * transcripts, sampling that stops at the model's end of turn, every
 * sampled token trained with its log-prob, a turn at most
 * max_action_tokens + reasoning_tokens long. */
static void play_chat(int reasoning) {
    spade_policy *p = NULL;
    spade_model_opts mo = {.context = 512};
    ck_assert_msg(spade_policy_from_model(&p, g_model_path, &mo, err, sizeof err) == 0, "%s", err);
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    size_t len;
    char *src = tu_read_env("two_turns.c", &len);
    spade_sandbox *sb = tu_sandbox(NULL);
    spade_ep_spec spec = {.filename = "two_turns.c", .source = src, .len = len, .expected = 4};
    spade_ep_request req[4];
    for (int i = 0; i < 4; i++) req[i] = (spade_ep_request){.spec = 0, .seed = 1 + (uint64_t)i / 2, .hint = i % 2};
    static kept k;
    memset(&k, 0, sizeof k);
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ao.max_live = 4;
    ao.max_action_tokens = 4;
    ao.reasoning_tokens = reasoning;
    ao.seed = 3;
    ao.on_episode = keep;
    ao.ctx = &k;
    spade_agent *a = spade_agent_policy(p, &ao, err, sizeof err);
    ck_assert_msg(a != NULL, "%s", err);
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = 4;
    spade_ep_outcome out[4];
    ck_assert_msg(spade_episodes_play(sb, &spec, 1, req, 4, a, &eo, out, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(k.n, 4);
    for (int e = 0; e < 4; e++) {
        spade_transcript *t = &k.tr[e];
        char *all;
        size_t n;
        ck_assert_int_eq(spade_transcript_render(t, tok, &all, &n), 0);
        ck_assert_msg(!strncmp(all, "<|im_start|>system\nYou play a text environment.", 47), "%s", all);
        ck_assert_int_eq(strstr(all, "<|im_start|>system\nHint: ") != NULL, e % 2); /* the hint arm's line */
        ck_assert_ptr_nonnull(strstr(all, "<|im_start|>user\nturn 1 of 3"));
        ck_assert_int_eq(strstr(all, "in at most 24 tokens") != NULL, reasoning == 24);
        /* each turn: the sampled run (mask 1) after "<|im_start|>assistant\n", at most 4 + reasoning long */
        int run = 0, turns = 0;
        for (int i = 0; i <= t->len; i++) {
            if (i < t->len && t->mask[i]) {
                ck_assert(t->logp[i] <= 0 && isfinite(t->logp[i]));
                if (run && t->mask[i - 1] && (t->tok[i - 1] == TOK_IM_END || t->tok[i - 1] == TOK_EOT))
                    ck_abort_msg("a token sampled after a stop");
                run++;
                continue;
            }
            if (run) {
                turns++;
                ck_assert_int_le(run, 4 + reasoning);
                if (t->tok[i - 1] != TOK_IM_END && i < t->len) { /* a cut turn is closed for the policy */
                    ck_assert_int_eq(t->tok[i], TOK_IM_END);
                    ck_assert_int_eq(t->mask[i], 0);
                }
            }
            run = 0;
        }
        ck_assert_int_eq(turns, out[e].steps);
        free(all);
        spade_transcript_free(t);
    }
    spade_agent_free(a);
    spade_sandbox_free(sb);
    free(src);
    spade_policy_free(p);
}

START_TEST(the_policy_agent_plays_in_chatml) { play_chat(0); }
END_TEST

START_TEST(the_policy_agent_with_a_reasoning_budget) { play_chat(24); }
END_TEST

/* A model whose vocabulary has no ChatML tokens is refused, saying why. */
START_TEST(a_model_without_chatml_is_refused) {
    spade_policy *p = NULL;
    spade_model_opts mo = {.context = 64};
    ck_assert_msg(spade_policy_from_model(&p, g_plain_path, &mo, err, sizeof err) == 0, "%s", err);
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ck_assert_ptr_null(spade_agent_policy(p, &ao, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "<|im_start|>"));
    spade_policy_free(p);
}
END_TEST

/* The template designer's load check on a chat model counts its chat turns
 * (the designer card as the system turn, the ChatML markup, the request), not
 * spade's three role tokens, so a template that cannot fit is refused up front,
 * naming the keys to change. */
START_TEST(the_template_check_counts_the_chat_turns) {
    char path[4096];
    snprintf(path, sizeof path, "%s/templates/cups.c", tu_srcdir());
    spade_template *t;
    ck_assert_msg(spade_template_load(&t, path, err, sizeof err) == 0, "%s", err);
    spade_policy *p = NULL;
    spade_model_opts mo = {.context = 1024};
    ck_assert_msg(spade_policy_from_model(&p, g_model_path, &mo, err, sizeof err) == 0, "%s", err);
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    char *prompt = NULL;
    size_t plen = 0, card_len;
    ck_assert_int_eq(spade_template_prompt(t, &prompt, &plen), 0);
    spade_transcript open;
    spade_transcript_init(&open);
    spade_transcript_designer_open(&open, tok, prompt, plen);
    int pieces, H = spade_template_holes(t), need = spade_template_tokens(p, t, 8, &pieces);
    /* the opening self-play writes, every piece, every hole at its limit, the closing <|im_end|> */
    ck_assert_int_eq(need, open.len + pieces + H * 8 + 1);
    spade_chat_designer_card(&card_len);
    ck_assert_int_gt(open.len, (int)card_len); /* one token a byte here: the card is in it */
    /* what the old count (3 role tokens + the prompt) left out: at least the card */
    ck_assert_int_ge(need - (3 + (int)spade_tokenizer_count(tok, prompt, plen) + pieces + H * 8), (int)card_len);
    ck_assert_int_gt(need, 1024);
    ck_assert_int_eq(spade_template_fits(p, t, 8, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "cups.c") && strstr(err, "the designer card, ChatML markup and the request") &&
                      strstr(err, "context of 1024") && strstr(err, "raise [policy] context") &&
                      strstr(err, "lower [designer] hole_tokens"),
                  "%s", err);
    free(prompt);
    spade_transcript_free(&open);
    spade_policy_free(p);
    spade_template_free(t);
}
END_TEST

static Suite *chat_suite(void) {
    Suite *s = suite_create("chat");
    TCase *t = tcase_create("chat");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, the_agent_in_chatml);
    tcase_add_test(t, the_designer_in_chatml);
    tcase_add_test(t, a_cut_excerpt_ends_at_a_boundary);
    tcase_add_test(t, the_card_is_the_documented_one);
    tcase_add_test(t, spades_format_is_unchanged);
    tcase_add_test(t, the_policy_agent_plays_in_chatml);
    tcase_add_test(t, the_policy_agent_with_a_reasoning_budget);
    tcase_add_test(t, a_model_without_chatml_is_refused);
    tcase_add_test(t, the_template_check_counts_the_chat_turns);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(chat_suite()); }
