/* gguf_load.c — a GGUF model file (architecture llama or qwen2) to a spade
 * policy of arch llama (pretrained.h).
 *
 * What it is: the metadata -> config mapping and the tensor -> parameter
 * copy of docs/policy.md ("The Llama family"), every count, shape and type
 * checked against the metadata before a byte is read; the tokenizer is the
 * file's own (tokenizer_gguf.c), referenced by the checkpoints of the policy.
 * What it is not: the reader (gguf.c) or the maths (llama.c). RoPE scaling
 * keys (rope.scaling.*) other than none/linear factor 1 are refused rather
 * than ignored: spade's rotary positions have no scaling.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gguf.h"
#include "policy/gpt_internal.h"
#include "policy/models.h"
#include "policy/pretrained.h"

typedef struct {
    spade_gguf *g;
    char path[4096];
    char spec[1024]; /* what the tokenizer reference keeps: a known name, or the absolute path */
    char arch[16];
    spade_gpt_config cfg;
    spade_policy *p; /* fill_params: the policy whose weights the tensors become */
    float *stage; /* one tensor dequantized on the host before its upload */
    size_t stage_cap;
} model_file;

static int get_dim(const model_file *m, const char *suffix, int optional, int lo, int hi, int *out, char *err,
                   size_t errlen) {
    char key[96], e[300];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    if (optional && !spade_gguf_get(m->g, key)) return 0;
    int64_t v;
    if (spade_gguf_get_i64(m->g, key, &v, e, sizeof e)) {
        spade_errf(err, errlen, "%s: %s", m->path, e);
        return -1;
    }
    if (v < lo || v > hi) {
        spade_errf(err, errlen, "%s: %s = %lld: expected %d..%d", m->path, key, (long long)v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int get_float(const model_file *m, const char *suffix, double *out, char *err, size_t errlen) {
    char key[96], e[300];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    if (!spade_gguf_get(m->g, key)) return 0;
    float v;
    if (spade_gguf_get_f32(m->g, key, &v, e, sizeof e)) {
        spade_errf(err, errlen, "%s: %s", m->path, e);
        return -1;
    }
    *out = v;
    return 0;
}

static void model_close(model_file *m) {
    spade_gguf_free(m->g);
    free(m->stage);
    m->stage = NULL;
}

/* Opens the file and fills m->cfg from its metadata (vocab from the token list). */
static int model_open(model_file *m, const char *spec, const spade_model_opts *o, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    char e[700];
    if (spade_model_resolve(spec, m->path, sizeof m->path, err, errlen)) return SPADE_POLICY_EIO;
    if (spade_model_find(spec)) {
        snprintf(m->spec, sizeof m->spec, "%s", spec);
    } else {
        char *rp = realpath(m->path, NULL);
        if (!rp || strlen(rp) >= sizeof m->spec) {
            free(rp);
            spade_errf(err, errlen, "%s: cannot make the path absolute (or it is over %zu bytes)", m->path,
                       sizeof m->spec - 1);
            return SPADE_POLICY_EIO;
        }
        snprintf(m->spec, sizeof m->spec, "%s", rp);
        free(rp);
    }
    if (spade_gguf_open(&m->g, m->path, e, sizeof e)) {
        spade_errf(err, errlen, "%s", e);
        return SPADE_POLICY_EFORMAT;
    }
    if (spade_gguf_get_cstr(m->g, "general.architecture", m->arch, sizeof m->arch, e, sizeof e)) {
        spade_errf(err, errlen, "%s: %s", m->path, e);
        goto fail;
    }
    if (strcmp(m->arch, "llama") && strcmp(m->arch, "qwen2")) {
        spade_errf(err, errlen, "%s: general.architecture is '%s': spade loads llama and qwen2", m->path, m->arch);
        goto fail;
    }
    spade_gpt_config *c = &m->cfg;
    spade_gpt_config_default(c);
    snprintf(c->arch, sizeof c->arch, "llama");
    snprintf(c->backend, sizeof c->backend, "%s", o && o->backend ? o->backend : "auto");
    int ctx = 0, rot = 0, kvh = 0;
    if (get_dim(m, "block_count", 0, 1, 256, &c->layers, err, errlen) ||
        get_dim(m, "embedding_length", 0, 8, 16384, &c->width, err, errlen) ||
        get_dim(m, "attention.head_count", 0, 1, 1024, &c->heads, err, errlen) ||
        get_dim(m, "feed_forward_length", 0, 1, 65536, &c->ffn, err, errlen) ||
        get_dim(m, "context_length", 0, 2, INT_MAX, &ctx, err, errlen) ||
        get_dim(m, "attention.head_count_kv", 1, 1, 1024, &kvh, err, errlen) ||
        get_dim(m, "rope.dimension_count", 1, 2, 16384, &rot, err, errlen))
        goto fail;
    c->kv_heads = kvh ? kvh : c->heads;
    c->rope_dims = rot;
    double base = 10000, eps = 1e-5;
    if (get_float(m, "rope.freq_base", &base, err, errlen) ||
        get_float(m, "attention.layer_norm_rms_epsilon", &eps, err, errlen))
        goto fail;
    c->rope_base = base;
    c->norm_eps = (float)eps;
    char key[96], st[32];
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    if (spade_gguf_get(m->g, key)) {
        if (spade_gguf_get_cstr(m->g, key, st, sizeof st, e, sizeof e)) {
            spade_errf(err, errlen, "%s: %s", m->path, e);
            goto fail;
        }
        double f = 1;
        if (get_float(m, "rope.scaling.factor", &f, err, errlen)) goto fail;
        if (strcmp(st, "none") && !(!strcmp(st, "linear") && f == 1)) {
            spade_errf(err, errlen, "%s: %s = %s: spade's rotary positions have no scaling", m->path, key, st);
            goto fail;
        }
    }
    /* llama (the converter permuted q/k into pairs 2j, 2j+1) or qwen2 (NEOX: j, j + rot/2) */
    c->rope_neox = !strcmp(m->arch, "qwen2");
    c->qkv_bias = spade_gguf_find_tensor(m->g, "blk.0.attn_q.bias") != NULL;
    c->untied = spade_gguf_find_tensor(m->g, "output.weight") != NULL;
    if (c->heads > c->width || c->width % c->heads) {
        spade_errf(err, errlen, "%s: %s.attention.head_count = %d does not divide embedding_length = %d", m->path,
                   m->arch, c->heads, c->width);
        goto fail;
    }
    int want = o && o->context ? o->context : (ctx < 65536 ? ctx : 65536);
    if (want > ctx) {
        spade_errf(err, errlen, "%s: context %d asked, the model's %s.context_length is %d", m->path, want, m->arch,
                   ctx);
        goto fail;
    }
    c->context = want;
    const spade_gguf_value *tv;
    uint64_t nt;
    if (spade_gguf_get_array(m->g, "tokenizer.ggml.tokens", SPADE_GGUF_STRING, &tv, &nt, e, sizeof e)) {
        spade_errf(err, errlen, "%s: %s", m->path, e);
        goto fail;
    }
    if (nt < 1 || nt > SPADE_POLICY_MAX_VOCAB) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.tokens: %llu tokens (spade takes 1..%d)", m->path,
                   (unsigned long long)nt, SPADE_POLICY_MAX_VOCAB);
        goto fail;
    }
    c->vocab = (int)nt;
    snprintf(c->tokenizer, sizeof c->tokenizer, "gguf");
    if (spade_gpt_config_validate(c, e, sizeof e)) {
        spade_errf(err, errlen, "%s: the metadata make no valid policy: %s", m->path, e);
        goto fail;
    }
    return 0;
fail:
    model_close(m);
    return SPADE_POLICY_EFORMAT;
}

int spade_model_config(const char *spec, const spade_model_opts *o, spade_gpt_config *cfg, char *err, size_t errlen) {
    model_file m;
    int rc = model_open(&m, spec, o, err, errlen);
    if (rc) return rc;
    *cfg = m.cfg;
    model_close(&m);
    return 0;
}

/* Tensor name, exactly dims (ne0 = the row length, ne1 = rows), dequantized
 * into m->p's backend memory at out, one tensor at a time through a host
 * stage, so that a load never holds a second copy of every weight. */
static int copy_tensor(model_file *m, const char *name, int64_t ne0, int64_t ne1, float *out, int *used, char *err,
                       size_t errlen) {
    const spade_gguf_tensor *t = spade_gguf_find_tensor(m->g, name);
    if (!t) {
        spade_errf(err, errlen, "%s: tensor '%s' is missing", m->path, name);
        return -1;
    }
    /* unused dimensions read 1 (gguf.h), so a vector is [ne0, 1, 1, 1] */
    if (t->dims[0] != ne0 || t->dims[1] != ne1 || t->dims[2] != 1 || t->dims[3] != 1) {
        spade_errf(err, errlen, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld]: the metadata make it [%lld, %lld]",
                   m->path, name, (long long)t->dims[0], (long long)t->dims[1], (long long)t->dims[2],
                   (long long)t->dims[3], (long long)ne0, (long long)ne1);
        return -1;
    }
    if (!spade_ggml_can_dequantize(t->type)) {
        const char *tn = spade_ggml_type_name(t->type);
        spade_errf(err, errlen, "%s: tensor '%s': type %s (%d) is not one spade dequantizes", m->path, name,
                   tn ? tn : "?", t->type);
        return -1;
    }
    char e[400];
    size_t n = (size_t)t->n_elements; /* = ne0 * ne1, both bounded by the config */
    if (n > m->stage_cap) {
        float *s = realloc(m->stage, n * sizeof(float));
        if (!s) {
            spade_errf(err, errlen, "%s: tensor '%s': out of host memory for %zu floats", m->path, name, n);
            return -1;
        }
        m->stage = s;
        m->stage_cap = n;
    }
    if (spade_gguf_dequantize(t, m->stage, t->n_elements, e, sizeof e)) {
        spade_errf(err, errlen, "%s: %s", m->path, e);
        return -1;
    }
    spade_policy *p = m->p;
    if (p->be.vt->upload(p->be.ctx, out, m->stage, n * sizeof(float))) {
        gpt_backend_fail(p, "upload", err, errlen);
        return -1;
    }
    (*used)++;
    return 0;
}

/* Every weight of p from m's tensors; h is p's parameter memory (the backend's:
 * only offset here, written by copy_tensor's uploads). */
static int fill_params(spade_policy *p, model_file *m, float *h, char *err, size_t errlen) {
    const spade_gpt_config *c = &m->cfg;
    int64_t L = c->layers, C = c->width, hs = C / c->heads, KV = (int64_t)c->kv_heads * hs, QKV = C + 2 * KV;
    int64_t F = c->ffn, V = c->vocab;
    size_t off[16] = {0}, cnt[16] = {0};
    const char *nm;
    for (int i = 0; i < 16 && !spade_policy_tensor(p, i, &nm, &off[i], &cnt[i]); i++) {}
    /* the order of llama_param_names (llama.c) */
    float *wte = h + off[0], *ln1 = h + off[1], *qkvw = h + off[2], *qkvb = h + off[3], *proj = h + off[4];
    float *ln2 = h + off[5], *fcw = h + off[6], *fcp = h + off[7], *lnf = h + off[8], *head = h + off[9];
    int used = 0;
    char n[96];
#define T(name_, ne0, ne1, dst)                                                                                        \
    do {                                                                                                               \
        if (copy_tensor(m, name_, ne0, ne1, dst, &used, err, errlen)) return -1;                                       \
    } while (0)
#define B(suffix, ne0, ne1, dst)                                                                                       \
    do {                                                                                                               \
        snprintf(n, sizeof n, "blk.%lld.%s", (long long)l, suffix);                                                    \
        T(n, ne0, ne1, dst);                                                                                           \
    } while (0)
    T("token_embd.weight", C, V, wte);
    T("output_norm.weight", C, 1, lnf);
    if (c->untied) T("output.weight", C, V, head);
    for (int64_t l = 0; l < L; l++) {
        float *q = qkvw + l * QKV * C;
        B("attn_norm.weight", C, 1, ln1 + l * C);
        B("attn_q.weight", C, C, q);
        B("attn_k.weight", C, KV, q + C * C);
        B("attn_v.weight", C, KV, q + (C + KV) * C);
        if (c->qkv_bias) {
            float *b = qkvb + l * QKV;
            B("attn_q.bias", C, 1, b);
            B("attn_k.bias", KV, 1, b + C);
            B("attn_v.bias", KV, 1, b + C + KV);
        }
        B("attn_output.weight", C, C, proj + l * C * C);
        B("ffn_norm.weight", C, 1, ln2 + l * C);
        B("ffn_gate.weight", C, F, fcw + l * 2 * F * C);
        B("ffn_up.weight", C, F, fcw + l * 2 * F * C + F * C);
        B("ffn_down.weight", F, C, fcp + l * C * F);
    }
#undef B
#undef T
    /* a tensor spade would not read (an output bias, a per-layer rope factor,
     * a layer past block_count) means another model than the one computed */
    size_t nt = spade_gguf_n_tensors(m->g);
    if ((size_t)used != nt) {
        for (size_t i = 0; i < nt; i++) {
            const char *tn = spade_gguf_tensor_at(m->g, i)->name;
            int known = !strcmp(tn, "token_embd.weight") || !strcmp(tn, "output_norm.weight") ||
                        (c->untied && !strcmp(tn, "output.weight"));
            long long bl;
            char rest[64];
            if (!known && sscanf(tn, "blk.%lld.%63s", &bl, rest) == 2 && bl >= 0 && bl < L) {
                static const char *const per[] = {"attn_norm.weight", "attn_q.weight",      "attn_k.weight",
                                                  "attn_v.weight",    "attn_output.weight", "ffn_norm.weight",
                                                  "ffn_gate.weight",  "ffn_up.weight",      "ffn_down.weight",
                                                  "attn_q.bias",      "attn_k.bias",        "attn_v.bias"};
                for (size_t k = 0; k < sizeof per / sizeof *per; k++)
                    if (!strcmp(rest, per[k]) && (k < 9 || c->qkv_bias)) known = 1;
            }
            if (!known) {
                spade_errf(err, errlen, "%s: tensor '%s' is not part of the %s model spade computes", m->path, tn,
                           m->arch);
                return -1;
            }
        }
    }
    return 0;
}

int spade_policy_from_model(spade_policy **out, const char *spec, const spade_model_opts *o, char *err, size_t errlen) {
    *out = NULL;
    model_file m;
    int rc = model_open(&m, spec, o, err, errlen);
    if (rc) return rc;
    spade_tokenizer *tok = NULL;
    spade_policy *p = NULL;
    char e[700];
    rc = spade_tokenizer_from_gguf(&tok, m.g, m.spec, e, sizeof e);
    if (rc) {
        spade_errf(err, errlen, "%s: %s", m.path, e);
        goto done;
    }
    /* no random initialisation: fill_params writes every real weight */
    if ((rc = gpt_policy_new(&p, &m.cfg, tok, 0, e, sizeof e))) {
        spade_errf(err, errlen, "%s: %s", m.path, e);
        goto done;
    }
    m.p = p; /* the backend zeroed the parameters: padded vocabulary rows stay 0 */
    if (fill_params(p, &m, p->params_mem, err, errlen)) {
        rc = SPADE_POLICY_EFORMAT;
        goto done;
    }
    p->origin_kind = 1;
    snprintf(p->origin, sizeof p->origin, "%s", m.spec);
    if (o && o->lora_rank) {
        rc = gpt_lora_enable(p, o->lora_rank, o->lora_alpha > 0 ? o->lora_alpha : (float)o->lora_rank,
                             o->lora_targets ? o->lora_targets : LORA_ALL, e, sizeof e);
        if (rc) spade_errf(err, errlen, "%s: %s", m.path, e);
    }
done:
    spade_tokenizer_free(tok);
    model_close(&m);
    if (rc) {
        spade_policy_free(p);
        return rc;
    }
    *out = p;
    return 0;
}
