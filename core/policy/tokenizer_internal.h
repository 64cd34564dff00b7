/* tokenizer_internal.h — what tokenizer.c, tokenizer_train.c and
 * tokenizer_file.c share: the tokenizer's layout, the merge-pair hashing, the
 * pre-split, and building a tokenizer merge by merge.
 * What it is not: API (policy/tokenizer.h is); not installed.
 */
#ifndef SPADE_TOKENIZER_INTERNAL_H
#define SPADE_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "policy/tokenizer.h"

/* The parts' shared names stay inside libspade.so (libspade.map exports spade_*). */
#pragma GCC visibility push(hidden)

#define NSPECIAL (SPADE_TOK_COUNT - 256)
#define MAX_MERGES (SPADE_TOK_MAX_VOCAB - SPADE_TOK_COUNT)
#define MAXC SPADE_BPE_MAX_CHUNK

/* Cache of chunk encodings: open addressing over (hash, bytes) with the bytes
 * and tokens in two arenas; emptied whole when either fills (a text's chunk
 * vocabulary is small, so refilling is cheap and no eviction order is needed). */
#define CACHE_SLOTS (1u << 15)
#define CACHE_BYTES (1u << 19)
#define CACHE_TOKS (1u << 19)
typedef struct {
    uint64_t h;
    uint32_t boff, toff;
    uint8_t blen, tlen; /* blen 0: empty slot */
} centry;
typedef struct {
    centry e[CACHE_SLOTS];
    size_t used, bused, tused;
    unsigned char bytes[CACHE_BYTES];
    uint16_t toks[CACHE_TOKS];
} chunk_cache;

struct spade_tokenizer {
    int nmerges, cap;
    int (*merges)[2]; /* merge i: tokens merges[i][0], merges[i][1] -> 263 + i */
    uint32_t *off; /* (263 + cap + 1) offsets of each token's bytes in pieces */
    unsigned char *pieces;
    uint64_t *mkey; /* pair -> merge index: open addressing, mval -1 = empty */
    int32_t *mval;
    size_t mmask;
    int32_t *bytepair; /* (256 * 256) merge of two byte tokens, -1 none: every chunk starts as bytes */
    int cache_on;
    chunk_cache *cache; /* allocated on first use */
    size_t hits, misses;
    struct spade_gguf_tok *gg; /* non-NULL: the "gguf" kind (tokenizer_gguf.c); the rest is unused */
};

static inline uint64_t pair_key(int a, int b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }
/* the high bits of the product mix both ids (tables stay under 2^24 slots) */
static inline size_t pair_hash(uint64_t k) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 40); }

/* FNV-1a of a chunk's bytes, never 0 (0 marks an empty cache slot). */
static inline uint64_t chunk_hash(const unsigned char *s, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ull;
    return h | 1; /* never 0 */
}

/* A tokenizer with room for cap merges and none yet (NULL when out of memory). */
spade_tokenizer *spade_tok_alloc(int cap);
/* Appends merge (a, b); on a bad merge returns -1 with the reason in why. */
int spade_tok_add_merge(spade_tokenizer *t, int a, int b, char *why, size_t whylen);
/* End of the pre-split chunk of s[0..n) that starts at i. */
size_t spade_tok_chunk_end(const unsigned char *s, size_t n, size_t i);

/* The "gguf" kind (tokenizer_gguf.c), called by tokenizer.c / tokenizer_file.c when t->gg is set. */
struct spade_gguf_tok;
void gguf_tok_release(struct spade_gguf_tok *gg);
int gguf_tok_clone(spade_tokenizer **out, const spade_tokenizer *t, char *err, size_t errlen);
int gguf_tok_equal(const spade_tokenizer *a, const spade_tokenizer *b);
int gguf_tok_vocab(const spade_tokenizer *t);
const unsigned char *gguf_tok_piece(const spade_tokenizer *t, int id, size_t *len);
size_t gguf_tok_encode(const spade_tokenizer *t, const void *bytes, size_t n, int *out);
int gguf_tok_decode(const spade_tokenizer *t, const int *toks, size_t n, int render_special, char *out, size_t outcap,
                    size_t *outlen);
int gguf_tok_serialize(const spade_tokenizer *t, char **buf, size_t *len, char *err, size_t errlen);
int gguf_tok_is_serialized(const char *buf, size_t len);
int gguf_tok_parse(spade_tokenizer **out, const char *buf, size_t len, const char *name, char *err, size_t errlen);

#pragma GCC visibility pop

#endif /* SPADE_TOKENIZER_INTERNAL_H */
