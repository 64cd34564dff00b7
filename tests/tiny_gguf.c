/* tiny_gguf.c — the tiny random Llama and Qwen2 model files of tiny_gguf.h.
 *
 * What it is: the vocabulary (GPT-2's byte-to-unicode spelling of the 256
 * bytes, a fixed list of merges, the ChatML specials), the metadata llama.cpp
 * and spade read, and weights that are a pure function of (seed, tensor
 * name, element index), so a test can recompute any of them.
 * What it is not: a test (test_llama.c and test_export.sh use it), nor the
 * exporter (core/policy/gguf_export.c), whose output it does not share code
 * with beyond the GGUF writer.
 */
#include "tiny_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gguf.h"

/* Ġ is the space, Ċ the newline in the byte-to-unicode spelling. */
#define SP "\xc4\xa0"
#define NL "\xc4\x8a"
/* In rank order, each piece made of earlier ones, so that the words the
 * tests spell ("int", " return", " the", " cat") become one token each. */
static const char *const merges[TINY_GGUF_MERGES][2] = {
    {"i", "n"}, {"in", "t"}, {SP, "int"},    {"h", "e"},     {SP, "t"},  {SP "t", "he"}, {"e", "t"},     {"r", "et"},
    {"u", "r"}, {"ur", "n"}, {"ret", "urn"}, {SP, "return"}, {"a", "t"}, {SP, "c"},      {SP "c", "at"}, {SP, "a"},
    {"e", "r"}, {"o", "n"},  {SP, "s"},      {"e", "n"},     {SP, SP},   {SP SP, SP SP}, {"(", ")"},     {")", ";"},
    {SP, "{"},  {SP, "="},   {SP, "+"},      {"o", "r"},     {SP, "o"},  {SP "o", "f"},  {SP "a", "n"},  {SP "an", "d"},
    {"i", "s"}, {SP, "is"},  {"a", "l"},     {SP, "p"},      {NL, NL},   {SP, "b"},      {SP, "x"},      {";", NL},
};
static const char *const specials[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
static const char chatml[] = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                             "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
                             "%}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/* GPT-2's map from a byte to the code point that spells it in the vocabulary. */
static unsigned byte_char(unsigned b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    unsigned n = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) n++;
    return 256 + n;
}

static void utf8(unsigned cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

int tiny_gguf_token(const char *piece) {
    for (int i = 0; i < TINY_GGUF_MERGES; i++) {
        char s[64];
        snprintf(s, sizeof s, "%s%s", merges[i][0], merges[i][1]);
        if (!strcmp(s, piece)) return 256 + i;
    }
    for (int i = 0; i < 3; i++)
        if (!strcmp(specials[i], piece)) return 256 + TINY_GGUF_MERGES + i;
    return -1;
}

static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

float tiny_gguf_value(uint64_t seed, const char *tensor, uint64_t i) {
    uint64_t h = 0xCBF29CE484222325ull ^ seed;
    for (const char *c = tensor; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001B3ull;
    double u = (double)(mix(h + mix(i)) >> 11) / 9007199254740992.0 * 2 - 1; /* [-1, 1) */
    /* scaled so that activations keep unit size and the logits spread over several nats */
    if (ends_with(tensor, "norm.weight")) return (float)(1 + 0.25 * u);
    if (ends_with(tensor, ".bias")) return (float)(0.2 * u);
    if (!strcmp(tensor, "token_embd.weight") || !strcmp(tensor, "output.weight")) return (float)u;
    if (ends_with(tensor, "attn_output.weight")) return (float)(0.2 * u);
    if (ends_with(tensor, "ffn_down.weight")) return (float)(0.15 * u);
    return (float)(0.25 * u);
}

typedef struct {
    char name[64];
    int64_t ne0, ne1;
    float *data;
} tensor;

int tiny_gguf_write(const char *path, const char *arch, uint64_t seed, char *err, size_t errlen) {
    return tiny_gguf_write_vocab(path, arch, seed, TINY_GGUF_VOCAB, err, errlen);
}

int tiny_gguf_write_vocab(const char *path, const char *arch, uint64_t seed, int V, char *err, size_t errlen) {
    int qwen = !strcmp(arch, "qwen2");
    if ((!qwen && strcmp(arch, "llama")) || V < TINY_GGUF_VOCAB) {
        spade_errf(err, errlen, "tiny_gguf: arch '%s' (llama or qwen2), vocabulary %d (at least %d)", arch, V,
                   TINY_GGUF_VOCAB);
        return -1;
    }
    enum { C = TINY_GGUF_WIDTH, L = TINY_GGUF_LAYERS, F = TINY_GGUF_FFN };
    const int64_t KV = (int64_t)TINY_GGUF_KV_HEADS * (C / TINY_GGUF_HEADS);
    char **tok_text = calloc((size_t)V, sizeof *tok_text);
    const char **toks = calloc((size_t)V, sizeof *toks), *mer[TINY_GGUF_MERGES];
    char *mer_text[TINY_GGUF_MERGES];
    int32_t *types = calloc((size_t)V, sizeof *types);
    if (!tok_text || !toks || !types) {
        free(tok_text), free(toks), free(types);
        spade_errf(err, errlen, "tiny_gguf: out of memory");
        return -1;
    }
    /* past the tiny vocabulary: unused control tokens, as the padding of a real model's */
    for (int i = TINY_GGUF_VOCAB; i < V; i++) {
        tok_text[i] = malloc(24);
        snprintf(tok_text[i], 24, "<|pad_%d|>", i);
        types[i] = 3;
    }
    for (int b = 0; b < 256; b++) {
        tok_text[b] = malloc(4);
        utf8(byte_char((unsigned)b), tok_text[b]);
        types[b] = 1;
    }
    for (int i = 0; i < TINY_GGUF_MERGES; i++) {
        tok_text[256 + i] = malloc(64);
        snprintf(tok_text[256 + i], 64, "%s%s", merges[i][0], merges[i][1]);
        mer_text[i] = malloc(64);
        snprintf(mer_text[i], 64, "%s %s", merges[i][0], merges[i][1]);
        mer[i] = mer_text[i];
        types[256 + i] = 1;
    }
    for (int i = 0; i < 3; i++) {
        tok_text[256 + TINY_GGUF_MERGES + i] = strdup(specials[i]);
        types[256 + TINY_GGUF_MERGES + i] = 3; /* control */
    }
    for (int i = 0; i < V; i++) toks[i] = tok_text[i];

    spade_gguf_writer *w = NULL;
    tensor t[4 + 12 * L];
    int nt = 0, rc = -1;
    if (spade_gguf_writer_new(&w, err, errlen)) goto out;
    char key[96];
#define K(s) (snprintf(key, sizeof key, "%s.%s", arch, s), key)
    spade_gguf_writer_set_str(w, "general.architecture", arch);
    spade_gguf_writer_set_str(w, "general.name", qwen ? "spade tiny qwen2" : "spade tiny llama");
    spade_gguf_writer_set_u32(w, K("context_length"), TINY_GGUF_CONTEXT);
    spade_gguf_writer_set_u32(w, K("embedding_length"), C);
    spade_gguf_writer_set_u32(w, K("block_count"), L);
    spade_gguf_writer_set_u32(w, K("feed_forward_length"), F);
    spade_gguf_writer_set_u32(w, K("attention.head_count"), TINY_GGUF_HEADS);
    spade_gguf_writer_set_u32(w, K("attention.head_count_kv"), TINY_GGUF_KV_HEADS);
    spade_gguf_writer_set_u32(w, K("rope.dimension_count"), C / TINY_GGUF_HEADS);
    spade_gguf_writer_set_f32(w, K("rope.freq_base"), qwen ? 1e6f : 10000.0f);
    spade_gguf_writer_set_f32(w, K("attention.layer_norm_rms_epsilon"), qwen ? 1e-6f : 1e-5f);
#undef K
    spade_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    spade_gguf_writer_set_str(w, "tokenizer.ggml.pre", qwen ? "qwen2" : "smollm");
    spade_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, V);
    spade_gguf_writer_set_array(w, "tokenizer.ggml.token_type", SPADE_GGUF_I32, types, V);
    spade_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", mer, TINY_GGUF_MERGES);
    /* as the real ones: SmolLM2 starts with <|im_start|> as BOS; Qwen2 adds none */
    spade_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 256 + TINY_GGUF_MERGES + (qwen ? 0 : 1));
    spade_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 256 + TINY_GGUF_MERGES + 2);
    spade_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", 256 + TINY_GGUF_MERGES);
    spade_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", !qwen);
    spade_gguf_writer_set_str(w, "tokenizer.chat_template", chatml);

#define T(nm, a, b)                                                                                                    \
    do {                                                                                                               \
        snprintf(t[nt].name, sizeof t[nt].name, "%s", nm);                                                             \
        t[nt].ne0 = (a);                                                                                               \
        t[nt].ne1 = (b);                                                                                               \
        nt++;                                                                                                          \
    } while (0)
    char n[64];
    T("token_embd.weight", C, V);
    for (int l = 0; l < L; l++) {
#define B(s, a, b)                                                                                                     \
    do {                                                                                                               \
        snprintf(n, sizeof n, "blk.%d.%s", l, s);                                                                      \
        T(n, a, b);                                                                                                    \
    } while (0)
        B("attn_norm.weight", C, 1);
        B("attn_q.weight", C, C);
        B("attn_k.weight", C, KV);
        B("attn_v.weight", C, KV);
        if (qwen) {
            B("attn_q.bias", C, 1);
            B("attn_k.bias", KV, 1);
            B("attn_v.bias", KV, 1);
        }
        B("attn_output.weight", C, C);
        B("ffn_norm.weight", C, 1);
        B("ffn_gate.weight", C, F);
        B("ffn_up.weight", C, F);
        B("ffn_down.weight", F, C);
#undef B
    }
    T("output_norm.weight", C, 1);
    if (qwen) T("output.weight", C, V);
#undef T
    for (int i = 0; i < nt; i++) {
        uint64_t cnt = (uint64_t)(t[i].ne0 * t[i].ne1);
        t[i].data = malloc(cnt * sizeof(float));
        for (uint64_t j = 0; j < cnt; j++) t[i].data[j] = tiny_gguf_value(seed, t[i].name, j);
        int64_t dims[2] = {t[i].ne0, t[i].ne1};
        if (spade_gguf_writer_add_tensor(w, t[i].name, SPADE_GGML_F32, t[i].ne1 > 1 ? 2 : 1, dims, t[i].data, err,
                                         errlen)) {
            nt = i + 1;
            goto out;
        }
    }
    rc = spade_gguf_writer_write_path(w, path, err, errlen);
out:
    spade_gguf_writer_free(w);
    for (int i = 0; i < nt; i++) free(t[i].data);
    for (int i = 0; i < V; i++) free(tok_text[i]);
    for (int i = 0; i < TINY_GGUF_MERGES; i++) free(mer_text[i]);
    free(tok_text), free(toks), free(types);
    return rc;
}
