/* pretrained.h — a pretrained Llama-family model in a GGUF file as a spade policy.
 *
 * What it is: the loader (gguf_load.c). A model spec (a known name or a path,
 * models.h) becomes a policy of arch llama whose config comes from the file's
 * llama.* / qwen2.* metadata, whose weights are the file's tensors dequantized
 * to F32 into the parameter layout (docs/policy.md, "The Llama family"), and
 * whose tokenizer is the file's own BPE (the "gguf" kind of tokenizer.h).
 * The file is hostile: an unknown architecture or tokenizer, a missing or
 * extra tensor, a shape that does not match the metadata, a count past the
 * caps is an error naming the file and the key or tensor.
 * What it is not: the GGUF reader (gguf.h), the architecture (llama.c), or an
 * exporter. Quantized weights are not kept quantized: training and sampling
 * both run on the F32 copy.
 */
#ifndef SPADE_POLICY_PRETRAINED_H
#define SPADE_POLICY_PRETRAINED_H

#include <stddef.h>

#include "policy/policy.h"

typedef struct spade_model_opts {
    const char *backend; /* policy.backend (NULL: auto) */
    int context; /* positions the policy holds; 0: the model's context_length (at most 65536),
                  * larger than the model's is an error */
} spade_model_opts;

/* The config a model file makes (vocab included), without reading its
 * tensors' data: what `spade model info` and checkpoint checks compare. */
int spade_model_config(const char *spec, const spade_model_opts *o, spade_gpt_config *cfg, char *err, size_t errlen);
/* Loads the model named by spec (a known NAME or a PATH.gguf). o may be NULL. */
int spade_policy_from_model(spade_policy **out, const char *spec, const spade_model_opts *o, char *err, size_t errlen);

#endif /* SPADE_POLICY_PRETRAINED_H */
