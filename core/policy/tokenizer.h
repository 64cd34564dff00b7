/* tokenizer.h — spade's tokenizers: bytes plus special tokens, and byte-level BPE.
 *
 * What it is: the map between byte strings and token ids the policy reads and
 * writes. In every tokenizer token b (0..255) is the byte b and tokens 256..262
 * are the special tokens (they mark roles and the parts of an episode); a BPE
 * tokenizer adds merged tokens from 263 up, token 263 + i being merge i (the
 * concatenation of two earlier tokens). Every byte string therefore has an
 * encoding (the byte tokens are the fallback), decode(encode(s)) == s for every
 * s (NUL and invalid UTF-8 included), and a special token is never produced
 * from text (the text "<|end|>" encodes as ordinary tokens).
 *
 * Encoding with BPE: the text is first cut into chunks (a word with a prefix
 * of one space or one or two punctuation bytes, a run of punctuation with the
 * newlines and indentation after it, or a run of whitespace; at most
 * SPADE_BPE_MAX_CHUNK bytes each: the rules are in tokenizer.c), merges never
 * cross a chunk boundary, and inside a chunk merges are applied in the order
 * they were learned (a heap of adjacent pairs by rank; a cache of chunk
 * encodings skips the work for chunks seen before).
 * Training counts the chunks of the corpus and repeatedly merges the most
 * frequent adjacent pair (ties: the smaller pair of ids), until the vocabulary
 * is reached or no pair occurs twice. It depends only on the multiset of
 * chunks, so the same inputs give a byte-identical tokenizer file.
 *
 * What it is not: a Unicode-aware or regex pre-tokenizer (the chunk rules are
 * byte classes, tuned for C source and English docs), nor thread-safe on one
 * object (encode fills the object's cache: give each thread its own clone).
 * Errors: 0 or a negative SPADE_POLICY_E* code (backend.h), with a message in
 * err naming the file (or buffer name) and the fault.
 */
#ifndef SPADE_POLICY_TOKENIZER_H
#define SPADE_POLICY_TOKENIZER_H

#include <stddef.h>

enum {
    SPADE_TOK_END = 256, /* end of a document / turn / completion: the usual stop token */
    SPADE_TOK_DESIGNER, /* role: the designer speaks (writes an environment) */
    SPADE_TOK_AGENT, /* role: the agent speaks (plays an environment) */
    SPADE_TOK_OBSERVATION, /* an observation from the environment follows */
    SPADE_TOK_ACTION, /* an action follows */
    SPADE_TOK_HINT, /* the privileged hint follows */
    SPADE_TOK_SOURCE, /* environment source code follows */
    SPADE_TOK_COUNT /* = the byte tokenizer's vocabulary size V; BPE merges start here */
};

#define SPADE_VOCAB SPADE_TOK_COUNT /* V = 263 of the byte tokenizer */
#define SPADE_VOCAB_PADDED 320 /* its Vp: V rounded up to a multiple of 64 (GEMM-friendly) */
/* Vp for any V: the embedding/head rows a policy allocates. */
#define SPADE_VOCAB_PAD(V) ((((V) + 63) / 64) * 64)
#define SPADE_TOK_MAX_VOCAB 65536 /* spade's own BPE: ids stay below this (its cache keeps 16 bits) */
/* Any policy's vocabulary: a pretrained model's own tokenizer (the "gguf"
 * kind) may be larger than spade's BPE (Qwen2.5: 151,936). */
#define SPADE_POLICY_MAX_VOCAB 262144
#define SPADE_BPE_MAX_CHUNK 64 /* bytes per pre-split chunk, hence per token */

/* ---- the byte tokenizer as plain functions (no object needed) ---- */

/* Encodes n bytes into out[0..n) (exactly one token per byte); returns n. */
size_t spade_tok_encode(const void *bytes, size_t n, int *out);

/* Decodes n tokens into out (capacity outcap; always NUL-terminated when
 * outcap > 0). Byte tokens become their byte; special tokens become
 * "<|name|>" when render_special is nonzero and nothing otherwise. *outlen gets
 * the full decoded length (which may exceed outcap-1: then out is truncated).
 * Returns 0, or SPADE_POLICY_EINVAL for a token outside [0, 263). */
int spade_tok_decode(const int *toks, size_t n, int render_special, char *out, size_t outcap, size_t *outlen);

/* "end", "designer", ... for a special token; NULL for bytes and invalid ids. */
const char *spade_tok_name(int tok);
/* The special token named name ("action" or "<|action|>"), or -1. */
int spade_tok_lookup(const char *name);

/* ---- tokenizer objects (bytes or BPE) ---- */

typedef struct spade_tokenizer spade_tokenizer;

/* The byte tokenizer as an object (a BPE with no merges). */
int spade_tokenizer_new_bytes(spade_tokenizer **out, char *err, size_t errlen);
void spade_tokenizer_free(spade_tokenizer *t);
int spade_tokenizer_clone(spade_tokenizer **out, const spade_tokenizer *t, char *err, size_t errlen);
/* 1 when a and b map every byte string to the same tokens (same merges). */
int spade_tokenizer_equal(const spade_tokenizer *a, const spade_tokenizer *b);

/* "bytes" (no merges), "bpe", or "gguf" (a pretrained model's own BPE, below). */
const char *spade_tokenizer_kind(const spade_tokenizer *t);
/* V: 263 + the number of merges. */
int spade_tokenizer_vocab(const spade_tokenizer *t);
int spade_tokenizer_num_merges(const spade_tokenizer *t);
/* The bytes of token id (*len of them), or NULL for a special token or an id
 * outside [0, V). The pointer stays valid while t lives. */
const unsigned char *spade_tokenizer_piece(const spade_tokenizer *t, int id, size_t *len);

/* Encodes n bytes into out, which must have room for n tokens (an encoding is
 * never longer than its text); returns the number of tokens. Never fails: the
 * cache is an optimisation that is simply skipped when it cannot be allocated. */
size_t spade_tokenizer_encode(spade_tokenizer *t, const void *bytes, size_t n, int *out);
/* How many tokens spade_tokenizer_encode would give, with no buffer to
 * provide (what a prompt budget counts). Never fails. */
size_t spade_tokenizer_count(spade_tokenizer *t, const void *bytes, size_t n);
/* The same tokens by the slow, obviously correct path (for each chunk: find
 * the lowest-ranked adjacent pair, merge all its occurrences left to right,
 * repeat), with no cache. Tests compare the fast path against it. */
size_t spade_tokenizer_encode_ref(const spade_tokenizer *t, const void *bytes, size_t n, int *out);
/* The chunks the pre-split cuts bytes into: ends[k] is the end offset of
 * chunk k (ends must have room for n entries); returns the number of chunks. */
size_t spade_tokenizer_split(const void *bytes, size_t n, size_t *ends);
/* Like spade_tok_decode, for t's vocabulary. */
int spade_tokenizer_decode(const spade_tokenizer *t, const int *toks, size_t n, int render_special, char *out,
                           size_t outcap, size_t *outlen);
/* Encoding-cache counters since t was made (for the benchmark). */
void spade_tokenizer_cache_stats(const spade_tokenizer *t, size_t *hits, size_t *misses);
/* 0 turns the cache off (every chunk is merged afresh), 1 on (the default). */
void spade_tokenizer_set_cache(spade_tokenizer *t, int on);

/* ---- a pretrained model's tokenizer (the "gguf" kind, tokenizer_gguf.c) ----
 * Its ids are the model's: no byte tokens at 0..255 and no spade specials at
 * 256..262 (map those with spade_tokenizer_special). Encoding adds no BOS/EOS
 * and never makes a control token from text; decoding a control token gives
 * nothing, or its name with render_special. num_merges is 0; the encoding
 * cache does not apply. Its serialised form (inside checkpoints) references
 * the model (NAME or absolute path) with a hash of its tokenizer, and parsing
 * reopens that file: the checkpoint needs the model file to load. */
struct spade_gguf;
struct spade_bpe;
/* The tokenizer of an open GGUF file; spec (a known model name or an absolute
 * path) is what a checkpoint will reference. Errors name spec and the key. */
int spade_tokenizer_from_gguf(spade_tokenizer **out, const struct spade_gguf *g, const char *spec, char *err,
                              size_t errlen);
/* The tokenizer of the model spec names (a known NAME or a PATH.gguf; a
 * relative path is made absolute for the reference), without its weights. */
int spade_tokenizer_from_model(spade_tokenizer **out, const char *spec, char *err, size_t errlen);
/* The model a "gguf" tokenizer was read from (the NAME or absolute path its
 * checkpoints reference; what spade export copies the tokenizer.* keys
 * from), else NULL. */
const char *spade_tokenizer_gguf_model(const spade_tokenizer *t);
/* The BPE behind a "gguf" tokenizer (for ChatML, BOS/EOS, end-of-generation), else NULL. */
const struct spade_bpe *spade_tokenizer_bpe(const spade_tokenizer *t);
/* The id that stands for spade's special token tok (SPADE_TOK_END, ...) in
 * t's vocabulary, or -1 when t has none: itself for bytes and bpe; for gguf,
 * SPADE_TOK_END is the model's EOS and the role tokens have no counterpart
 * (the chat template renders roles instead). */
int spade_tokenizer_special(const spade_tokenizer *t, int tok);
/* The token that closes a role's turn (what the policy samples last when it
 * is done): spade's <|end|> for bytes and bpe; for gguf, the chat template's
 * <|im_end|> when the vocabulary has it, else the model's EOS (-1: none). */
int spade_tokenizer_end_of_turn(const spade_tokenizer *t);
/* The tokens at which sampling a turn stops, into out (room for cap, at
 * least 2); returns how many: <|end|> for bytes and bpe; for gguf, the end of
 * turn and the model's EOS when that differs. */
int spade_tokenizer_turn_stops(const spade_tokenizer *t, int *out, int cap);
/* 1 when t lays roles out in the chat template (a gguf tokenizer: the
 * model's own ChatML), 0 for spade's format. */
int spade_tokenizer_is_chat(const spade_tokenizer *t);

/* ---- training ---- */

typedef struct spade_bpe_trainer spade_bpe_trainer;
int spade_bpe_trainer_new(spade_bpe_trainer **out, char *err, size_t errlen);
void spade_bpe_trainer_free(spade_bpe_trainer *tr);
/* Adds one document (chunks never span two documents). */
int spade_bpe_trainer_add(spade_bpe_trainer *tr, const void *bytes, size_t n, char *err, size_t errlen);
/* Learns merges until the vocabulary is `vocab` (263..65536) or no adjacent
 * pair occurs at least twice (then the tokenizer is smaller: check
 * spade_tokenizer_vocab). The trainer can be finished more than once. */
int spade_bpe_trainer_finish(spade_bpe_trainer *tr, int vocab, spade_tokenizer **out, char *err, size_t errlen);
/* Bytes and unique chunks added so far. */
void spade_bpe_trainer_counts(const spade_bpe_trainer *tr, size_t *bytes, size_t *unique_chunks);

/* ---- the tokenizer file ----
 * A text file, the same bytes a checkpoint embeds:
 *   spade-tokenizer 1
 *   split code-1
 *   merges M
 *   A B # "piece"          M lines: merge i joins tokens A and B into 263 + i
 *   end fnv1a HHHHHHHHHHHHHHHH   FNV-1a 64 of every byte before this line
 * The comment after '#' (the merged bytes, C-escaped) is for people; it is
 * not read back. */
int spade_tokenizer_save(const spade_tokenizer *t, const char *path, char *err, size_t errlen);
int spade_tokenizer_load(spade_tokenizer **out, const char *path, char *err, size_t errlen);
/* The file's text in a malloc()ed buffer (*len bytes, also NUL-terminated). */
int spade_tokenizer_serialize(const spade_tokenizer *t, char **buf, size_t *len, char *err, size_t errlen);
/* Parses the file's text; name (a path, or "checkpoint 'X'") starts every message. */
int spade_tokenizer_parse(spade_tokenizer **out, const char *buf, size_t len, const char *name, char *err,
                          size_t errlen);

#endif
