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
 * The exporter (gguf_export.c) is its inverse: such a policy, trained or
 * not, back to a GGUF file llama.cpp loads.
 * What it is not: the GGUF reader (gguf.h) or the architecture (llama.c).
 * Quantized weights are not kept quantized: training and sampling both run
 * on the F32 copy.
 */
#ifndef SPADE_POLICY_PRETRAINED_H
#define SPADE_POLICY_PRETRAINED_H

#include <stddef.h>

#include "policy/policy.h"

typedef struct spade_model_opts {
    const char *backend; /* policy.backend (NULL: auto) */
    int context; /* positions the policy holds; 0: the model's context_length (at most 65536),
                  * larger than the model's is an error */
    /* LoRA on the loaded weights (spade_policy_lora): rank 0 = off; the
     * policy.lora_* keys of a config (spade_gpt_config) */
    int lora_rank;
    float lora_alpha; /* 0: lora_rank */
    unsigned lora_targets; /* 0: all */
} spade_model_opts;

/* The config a model file makes (vocab included), without reading its
 * tensors' data: what `spade model info` and checkpoint checks compare. */
int spade_model_config(const char *spec, const spade_model_opts *o, spade_gpt_config *cfg, char *err, size_t errlen);
/* Loads the model named by spec (a known NAME or a PATH.gguf). o may be NULL. */
int spade_policy_from_model(spade_policy **out, const char *spec, const spade_model_opts *o, char *err, size_t errlen);

/* ---- export ---- */

typedef struct spade_export_info {
    char arch[16]; /* the general.architecture written: llama or qwen2 */
    char source[4096]; /* the model file the tokenizer.* keys were copied from */
    int n_tensors;
    size_t n_params; /* exported (the padded vocabulary rows are not) */
} spade_export_info;

/* "f32", "f16", "q8_0" for SPADE_GGML_F32, F16, Q8_0 (NULL for others), and back (0, or -1). */
const char *spade_export_type_name(int type);
int spade_export_type_parse(const char *name, int *type);
/* Writes p (arch llama with a "gguf" tokenizer: a policy made from a model or
 * a checkpoint of one) to path as a GGUF v3 file llama.cpp loads: matrices
 * of type (SPADE_GGML_F32, F16 or Q8_0; Q8_0 falls back to F16 for rows that
 * are not whole 32-element blocks), vectors F32, names and shapes as
 * gguf_load.c reads them, architecture llama (adjacent rope pairing) or
 * qwen2 (half), and the tokenizer.* and descriptive general.* keys of the
 * model its tokenizer references. Atomic: PATH.tmp.PID, fsynced, renamed.
 * info may be NULL. A GPT, or spade's own tokenizer, is refused (EINVAL). */
int spade_policy_export_gguf(spade_policy *p, const char *path, int type, spade_export_info *info, char *err,
                             size_t errlen);

#endif /* SPADE_POLICY_PRETRAINED_H */
