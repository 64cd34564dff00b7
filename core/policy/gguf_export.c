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

/* One export: the policy's shape, its parameters on the host, the model its
 * tokenizer came from (whose general.* and tokenizer.* keys travel) and the
 * writer; export_close frees what it holds. Its phases fill it in order. */
typedef struct export_job {
    spade_policy *p;
    const spade_gpt_config *c;
    int type;
    char *err;
    size_t errlen;
    char src[4096]; /* the tokenizer's model file */
    spade_gguf *g;
    spade_gguf_writer *w;
    spade_tokenizer *check;
    int64_t L, C, NH, KVH, KV, QKV, F, V, rot;
    double base;
    float eps;
    const char *arch; /* what llama.cpp computes it as: llama or qwen2 */
    int zero_bias;
    float *h; /* every parameter (LoRA merged), then `extra` zeros for the biases zero_bias writes */
    size_t np, extra, off[16], cnt[16];
    int n_tensors;
} export_job;

static void export_close(export_job *x) {
    free(x->h);
    spade_tokenizer_free(x->check);
    spade_gguf_writer_free(x->w);
    spade_gguf_free(x->g);
}

/* What can be refused before anything is read: the type, a GPT, spade's own
 * tokenizer, a tokenizer model that is not found. 0, or the error. */
static int export_check(export_job *x) {
    if (!spade_export_type_name(x->type)) {
        spade_errf(x->err, x->errlen, "export: tensor type %d: spade writes f32, f16 or q8_0", x->type);
        return SPADE_POLICY_EINVAL;
    }
    if (strcmp(x->c->arch, "llama")) {
        spade_errf(x->err, x->errlen,
                   "export: the policy is a GPT (policy.arch = gpt: learned positions, LayerNorm, GELU, spade's own "
                   "tokenizer): llama.cpp has no architecture that computes it with this tokenizer; spade exports "
                   "the Llama family (a policy started from a GGUF model)");
        return SPADE_POLICY_EINVAL;
    }
    spade_tokenizer *tok = spade_policy_tokenizer(x->p);
    const char *spec = spade_tokenizer_gguf_model(tok);
    if (!spec) {
        spade_errf(x->err, x->errlen,
                   "export: the policy's tokenizer is spade's own (%s), which llama.cpp cannot read; spade exports a "
                   "policy whose tokenizer is a GGUF model's (one started from [policy] model = NAME|PATH.gguf)",
                   spade_tokenizer_kind(tok));
        return SPADE_POLICY_EINVAL;
    }
    char e[700];
    if (spade_model_resolve(spec, x->src, sizeof x->src, e, sizeof e)) {
        spade_errf(x->err, x->errlen, "export: the tokenizer comes from model '%s': %s", spec, e);
        return SPADE_POLICY_EIO;
    }
    return 0;
}

/* The tokenizer's model opened; the keys are copied from it, so it must still
 * hold the policy's tokenizer. 0, or the error. */
static int export_open_source(export_job *x) {
    spade_tokenizer *tok = spade_policy_tokenizer(x->p);
    char e[700];
    if (spade_gguf_open(&x->g, x->src, e, sizeof e) ||
        spade_tokenizer_from_gguf(&x->check, x->g, spade_tokenizer_gguf_model(tok), e, sizeof e)) {
        spade_errf(x->err, x->errlen, "export: the tokenizer's model: %s", e);
        return SPADE_POLICY_EFORMAT;
    }
    if (!spade_tokenizer_equal(x->check, tok)) {
        spade_errf(x->err, x->errlen, "export: %s no longer holds the tokenizer the policy was made with", x->src);
        return SPADE_POLICY_EFORMAT;
    }
    return 0;
}

/* The shape from the config, its defaults filled in, and the architecture. */
static void export_shape(export_job *x) {
    const spade_gpt_config *c = x->c;
    x->L = c->layers, x->C = c->width, x->NH = c->heads;
    int64_t hs = x->C / x->NH;
    x->KVH = c->kv_heads ? c->kv_heads : x->NH, x->KV = x->KVH * hs, x->QKV = x->C + 2 * x->KV;
    x->F = c->ffn ? c->ffn : 4 * x->C, x->V = c->vocab;
    x->rot = c->rope_dims ? c->rope_dims : hs;
    x->base = c->rope_base > 0 ? c->rope_base : 10000;
    x->eps = c->norm_eps > 0 ? c->norm_eps : 1e-5f;
    /* qwen2 in llama.cpp requires the Q/K/V biases: a policy without them writes zeros */
    x->arch = c->rope_neox ? "qwen2" : "llama";
    x->zero_bias = c->rope_neox && !c->qkv_bias;
}

/* Every parameter on the host, LoRA merged, the zero biases after them, and
 * where each parameter tensor starts. 0, or the error. */
static int export_gather(export_job *x) {
    x->np = spade_policy_num_params(x->p);
    x->extra = x->zero_bias ? (size_t)(x->C + 2 * x->KV) : 0;
    x->h = malloc((x->np + x->extra) * sizeof *x->h);
    if (!x->h) {
        spade_errf(x->err, x->errlen, "export: out of host memory for %zu parameters", x->np);
        return SPADE_POLICY_ENOMEM;
    }
    /* a LoRA policy exports W + (alpha / r) B A: llama.cpp reads one set of weights */
    char e[700];
    int rc;
    if ((rc = spade_policy_get_params(x->p, x->h, e, sizeof e)) || (rc = gpt_lora_merge(x->p, x->h, e, sizeof e))) {
        spade_errf(x->err, x->errlen, "export: %s", e);
        return rc;
    }
    for (size_t i = 0; i < x->extra; i++) x->h[x->np + i] = 0;
    const char *nm;
    for (int i = 0; i < 16 && !spade_policy_tensor(x->p, i, &nm, &x->off[i], &x->cnt[i]); i++) {}
    return 0;
}

/* The model's own context when it is known (training at a shorter one does
 * not shorten what the weights can attend over), else the policy's. */
static int64_t export_context(const export_job *x) {
    int64_t ctx = x->c->context;
    char srcarch[32], key[96], e[700];
    if (!spade_gguf_get_cstr(x->g, "general.architecture", srcarch, sizeof srcarch, e, sizeof e)) {
        snprintf(key, sizeof key, "%s.context_length", srcarch);
        int64_t sc;
        if (spade_gguf_get(x->g, key) && !spade_gguf_get_i64(x->g, key, &sc, e, sizeof e) && sc > ctx &&
            sc <= UINT32_MAX)
            ctx = sc;
    }
    return ctx;
}

/* The writer made and its metadata set: the file's own general.* keys, the
 * model's descriptive ones, the hyperparameters, the tokenizer.* keys. 0, or
 * the error. */
static int export_metadata(export_job *x) {
    char e[700], key[96];
    if (spade_gguf_writer_new(&x->w, e, sizeof e)) {
        spade_errf(x->err, x->errlen, "export: %s", e);
        return SPADE_POLICY_ENOMEM;
    }
    spade_gguf_writer *w = x->w;
    spade_gguf *g = x->g;
    /* llama.cpp's file types: 0 all F32, 1 mostly F16, 7 mostly Q8_0 */
    uint32_t ftype = x->type == SPADE_GGML_F32 ? 0 : x->type == SPADE_GGML_F16 ? 1 : 7;
    int64_t ctx = export_context(x);
    int bad = spade_gguf_writer_set_str(w, "general.architecture", x->arch);
    for (size_t i = 0; i < spade_gguf_n_kv(g); i++) {
        const char *k = spade_gguf_key(g, i);
        if (!strncmp(k, "general.", 8) && !is_file_key(k))
            bad |= spade_gguf_writer_copy(w, k, spade_gguf_kv_value(g, i));
    }
    bad |= spade_gguf_writer_set_u32(w, "general.file_type", ftype);
    if (x->type == SPADE_GGML_Q8_0) bad |= spade_gguf_writer_set_u32(w, "general.quantization_version", 2);
#define KEY(suffix) (snprintf(key, sizeof key, "%s.%s", x->arch, suffix), key)
    bad |= spade_gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)ctx);
    bad |= spade_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)x->C);
    bad |= spade_gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)x->L);
    bad |= spade_gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)x->F);
    bad |= spade_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)x->NH);
    bad |= spade_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)x->KVH);
    bad |= spade_gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)x->rot);
    bad |= spade_gguf_writer_set_f32(w, KEY("rope.freq_base"), (float)x->base);
    bad |= spade_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), x->eps);
    bad |= spade_gguf_writer_set_u32(w, KEY("vocab_size"), (uint32_t)x->V);
#undef KEY
    for (size_t i = 0; i < spade_gguf_n_kv(g); i++) {
        const char *k = spade_gguf_key(g, i);
        if (!strncmp(k, "tokenizer.", 10)) bad |= spade_gguf_writer_copy(w, k, spade_gguf_kv_value(g, i));
    }
    if (bad) {
        spade_errf(x->err, x->errlen, "export: out of memory for the metadata");
        return SPADE_POLICY_ENOMEM;
    }
    return 0;
}

/* One tensor of ne0 x ne1 (a vector when ne1 is 1) added to the writer, which
 * converts data when it writes: 0, or -1 having said why. */
static int export_add(export_job *x, const char *name, int ty, int64_t ne0, int64_t ne1, const float *data) {
    int64_t dims[2] = {ne0, ne1};
    char e[700];
    if (spade_gguf_writer_add_tensor(x->w, name, ty, ne1 > 1 ? 2 : 1, dims, data, e, sizeof e)) {
        spade_errf(x->err, x->errlen, "export: %s", e);
        return -1;
    }
    x->n_tensors++;
    return 0;
}

/* Layer l's tensor blk.l.SUFFIX. */
static int export_add_blk(export_job *x, int64_t l, const char *suffix, int ty, int64_t ne0, int64_t ne1,
                          const float *data) {
    char n[96];
    snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix);
    return export_add(x, n, ty, ne0, ne1, data);
}

/* Layer l's tensors, in llama.cpp's names and order: 0, or -1 having said why. */
static int export_layer(export_job *x, int64_t l) {
    const float *h = x->h;
    int64_t C = x->C, KV = x->KV, F = x->F;
    int type = x->type;
    /* the order of llama_param_names (llama.c), as gguf_load.c fills them */
    const float *ln1 = h + x->off[1], *qkvw = h + x->off[2], *qkvb = h + x->off[3], *proj = h + x->off[4];
    const float *ln2 = h + x->off[5], *fcw = h + x->off[6], *fcp = h + x->off[7];
    const float *q = qkvw + l * x->QKV * C;
    /* vectors (norm gains, biases) stay F32, as llama.cpp's converter keeps them */
    const int VEC = SPADE_GGML_F32;
    if (export_add_blk(x, l, "attn_norm.weight", VEC, C, 1, ln1 + l * C) ||
        export_add_blk(x, l, "attn_q.weight", matrix_type(type, C), C, C, q) ||
        export_add_blk(x, l, "attn_k.weight", matrix_type(type, C), C, KV, q + C * C) ||
        export_add_blk(x, l, "attn_v.weight", matrix_type(type, C), C, KV, q + (C + KV) * C))
        return -1;
    if (x->c->qkv_bias || x->zero_bias) {
        const float *b = x->zero_bias ? h + x->np : qkvb + l * x->QKV;
        if (export_add_blk(x, l, "attn_q.bias", VEC, C, 1, b) ||
            export_add_blk(x, l, "attn_k.bias", VEC, KV, 1, b + C) ||
            export_add_blk(x, l, "attn_v.bias", VEC, KV, 1, b + C + KV))
            return -1;
    }
    if (export_add_blk(x, l, "attn_output.weight", matrix_type(type, C), C, C, proj + l * C * C) ||
        export_add_blk(x, l, "ffn_norm.weight", VEC, C, 1, ln2 + l * C) ||
        export_add_blk(x, l, "ffn_gate.weight", matrix_type(type, C), C, F, fcw + l * 2 * F * C) ||
        export_add_blk(x, l, "ffn_up.weight", matrix_type(type, C), C, F, fcw + l * 2 * F * C + F * C) ||
        export_add_blk(x, l, "ffn_down.weight", matrix_type(type, F), F, C, fcp + l * C * F))
        return -1;
    return 0;
}

/* Every tensor: the embedding, the layers, the final norm and an untied head. */
static int export_tensors(export_job *x) {
    const float *h = x->h;
    if (export_add(x, "token_embd.weight", matrix_type(x->type, x->C), x->C, x->V, h + x->off[0])) return -1;
    for (int64_t l = 0; l < x->L; l++)
        if (export_layer(x, l)) return -1;
    if (export_add(x, "output_norm.weight", SPADE_GGML_F32, x->C, 1, h + x->off[8])) return -1;
    if (x->c->untied && export_add(x, "output.weight", matrix_type(x->type, x->C), x->C, x->V, h + x->off[9]))
        return -1;
    return 0;
}

static void export_report(const export_job *x, spade_export_info *info) {
    *info = (spade_export_info){.n_tensors = x->n_tensors, .n_params = 0};
    snprintf(info->arch, sizeof info->arch, "%s", x->arch);
    snprintf(info->source, sizeof info->source, "%s", x->src);
    for (int i = 0; i < 10; i++) info->n_params += x->cnt[i];
    /* the padded vocabulary rows are not exported */
    info->n_params -= (size_t)(SPADE_VOCAB_PAD(x->V) - x->V) * (size_t)x->C * (x->c->untied ? 2 : 1);
}

int spade_policy_export_gguf(spade_policy *p, const char *path, int type, spade_export_info *info, char *err,
                             size_t errlen) {
    export_job x = {.p = p, .c = spade_policy_config(p), .type = type, .err = err, .errlen = errlen};
    int rc = export_check(&x);
    if (rc) return rc;
    export_shape(&x);
    if (!(rc = export_open_source(&x))) rc = export_gather(&x);
    if (!rc) rc = export_metadata(&x);
    if (!rc && export_tensors(&x)) rc = SPADE_POLICY_EFORMAT;
    if (!rc) rc = write_atomic(x.w, path, err, errlen);
    if (!rc && info) export_report(&x, info);
    export_close(&x);
    return rc;
}
