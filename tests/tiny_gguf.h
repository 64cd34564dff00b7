/* tiny_gguf.h — tiny random Llama and Qwen2 GGUF files the tests write
 * themselves, so that the loader, the tokenizer, the architecture and the
 * exporter are tested without a download.
 *
 * What it is: a writer (through core/policy/gguf.h's writer) of a complete
 * model file — llama (SmolLM2-like: tied embeddings, pre-tokenizer smollm,
 * BOS added) or qwen2 (Q/K/V biases, a separate output matrix, NEOX rotary
 * pairing, pre-tokenizer qwen2, no BOS) — with 2 layers, width 64, 4 heads,
 * 2 KV heads, FFN 128, and a byte-level BPE of its own: the 256 byte tokens
 * in GPT-2's byte-to-unicode spelling, TINY_GGUF_MERGES merges of English
 * and C pieces, then the ChatML specials <|endoftext|>, <|im_start|>,
 * <|im_end|> (control tokens) and a ChatML chat template. Every weight is a
 * known function of (seed, tensor name, index): tiny_gguf_value.
 * What it is not: a model that knows anything (the weights are uniform
 * noise, scaled so that the logits are peaked), nor library code.
 */
#ifndef SPADE_TESTS_TINY_GGUF_H
#define SPADE_TESTS_TINY_GGUF_H

#include <stddef.h>
#include <stdint.h>

#define TINY_GGUF_LAYERS 2
#define TINY_GGUF_WIDTH 64
#define TINY_GGUF_HEADS 4
#define TINY_GGUF_KV_HEADS 2
#define TINY_GGUF_FFN 128
#define TINY_GGUF_CONTEXT 512
#define TINY_GGUF_MERGES 40
#define TINY_GGUF_VOCAB (256 + TINY_GGUF_MERGES + 3)

/* Writes the model of arch "llama" or "qwen2" with weights from seed to path. */
int tiny_gguf_write(const char *path, const char *arch, uint64_t seed, char *err, size_t errlen);
/* The same with its vocabulary padded with unused control tokens to V (at least
 * TINY_GGUF_VOCAB): a vocabulary past spade's BPE cap, as Qwen2.5's 151,936. */
int tiny_gguf_write_vocab(const char *path, const char *arch, uint64_t seed, int V, char *err, size_t errlen);
/* Element i of the named tensor ("blk.1.attn_q.weight", ...) as written. */
float tiny_gguf_value(uint64_t seed, const char *tensor, uint64_t i);
/* The id of a merged piece, as the tests spell it ("Ġthe"), or -1. */
int tiny_gguf_token(const char *piece);

#endif /* SPADE_TESTS_TINY_GGUF_H */
