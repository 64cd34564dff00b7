/* bpe.h — the byte-level BPE tokenizer that GGUF model files carry
 * (tokenizer.ggml.model = "gpt2"), and the ChatML chat template.
 *
 * What it is: a tokenizer built from the arrays a GGUF file holds (token
 * texts in the GPT-2 byte-to-unicode mapping, their token types, merges as
 * "a b" strings ranked by position, the pre-tokenizer's name, BOS/EOS ids and
 * add_bos/add_eos), meant to give the same ids as llama.cpp for the same file
 * and text: the pre-tokenizers `gpt-2`, `llama-bpe` (Llama 3), `qwen2` and
 * `smollm` split text exactly as llama.cpp's llama-vocab.cpp / unicode.cpp do
 * (their hand-written matchers, quirks included, with the code point classes
 * of core/policy/bpe_unicode.h), special tokens are cut out of the text first
 * (user-defined ones always, control ones when asked), and merges apply by
 * rank, lowest first, leftmost on ties. Invalid UTF-8 is read as llama.cpp
 * reads it: each bad byte becomes U+FFFD. Encoding is const and keeps no
 * cache, so one object may be shared by threads.
 * What it is not: spade's own trainable tokenizer (core/policy/tokenizer.h),
 * nor a GGUF reader: the loader (core/policy/gguf.c) fills spade_bpe_config
 * from the file's metadata; spade_bpe_load reads the project's own vocabulary
 * fixture format (tools/bpe_reference.py writes it) for tests and the CLI.
 * Errors: 0 or -1 with a message in err naming the field or file:line.
 */
#ifndef SPADE_POLICY_BPE_H
#define SPADE_POLICY_BPE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

typedef struct spade_bpe spade_bpe;

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum {
    SPADE_BPE_TYPE_UNDEFINED = 0,
    SPADE_BPE_TYPE_NORMAL = 1,
    SPADE_BPE_TYPE_UNKNOWN = 2,
    SPADE_BPE_TYPE_CONTROL = 3,
    SPADE_BPE_TYPE_USER_DEFINED = 4,
    SPADE_BPE_TYPE_UNUSED = 5,
    SPADE_BPE_TYPE_BYTE = 6,
};

/* A config field whose GGUF key is absent: llama.cpp's default applies
 * (bos/eos 11 for a gpt2 vocabulary, add_bos true for llama-bpe only, add_eos
 * false). */
#define SPADE_BPE_UNSET INT_MIN

/* Caps on what a model file may ask for (counts are untrusted). */
#define SPADE_BPE_MAX_TOKENS (1 << 21)
#define SPADE_BPE_MAX_MERGES (1 << 22)
#define SPADE_BPE_MAX_TEXT 65536 /* bytes in one token or merge string */

typedef struct {
    int n_tokens; /* tokenizer.ggml.tokens: 1..SPADE_BPE_MAX_TOKENS */
    const char *const *tokens; /* token texts (GGUF strings: may hold NUL) */
    const size_t *token_lens; /* their lengths; NULL: the texts are NUL-terminated */
    const int32_t *token_types; /* tokenizer.ggml.token_type, n_tokens; NULL: all normal */
    int n_merges; /* tokenizer.ggml.merges: 0..SPADE_BPE_MAX_MERGES */
    const char *const *merges; /* "left right" in the byte-to-unicode form; rank = index */
    const size_t *merge_lens; /* NULL: NUL-terminated */
    const char *pre; /* tokenizer.ggml.pre: gpt-2 (or gpt2), llama-bpe (llama3, llama-v3),
                      * qwen2 (deepseek-r1-qwen), smollm (starcoder); NULL is an error */
    int bos_id, eos_id; /* tokenizer.ggml.bos/eos_token_id; -1 none; SPADE_BPE_UNSET */
    int add_bos, add_eos; /* tokenizer.ggml.add_bos/eos_token: 0, 1 or SPADE_BPE_UNSET */
} spade_bpe_config;

/* Builds a tokenizer. name (a file name, for messages) may be NULL. Fails on
 * an unknown pre-tokenizer, a count or length over the caps, or a BOS/EOS id
 * out of range. */
int spade_bpe_new(spade_bpe **out, const spade_bpe_config *cfg, const char *name, char *err, size_t errlen);
void spade_bpe_free(spade_bpe *b);

/* Reads a vocabulary fixture (docs/policy.md, "GGUF tokenizers"). */
int spade_bpe_load(spade_bpe **out, const char *path, char *err, size_t errlen);

int spade_bpe_vocab(const spade_bpe *b);
int spade_bpe_bos(const spade_bpe *b); /* -1: none */
int spade_bpe_eos(const spade_bpe *b); /* -1: none */
int spade_bpe_add_bos(const spade_bpe *b); /* after defaults */
const char *spade_bpe_pre(const spade_bpe *b);
/* The token's type after llama.cpp's renaming rules (a control-looking
 * end-of-generation name such as <|im_end|> is control), SPADE_BPE_TYPE_*; -1
 * for an id out of range. */
int spade_bpe_type(const spade_bpe *b, int id);
/* Whether sampling id ends the generation (EOS, and the end-of-turn names
 * llama.cpp treats so: <|im_end|>, <|endoftext|>, <|eot_id|>, ...). */
int spade_bpe_is_eog(const spade_bpe *b, int id);
/* The id whose GGUF text is exactly text (a special token's name), or -1. */
int spade_bpe_find(const spade_bpe *b, const char *text);
/* The bytes token id decodes to (len in *len; NULL for an id out of range).
 * Control and unknown tokens give their name only when special is set. */
const char *spade_bpe_piece(const spade_bpe *b, int id, int special, size_t *len);

/* Encoding output: ids and, per token, the bytes [start, end) of the input
 * text it stands for (BOS/EOS added by SPADE_BPE_ADD_SPECIAL: start == end).
 * Zero-initialise, pass to encode (which appends), spade_bpe_out_free. */
typedef struct {
    int32_t *ids;
    size_t *start, *end;
    size_t n, cap;
} spade_bpe_out;
void spade_bpe_out_free(spade_bpe_out *o);

enum {
    SPADE_BPE_ADD_SPECIAL = 1, /* BOS / EOS as the model's add_bos / add_eos say */
    SPADE_BPE_PARSE_SPECIAL = 2, /* control tokens' texts in the input become those tokens */
};
/* Appends the encoding of text[0..len) to out. Fails only when out of memory. */
int spade_bpe_encode(const spade_bpe *b, const char *text, size_t len, unsigned flags, spade_bpe_out *out, char *err,
                     size_t errlen);
/* The pre-tokenizer alone: the end offsets of the words text[0..len) splits
 * into (special tokens not cut out), in (*ends)[0..*n) (malloc'd). */
int spade_bpe_words(const spade_bpe *b, const char *text, size_t len, size_t **ends, size_t *n, char *err,
                    size_t errlen);
/* Writes the bytes of ids[0..n) to *text (malloc'd, NUL-terminated; length
 * *len). An id out of range is an error naming its position. */
int spade_bpe_decode(const spade_bpe *b, const int32_t *ids, size_t n, int special, char **text, size_t *len, char *err,
                     size_t errlen);

/* ---------------------------------------------------------------- ChatML */

typedef struct {
    const char *role; /* "system", "user", "assistant", "tool", ... (NUL-terminated) */
    const char *content;
    size_t len;
} spade_chat_msg;

/* Renders msgs as ChatML, "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message,
 * then "<|im_start|>assistant\n" when gen_prompt is set, and appends its ids
 * to out. Content is encoded with special-token parsing off (a turn cannot
 * close itself by writing "<|im_end|>"). *trainable (malloc'd) has one byte
 * per token this call appended ((*trainable)[i] is for out->ids[n0 + i], n0
 * being out->n before the call): 1 for the tokens the loss should see:
 * those carrying an assistant message's content, and that message's
 * <|im_end|>; 0 for everything else (the prompt). No default system prompt is
 * added (SmolLM2's Jinja template adds one when the first turn is not
 * "system": pass it as a message). Fails when the vocabulary lacks
 * <|im_start|> or <|im_end|>. */
int spade_bpe_chat(const spade_bpe *b, const spade_chat_msg *msgs, size_t n, int gen_prompt, spade_bpe_out *out,
                   uint8_t **trainable, char *err, size_t errlen);

/* How many leading bytes of s[0..len) end on a complete UTF-8 sequence: a
 * streaming printer holds the rest back until the next token completes it. */
size_t spade_bpe_utf8_complete(const char *s, size_t len);

#endif
