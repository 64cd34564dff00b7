/* gpt.c — the GPT of spade's policy: configuration, memory layout,
 * initialisation, forward, backward, AdamW, log-probs.
 *
 * What it is: the model in the style of llm.c's train_gpt2.c — pre-LayerNorm
 * blocks (attention, then a 4x GELU MLP), learned positions, the output head
 * tied to the token embeddings — driving a backend (backend.h) op by op. The
 * layout of every allocation is in gpt_internal.h.
 * What it is not: the arithmetic (backend_cpu.c, backend_cuda.cu), sampling
 * (sample.c), checkpoints (checkpoint.c) or the GRPO loss (grpo.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gpt_internal.h"

const char *const gpt_param_names[NUM_PARAM_TENSORS] = {
    "wte",  "wpe",  "ln1w", "ln1b", "qkvw",    "qkvb",    "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw", "fcprojb", "lnfw",     "lnfb",
};
/* Weight decay applies to matrices only: decaying gains and biases pulls
 * layernorm toward zero output, which is not regularisation but damage. */
static const int param_decay[NUM_PARAM_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};

/* ---------------------------------------------------------------- config */

void spade_gpt_config_default(spade_gpt_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->layers = 4;
    cfg->heads = 4;
    cfg->width = 128;
    cfg->context = 256;
    snprintf(cfg->backend, sizeof cfg->backend, "auto");
    cfg->seed = 1337;
    snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "bytes");
    snprintf(cfg->arch, sizeof cfg->arch, "gpt");
}

/* 1 for the Llama family, 0 for the GPT ("" is a GPT: configs zeroed by hand). */
static int cfg_is_llama(const spade_gpt_config *c) { return !strcmp(c->arch, "llama"); }

static int parse_int(const char *key, const char *v, long lo, long hi, int *out, char *err, size_t errlen) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    if (errno || end == v || *end || x < lo || x > hi) {
        spade_errf(err, errlen, "%s = '%s': expected an integer in [%ld, %ld]", key, v, lo, hi);
        return SPADE_POLICY_EINVAL;
    }
    *out = (int)x;
    return 0;
}

/* The keys whose value is an integer in a range. */
static const struct int_key {
    const char *name;
    long lo, hi;
    size_t off; /* of its int in spade_gpt_config */
} int_keys[] = {
    {"layers", 1, 256, offsetof(spade_gpt_config, layers)},
    {"heads", 1, 256, offsetof(spade_gpt_config, heads)},
    {"width", 8, 16384, offsetof(spade_gpt_config, width)},
    {"context", 2, 65536, offsetof(spade_gpt_config, context)},
    {"lora_rank", 0, 1024, offsetof(spade_gpt_config, lora_rank)},
    {"kv_heads", 0, 256, offsetof(spade_gpt_config, kv_heads)},
    {"ffn", 0, 65536, offsetof(spade_gpt_config, ffn)},
    {"rope_dims", 0, 16384, offsetof(spade_gpt_config, rope_dims)},
    {"qkv_bias", 0, 1, offsetof(spade_gpt_config, qkv_bias)},
};

/* k (key without its "policy.") when it takes an integer (tied: 0 or 1, stored
 * inverted); SPADE_POLICY_ENOKEY when it is none of them. */
static int set_int_key(spade_gpt_config *cfg, const char *k, const char *key, const char *value, char *err,
                       size_t errlen) {
    for (size_t i = 0; i < sizeof int_keys / sizeof *int_keys; i++)
        if (!strcmp(k, int_keys[i].name))
            return parse_int(key, value, int_keys[i].lo, int_keys[i].hi, (int *)((char *)cfg + int_keys[i].off), err,
                             errlen);
    if (!strcmp(k, "tied")) {
        int t;
        int rc = parse_int(key, value, 0, 1, &t, err, errlen);
        if (!rc) cfg->untied = !t;
        return rc;
    }
    return SPADE_POLICY_ENOKEY;
}

/* value into field (cap bytes) when it is one of the n names in ok; else the
 * message expected (what the key takes). */
static int set_choice(char *field, size_t cap, const char *const *ok, int n, const char *key, const char *value,
                      const char *expected, char *err, size_t errlen) {
    for (int i = 0; i < n; i++)
        if (!strcmp(value, ok[i])) {
            snprintf(field, cap, "%s", value);
            return 0;
        }
    spade_errf(err, errlen, "%s = '%s': expected %s", key, value, expected);
    return SPADE_POLICY_EINVAL;
}

/* k when its value is a name: backend, tokenizer, tokenizer_file, arch,
 * rope_pairing, sample_weights; SPADE_POLICY_ENOKEY for any other. */
static int set_name_key(spade_gpt_config *cfg, const char *k, const char *key, const char *value, char *err,
                        size_t errlen) {
    static const char *const backends[] = {"auto", "cpu", "cuda", "cpu_ref"}, *const tokenizers[] = {"bytes", "bpe"},
                             *const archs[] = {"gpt", "llama"};
    if (!strcmp(k, "backend"))
        return set_choice(cfg->backend, sizeof cfg->backend, backends, 4, key, value, "auto, cpu, cuda or cpu_ref", err,
                          errlen);
    if (!strcmp(k, "tokenizer"))
        return set_choice(cfg->tokenizer, sizeof cfg->tokenizer, tokenizers, 2, key, value, "bytes or bpe", err,
                          errlen);
    if (!strcmp(k, "arch"))
        return set_choice(cfg->arch, sizeof cfg->arch, archs, 2, key, value, "gpt or llama", err, errlen);
    if (!strcmp(k, "tokenizer_file")) {
        if (!*value || strlen(value) >= sizeof cfg->tokenizer_file) {
            spade_errf(err, errlen, "%s = '%.100s': expected a non-empty path under %zu bytes", key, value,
                       sizeof cfg->tokenizer_file);
            return SPADE_POLICY_EINVAL;
        }
        snprintf(cfg->tokenizer_file, sizeof cfg->tokenizer_file, "%s", value);
        return 0;
    }
    if (!strcmp(k, "rope_pairing")) {
        if (strcmp(value, "adjacent") && strcmp(value, "half")) {
            spade_errf(err, errlen, "%s = '%s': expected adjacent (llama.cpp's LLAMA rope) or half (NEOX: qwen2)", key,
                       value);
            return SPADE_POLICY_EINVAL;
        }
        cfg->rope_neox = !strcmp(value, "half");
        return 0;
    }
    if (!strcmp(k, "sample_weights")) {
        int q8;
        if (spade_sample_weights_parse(value, &q8)) {
            spade_errf(err, errlen, "%s = '%s': expected f32, q8_0 or q4_1", key, value);
            return SPADE_POLICY_EINVAL;
        }
        snprintf(cfg->sample_weights, sizeof cfg->sample_weights, "%s", value);
        return 0;
    }
    return SPADE_POLICY_ENOKEY;
}

/* A real number with nothing after it but blanks into *x: 0, or -1. */
static int parse_real(const char *value, double *x) {
    char *end;
    errno = 0;
    *x = strtod(value, &end);
    while (*end == ' ' || *end == '\t') end++;
    return errno || end == value || *end || !isfinite(*x) ? -1 : 0;
}

/* k when its value is a number or a list: seed, lora_alpha, lora_targets,
 * rope_base, norm_eps; SPADE_POLICY_ENOKEY for any other. */
static int set_number_key(spade_gpt_config *cfg, const char *k, const char *key, const char *value, char *err,
                          size_t errlen) {
    double x;
    if (!strcmp(k, "seed")) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(value, &end, 0);
        if (errno || end == value || *end || value[0] == '-') {
            spade_errf(err, errlen, "%s = '%s': expected a non-negative integer", key, value);
            return SPADE_POLICY_EINVAL;
        }
        cfg->seed = s;
        return 0;
    }
    if (!strcmp(k, "lora_alpha")) {
        if (parse_real(value, &x) || x < 0 || x > 1e6) {
            spade_errf(err, errlen, "%s = '%s': expected a number in [0, 1e6] (0: lora_rank)", key, value);
            return SPADE_POLICY_EINVAL;
        }
        cfg->lora_alpha = (float)x;
        return 0;
    }
    if (!strcmp(k, "lora_targets")) {
        if (lora_parse_targets(value, &cfg->lora_targets)) {
            spade_errf(err, errlen,
                       "%s = '%.200s': expected a list of attn_qkv, attn_output, ffn_gate_up, ffn_down (or all)", key,
                       value);
            return SPADE_POLICY_EINVAL;
        }
        return 0;
    }
    if (!strcmp(k, "rope_base") || !strcmp(k, "norm_eps")) {
        int base = k[0] == 'r';
        /* the base must make the angles shrink with the pair index; eps keeps 1/sqrt finite */
        if (parse_real(value, &x) || (base ? x <= 1.0 || x > 1e12 : x <= 0 || x > 1.0)) {
            spade_errf(err, errlen, "%s = '%s': expected a number in %s", key, value, base ? "(1, 1e12]" : "(0, 1]");
            return SPADE_POLICY_EINVAL;
        }
        if (base)
            cfg->rope_base = x;
        else
            cfg->norm_eps = (float)x;
        return 0;
    }
    return SPADE_POLICY_ENOKEY;
}

int spade_gpt_config_set(spade_gpt_config *cfg, const char *key, const char *value, char *err, size_t errlen) {
    const char *k = key;
    if (!strncmp(k, "policy.", 7)) k += 7;
    if (!value) value = "";
    int rc = set_int_key(cfg, k, key, value, err, errlen);
    if (rc == SPADE_POLICY_ENOKEY) rc = set_name_key(cfg, k, key, value, err, errlen);
    if (rc == SPADE_POLICY_ENOKEY) rc = set_number_key(cfg, k, key, value, err, errlen);
    if (rc != SPADE_POLICY_ENOKEY) return rc;
    spade_errf(err, errlen,
               "unknown key '%s' (policy keys: layers, heads, width, context, backend, seed, "
               "tokenizer, tokenizer_file, arch, kv_heads, ffn, rope_base, rope_dims, rope_pairing, norm_eps, "
               "tied, qkv_bias, sample_weights, lora_rank, lora_alpha, lora_targets)",
               key);
    return SPADE_POLICY_ENOKEY;
}

int spade_gpt_config_validate(const spade_gpt_config *c, char *err, size_t errlen) {
    if (c->layers < 1 || c->layers > 256) {
        spade_errf(err, errlen, "policy.layers = %d: expected 1..256", c->layers);
        return SPADE_POLICY_EINVAL;
    }
    /* The same ranges as spade_gpt_config_set: a config filled in code or read
     * from a checkpoint header gets no wider. They are what keeps every size
     * product in size_t (parameters < 1e12; L*12*C^2 wraps for C = 2^30). */
    if (c->width < 8 || c->width > 16384) {
        spade_errf(err, errlen, "policy.width = %d: expected 8..16384", c->width);
        return SPADE_POLICY_EINVAL;
    }
    if (c->heads < 1 || c->heads > 256 || c->width % c->heads) {
        spade_errf(err, errlen, "policy.heads = %d must be in 1..256 and divide policy.width = %d", c->heads, c->width);
        return SPADE_POLICY_EINVAL;
    }
    if (c->context < 2 || c->context > 65536) {
        spade_errf(err, errlen, "policy.context = %d: expected 2..65536", c->context);
        return SPADE_POLICY_EINVAL;
    }
    /* gguf is not a key's value: a pretrained model's loader sets it (policy.model) */
    if (strcmp(c->tokenizer, "bytes") && strcmp(c->tokenizer, "bpe") && strcmp(c->tokenizer, "gguf")) {
        spade_errf(err, errlen, "policy.tokenizer = '%.8s': expected bytes or bpe", c->tokenizer);
        return SPADE_POLICY_EINVAL;
    }
    if (strcmp(c->arch, "") && strcmp(c->arch, "gpt") && strcmp(c->arch, "llama")) {
        spade_errf(err, errlen, "policy.arch = '%.8s': expected gpt or llama", c->arch);
        return SPADE_POLICY_EINVAL;
    }
    if (!cfg_is_llama(c)) {
        /* the GPT has none of these: a value set for it is a mistake worth naming */
        const char *bad = c->kv_heads && c->kv_heads != c->heads  ? "kv_heads"
                          : c->ffn && c->ffn != 4 * c->width      ? "ffn"
                          : c->rope_dims || c->rope_neox          ? "rope_dims / rope_pairing"
                          : c->untied                             ? "tied = 0"
                          : c->qkv_bias                           ? "qkv_bias"
                          : c->rope_base != 0 || c->norm_eps != 0 ? "rope_base / norm_eps"
                                                                  : NULL;
        if (bad) {
            spade_errf(err, errlen, "policy.%s applies to policy.arch = llama, not gpt", bad);
            return SPADE_POLICY_EINVAL;
        }
    } else {
        int hs = c->width / c->heads, kvh = c->kv_heads ? c->kv_heads : c->heads;
        int rot = c->rope_dims ? c->rope_dims : hs;
        if (kvh < 1 || kvh > c->heads || c->heads % kvh) {
            spade_errf(err, errlen, "policy.kv_heads = %d must divide policy.heads = %d", c->kv_heads, c->heads);
            return SPADE_POLICY_EINVAL;
        }
        if (rot < 2 || rot > hs || rot % 2) {
            spade_errf(err, errlen, "policy.rope_dims = %d: expected an even number in 2..%d (the head size)", rot, hs);
            return SPADE_POLICY_EINVAL;
        }
        if (c->ffn < 0 || c->ffn > 65536) {
            spade_errf(err, errlen, "policy.ffn = %d: expected 1..65536 (0: 4 x width)", c->ffn);
            return SPADE_POLICY_EINVAL;
        }
        if (!(c->rope_base == 0 || (c->rope_base > 1 && c->rope_base <= 1e12)) ||
            !(c->norm_eps >= 0 && c->norm_eps <= 1) || (c->untied != 0 && c->untied != 1) ||
            (c->qkv_bias != 0 && c->qkv_bias != 1) || (c->rope_neox != 0 && c->rope_neox != 1)) {
            spade_errf(err, errlen,
                       "policy.rope_base = %g, norm_eps = %g, tied = %d, qkv_bias = %d, rope_pairing = %d: "
                       "expected base in (1, 1e12], eps in (0, 1], the switches 0 or 1",
                       c->rope_base, (double)c->norm_eps, !c->untied, c->qkv_bias, c->rope_neox);
            return SPADE_POLICY_EINVAL;
        }
    }
    if (c->lora_rank < 0 || c->lora_rank > 1024 || !(c->lora_alpha >= 0 && c->lora_alpha <= 1e6) ||
        c->lora_targets > LORA_ALL) {
        spade_errf(err, errlen,
                   "policy.lora_rank = %d, lora_alpha = %g, lora_targets = 0x%x: expected 0..1024, "
                   "[0, 1e6] and a set of the four targets",
                   c->lora_rank, (double)c->lora_alpha, c->lora_targets);
        return SPADE_POLICY_EINVAL;
    }
    /* a pretrained model's vocabulary (gguf) may be small or past spade's BPE cap */
    int gg = !strcmp(c->tokenizer, "gguf");
    if (c->vocab &&
        (c->vocab < (gg ? 1 : SPADE_VOCAB) || c->vocab > (gg ? SPADE_POLICY_MAX_VOCAB : SPADE_TOK_MAX_VOCAB) ||
         (c->vocab != SPADE_VOCAB && !strcmp(c->tokenizer, "bytes")))) {
        spade_errf(err, errlen, "vocabulary %d with policy.tokenizer = %s: expected %s", c->vocab, c->tokenizer,
                   gg                              ? "1..262144"
                   : strcmp(c->tokenizer, "bytes") ? "263..65536"
                                                   : "263 (the byte tokenizer)");
        return SPADE_POLICY_EINVAL;
    }
    return 0;
}

int spade_gpt_config_same_arch(const spade_gpt_config *a, const spade_gpt_config *b) {
    int la = cfg_is_llama(a);
    if (la != cfg_is_llama(b)) return 0;
    if (!la) return 1;
    /* the defaults a zero stands for (policy.h), resolved so that 0 and the value match */
    int kva = a->kv_heads ? a->kv_heads : a->heads, kvb = b->kv_heads ? b->kv_heads : b->heads;
    int fa = a->ffn ? a->ffn : 4 * a->width, fb = b->ffn ? b->ffn : 4 * b->width;
    int ra = a->rope_dims ? a->rope_dims : a->width / a->heads, rb = b->rope_dims ? b->rope_dims : b->width / b->heads;
    double ba = a->rope_base > 0 ? a->rope_base : 10000, bb = b->rope_base > 0 ? b->rope_base : 10000;
    float ea = a->norm_eps > 0 ? a->norm_eps : 1e-5f, eb = b->norm_eps > 0 ? b->norm_eps : 1e-5f;
    return kva == kvb && fa == fb && ra == rb && ba == bb && ea == eb && a->rope_neox == b->rope_neox &&
           a->untied == b->untied && a->qkv_bias == b->qkv_bias;
}

/* V and Vp of a configuration: the tokenizer's, or the byte tokenizer's until one is known. */
static int cfg_vocab(const spade_gpt_config *c) { return c->vocab ? c->vocab : SPADE_VOCAB; }

static void param_sizes(const spade_gpt_config *c, size_t *s) {
    if (cfg_is_llama(c)) {
        llama_param_sizes(c, s);
        return;
    }
    size_t L = c->layers, C = c->width, Vp = SPADE_VOCAB_PAD(cfg_vocab(c)), maxT = c->context;
    s[0] = Vp * C;
    s[1] = maxT * C;
    s[2] = L * C;
    s[3] = L * C;
    s[4] = L * 3 * C * C;
    s[5] = L * 3 * C;
    s[6] = L * C * C;
    s[7] = L * C;
    s[8] = L * C;
    s[9] = L * C;
    s[10] = L * 4 * C * C;
    s[11] = L * 4 * C;
    s[12] = L * C * 4 * C;
    s[13] = L * C;
    s[14] = C;
    s[15] = C;
}

size_t gpt_lora_count(const spade_gpt_config *c) {
    if (!c->lora_rank || !cfg_is_llama(c)) return 0;
    size_t L = c->layers, C = c->width, hs = C / c->heads, r = c->lora_rank;
    size_t KVH = c->kv_heads ? (size_t)c->kv_heads : (size_t)c->heads, QKV = C + 2 * KVH * hs;
    size_t F = c->ffn ? (size_t)c->ffn : 4 * C;
    unsigned m = c->lora_targets ? c->lora_targets : LORA_ALL;
    size_t io[LORA_NT] = {C + QKV, 2 * C, C + 2 * F, F + C}, n = 0;
    for (int t = 0; t < LORA_NT; t++)
        if (m >> t & 1) n += L * r * io[t];
    return n;
}

size_t spade_gpt_config_num_params(const spade_gpt_config *cfg) {
    size_t s[NUM_PARAM_TENSORS] = {0}, n = 0;
    param_sizes(cfg, s);
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) n += s[i];
    return n;
}

/* ---------------------------------------------------------------- memory */

int gpt_backend_fail(spade_policy *p, const char *what, char *err, size_t errlen) {
    spade_errf(err, errlen, "%s (%s backend): %s", what, p->be.vt->name, p->be.vt->last_error(p->be.ctx));
    return SPADE_POLICY_EBACKEND;
}

static void point_params(ParameterTensors *t, float *mem, const size_t *sizes) {
    float **ptrs[NUM_PARAM_TENSORS] = {
        &t->wte,  &t->wpe,  &t->ln1w, &t->ln1b, &t->qkvw,    &t->qkvb,    &t->attprojw, &t->attprojb,
        &t->ln2w, &t->ln2b, &t->fcw,  &t->fcb,  &t->fcprojw, &t->fcprojb, &t->lnfw,     &t->lnfb,
    };
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        *ptrs[i] = mem;
        mem += sizes[i];
    }
}

/* base: NULL, or a policy of the same config whose weights the new one reads
 * in place (params_borrowed) instead of allocating its own. */
static int alloc_policy(spade_policy **out, const spade_gpt_config *cfg, const spade_policy *base, char *err,
                        size_t errlen) {
    *out = NULL;
    int rc = spade_gpt_config_validate(cfg, err, errlen);
    if (rc) return rc;
    spade_policy *p = calloc(1, sizeof *p);
    if (!p) {
        spade_errf(err, errlen, "out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    p->cfg = *cfg;
    /* adapters are put on afterwards (gpt_lora_enable), which sets these */
    p->cfg.lora_rank = 0;
    p->cfg.lora_alpha = 0;
    p->cfg.lora_targets = 0;
    p->L = cfg->layers;
    p->NH = cfg->heads;
    p->C = cfg->width;
    p->maxT = cfg->context;
    p->V = cfg_vocab(cfg);
    p->Vp = SPADE_VOCAB_PAD(p->V);
    p->arch = cfg_is_llama(cfg) ? SPADE_ARCH_LLAMA : SPADE_ARCH_GPT;
    p->ntensors = p->arch ? NUM_LLAMA_PARAM_TENSORS : NUM_PARAM_TENSORS;
    p->KVH = cfg->kv_heads ? cfg->kv_heads : p->NH;
    p->QKV = p->C + 2 * p->KVH * (p->C / p->NH);
    p->kvw = p->arch ? p->KVH * (p->C / p->NH) : p->C;
    p->F = cfg->ffn ? cfg->ffn : 4 * p->C;
    p->rot = cfg->rope_dims ? cfg->rope_dims : p->C / p->NH;
    p->neox = cfg->rope_neox;
    p->tied = !cfg->untied;
    p->qkvbias = cfg->qkv_bias;
    p->eps = cfg->norm_eps > 0 ? cfg->norm_eps : 1e-5f;
    p->rope_base = cfg->rope_base > 0 ? (float)cfg->rope_base : 10000.0f;
    rc = spade_backend_open(cfg->backend, &p->be, p->be_note, sizeof p->be_note, err, errlen);
    if (rc) {
        free(p);
        return rc;
    }
    param_sizes(cfg, p->param_sizes);
    p->num_params = spade_gpt_config_num_params(cfg);
    size_t bytes = p->num_params * sizeof(float);
    /* The weights only: gradients and AdamW moments are allocated by the
     * first call that needs them (gpt_ensure_grads, gpt_ensure_moments), so a
     * policy opened to sample, score or export holds 1 x, not 4 x, its
     * parameters (Qwen2.5-0.5B: 2 GB instead of 8). */
    p->params_borrowed = base != NULL;
    /* its quantized sampling copies are read in place too (sample_q8.c): from
     * the policy that owns them, when base itself borrows (a copy of a copy) */
    p->base_owner = base && base->base_owner ? base->base_owner : (spade_policy *)base;
    p->params_mem = base ? base->params_mem : BE->alloc(BX, bytes);
    if (!p->params_mem) {
        spade_errf(err, errlen, "cannot allocate %zu bytes for %zu parameters on %s: %s", bytes, p->num_params,
                   BE->name, BE->last_error(BX));
        spade_policy_free(p);
        return SPADE_POLICY_ENOMEM;
    }
    p->ntrain = p->num_params;
    if (p->arch == SPADE_ARCH_LLAMA) {
        llama_point_params(&p->lparams, p->params_mem, p->param_sizes);
        p->params.wte = p->lparams.wte; /* what the GPT's shared paths read; wpe stays NULL */
        p->head = p->tied ? p->lparams.wte : p->lparams.head;
    } else {
        point_params(&p->params, p->params_mem, p->param_sizes);
        p->head = p->params.wte;
    }
    *out = p;
    return 0;
}

int gpt_alloc(spade_policy **out, const spade_gpt_config *cfg, char *err, size_t errlen) {
    return alloc_policy(out, cfg, NULL, err, errlen);
}

int gpt_ensure_grads(spade_policy *p, char *err, size_t errlen) {
    if (p->grads_mem) return 0;
    float *g = BE->alloc(BX, p->ntrain * sizeof(float)); /* zeroed: no gradient yet */
    if (!g) {
        spade_errf(err, errlen, "cannot allocate %zu bytes of gradients on %s: %s", p->ntrain * sizeof(float), BE->name,
                   BE->last_error(BX));
        return SPADE_POLICY_ENOMEM;
    }
    gpt_point_grads(p, g);
    return 0;
}

int gpt_ensure_moments(spade_policy *p, char *err, size_t errlen) {
    if (p->m_mem) return 0;
    size_t bytes = p->ntrain * sizeof(float);
    float *m = BE->alloc(BX, bytes), *v = BE->alloc(BX, bytes); /* zeroed: AdamW's start */
    if (!m || !v) {
        BE->dealloc(BX, m);
        BE->dealloc(BX, v);
        spade_errf(err, errlen, "cannot allocate 2 x %zu bytes of AdamW moments on %s: %s", bytes, BE->name,
                   BE->last_error(BX));
        return SPADE_POLICY_ENOMEM;
    }
    p->m_mem = m;
    p->v_mem = v;
    return 0;
}

void gpt_point_grads(spade_policy *p, float *mem) {
    if (p->lora_r) { /* the base has none (its tensors in p->lgrads stay NULL) */
        lora_point_grads(p, mem);
    } else if (p->arch == SPADE_ARCH_LLAMA) {
        llama_point_params(&p->lgrads, mem, p->param_sizes);
        memset(&p->grads, 0, sizeof p->grads);
        p->grads.wte = p->lgrads.wte;
    } else {
        point_params(&p->grads, mem, p->param_sizes);
    }
    p->grads_mem = mem;
}

int gpt_final_norm(spade_policy *p, float *out, const float *inp, int n, char *err, size_t errlen) {
    if (p->arch == SPADE_ARCH_LLAMA)
        CK(BE->rmsnorm_forward(BX, out, NULL, inp, p->lparams.lnfw, n, p->C, p->eps));
    else
        CK(BE->layernorm_forward(BX, out, NULL, NULL, inp, p->params.lnfw, p->params.lnfb, n, p->C));
    return 0;
}

/* Forgets the head's buffers and views (after release_head, or when the
 * carving pointed the views at nothing). */
static void forget_head(spade_policy *p) {
    p->head_mem = NULL;
    p->head_io = NULL;
    p->head_pos = NULL;
    p->head_dl = NULL;
    p->head_cap = 0;
    p->head_n = 0;
    p->acts.logits = p->acts.probs = p->acts.logp = NULL;
    p->gacts.dlogits = p->gacts.dlogp = NULL;
    p->lnfc = p->dlnc = NULL;
}

/* Frees the head's buffers (ensure_head's) and forgets them. */
static void release_head(spade_policy *p) {
    if (p->be.vt) {
        BE->dealloc(BX, p->head_mem);
        BE->dealloc(BX, p->head_io);
    }
    free(p->head_pos);
    free(p->head_dl);
    forget_head(p);
}

static void free_acts(spade_policy *p) {
    if (p->be.vt) {
        BE->dealloc(BX, p->acts_mem);
        BE->dealloc(BX, p->gacts_mem);
        BE->dealloc(BX, p->io_mem);
    }
    free(p->mask_host);
    free(p->logp_host);
    p->acts_mem = p->gacts_mem = NULL;
    p->io_mem = NULL;
    p->mask_host = p->logp_host = NULL;
    p->actB = p->actT = 0;
    p->fwdB = p->fwdT = 0;
    release_head(p);
}

void spade_policy_release_training_scratch(spade_policy *p) {
    free_acts(p);
    if (p->be.vt) BE->dealloc(BX, p->lora_acts);
    p->lora_acts = NULL;
    p->lora_acts_cap = 0;
}

int gpt_ensure_acts(spade_policy *p, int B, int T, char *err, size_t errlen) {
    if (B <= p->actB && T <= p->actT) return 0;
    int nB = B > p->actB ? B : p->actB, nT = T > p->actT ? T : p->actT;
    size_t L = p->L, C = p->C, NH = p->NH, BT = (size_t)nB * nT;
    /* Floats per (b, t) row over every buffer below (att's row is L*NH*nT,
     * and only backends with attention_probs have att; lse's is L*NH).
     * Config limits keep this under 2^33; the product with BT is checked so
     * that no size below can wrap into a small allocation. */
    size_t att_T = BE->attention_probs ? nT : 0;
    /* The MLP's widths: a GPT's 4C and 4C, a Llama's gate|up 2F and SwiGLU F;
     * RMSNorm keeps no mean; only a Llama has the compact q|k|v rows. */
    int llama = p->arch == SPADE_ARCH_LLAMA;
    size_t FF = llama ? 2 * (size_t)p->F : 4 * C, FH = llama ? (size_t)p->F : 4 * C;
    size_t MN = llama ? 0 : 1, QC = llama ? (size_t)p->QKV : 0;
    /* (the head's Vp-wide rows are not here: ensure_head sizes them by the targets) */
    size_t per_row = C + L * (10 * C + FF + FH + 4 + NH * att_T + NH) + C + 2 + 6 * C + FF + FH + QC;
    if (BT > INT_MAX || BT > SIZE_MAX / sizeof(float) / per_row) {
        spade_errf(err, errlen, "activations for batch %d x %d: %.3g bytes, more than this machine can address", nB, nT,
                   (double)BT * per_row * sizeof(float));
        return SPADE_POLICY_ENOMEM;
    }
    free_acts(p);
    size_t as[NUM_ACT_TENSORS] = {
        BT * C, /* encoded */
        L * BT * C,
        L * BT * MN,
        L * BT, /* ln1, mean, rstd */
        L * BT * 3 * C, /* qkv */
        L * BT * C, /* atty */
        L * nB * NH * nT * att_T, /* att: T x T backends only */
        L * nB * NH * nT, /* lse */
        L * BT * C,
        L * BT * C, /* attproj, residual2 */
        L * BT * C,
        L * BT * MN,
        L * BT, /* ln2, mean, rstd */
        L * BT * FF,
        L * BT * FH, /* fch, fch_gelu */
        L * BT * C,
        L * BT * C, /* fcproj, residual3 */
        BT * C,
        BT * MN,
        BT, /* lnf, mean, rstd */
        0,
        0,
        0, /* logits, probs, logp: the head's rows, in head_mem */
    };
    size_t gs[NUM_GACT_TENSORS] = {0, BT * C, BT * C, BT * 3 * C, BT * C, BT * FF, BT * FH, 0, BT * QC};
    size_t na = 0, ng = 0;
    for (int i = 0; i < NUM_ACT_TENSORS; i++) na += as[i];
    for (int i = 0; i < NUM_GACT_TENSORS; i++) ng += gs[i];
    p->acts_mem = BE->alloc(BX, na * sizeof(float));
    p->gacts_mem = BE->alloc(BX, ng * sizeof(float));
    p->io_mem = BE->alloc(BX, 2 * BT * sizeof(int));
    p->mask_host = malloc(BT * sizeof(float));
    p->logp_host = malloc(BT * sizeof(float));
    if (!p->acts_mem || !p->gacts_mem || !p->io_mem || !p->mask_host || !p->logp_host) {
        spade_errf(err, errlen, "cannot allocate activations for batch %d x %d (%.1f MiB) on %s", nB, nT,
                   (double)(na + ng) * 4 / 1048576.0, BE->name);
        free_acts(p);
        return SPADE_POLICY_ENOMEM;
    }
    float **ap[NUM_ACT_TENSORS] = {
        &p->acts.encoded, &p->acts.ln1,       &p->acts.ln1_mean, &p->acts.ln1_rstd, &p->acts.qkv,
        &p->acts.atty,    &p->acts.att,       &p->acts.lse,      &p->acts.attproj,  &p->acts.residual2,
        &p->acts.ln2,     &p->acts.ln2_mean,  &p->acts.ln2_rstd, &p->acts.fch,      &p->acts.fch_gelu,
        &p->acts.fcproj,  &p->acts.residual3, &p->acts.lnf,      &p->acts.lnf_mean, &p->acts.lnf_rstd,
        &p->acts.logits,  &p->acts.probs,     &p->acts.logp,
    };
    float *m = p->acts_mem;
    for (int i = 0; i < NUM_ACT_TENSORS; i++) {
        *ap[i] = m;
        m += as[i];
    }
    float **gp[NUM_GACT_TENSORS] = {
        &p->gacts.dlogits, &p->gacts.dresidual, &p->gacts.dln,   &p->gacts.dqkv,  &p->gacts.datty,
        &p->gacts.dfch,    &p->gacts.dfch_gelu, &p->gacts.dlogp, &p->gacts.dqkvc,
    };
    m = p->gacts_mem;
    for (int i = 0; i < NUM_GACT_TENSORS; i++) {
        *gp[i] = m;
        m += gs[i];
    }
    forget_head(p); /* the carving above pointed the head's views at 0 floats: none yet */
    p->tokens_dev = p->io_mem;
    p->targets_dev = p->io_mem + BT;
    p->actB = nB;
    p->actT = nT;
    return 0;
}

/* ---------------------------------------------------------------- the head's rows */

/* Grows the head's buffers to hold rows (>= 1) rows: exactly that many, since
 * a row is 2 Vp floats (Qwen2.5: 1.2 MB) and the next micro-batch usually
 * has about as many targets. */
static int ensure_head(spade_policy *p, size_t rows, char *err, size_t errlen) {
    if (rows <= p->head_cap) return 0;
    size_t C = p->C, Vp = p->Vp, per_row = 2 * Vp + 2 + 2 * C;
    if (rows > INT_MAX || rows > SIZE_MAX / sizeof(float) / per_row) {
        spade_errf(err, errlen, "the head's rows: %zu rows of %zu floats, more than this machine can address", rows,
                   per_row);
        return SPADE_POLICY_ENOMEM;
    }
    release_head(p);
    p->fwdB = p->fwdT = 0; /* the last forward's head rows are gone */
    p->head_mem = BE->alloc(BX, rows * per_row * sizeof(float));
    p->head_io = BE->alloc(BX, 2 * rows * sizeof(int));
    p->head_pos = malloc(2 * rows * sizeof(int));
    p->head_dl = malloc(rows * sizeof(float));
    if (!p->head_mem || !p->head_io || !p->head_pos || !p->head_dl) {
        spade_errf(err, errlen, "cannot allocate the head's %zu rows (%.1f MiB) on %s", rows,
                   (double)rows * per_row * 4 / 1048576.0, BE->name);
        release_head(p);
        return SPADE_POLICY_ENOMEM;
    }
    float *m = p->head_mem;
    p->acts.logits = p->gacts.dlogits = m; /* see GradActTensors: the gradient overwrites the logits */
    p->acts.probs = m + rows * Vp;
    p->acts.logp = p->acts.probs + rows * Vp;
    p->gacts.dlogp = p->acts.logp + rows;
    p->lnfc = p->gacts.dlogp + rows;
    p->dlnc = p->lnfc + rows * C;
    p->head_cap = rows;
    return 0;
}

long gpt_head_row(const spade_policy *p, size_t pos) {
    if (p->head_full) return pos < (size_t)p->head_n ? (long)pos : -1;
    long lo = 0, hi = p->head_n - 1; /* head_pos is increasing */
    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;
        if ((size_t)p->head_pos[mid] == pos) return mid;
        if ((size_t)p->head_pos[mid] < pos)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* The head after the final norm (acts.lnf, (B*T, C)): logits, and with
 * targets the softmax and log p(target) into logp_host (0 where there is no
 * target). On every position when head_all is set or every position has a
 * target (plain pretraining: the very ops of before, so the same bits);
 * otherwise on the compact rows only (see spade_policy's head_* fields). */
static int head_forward(spade_policy *p, const int *targets, int B, int T, char *err, size_t errlen) {
    size_t N = (size_t)B * T, n = 0;
    int C = p->C, V = p->V, Vp = p->Vp;
    if (targets)
        for (size_t i = 0; i < N; i++) n += targets[i] >= 0;
    else
        n = (size_t)B;
    int full = p->head_all || n == N;
    size_t rows = full ? N : n;
    int rc = ensure_head(p, rows ? rows : 1, err, errlen);
    if (rc) return rc;
    ActivationTensors a = p->acts;
    p->head_n = (int)rows;
    p->head_full = full;
    if (full) {
        CK(BE->matmul_forward(BX, a.logits, a.lnf, p->head, NULL, N, C, Vp));
        if (!targets) return 0;
        CK(BE->upload(BX, p->targets_dev, targets, N * sizeof(int)));
        p->head_tg = p->targets_dev;
        CK(BE->crossentropy_forward(BX, a.probs, a.logp, a.logits, p->head_tg, N, V, Vp));
        CK(BE->download(BX, p->logp_host, a.logp, N * sizeof(float)));
        return 0;
    }
    int *pos = p->head_pos, *tg = p->head_pos + p->head_cap;
    size_t k = 0;
    if (targets) {
        for (size_t i = 0; i < N; i++)
            if (targets[i] >= 0) pos[k] = (int)i, tg[k++] = targets[i];
    } else {
        for (int b = 0; b < B; b++) pos[k++] = b * T + T - 1;
    }
    if (targets) memset(p->logp_host, 0, N * sizeof(float));
    if (!rows) return 0; /* no target in the batch: no head row, every logp 0 */
    CK(BE->upload(BX, p->head_io, pos, rows * sizeof(int)));
    CK(BE->rows_gather(BX, p->lnfc, a.lnf, p->head_io, (int)rows, C));
    CK(BE->matmul_forward(BX, a.logits, p->lnfc, p->head, NULL, (int)rows, C, Vp));
    if (!targets) return 0;
    CK(BE->upload(BX, p->head_io + p->head_cap, tg, rows * sizeof(int)));
    p->head_tg = p->head_io + p->head_cap;
    CK(BE->crossentropy_forward(BX, a.probs, a.logp, a.logits, p->head_tg, (int)rows, V, Vp));
    CK(BE->download(BX, p->head_dl, a.logp, rows * sizeof(float)));
    for (size_t r = 0; r < rows; r++) p->logp_host[pos[r]] = p->head_dl[r];
    return 0;
}

/* The head's backward from dlogp (host, one per position): its weight
 * gradient into ghead (NULL: frozen) and its input gradient into d.dln
 * (B*T, C), zero on the positions without a head row. */
static int head_backward(spade_policy *p, const float *dlogp, float *ghead, char *err, size_t errlen) {
    size_t N = (size_t)p->fwdB * p->fwdT, rows = (size_t)p->head_n;
    int C = p->C, V = p->V, Vp = p->Vp;
    ActivationTensors a = p->acts;
    GradActTensors d = p->gacts;
    if (p->head_full) {
        CK(BE->upload(BX, d.dlogp, dlogp, N * sizeof(float)));
        CK(BE->crossentropy_backward(BX, d.dlogits, a.probs, p->head_tg, d.dlogp, N, V, Vp));
        CK(BE->matmul_backward(BX, d.dln, ghead, NULL, d.dlogits, a.lnf, p->head, N, C, Vp));
        return 0;
    }
    CK(BE->zero(BX, d.dln, N * C * sizeof(float)));
    if (!rows) return 0;
    for (size_t r = 0; r < rows; r++) p->head_dl[r] = dlogp[p->head_pos[r]];
    CK(BE->upload(BX, d.dlogp, p->head_dl, rows * sizeof(float)));
    CK(BE->crossentropy_backward(BX, d.dlogits, a.probs, p->head_tg, d.dlogp, (int)rows, V, Vp));
    CK(BE->matmul_backward(BX, p->dlnc, ghead, NULL, d.dlogits, p->lnfc, p->head, (int)rows, C, Vp));
    CK(BE->rows_scatter(BX, d.dln, p->dlnc, p->head_io, (int)rows, C));
    return 0;
}

/* ---------------------------------------------------------------- init */

/* Standard normal from the seeded stream (Box-Muller, both values used in
 * order), so initialisation is identical on every platform and backend. */
typedef struct {
    uint64_t s;
    int have;
    double spare;
} normal_rng;

static double normal(normal_rng *r) {
    if (r->have) {
        r->have = 0;
        return r->spare;
    }
    double u1 = gpt_rng_uniform(&r->s), u2 = gpt_rng_uniform(&r->s);
    if (u1 < 1e-300) u1 = 1e-300;
    double rad = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    r->spare = rad * sin(th);
    r->have = 1;
    return rad * cos(th);
}

static void init_weights(spade_policy *p, float *h) {
    if (p->arch == SPADE_ARCH_LLAMA) {
        llama_init_weights(p, h, p->cfg.seed ^ 0x5350414445ull);
        return;
    }
    /* GPT-2 initialisation: N(0, 0.02) for matrices, the two projections into
     * the residual stream scaled by 1/sqrt(2L) so its variance does not grow
     * with depth; gains 1, biases 0; padded vocabulary rows stay exactly 0. */
    normal_rng r = {p->cfg.seed ^ 0x5350414445ull /* "SPADE" */, 0, 0};
    size_t off[NUM_PARAM_TENSORS];
    size_t o = 0;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        off[i] = o;
        o += p->param_sizes[i];
    }
    memset(h, 0, p->num_params * sizeof(float));
    float resid_std = 0.02f / sqrtf(2.0f * p->L);
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        float *t = h + off[i];
        size_t n = p->param_sizes[i];
        switch (i) {
        case 0: /* wte: real vocabulary rows only */
            for (size_t j = 0; j < (size_t)p->V * p->C; j++) t[j] = (float)(0.02 * normal(&r));
            break;
        case 1:
        case 4:
        case 10: /* wpe, qkvw, fcw */
            for (size_t j = 0; j < n; j++) t[j] = (float)(0.02 * normal(&r));
            break;
        case 6:
        case 12: /* attprojw, fcprojw */
            for (size_t j = 0; j < n; j++) t[j] = (float)(resid_std * normal(&r));
            break;
        case 2:
        case 8:
        case 14: /* layernorm gains */
            for (size_t j = 0; j < n; j++) t[j] = 1.0f;
            break;
        default: /* biases */ break;
        }
    }
}

int spade_policy_new(spade_policy **out, const spade_gpt_config *cfg, char *err, size_t errlen) {
    return spade_policy_new_with_tokenizer(out, cfg, NULL, err, errlen);
}

int spade_policy_new_with_tokenizer(spade_policy **out, const spade_gpt_config *cfg, const spade_tokenizer *tok,
                                    char *err, size_t errlen) {
    return gpt_policy_new(out, cfg, tok, 1, err, errlen);
}

int gpt_policy_new(spade_policy **out, const spade_gpt_config *cfg, const spade_tokenizer *tok, int init, char *err,
                   size_t errlen) {
    *out = NULL;
    spade_tokenizer *tk = NULL;
    int rc;
    if (tok) {
        rc = spade_tokenizer_clone(&tk, tok, err, errlen);
    } else if (!strcmp(cfg->tokenizer, "bpe")) {
        if (!cfg->tokenizer_file[0]) {
            spade_errf(err, errlen,
                       "policy.tokenizer = bpe needs policy.tokenizer_file (a file written by "
                       "spade tokenizer train)");
            return SPADE_POLICY_EINVAL;
        }
        char e[600];
        rc = spade_tokenizer_load(&tk, cfg->tokenizer_file, e, sizeof e);
        if (rc) spade_errf(err, errlen, "policy.tokenizer_file: %s", e);
    } else {
        rc = spade_tokenizer_new_bytes(&tk, err, errlen);
    }
    if (rc) return rc;
    spade_gpt_config c2 = *cfg;
    c2.vocab = spade_tokenizer_vocab(tk);
    snprintf(c2.tokenizer, sizeof c2.tokenizer, "%s", spade_tokenizer_kind(tk));
    spade_policy *p;
    rc = gpt_alloc(&p, &c2, err, errlen);
    if (rc) {
        spade_tokenizer_free(tk);
        return rc;
    }
    p->tok = tk;
    if (!init) { /* the backend's alloc zeroed the parameters; the caller sets them */
        *out = p;
        return 0;
    }
    float *h = malloc(p->num_params * sizeof(float));
    if (!h) {
        spade_policy_free(p);
        spade_errf(err, errlen, "out of host memory for %zu parameters", p->num_params);
        return SPADE_POLICY_ENOMEM;
    }
    init_weights(p, h);
    rc = spade_policy_set_params(p, h, err, errlen);
    free(h);
    if (!rc && cfg->lora_rank)
        rc = gpt_lora_enable(p, cfg->lora_rank, cfg->lora_alpha > 0 ? cfg->lora_alpha : (float)cfg->lora_rank,
                             cfg->lora_targets ? cfg->lora_targets : LORA_ALL, err, errlen);
    if (rc) {
        spade_policy_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void spade_policy_free(spade_policy *p) {
    if (!p) return;
    free_acts(p);
    gpt_lora_free(p);
    if (p->be.vt) {
        if (!p->params_borrowed) BE->dealloc(BX, p->params_mem);
        BE->dealloc(BX, p->grads_mem);
        BE->dealloc(BX, p->m_mem);
        BE->dealloc(BX, p->v_mem);
        spade_decoder_free(p->dec);
        policy_q8_free(p);
        spade_backend_close(&p->be);
    }
    spade_tokenizer_free(p->tok);
    free(p);
}

/* A copy's origin (the base file, its hash) and, on a LoRA source, adapters
 * of the same rank holding the source's values: the tail both clones share.
 * The hash goes first: with it gpt_lora_enable does not read the base file
 * again. 0, or the error. */
static int take_origin_and_adapters(spade_policy *p, const spade_policy *src, char *err, size_t errlen) {
    p->origin_kind = src->origin_kind;
    memcpy(p->origin, src->origin, sizeof p->origin);
    memcpy(p->origin_sha256, src->origin_sha256, sizeof p->origin_sha256);
    if (!src->lora_r) return 0;
    float *a = malloc(src->ntrain * sizeof(float));
    int rc = a ? gpt_lora_enable(p, src->lora_r, src->lora_alpha, src->lora_mask, err, errlen) : SPADE_POLICY_ENOMEM;
    if (!rc) rc = spade_policy_get_trainable((spade_policy *)src, a, err, errlen);
    if (!rc) rc = spade_policy_set_trainable(p, a, err, errlen);
    if (!a) spade_errf(err, errlen, "out of host memory for %zu adapter floats", src->ntrain);
    free(a);
    return rc;
}

int spade_policy_clone(spade_policy **out, const spade_policy *src, const char *backend, char *err, size_t errlen) {
    spade_gpt_config cfg = src->cfg;
    if (backend) snprintf(cfg.backend, sizeof cfg.backend, "%s", backend);
    spade_policy *p;
    int rc = gpt_alloc(&p, &cfg, err, errlen);
    if (rc) return rc;
    if (src->tok && (rc = spade_tokenizer_clone(&p->tok, src->tok, err, errlen))) {
        spade_policy_free(p);
        return rc;
    }
    float *h = malloc(p->num_params * sizeof(float));
    if (!h) {
        spade_policy_free(p);
        spade_errf(err, errlen, "out of host memory");
        return SPADE_POLICY_ENOMEM;
    }
    rc = spade_policy_get_params((spade_policy *)src, h, err, errlen);
    if (!rc) rc = spade_policy_set_params(p, h, err, errlen);
    free(h);
    if (!rc) rc = take_origin_and_adapters(p, src, err, errlen);
    if (rc) {
        spade_policy_free(p);
        return rc;
    }
    p->step = src->step;
    *out = p;
    return 0;
}

int spade_policy_clone_adapters(spade_policy **out, const spade_policy *src, char *err, size_t errlen) {
    *out = NULL;
    if (!src->lora_r) return spade_policy_clone(out, src, src->be.vt->name, err, errlen);
    spade_gpt_config cfg = src->cfg;
    snprintf(cfg.backend, sizeof cfg.backend, "%s", src->be.vt->name);
    /* the source's pending work on its weights is done before they are read through another context */
    if (src->be.vt->sync && src->be.vt->sync(src->be.ctx))
        return gpt_backend_fail((spade_policy *)src, "sync before sharing the weights", err, errlen);
    spade_policy *p;
    int rc = alloc_policy(&p, &cfg, src, err, errlen);
    if (rc) return rc;
    if (src->tok && (rc = spade_tokenizer_clone(&p->tok, src->tok, err, errlen))) {
        spade_policy_free(p);
        return rc;
    }
    rc = take_origin_and_adapters(p, src, err, errlen);
    if (rc) {
        spade_policy_free(p);
        return rc;
    }
    p->step = src->step;
    *out = p;
    return 0;
}

int spade_policy_shares_weights(const spade_policy *p) { return p->params_borrowed; }

const spade_gpt_config *spade_policy_config(const spade_policy *p) { return &p->cfg; }
const char *spade_policy_backend_name(const spade_policy *p) { return p->be.vt->name; }
const char *spade_policy_backend_note(const spade_policy *p) { return p->be_note; }
size_t spade_policy_num_params(const spade_policy *p) { return p->num_params; }
long spade_policy_steps(const spade_policy *p) { return p->step; }

spade_tokenizer *spade_policy_tokenizer(spade_policy *p) {
    /* a policy made without one (gpt_alloc's callers attach theirs) has bytes */
    if (!p->tok && p->V == SPADE_VOCAB) spade_tokenizer_new_bytes(&p->tok, NULL, 0);
    return p->tok;
}

int spade_policy_tensor(const spade_policy *p, int i, const char **name, size_t *offset, size_t *count) {
    if (i < 0 || i >= p->ntensors) return -1;
    size_t o = 0;
    for (int j = 0; j < i; j++) o += p->param_sizes[j];
    if (name) *name = p->arch == SPADE_ARCH_LLAMA ? llama_param_names[i] : gpt_param_names[i];
    if (offset) *offset = o;
    if (count) *count = p->param_sizes[i];
    return 0;
}

int spade_policy_get_params(spade_policy *p, float *host, char *err, size_t errlen) {
    CK(BE->download(BX, host, p->params_mem, p->num_params * sizeof(float)));
    return 0;
}
int spade_policy_set_params(spade_policy *p, const float *host, char *err, size_t errlen) {
    if (p->params_borrowed) {
        spade_errf(err, errlen,
                   "this policy reads another's frozen weights in place "
                   "(spade_policy_clone_adapters): its weights cannot be set");
        return SPADE_POLICY_EINVAL;
    }
    p->q8_valid = 0; /* the 8-bit sampling copies are stale */
    CK(BE->upload(BX, p->params_mem, host, p->num_params * sizeof(float)));
    return 0;
}
/* Gradients and moments not allocated yet are zero (gpt_alloc). */
int spade_policy_get_grads(spade_policy *p, float *host, char *err, size_t errlen) {
    if (!p->grads_mem)
        memset(host, 0, p->ntrain * sizeof(float));
    else
        CK(BE->download(BX, host, p->grads_mem, p->ntrain * sizeof(float)));
    return 0;
}
int spade_policy_get_moments(spade_policy *p, float *m, float *v, char *err, size_t errlen) {
    float *h[2] = {m, v}, *d[2] = {p->m_mem, p->v_mem};
    for (int i = 0; i < 2; i++) {
        if (!h[i]) continue;
        if (!d[i])
            memset(h[i], 0, p->ntrain * sizeof(float));
        else
            CK(BE->download(BX, h[i], d[i], p->ntrain * sizeof(float)));
    }
    return 0;
}
int spade_policy_set_moments(spade_policy *p, const float *m, const float *v, char *err, size_t errlen) {
    if (!m && !v) return 0;
    int rc = gpt_ensure_moments(p, err, errlen);
    if (rc) return rc;
    if (m) CK(BE->upload(BX, p->m_mem, m, p->ntrain * sizeof(float)));
    if (v) CK(BE->upload(BX, p->v_mem, v, p->ntrain * sizeof(float)));
    return 0;
}
size_t spade_policy_num_trainable(const spade_policy *p) { return p->ntrain; }

/* ---------------------------------------------------------------- forward */

int spade_policy_forward(spade_policy *p, const int *tokens, const int *targets, const float *mask, int B, int T,
                         float *loss, float *logp, char *err, size_t errlen) {
    /* The ops count rows (B*T) in int: more would wrap, so it is refused
     * before anything, the caller's tokens included, is read. */
    if (B < 1 || T < 1 || T > p->maxT || (size_t)B * T > INT_MAX) {
        spade_errf(err, errlen, "forward: batch %d x %d outside 1.. x 1..%d (policy.context), %d rows at most", B, T,
                   p->maxT, INT_MAX);
        return SPADE_POLICY_EINVAL;
    }
    size_t N = (size_t)B * T;
    for (size_t i = 0; i < N; i++) {
        if (tokens[i] < 0 || tokens[i] >= p->V) {
            spade_errf(err, errlen, "forward: token %d at index %zu is outside the vocabulary [0, %d)", tokens[i], i,
                       p->V);
            return SPADE_POLICY_EINVAL;
        }
        if (targets && (targets[i] < -1 || targets[i] >= p->V)) {
            spade_errf(err, errlen, "forward: target %d at index %zu is neither -1 nor in [0, %d)", targets[i], i,
                       p->V);
            return SPADE_POLICY_EINVAL;
        }
    }
    int rc = gpt_ensure_acts(p, B, T, err, errlen);
    if (rc) return rc;
    /* From here the activations are being overwritten: until this pass
     * completes there is no forward for backward to differentiate (a backend
     * op failing halfway would otherwise leave the old shape over new data). */
    p->fwdB = p->fwdT = 0;
    int L = p->L, C = p->C, NH = p->NH;
    ParameterTensors w = p->params;
    ActivationTensors a = p->acts;
    size_t BT = N, LBT = (size_t)p->actB * p->actT; /* layer stride uses the capacity */

    CK(BE->upload(BX, p->tokens_dev, tokens, N * sizeof(int)));
    if (p->arch == SPADE_ARCH_LLAMA) {
        if ((rc = llama_forward(p, B, T, err, errlen))) return rc;
        goto body_done;
    }
    CK(BE->encoder_forward(BX, a.encoded, p->tokens_dev, w.wte, w.wpe, B, T, C, 0));
    for (int l = 0; l < L; l++) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * LBT * C;
        float *ln1 = a.ln1 + l * LBT * C, *ln1m = a.ln1_mean + l * LBT, *ln1r = a.ln1_rstd + l * LBT;
        float *qkv = a.qkv + l * LBT * 3 * C, *atty = a.atty + l * LBT * C;
        float *att = BE->attention_probs ? a.att + (size_t)l * p->actB * NH * p->actT * p->actT : NULL;
        float *lse = a.lse + (size_t)l * p->actB * NH * p->actT;
        float *attproj = a.attproj + l * LBT * C, *res2 = a.residual2 + l * LBT * C;
        float *ln2 = a.ln2 + l * LBT * C, *ln2m = a.ln2_mean + l * LBT, *ln2r = a.ln2_rstd + l * LBT;
        float *fch = a.fch + l * LBT * 4 * C, *fchg = a.fch_gelu + l * LBT * 4 * C;
        float *fcproj = a.fcproj + l * LBT * C, *res3 = a.residual3 + l * LBT * C;
        size_t C3 = 3 * (size_t)C, C4 = 4 * (size_t)C, CC = (size_t)C * C;
        CK(BE->layernorm_forward(BX, ln1, ln1m, ln1r, residual, w.ln1w + l * C, w.ln1b + l * C, BT, C));
        CK(BE->matmul_forward(BX, qkv, ln1, w.qkvw + l * C3 * C, w.qkvb + l * C3, BT, C, 3 * C));
        CK(BE->attention_forward(BX, atty, lse, att, qkv, B, T, C, NH));
        CK(BE->matmul_forward(BX, attproj, atty, w.attprojw + l * CC, w.attprojb + l * C, BT, C, C));
        CK(BE->residual_forward(BX, res2, residual, attproj, BT * C));
        CK(BE->layernorm_forward(BX, ln2, ln2m, ln2r, res2, w.ln2w + l * C, w.ln2b + l * C, BT, C));
        CK(BE->matmul_forward(BX, fch, ln2, w.fcw + l * C4 * C, w.fcb + l * C4, BT, C, 4 * C));
        CK(BE->gelu_forward(BX, fchg, fch, BT * C4));
        CK(BE->matmul_forward(BX, fcproj, fchg, w.fcprojw + l * C * C4, w.fcprojb + l * C, BT, 4 * C, C));
        CK(BE->residual_forward(BX, res3, res2, fcproj, BT * C));
    }
    float *last = a.residual3 + (L - 1) * LBT * C;
    CK(BE->layernorm_forward(BX, a.lnf, a.lnf_mean, a.lnf_rstd, last, w.lnfw, w.lnfb, BT, C));
body_done:
    if ((rc = head_forward(p, targets, B, T, err, errlen))) return rc;
    p->fwdB = B;
    p->fwdT = T;
    p->fwd_has_targets = targets != NULL;
    if (!targets) {
        if (loss) *loss = 0.0f;
        return 0;
    }
    double sum = 0.0, msum = 0.0;
    for (size_t i = 0; i < N; i++) {
        float m = targets[i] < 0 ? 0.0f : (mask ? mask[i] : 1.0f);
        p->mask_host[i] = m;
        msum += m;
        sum += (double)m * -p->logp_host[i];
    }
    p->mask_sum = msum;
    if (loss) *loss = msum > 0 ? (float)(sum / msum) : 0.0f;
    if (logp) memcpy(logp, p->logp_host, N * sizeof(float));
    return 0;
}

/* ---------------------------------------------------------------- backward */

int spade_policy_backward_logp(spade_policy *p, const float *dlogp, char *err, size_t errlen) {
    if (!p->fwdB || !p->fwd_has_targets) {
        spade_errf(err, errlen, "backward: no forward pass with targets to differentiate");
        return SPADE_POLICY_EINVAL;
    }
    int rc = gpt_ensure_grads(p, err, errlen); /* before g below copies the views */
    if (rc) return rc;
    int B = p->fwdB, T = p->fwdT, L = p->L, C = p->C, NH = p->NH;
    size_t BT = (size_t)B * T, LBT = (size_t)p->actB * p->actT;
    size_t C3 = 3 * (size_t)C, C4 = 4 * (size_t)C, CC = (size_t)C * C;
    ParameterTensors w = p->params, g = p->grads;
    ActivationTensors a = p->acts;
    GradActTensors d = p->gacts;

    /* logits = lnf @ head^T; a tied head is wte, which collects this gradient
     * and the encoder's; a LoRA policy's base (lgrads) has none */
    int llama = p->arch == SPADE_ARCH_LLAMA;
    float *ghead = !llama ? g.wte : p->tied ? p->lgrads.wte : p->lgrads.head;
    if ((rc = head_backward(p, dlogp, ghead, err, errlen))) return rc;
    if (llama) return llama_backward(p, B, T, err, errlen);
    CK(BE->zero(BX, d.dresidual, BT * C * sizeof(float)));
    float *last = a.residual3 + (L - 1) * LBT * C;
    CK(BE->layernorm_backward(BX, d.dresidual, g.lnfw, g.lnfb, d.dln, last, w.lnfw, a.lnf_mean, a.lnf_rstd, BT, C));
    for (int l = L - 1; l >= 0; l--) {
        float *residual = l == 0 ? a.encoded : a.residual3 + (l - 1) * LBT * C;
        float *ln1 = a.ln1 + l * LBT * C, *ln1m = a.ln1_mean + l * LBT, *ln1r = a.ln1_rstd + l * LBT;
        float *qkv = a.qkv + l * LBT * C3, *atty = a.atty + l * LBT * C;
        float *att = BE->attention_probs ? a.att + (size_t)l * p->actB * NH * p->actT * p->actT : NULL;
        float *lse = a.lse + (size_t)l * p->actB * NH * p->actT;
        float *res2 = a.residual2 + l * LBT * C;
        float *ln2 = a.ln2 + l * LBT * C, *ln2m = a.ln2_mean + l * LBT, *ln2r = a.ln2_rstd + l * LBT;
        float *fch = a.fch + l * LBT * C4, *fchg = a.fch_gelu + l * LBT * C4;
        /* MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))) */
        CK(BE->matmul_backward(BX, d.dfch_gelu, g.fcprojw + l * C * C4, g.fcprojb + l * C, d.dresidual, fchg,
                               w.fcprojw + l * C * C4, BT, 4 * C, C));
        CK(BE->gelu_backward(BX, d.dfch, fch, d.dfch_gelu, BT * C4));
        CK(BE->matmul_backward(BX, d.dln, g.fcw + l * C4 * C, g.fcb + l * C4, d.dfch, ln2, w.fcw + l * C4 * C, BT, C,
                               4 * C));
        CK(BE->layernorm_backward(BX, d.dresidual, g.ln2w + l * C, g.ln2b + l * C, d.dln, res2, w.ln2w + l * C, ln2m,
                                  ln2r, BT, C));
        /* attention: residual2 = residual + attproj(attention(qkv(ln1(residual)))) */
        CK(BE->matmul_backward(BX, d.datty, g.attprojw + l * CC, g.attprojb + l * C, d.dresidual, atty,
                               w.attprojw + l * CC, BT, C, C));
        CK(BE->attention_backward(BX, d.dqkv, d.datty, qkv, atty, lse, att, B, T, C, NH));
        CK(BE->matmul_backward(BX, d.dln, g.qkvw + l * C3 * C, g.qkvb + l * C3, d.dqkv, ln1, w.qkvw + l * C3 * C, BT, C,
                               3 * C));
        CK(BE->layernorm_backward(BX, d.dresidual, g.ln1w + l * C, g.ln1b + l * C, d.dln, residual, w.ln1w + l * C,
                                  ln1m, ln1r, BT, C));
    }
    CK(BE->encoder_backward(BX, g.wte, g.wpe, d.dresidual, p->tokens_dev, B, T, C));
    return 0;
}

int spade_policy_backward(spade_policy *p, float scale, char *err, size_t errlen) {
    if (!p->fwdB || !p->fwd_has_targets) {
        spade_errf(err, errlen, "backward: no forward pass with targets to differentiate");
        return SPADE_POLICY_EINVAL;
    }
    size_t N = (size_t)p->fwdB * p->fwdT;
    float *dl = malloc(N * sizeof(float));
    if (!dl) {
        spade_errf(err, errlen, "out of host memory");
        return SPADE_POLICY_ENOMEM;
    }
    /* loss = -sum(mask * logp) / sum(mask)  =>  dloss/dlogp = -mask / sum(mask) */
    double inv = p->mask_sum > 0 ? 1.0 / p->mask_sum : 0.0;
    for (size_t i = 0; i < N; i++) dl[i] = (float)(-(double)p->mask_host[i] * inv * scale);
    int rc = spade_policy_backward_logp(p, dl, err, errlen);
    free(dl);
    return rc;
}

int spade_policy_zero_grad(spade_policy *p, char *err, size_t errlen) {
    if (!p->grads_mem) return 0; /* none yet: they are zero */
    CK(BE->zero(BX, p->grads_mem, p->ntrain * sizeof(float)));
    return 0;
}

/* ---------------------------------------------------------------- AdamW */

void spade_adamw_opts_default(spade_adamw_opts *o) {
    o->lr = 3e-4f;
    o->beta1 = 0.9f;
    o->beta2 = 0.95f;
    o->eps = 1e-8f;
    o->weight_decay = 0.1f;
    o->grad_clip = 1.0f;
}

int spade_policy_step(spade_policy *p, const spade_adamw_opts *o, float *grad_norm, char *err, size_t errlen) {
    /* Checked before anything changes: each of these writes NaN or inf into
     * every weight (beta = 1 makes the bias correction 1 - 1^t = 0; eps = 0
     * makes 0/0 wherever a gradient and its moments are 0). NaN fails every test. */
    if (!(o->lr >= 0 && isfinite(o->lr)) || !(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1) ||
        !(o->eps > 0 && isfinite(o->eps)) || !(o->weight_decay >= 0 && isfinite(o->weight_decay)) ||
        isnan(o->grad_clip)) {
        spade_errf(err, errlen,
                   "adamw: lr = %g, beta1 = %g, beta2 = %g, eps = %g, weight_decay = %g, grad_clip = %g: "
                   "need finite lr >= 0, betas in [0, 1), eps > 0, weight_decay >= 0, grad_clip not NaN",
                   o->lr, o->beta1, o->beta2, o->eps, o->weight_decay, o->grad_clip);
        return SPADE_POLICY_EINVAL;
    }
    int rc = gpt_ensure_grads(p, err, errlen);
    if (!rc) rc = gpt_ensure_moments(p, err, errlen);
    if (rc) return rc;
    double ss;
    CK(BE->sumsq(BX, p->grads_mem, p->ntrain, &ss));
    double norm = sqrt(ss);
    if (grad_norm) *grad_norm = (float)norm;
    if (!isfinite(norm)) {
        /* A NaN step would poison every weight; refuse it and keep the model. */
        spade_policy_zero_grad(p, err, errlen);
        spade_errf(err, errlen, "step %ld: gradient norm is not finite; step skipped", p->step + 1);
        return SPADE_POLICY_EINVAL;
    }
    float scale = 1.0f;
    if (o->grad_clip > 0 && norm > o->grad_clip) scale = (float)(o->grad_clip / norm);
    p->step++;
    size_t off = 0;
    if (p->lora_r) {
        /* the base is frozen: the 8-bit sampling copies hold it alone (the
         * adapters run in F32 beside them), so they stay valid, and an update
         * does not requantize Qwen's 0.5 B weights */
        if ((rc = lora_step(p, o, scale, err, errlen))) return rc;
        return spade_policy_zero_grad(p, err, errlen);
    }
    p->q8_valid = 0; /* every weight moves: the 8-bit sampling copies are stale */
    const int *decay = p->arch == SPADE_ARCH_LLAMA ? llama_param_decay : param_decay;
    for (int i = 0; i < p->ntensors; i++) {
        size_t n = p->param_sizes[i];
        if (!n) continue; /* a Llama without biases or with a tied head */
        CK(BE->adamw(BX, p->params_mem + off, p->grads_mem + off, p->m_mem + off, p->v_mem + off, n, o->lr, o->beta1,
                     o->beta2, o->eps, decay[i] ? o->weight_decay : 0.0f, scale, (int)p->step));
        off += n;
    }
    return spade_policy_zero_grad(p, err, errlen);
}

/* ---------------------------------------------------------------- log-probs */

int spade_policy_logprobs(spade_policy *p, const int *tokens, int B, int T, float *logp, char *err, size_t errlen) {
    size_t N = (size_t)B * T;
    int *tg = malloc((N ? N : 1) * sizeof(int));
    if (!tg) {
        spade_errf(err, errlen, "out of host memory");
        return SPADE_POLICY_ENOMEM;
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) tg[(size_t)b * T + t] = t + 1 < T ? tokens[(size_t)b * T + t + 1] : -1;
    int rc = spade_policy_forward(p, tokens, tg, NULL, B, T, NULL, logp, err, errlen);
    free(tg);
    return rc;
}

int spade_policy_completion_logprobs(spade_policy *p, const int *prompt, int plen, const int *completion, int clen,
                                     float *out, char *err, size_t errlen) {
    if (plen < 1 || clen < 1 || plen + clen - 1 > p->maxT) {
        spade_errf(err, errlen, "completion_logprobs: prompt %d + completion %d tokens exceed the context %d", plen,
                   clen, p->maxT);
        return SPADE_POLICY_EINVAL;
    }
    /* Checked here, not left to forward: a completion token < 0 as the last
     * target would read as -1, "nothing to predict", and come back as log-prob 0. */
    for (int i = 0; i < clen; i++)
        if (completion[i] < 0 || completion[i] >= p->V) {
            spade_errf(err, errlen, "completion_logprobs: completion token %d at %d is outside the vocabulary [0, %d)",
                       completion[i], i, p->V);
            return SPADE_POLICY_EINVAL;
        }
    int T = plen + clen - 1;
    int *seq = malloc((size_t)(T + 1) * sizeof(int));
    float *lp = malloc((size_t)T * sizeof(float));
    if (!seq || !lp) {
        free(seq);
        free(lp);
        spade_errf(err, errlen, "out of host memory");
        return SPADE_POLICY_ENOMEM;
    }
    memcpy(seq, prompt, (size_t)plen * sizeof(int));
    memcpy(seq + plen, completion, (size_t)clen * sizeof(int));
    /* targets = seq shifted: position plen-1+i predicts completion[i] */
    int *tg = seq + 1;
    int rc = spade_policy_forward(p, seq, tg, NULL, 1, T, NULL, lp, err, errlen);
    if (!rc)
        for (int i = 0; i < clen; i++) out[i] = lp[plen - 1 + i];
    free(seq);
    free(lp);
    return rc;
}
