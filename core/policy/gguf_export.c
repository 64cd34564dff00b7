/* gguf_export.c — a policy of the Llama family back to a GGUF file that
 * llama.cpp loads (pretrained.h, spade_policy_export_gguf).
 *
 * What it is: the exact inverse of gguf_load.c. spade computes in the GGUF
 * layout itself (a llama file's q/k rows stay in the pairs (2j, 2j+1) the
 * converter permuted them into, and spade's rope pairs them the same way;
 * a qwen2 file's rows are in the NEOX order, paired (j, j + rot/2)), so each
 * parameter slice goes back to its tensor unpermuted: the pairing decides
 * only the architecture written (adjacent: llama, half: qwen2). The metadata
 * are the config's (llama.* / qwen2.* hyperparameters, general.file_type)
 * plus every tokenizer.* key and the descriptive general.* keys copied byte
 * for byte from the model the policy's tokenizer references (a checkpoint of
 * a pretrained policy names its model: tokenizer_gguf.c), after checking that
 * model's tokenizer is still the policy's. The file is written to
 * OUT.tmp.PID, fsynced and renamed over OUT: an error leaves no partial file.
 * What it is not: a converter for spade's own tokenizers (a policy with the
 * bytes or bpe tokenizer, a from-scratch GPT: both refused, saying why) or
 * a quantizer beyond the writer's F32, F16 and Q8_0 (gguf.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"
#include "policy/gguf.h"
#include "policy/gpt_internal.h"
#include "policy/models.h"
#include "policy/pretrained.h"

const char *spade_export_type_name(int type) {
    return type == SPADE_GGML_F32 ? "f32" : type == SPADE_GGML_F16 ? "f16" : type == SPADE_GGML_Q8_0 ? "q8_0" : NULL;
}

int spade_export_type_parse(const char *name, int *type) {
    static const int types[] = {SPADE_GGML_F32, SPADE_GGML_F16, SPADE_GGML_Q8_0};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcmp(name, spade_export_type_name(types[i]))) {
            *type = types[i];
            return 0;
        }
    return -1;
}

/* general.* keys that describe the model (name, license, ...) travel; the ones
 * that describe the file are written anew. */
static int is_file_key(const char *key) {
    return !strcmp(key, "general.architecture") || !strcmp(key, "general.alignment") ||
           !strcmp(key, "general.file_type") || !strcmp(key, "general.quantization_version");
}

/* The matrix type for a tensor whose rows are ne0 long: Q8_0 needs whole
 * 32-element blocks, else F16 (what llama.cpp's converter falls back to). */
static int matrix_type(int want, int64_t ne0) { return want == SPADE_GGML_Q8_0 && ne0 % 32 ? SPADE_GGML_F16 : want; }

static int write_atomic(spade_gguf_writer *w, const char *path, char *err, size_t errlen) {
    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        spade_errf(err, errlen, "%s: out of memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        spade_errf(err, errlen, "%s: cannot create '%s': %s", path, tmp, strerror(errno));
        free(tmp);
        return SPADE_POLICY_EIO;
    }
    char e[512];
    int rc = spade_gguf_writer_write(w, f, e, sizeof e) ? SPADE_POLICY_EIO : 0;
    if (rc) spade_errf(err, errlen, "%s: writing '%s': %s", path, tmp, e);
    if (!rc && fsync(fileno(f))) {
        spade_errf(err, errlen, "%s: fsync of '%s': %s", path, tmp, strerror(errno));
        rc = SPADE_POLICY_EIO;
    }
    if (fclose(f) && !rc) {
        spade_errf(err, errlen, "%s: closing '%s': %s", path, tmp, strerror(errno));
        rc = SPADE_POLICY_EIO;
    }
    if (!rc && rename(tmp, path)) {
        spade_errf(err, errlen, "%s: rename from '%s': %s", path, tmp, strerror(errno));
        rc = SPADE_POLICY_EIO;
    }
    if (rc) {
        unlink(tmp);
    } else {
        /* the rename itself survives a crash once the directory is synced */
        char *dup = strdup(path);
        int dfd = dup ? open(dirname(dup), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (dfd >= 0) {
            if (fsync(dfd) && errno != EINVAL) {
                spade_errf(err, errlen, "%s: fsync of its directory: %s", path, strerror(errno));
                rc = SPADE_POLICY_EIO;
            }
            close(dfd);
        }
        free(dup);
    }
    free(tmp);
    return rc;
}

int spade_policy_export_gguf(spade_policy *p, const char *path, int type, spade_export_info *info, char *err,
                             size_t errlen) {
    if (!spade_export_type_name(type)) {
        spade_errf(err, errlen, "export: tensor type %d: spade writes f32, f16 or q8_0", type);
        return SPADE_POLICY_EINVAL;
    }
    const spade_gpt_config *c = spade_policy_config(p);
    if (strcmp(c->arch, "llama")) {
        spade_errf(err, errlen,
                   "export: the policy is a GPT (policy.arch = gpt: learned positions, LayerNorm, GELU, spade's own "
                   "tokenizer): llama.cpp has no architecture that computes it with this tokenizer; spade exports "
                   "the Llama family (a policy started from a GGUF model)");
        return SPADE_POLICY_EINVAL;
    }
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    const char *spec = spade_tokenizer_gguf_model(tok);
    if (!spec) {
        spade_errf(err, errlen,
                   "export: the policy's tokenizer is spade's own (%s), which llama.cpp cannot read; spade exports a "
                   "policy whose tokenizer is a GGUF model's (one started from [policy] model = NAME|PATH.gguf)",
                   spade_tokenizer_kind(tok));
        return SPADE_POLICY_EINVAL;
    }
    char src[4096], e[700];
    if (spade_model_resolve(spec, src, sizeof src, e, sizeof e)) {
        spade_errf(err, errlen, "export: the tokenizer comes from model '%s': %s", spec, e);
        return SPADE_POLICY_EIO;
    }
    spade_gguf *g = NULL;
    spade_gguf_writer *w = NULL;
    spade_tokenizer *check = NULL;
    float *h = NULL;
    int rc = SPADE_POLICY_EFORMAT;
    if (spade_gguf_open(&g, src, e, sizeof e)) {
        spade_errf(err, errlen, "export: the tokenizer's model: %s", e);
        goto done;
    }
    /* the keys are copied from this file: it must hold the policy's tokenizer */
    if (spade_tokenizer_from_gguf(&check, g, spec, e, sizeof e)) {
        spade_errf(err, errlen, "export: the tokenizer's model: %s", e);
        goto done;
    }
    if (!spade_tokenizer_equal(check, tok)) {
        spade_errf(err, errlen, "export: %s no longer holds the tokenizer the policy was made with", src);
        goto done;
    }

    int64_t L = c->layers, C = c->width, NH = c->heads, hs = C / NH;
    int64_t KVH = c->kv_heads ? c->kv_heads : NH, KV = KVH * hs, QKV = C + 2 * KV;
    int64_t F = c->ffn ? c->ffn : 4 * C, V = c->vocab;
    int64_t rot = c->rope_dims ? c->rope_dims : hs;
    double base = c->rope_base > 0 ? c->rope_base : 10000;
    float eps = c->norm_eps > 0 ? c->norm_eps : 1e-5f;
    /* qwen2 in llama.cpp requires the Q/K/V biases: a policy without them writes zeros */
    const char *arch = c->rope_neox ? "qwen2" : "llama";
    int zero_bias = c->rope_neox && !c->qkv_bias;

    size_t np = spade_policy_num_params(p);
    size_t extra = zero_bias ? (size_t)(C + 2 * KV) : 0;
    h = malloc((np + extra) * sizeof *h);
    if (!h) {
        spade_errf(err, errlen, "export: out of host memory for %zu parameters", np);
        rc = SPADE_POLICY_ENOMEM;
        goto done;
    }
    /* a LoRA policy exports W + (alpha / r) B A: llama.cpp reads one set of weights */
    if ((rc = spade_policy_get_params(p, h, e, sizeof e)) || (rc = gpt_lora_merge(p, h, e, sizeof e))) {
        spade_errf(err, errlen, "export: %s", e);
        goto done;
    }
    rc = SPADE_POLICY_EFORMAT;
    float *zeros = h + np;
    for (size_t i = 0; i < extra; i++) zeros[i] = 0;
    size_t off[16] = {0}, cnt[16] = {0};
    const char *nm;
    for (int i = 0; i < 16 && !spade_policy_tensor(p, i, &nm, &off[i], &cnt[i]); i++) {}
    /* the order of llama_param_names (llama.c), as gguf_load.c fills them */
    float *wte = h + off[0], *ln1 = h + off[1], *qkvw = h + off[2], *qkvb = h + off[3], *proj = h + off[4];
    float *ln2 = h + off[5], *fcw = h + off[6], *fcp = h + off[7], *lnf = h + off[8], *head = h + off[9];

    if (spade_gguf_writer_new(&w, e, sizeof e)) {
        spade_errf(err, errlen, "export: %s", e);
        rc = SPADE_POLICY_ENOMEM;
        goto done;
    }
    /* llama.cpp's file types: 0 all F32, 1 mostly F16, 7 mostly Q8_0 */
    uint32_t ftype = type == SPADE_GGML_F32 ? 0 : type == SPADE_GGML_F16 ? 1 : 7;
    /* the model's own context when it is known (training at a shorter one does
     * not shorten what the weights can attend over), else the policy's */
    int64_t ctx = c->context;
    char srcarch[32], key[96];
    if (!spade_gguf_get_cstr(g, "general.architecture", srcarch, sizeof srcarch, e, sizeof e)) {
        snprintf(key, sizeof key, "%s.context_length", srcarch);
        int64_t sc;
        if (spade_gguf_get(g, key) && !spade_gguf_get_i64(g, key, &sc, e, sizeof e) && sc > ctx && sc <= UINT32_MAX)
            ctx = sc;
    }
    int bad = spade_gguf_writer_set_str(w, "general.architecture", arch);
    for (size_t i = 0; i < spade_gguf_n_kv(g); i++) {
        const char *k = spade_gguf_key(g, i);
        if (!strncmp(k, "general.", 8) && !is_file_key(k))
            bad |= spade_gguf_writer_copy(w, k, spade_gguf_kv_value(g, i));
    }
    bad |= spade_gguf_writer_set_u32(w, "general.file_type", ftype);
    if (type == SPADE_GGML_Q8_0) bad |= spade_gguf_writer_set_u32(w, "general.quantization_version", 2);
#define KEY(suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), key)
    bad |= spade_gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)ctx);
    bad |= spade_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)C);
    bad |= spade_gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)L);
    bad |= spade_gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)F);
    bad |= spade_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)NH);
    bad |= spade_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)KVH);
    bad |= spade_gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)rot);
    bad |= spade_gguf_writer_set_f32(w, KEY("rope.freq_base"), (float)base);
    bad |= spade_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), eps);
    bad |= spade_gguf_writer_set_u32(w, KEY("vocab_size"), (uint32_t)V);
#undef KEY
    for (size_t i = 0; i < spade_gguf_n_kv(g); i++) {
        const char *k = spade_gguf_key(g, i);
        if (!strncmp(k, "tokenizer.", 10)) bad |= spade_gguf_writer_copy(w, k, spade_gguf_kv_value(g, i));
    }
    if (bad) {
        spade_errf(err, errlen, "export: out of memory for the metadata");
        rc = SPADE_POLICY_ENOMEM;
        goto done;
    }

    char n[96];
    int n_tensors = 0;
#define ADD(name_, ty, ne0, ne1, data)                                                                                 \
    do {                                                                                                               \
        int64_t dims_[2] = {(ne0), (ne1)};                                                                             \
        if (spade_gguf_writer_add_tensor(w, name_, ty, (ne1) > 1 ? 2 : 1, dims_, data, e, sizeof e)) {                 \
            spade_errf(err, errlen, "export: %s", e);                                                                  \
            goto done;                                                                                                 \
        }                                                                                                              \
        n_tensors++;                                                                                                   \
    } while (0)
#define BLK(suffix, ty, ne0, ne1, data)                                                                                \
    do {                                                                                                               \
        snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix);                                                    \
        ADD(n, ty, ne0, ne1, data);                                                                                    \
    } while (0)
    /* vectors (norm gains, biases) stay F32, as llama.cpp's converter keeps them */
    const int VEC = SPADE_GGML_F32;
    ADD("token_embd.weight", matrix_type(type, C), C, V, wte);
    for (int64_t l = 0; l < L; l++) {
        float *q = qkvw + l * QKV * C;
        BLK("attn_norm.weight", VEC, C, 1, ln1 + l * C);
        BLK("attn_q.weight", matrix_type(type, C), C, C, q);
        BLK("attn_k.weight", matrix_type(type, C), C, KV, q + C * C);
        BLK("attn_v.weight", matrix_type(type, C), C, KV, q + (C + KV) * C);
        if (c->qkv_bias || zero_bias) {
            float *b = zero_bias ? zeros : qkvb + l * QKV;
            BLK("attn_q.bias", VEC, C, 1, b);
            BLK("attn_k.bias", VEC, KV, 1, b + C);
            BLK("attn_v.bias", VEC, KV, 1, b + C + KV);
        }
        BLK("attn_output.weight", matrix_type(type, C), C, C, proj + l * C * C);
        BLK("ffn_norm.weight", VEC, C, 1, ln2 + l * C);
        BLK("ffn_gate.weight", matrix_type(type, C), C, F, fcw + l * 2 * F * C);
        BLK("ffn_up.weight", matrix_type(type, C), C, F, fcw + l * 2 * F * C + F * C);
        BLK("ffn_down.weight", matrix_type(type, F), F, C, fcp + l * C * F);
    }
    ADD("output_norm.weight", VEC, C, 1, lnf);
    if (c->untied) ADD("output.weight", matrix_type(type, C), C, V, head);
#undef BLK
#undef ADD
    if ((rc = write_atomic(w, path, err, errlen))) goto done;
    if (info) {
        *info = (spade_export_info){.n_tensors = n_tensors, .n_params = 0};
        snprintf(info->arch, sizeof info->arch, "%s", arch);
        snprintf(info->source, sizeof info->source, "%s", src);
        for (int i = 0; i < 10; i++) info->n_params += cnt[i];
        /* the padded vocabulary rows are not exported */
        info->n_params -= (size_t)(SPADE_VOCAB_PAD(V) - V) * (size_t)C * (c->untied ? 2 : 1);
    }
    rc = 0;
done:
    free(h);
    spade_tokenizer_free(check);
    spade_gguf_writer_free(w);
    spade_gguf_free(g);
    return rc;
}
