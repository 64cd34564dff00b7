/* tokenizer_gguf.c — the third kind of spade_tokenizer ("gguf"): a pretrained
 * model's own byte-level BPE (bpe.h) behind the tokenizer.h API, so that
 * pretrain, GRPO, sampling and decoding keep calling the same functions.
 *
 * What it is: building that BPE from a GGUF file's tokenizer.ggml.* metadata
 * (hostile: every array's type and length is checked before use), and the
 * tokenizer.h entry points for this kind: ids are the model's (0..V-1, no
 * byte tokens at 0..255, no spade specials at 256..262), encoding never adds
 * BOS/EOS and never turns text into a control token, a control token decodes
 * to nothing (or its name with render_special), spade_tokenizer_special maps
 * SPADE_TOK_END to the model's end-of-sequence token.
 * The serialised form (what a checkpoint stores) REFERENCES the model file:
 *   spade-gguf-tokenizer 1
 *   model SPEC            the NAME or absolute path it was read from
 *   vocab V
 *   hash HHHHHHHHHHHHHHHH FNV-1a 64 of the token texts, types and merges
 * and parsing it reopens that file and refuses one whose tokenizer hashes
 * differently. The token arrays themselves are not copied into checkpoints.
 * What it is not: the BPE itself (bpe.c) or the GGUF reader (gguf.c).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/backend.h"
#include "policy/bpe.h"
#include "policy/gguf.h"
#include "policy/models.h"
#include "policy/tokenizer_internal.h"

#define GG_MAGIC "spade-gguf-tokenizer 1\n"

/* Shared by clones: encoding a spade_bpe is const and thread-safe. */
struct spade_gguf_tok {
    spade_bpe *b;
    atomic_int refs;
    char spec[1024];
    uint64_t hash;
    int vocab;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

/* Reads the tokenizer out of an open GGUF file (name for messages). */
static int bpe_from_gguf(const spade_gguf *g, const char *name, spade_bpe **out, uint64_t *hash, char *err,
                         size_t errlen) {
    *out = NULL;
    char model[32], pre[64];
    if (spade_gguf_get_cstr(g, "tokenizer.ggml.model", model, sizeof model, err, errlen)) return -1;
    if (strcmp(model, "gpt2")) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.model is '%s': only 'gpt2' (byte-level BPE) is supported", name,
                   model);
        return -1;
    }
    if (spade_gguf_get_cstr(g, "tokenizer.ggml.pre", pre, sizeof pre, err, errlen)) return -1;
    const spade_gguf_value *tv, *mv, *yv = spade_gguf_get(g, "tokenizer.ggml.token_type");
    uint64_t nt, nm = 0, ny = 0;
    if (spade_gguf_get_array(g, "tokenizer.ggml.tokens", SPADE_GGUF_STRING, &tv, &nt, err, errlen)) return -1;
    if (spade_gguf_get_array(g, "tokenizer.ggml.merges", SPADE_GGUF_STRING, &mv, &nm, err, errlen)) return -1;
    if (nt < 1 || nt > SPADE_POLICY_MAX_VOCAB) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.tokens: %llu tokens (spade takes 1..%d)", name,
                   (unsigned long long)nt, SPADE_POLICY_MAX_VOCAB);
        return -1;
    }
    if (nm > SPADE_BPE_MAX_MERGES) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.merges: %llu merges (at most %d)", name, (unsigned long long)nm,
                   SPADE_BPE_MAX_MERGES);
        return -1;
    }
    if (yv) {
        if (spade_gguf_value_type(yv) != SPADE_GGUF_ARRAY || (ny = spade_gguf_array_len(yv)) != nt) {
            spade_errf(err, errlen, "%s: tokenizer.ggml.token_type: want an array of %llu integers", name,
                       (unsigned long long)nt);
            return -1;
        }
    }
    const char **tok = calloc(nt, sizeof *tok), **mer = calloc(nm + 1, sizeof *mer);
    size_t *tl = calloc(nt, sizeof *tl), *ml = calloc(nm + 1, sizeof *ml);
    int32_t *ty = calloc(nt, sizeof *ty);
    int rc = -1;
    if (!tok || !mer || !tl || !ml || !ty) {
        spade_errf(err, errlen, "%s: out of memory for %llu tokens", name, (unsigned long long)nt);
        goto done;
    }
    uint64_t h = 0xCBF29CE484222325ull;
    for (uint64_t i = 0; i < nt; i++) {
        int64_t v = 1;
        if (spade_gguf_array_str(tv, i, &tok[i], &tl[i])) {
            spade_errf(err, errlen, "%s: tokenizer.ggml.tokens[%llu] is not a string", name, (unsigned long long)i);
            goto done;
        }
        if (yv && (spade_gguf_array_i64(yv, i, &v) || v < 0 || v > 255)) {
            spade_errf(err, errlen, "%s: tokenizer.ggml.token_type[%llu]: not a type 0..255", name,
                       (unsigned long long)i);
            goto done;
        }
        ty[i] = (int32_t)v;
        uint64_t l = tl[i];
        h = fnv(fnv(fnv(h, &l, sizeof l), tok[i], tl[i]), &ty[i], sizeof ty[i]);
    }
    for (uint64_t i = 0; i < nm; i++) {
        if (spade_gguf_array_str(mv, i, &mer[i], &ml[i])) {
            spade_errf(err, errlen, "%s: tokenizer.ggml.merges[%llu] is not a string", name, (unsigned long long)i);
            goto done;
        }
        uint64_t l = ml[i];
        h = fnv(fnv(h, &l, sizeof l), mer[i], ml[i]);
    }
    spade_bpe_config cfg = {
        .n_tokens = (int)nt,
        .tokens = tok,
        .token_lens = tl,
        .token_types = ty,
        .n_merges = (int)nm,
        .merges = mer,
        .merge_lens = ml,
        .pre = pre,
        .bos_id = SPADE_BPE_UNSET,
        .eos_id = SPADE_BPE_UNSET,
        .add_bos = SPADE_BPE_UNSET,
        .add_eos = SPADE_BPE_UNSET,
    };
    static const char *const idkeys[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    int *ids[2] = {&cfg.bos_id, &cfg.eos_id};
    for (int k = 0; k < 2; k++) {
        int64_t v;
        if (!spade_gguf_get(g, idkeys[k])) continue;
        if (spade_gguf_get_i64(g, idkeys[k], &v, err, errlen)) goto done;
        if (v < -1 || v >= (int64_t)nt) {
            spade_errf(err, errlen, "%s: %s = %lld: outside the vocabulary of %llu", name, idkeys[k], (long long)v,
                       (unsigned long long)nt);
            goto done;
        }
        *ids[k] = (int)v;
    }
    static const char *const addkeys[2] = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"};
    int *adds[2] = {&cfg.add_bos, &cfg.add_eos};
    for (int k = 0; k < 2; k++)
        if (spade_gguf_get(g, addkeys[k]) && spade_gguf_get_bool(g, addkeys[k], adds[k], err, errlen)) goto done;
    h = fnv(h, pre, strlen(pre));
    *hash = h;
    rc = spade_bpe_new(out, &cfg, name, err, errlen);
done:
    free(tok);
    free(mer);
    free(tl);
    free(ml);
    free(ty);
    return rc;
}

int spade_tokenizer_from_gguf(spade_tokenizer **out, const spade_gguf *g, const char *spec, char *err, size_t errlen) {
    *out = NULL;
    if (strlen(spec) >= sizeof((struct spade_gguf_tok *)0)->spec || strchr(spec, '\n')) {
        spade_errf(err, errlen, "%s: model name or path too long (or holds a newline)", spec);
        return SPADE_POLICY_EINVAL;
    }
    struct spade_gguf_tok *gg = calloc(1, sizeof *gg);
    spade_tokenizer *t = gg ? spade_tok_alloc(0) : NULL;
    if (!t) {
        free(gg);
        spade_errf(err, errlen, "tokenizer: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    if (bpe_from_gguf(g, spec, &gg->b, &gg->hash, err, errlen)) {
        free(gg);
        spade_tokenizer_free(t);
        return SPADE_POLICY_EFORMAT;
    }
    atomic_init(&gg->refs, 1);
    snprintf(gg->spec, sizeof gg->spec, "%s", spec);
    gg->vocab = spade_bpe_vocab(gg->b);
    t->gg = gg;
    *out = t;
    return 0;
}

int spade_tokenizer_from_model(spade_tokenizer **out, const char *spec, char *err, size_t errlen) {
    char path[4096], ref[4096];
    spade_gguf *g = NULL;
    *out = NULL;
    if (spade_model_resolve(spec, path, sizeof path, err, errlen)) return SPADE_POLICY_EIO;
    if (spade_gguf_open(&g, path, err, errlen)) return SPADE_POLICY_EIO;
    /* what a checkpoint would reference: the name, or the file's absolute path */
    if (!spade_model_find(spec) && spec[0] != '/' && realpath(path, ref)) spec = ref;
    int rc = spade_tokenizer_from_gguf(out, g, spec, err, errlen);
    spade_gguf_free(g);
    return rc;
}

const struct spade_bpe *spade_tokenizer_bpe(const spade_tokenizer *t) { return t->gg ? t->gg->b : NULL; }

const char *spade_tokenizer_gguf_model(const spade_tokenizer *t) { return t->gg ? t->gg->spec : NULL; }

int spade_tokenizer_special(const spade_tokenizer *t, int tok) {
    if (!t->gg) return tok >= 256 && tok < SPADE_TOK_COUNT ? tok : -1;
    return tok == SPADE_TOK_END ? spade_bpe_eos(t->gg->b) : -1;
}

int spade_tokenizer_end_of_turn(const spade_tokenizer *t) {
    if (!t->gg) return SPADE_TOK_END;
    int e = spade_bpe_find(t->gg->b, "<|im_end|>");
    return e >= 0 ? e : spade_bpe_eos(t->gg->b);
}

int spade_tokenizer_turn_stops(const spade_tokenizer *t, int *out, int cap) {
    int n = 0, e = spade_tokenizer_end_of_turn(t), eos = t->gg ? spade_bpe_eos(t->gg->b) : -1;
    if (e >= 0 && n < cap) out[n++] = e;
    if (eos >= 0 && eos != e && n < cap) out[n++] = eos;
    return n;
}

int spade_tokenizer_is_chat(const spade_tokenizer *t) { return t->gg != NULL; }

/* ---------------------------------------------------------------- the tokenizer.h entry points */

void gguf_tok_release(struct spade_gguf_tok *gg) {
    if (gg && atomic_fetch_sub(&gg->refs, 1) == 1) {
        spade_bpe_free(gg->b);
        free(gg);
    }
}

int gguf_tok_clone(spade_tokenizer **out, const spade_tokenizer *t, char *err, size_t errlen) {
    spade_tokenizer *c = spade_tok_alloc(0);
    if (!c) {
        *out = NULL;
        spade_errf(err, errlen, "tokenizer: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    atomic_fetch_add(&t->gg->refs, 1);
    c->gg = t->gg;
    *out = c;
    return 0;
}

int gguf_tok_equal(const spade_tokenizer *a, const spade_tokenizer *b) {
    if (!a->gg || !b->gg) return 0;
    return a->gg == b->gg || (a->gg->hash == b->gg->hash && a->gg->vocab == b->gg->vocab);
}

int gguf_tok_vocab(const spade_tokenizer *t) { return t->gg->vocab; }

const unsigned char *gguf_tok_piece(const spade_tokenizer *t, int id, size_t *len) {
    int ty = spade_bpe_type(t->gg->b, id);
    if (ty < 0 || ty == SPADE_BPE_TYPE_CONTROL || ty == SPADE_BPE_TYPE_UNKNOWN) {
        if (len) *len = 0;
        return NULL;
    }
    size_t l = 0;
    const char *s = spade_bpe_piece(t->gg->b, id, 0, &l);
    if (len) *len = s ? l : 0;
    return (const unsigned char *)s;
}

/* out == NULL: only count. tokenizer.h promises at most n tokens for n bytes;
 * an invalid UTF-8 byte becomes U+FFFD (three bytes, up to three tokens), so
 * a text mostly made of such bytes could exceed it: the tokens past n are
 * dropped (the count still says how many there were). */
size_t gguf_tok_encode(const spade_tokenizer *t, const void *bytes, size_t n, int *out) {
    spade_bpe_out o = {0};
    size_t k = 0;
    if (!spade_bpe_encode(t->gg->b, bytes, n, 0, &o, NULL, 0)) {
        k = out && o.n > n ? n : o.n;
        if (out)
            for (size_t i = 0; i < k; i++) out[i] = o.ids[i];
    }
    spade_bpe_out_free(&o);
    return k;
}

int gguf_tok_decode(const spade_tokenizer *t, const int *toks, size_t n, int render_special, char *out, size_t outcap,
                    size_t *outlen) {
    size_t total = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = 0;
        const char *s = spade_bpe_piece(t->gg->b, toks[i], render_special, &l);
        if (!s) {
            rc = SPADE_POLICY_EINVAL;
            break;
        }
        if (outcap && total < outcap - 1) {
            size_t c = l < outcap - 1 - total ? l : outcap - 1 - total;
            memcpy(out + total, s, c);
        }
        total += l;
    }
    if (outcap) out[total < outcap - 1 ? total : outcap - 1] = 0;
    if (outlen) *outlen = total;
    return rc;
}

int gguf_tok_serialize(const spade_tokenizer *t, char **buf, size_t *len, char *err, size_t errlen) {
    size_t cap = strlen(t->gg->spec) + 128;
    char *b = malloc(cap);
    if (!b) {
        spade_errf(err, errlen, "tokenizer: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    int k = snprintf(b, cap, GG_MAGIC "model %s\nvocab %d\nhash %016llx\n", t->gg->spec, t->gg->vocab,
                     (unsigned long long)t->gg->hash);
    *buf = b;
    *len = (size_t)k;
    return 0;
}

int gguf_tok_is_serialized(const char *buf, size_t len) {
    return len >= strlen(GG_MAGIC) && !memcmp(buf, GG_MAGIC, strlen(GG_MAGIC));
}

int gguf_tok_parse(spade_tokenizer **out, const char *buf, size_t len, const char *name, char *err, size_t errlen) {
    *out = NULL;
    char text[1200], spec[1024];
    int vocab;
    unsigned long long hash;
    if (len >= sizeof text) {
        spade_errf(err, errlen, "%s: gguf tokenizer reference of %zu bytes: too long", name, len);
        return SPADE_POLICY_EFORMAT;
    }
    memcpy(text, buf, len);
    text[len] = 0;
    const char *p = text + strlen(GG_MAGIC);
    char tail;
    if (strncmp(p, "model ", 6) || !strchr(p, '\n')) goto bad;
    const char *nl = strchr(p + 6, '\n');
    if ((size_t)(nl - (p + 6)) >= sizeof spec || nl == p + 6) goto bad;
    memcpy(spec, p + 6, (size_t)(nl - (p + 6)));
    spec[nl - (p + 6)] = 0;
    if (sscanf(nl + 1, "vocab %d\nhash %16llx%c", &vocab, &hash, &tail) != 3 || tail != '\n') goto bad;
    char path[4096], e[600];
    spade_gguf *g = NULL;
    if (spade_model_resolve(spec, path, sizeof path, e, sizeof e) || spade_gguf_open(&g, path, e, sizeof e)) {
        spade_errf(err, errlen, "%s: the tokenizer is model '%s' (referenced, not stored): %s", name, spec, e);
        return SPADE_POLICY_EIO;
    }
    int rc = spade_tokenizer_from_gguf(out, g, spec, e, sizeof e);
    spade_gguf_free(g);
    if (rc) {
        spade_errf(err, errlen, "%s: the tokenizer of model '%s': %s", name, spec, e);
        return rc;
    }
    if ((*out)->gg->hash != hash || (*out)->gg->vocab != vocab) {
        spade_errf(err, errlen,
                   "%s: model '%s' (%s) has another tokenizer than the one this was made with (vocabulary %d, "
                   "hash %016llx; want %d, %016llx)",
                   name, spec, path, (*out)->gg->vocab, (unsigned long long)(*out)->gg->hash, vocab, hash);
        spade_tokenizer_free(*out);
        *out = NULL;
        return SPADE_POLICY_EFORMAT;
    }
    return 0;
bad:
    spade_errf(err, errlen, "%s: malformed gguf tokenizer reference (want 'model SPEC', 'vocab V', 'hash H')", name);
    return SPADE_POLICY_EFORMAT;
}
