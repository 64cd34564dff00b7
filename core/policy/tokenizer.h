/* tokenizer.h — spade's byte tokenizer: 256 byte tokens plus a few special tokens.
 *
 * What it is: the map between byte strings and token ids the policy reads and
 * writes. Token b (0..255) is the byte b; the special tokens mark roles and the
 * parts of an episode. Encoding is the identity on bytes, so encode/decode is
 * exact for every byte string, NUL and invalid UTF-8 included; a special token
 * is never produced from text (the text "<|end|>" encodes as 7 byte tokens).
 * What it is not: a subword (BPE) tokenizer. Bytes keep the vocabulary tiny
 * and the tokenizer trivially exact, at the price of longer sequences.
 */
#ifndef SPADE_POLICY_TOKENIZER_H
#define SPADE_POLICY_TOKENIZER_H

#include <stddef.h>

enum {
    SPADE_TOK_END = 256,     /* end of a document / turn / completion: the usual stop token */
    SPADE_TOK_DESIGNER,      /* role: the designer speaks (writes an environment) */
    SPADE_TOK_AGENT,         /* role: the agent speaks (plays an environment) */
    SPADE_TOK_OBSERVATION,   /* an observation from the environment follows */
    SPADE_TOK_ACTION,        /* an action follows */
    SPADE_TOK_HINT,          /* the privileged hint follows */
    SPADE_TOK_SOURCE,        /* environment source code follows */
    SPADE_TOK_COUNT          /* = the real vocabulary size V */
};

#define SPADE_VOCAB SPADE_TOK_COUNT /* V = 263 */
#define SPADE_VOCAB_PADDED 320      /* Vp: V rounded up to a multiple of 64 (GEMM-friendly) */

/* Encodes n bytes into out[0..n) (exactly one token per byte); returns n. */
size_t spade_tok_encode(const void *bytes, size_t n, int *out);

/* Decodes n tokens into out (capacity outcap; always NUL-terminated when
 * outcap > 0). Byte tokens become their byte; special tokens become
 * "<|name|>" when render_special is nonzero and nothing otherwise. *outlen gets
 * the full decoded length (which may exceed outcap-1: then out is truncated).
 * Returns 0, or SPADE_POLICY_EINVAL for a token outside [0, V). */
int spade_tok_decode(const int *toks, size_t n, int render_special, char *out, size_t outcap,
                     size_t *outlen);

/* "end", "designer", ... for a special token; NULL for bytes and invalid ids. */
const char *spade_tok_name(int tok);
/* The special token named name ("action" or "<|action|>"), or -1. */
int spade_tok_lookup(const char *name);

#endif
