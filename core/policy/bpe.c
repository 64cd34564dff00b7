/* bpe.c — the byte-level BPE tokenizer of GGUF model files (bpe.h).
 *
 * What it is: construction from GGUF-shaped arrays, the vocabulary fixture
 * reader, the four pre-tokenizers, special-token partition, rank-ordered
 * merging, decoding and the ChatML renderer. The behaviour follows llama.cpp
 * (src/llama-vocab.cpp, src/unicode.cpp) step by step, because byte-exact ids
 * are the point; where we knowingly differ it says so here and in
 * docs/policy.md.
 * What it is not: a regex engine (each pre-tokenizer is a hand-written
 * matcher of its one regex), nor a GGUF reader.
 *
 * Internally every token and merge is held in raw bytes (the byte-to-unicode
 * mapping undone), so merging works on the input's bytes directly; a token
 * whose text has a character outside the mapping can never come out of BPE
 * (the words BPE sees are all mapped characters) and is only reachable as a
 * special token.
 */
#include "bpe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

#include "bpe_unicode.h"

/* Code point classes (low nibble of spade_ucd_flags; gen_unicode_table.py). */
enum { UCD_UNASSIGNED = 0, UCD_L = 1, UCD_N = 2, UCD_M = 3, UCD_P = 4, UCD_S = 5, UCD_Z = 6, UCD_C = 7 };
#define UCD_WS 0x10
/* Past the end of the fragment: llama.cpp's flags{} (no class, not space). */
#define UCD_NONE 0x80

/* Token attributes, as llama.cpp's llama_token_attr (a token may have several). */
enum {
    A_UNDEFINED = 1 << 0,
    A_UNKNOWN = 1 << 1,
    A_UNUSED = 1 << 2,
    A_NORMAL = 1 << 3,
    A_CONTROL = 1 << 4,
    A_USER = 1 << 5,
    A_BYTE = 1 << 6,
};

typedef enum { PRE_GPT2, PRE_LLAMA3, PRE_QWEN2, PRE_SMOLLM } pre_kind;

typedef struct {
    size_t text, text_len; /* the GGUF text in pool */
    size_t piece, piece_len; /* what it decodes to, in pool */
    int attr;
} token;

/* Open-addressing hash from a byte string (in pool) to a value. */
typedef struct {
    size_t off;
    uint32_t len, split; /* split: merges only, the left part's length */
    int32_t val; /* -1: empty slot */
} slot;

typedef struct {
    slot *s;
    size_t mask;
} table;

struct spade_bpe {
    int n;
    token *tok;
    char *pool;
    size_t pool_len, pool_cap;
    table by_bytes; /* raw bytes -> token id (mappable tokens; last id wins, as token_to_id) */
    table by_text; /* GGUF text -> token id (spade_bpe_find) */
    table merge; /* left||right raw bytes -> rank (first wins, as bpe_ranks.emplace) */
    size_t max_merge; /* longest left||right, to skip hopeless lookups */
    int single[256]; /* the token whose GGUF text is that one byte, or -1 */
    int *special; /* control/user-defined/unknown ids, longest text first */
    int n_special;
    pre_kind pre;
    char pre_name[32];
    int ignore_merges;
    int bos, eos, add_bos, add_eos;
    uint8_t *eog; /* per id */
    int im_start, im_end;
};

/* ---------------------------------------------------------------- byte mapping */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
 * other 68 (0x00..0x20, 0x7f..0xa0, 0xad) to U+0100.. in byte order. */
static uint32_t byte_to_cp(int b) {
    if (b <= 0x20) return 256u + (uint32_t)b;
    if (b >= 0x7f && b <= 0xa0) return 256u + 33u + (uint32_t)(b - 0x7f);
    if (b == 0xad) return 256u + 67u;
    return (uint32_t)b;
}

/* The inverse: the byte a code point stands for, -1 when it is not in the mapping. */
static int cp_to_byte(uint32_t cp) {
    if (cp < 256) return byte_to_cp((int)cp) == cp ? (int)cp : -1;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return 0x7f + (int)(cp - 256 - 33);
    return cp == 256 + 67 ? 0xad : -1;
}

/* ---------------------------------------------------------------- UTF-8 */

/* One code point as llama.cpp's unicode_cpt_from_utf8 reads it (overlong forms
 * and surrogates accepted, continuation bytes checked); 0 with *cp = U+FFFD
 * and one byte consumed on a bad sequence. Values above U+10FFFF, which
 * llama.cpp cannot encode back (it throws), are bad here too. */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp) {
    unsigned c = s[0];
    if (!(c & 0x80)) {
        *cp = c;
        return 1;
    }
    size_t need = !(c & 0x40) ? 0 : !(c & 0x20) ? 2 : !(c & 0x10) ? 3 : !(c & 0x08) ? 4 : 0;
    if (!need || need > len) goto bad;
    for (size_t i = 1; i < need; i++)
        if ((s[i] & 0xc0) != 0x80) goto bad;
    uint32_t v = need == 2 ? (c & 0x1fu) : need == 3 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t i = 1; i < need; i++) v = (v << 6) | (s[i] & 0x3fu);
    if (v > 0x10ffff) goto bad;
    *cp = v;
    return need;
bad:
    *cp = 0xfffd;
    return 1;
}

static size_t utf8_put(uint32_t cp, char *o) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

size_t spade_bpe_utf8_complete(const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    /* Look back at most 3 bytes for a lead byte whose sequence runs past the end. */
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned c = u[len - back];
        if ((c & 0xc0) == 0x80) continue;
        size_t need = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
        return need > back ? len - back : len;
    }
    return len;
}

static int ucd(uint32_t cp) {
    if (cp >= 0x110000) return UCD_NONE;
    size_t lo = 0, hi = SPADE_UCD_NRANGES;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (spade_ucd_start[mid] <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return spade_ucd_flags[lo];
}

/* ---------------------------------------------------------------- pool and tables */

static int pool_add(spade_bpe *b, const char *p, size_t n, size_t *off) {
    if (b->pool_len + n + 1 > b->pool_cap) {
        size_t cap = b->pool_cap ? b->pool_cap : 4096;
        while (cap < b->pool_len + n + 1) cap *= 2;
        char *np = realloc(b->pool, cap);
        if (!np) return -1;
        b->pool = np;
        b->pool_cap = cap;
    }
    if (n) memcpy(b->pool + b->pool_len, p, n);
    b->pool[b->pool_len + n] = 0;
    *off = b->pool_len;
    b->pool_len += n + 1;
    return 0;
}

/* FNV-1a, streamed over the two parts so that a key split in two hashes as
 * the same key whole; the split point (merges) is mixed in at the end. */
static uint64_t fnv(uint64_t h, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static int table_init(table *t, size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    t->s = malloc(cap * sizeof *t->s);
    if (!t->s) return -1;
    for (size_t i = 0; i < cap; i++) t->s[i].val = -1;
    t->mask = cap - 1;
    return 0;
}

/* Finds key (in memory a, la bytes, then b, lb bytes) among slots whose
 * strings live in pool; returns the slot (empty when absent). */
static slot *table_find(const table *t, const char *pool, const char *a, size_t la, const char *bb, size_t lb,
                        uint32_t split) {
    uint64_t h = fnv(fnv(1469598103934665603ull, a, la), bb, lb);
    h ^= (uint64_t)split * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    for (size_t i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
        slot *s = &t->s[i];
        if (s->val < 0) return s;
        if (s->len == la + lb && s->split == split && !memcmp(pool + s->off, a, la) &&
            (!lb || !memcmp(pool + s->off + la, bb, lb)))
            return s;
    }
}

/* ---------------------------------------------------------------- construction */

static const char *const eog_names[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<\xef\xbd\x9c"
    "end\xe2\x96\x81"
    "of"
    "\xe2\x96\x81"
    "sentence\xef\xbd\x9c>",
    "[e~[",
};

static int pre_parse(const char *pre, pre_kind *k, int *ignore_merges, int *add_bos_default) {
    static const struct {
        const char *name;
        pre_kind k;
        int ignore, bos;
    } names[] = {
        {"gpt2", PRE_GPT2, 0, 0},
        {"gpt-2", PRE_GPT2, 0, 0},
        {"llama3", PRE_LLAMA3, 1, 1},
        {"llama-v3", PRE_LLAMA3, 1, 1},
        {"llama-bpe", PRE_LLAMA3, 1, 1},
        {"qwen2", PRE_QWEN2, 0, 0},
        {"deepseek-r1-qwen", PRE_QWEN2, 0, 0},
        {"smollm", PRE_SMOLLM, 0, 0},
        {"starcoder", PRE_SMOLLM, 0, 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(pre, names[i].name)) {
            *k = names[i].k;
            *ignore_merges = names[i].ignore;
            *add_bos_default = names[i].bos;
            return 0;
        }
    return -1;
}

/* Undoes the byte-to-unicode mapping of s[0..n) into out (n bytes at least);
 * -1 when s has a character outside it (or is not UTF-8). */
static long unmap(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = utf8_next((const unsigned char *)s + i, n - i, &cp);
        int by = cp_to_byte(cp);
        if (by < 0) return -1;
        out[o++] = (char)by;
        i += k;
    }
    return (long)o;
}

/* Special tokens sorted as (~length << 32 | id): longest first, then by id
 * (llama.cpp's std::sort leaves equal lengths in an unspecified order). */
static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;
    return a < c ? -1 : a > c;
}

void spade_bpe_free(spade_bpe *b) {
    if (!b) return;
    free(b->tok);
    free(b->pool);
    free(b->by_bytes.s);
    free(b->by_text.s);
    free(b->merge.s);
    free(b->special);
    free(b->eog);
    free(b);
}

static int bpe_oom(char *err, size_t errlen, const char *name) {
    spade_errf(err, errlen, "%s: out of memory building the tokenizer", name);
    return -1;
}

/* Each token's text, attributes and lookups (by text, by the bytes it maps
 * to, single bytes). 0, or -1 (err). */
static int bpe_tokens(spade_bpe *b, const spade_bpe_config *cfg, const char *name, char *scratch, char *err,
                      size_t errlen) {
    for (int i = 0; i < b->n; i++) {
        const char *t = cfg->tokens[i];
        size_t tl = t ? (cfg->token_lens ? cfg->token_lens[i] : strlen(t)) : 0;
        if (tl > SPADE_BPE_MAX_TEXT) {
            spade_errf(err, errlen, "%s: tokenizer.ggml.tokens[%d]: %zu bytes (at most %d)", name, i, tl,
                       SPADE_BPE_MAX_TEXT);
            return -1;
        }
        char empty[32];
        if (!tl) { /* llama.cpp renames an empty token so that its text stays unique */
            tl = (size_t)snprintf(empty, sizeof empty, "[EMPTY_%d]", i);
            t = empty;
        }
        token *k = &b->tok[i];
        if (pool_add(b, t, tl, &k->text)) return bpe_oom(err, errlen, name);
        k->text_len = tl;
        int ty = cfg->token_types ? cfg->token_types[i] : SPADE_BPE_TYPE_NORMAL;
        k->attr = ty == SPADE_BPE_TYPE_UNKNOWN        ? A_UNKNOWN
                  : ty == SPADE_BPE_TYPE_UNUSED       ? A_UNUSED
                  : ty == SPADE_BPE_TYPE_NORMAL       ? A_NORMAL
                  : ty == SPADE_BPE_TYPE_CONTROL      ? A_CONTROL
                  : ty == SPADE_BPE_TYPE_USER_DEFINED ? A_USER
                  : ty == SPADE_BPE_TYPE_BYTE         ? A_BYTE
                                                      : A_UNDEFINED;
        const char *tt = b->pool + k->text;
        if (tl == 1) b->single[(unsigned char)tt[0]] = i;
        slot *s = table_find(&b->by_text, b->pool, tt, tl, NULL, 0, UINT32_MAX);
        *s = (slot){.off = k->text, .len = (uint32_t)tl, .split = UINT32_MAX, .val = i};
        long rl = unmap(tt, tl, scratch);
        if (rl >= 0) {
            size_t off;
            if (pool_add(b, scratch, (size_t)rl, &off)) return bpe_oom(err, errlen, name);
            s = table_find(&b->by_bytes, b->pool, scratch, (size_t)rl, NULL, 0, UINT32_MAX);
            *s = (slot){.off = off, .len = (uint32_t)rl, .split = UINT32_MAX, .val = i};
        }
    }
    /* llama.cpp's renaming: end-of-generation names become control tokens. */
    for (size_t j = 0; j < sizeof eog_names / sizeof eog_names[0]; j++) {
        int id = spade_bpe_find(b, eog_names[j]);
        if (id >= 0) {
            b->eog[id] = 1;
            b->tok[id].attr |= A_CONTROL;
        }
    }
    return 0;
}

/* What each token decodes to (llama.cpp's token_to_piece). 0, or -1 (err). */
static int bpe_pieces(spade_bpe *b, const char *name, char *scratch, char *err, size_t errlen) {
    for (int i = 0; i < b->n; i++) {
        token *k = &b->tok[i];
        const char *tt = b->pool + k->text;
        size_t pl = 0;
        if (k->attr & (A_UNKNOWN | A_CONTROL | A_USER)) {
            k->piece = k->text;
            k->piece_len = k->text_len;
            continue;
        }
        if (k->attr & (A_NORMAL | A_BYTE)) {
            /* Characters outside the mapping pass through as their UTF-8
             * (llama.cpp writes "[UNK_BYTE_0x..]" there). */
            for (size_t p = 0; p < k->text_len;) {
                uint32_t cp;
                size_t m = utf8_next((const unsigned char *)tt + p, k->text_len - p, &cp);
                int by = cp_to_byte(cp);
                if (by >= 0)
                    scratch[pl++] = (char)by;
                else {
                    memcpy(scratch + pl, tt + p, m);
                    pl += m;
                }
                p += m;
            }
            if (k->attr & A_BYTE && pl != 1) pl = 0;
        }
        if (pool_add(b, scratch, pl, &k->piece)) return bpe_oom(err, errlen, name);
        k->piece_len = pl;
    }
    return 0;
}

/* The merges, keyed by the bytes of both sides with the split between them;
 * the first rank of a pair stays. 0, or -1 (err). */
static int bpe_merges(spade_bpe *b, const spade_bpe_config *cfg, const char *name, char *scratch, char *err,
                      size_t errlen) {
    for (int i = 0; i < cfg->n_merges; i++) {
        const char *m = cfg->merges[i];
        size_t ml = m ? (cfg->merge_lens ? cfg->merge_lens[i] : strlen(m)) : 0;
        if (ml > SPADE_BPE_MAX_TEXT) {
            spade_errf(err, errlen, "%s: tokenizer.ggml.merges[%d]: %zu bytes (at most %d)", name, i, ml,
                       SPADE_BPE_MAX_TEXT);
            return -1;
        }
        const char *sp = ml > 1 ? memchr(m + 1, ' ', ml - 1) : NULL;
        if (!sp) continue; /* llama.cpp keys it as ("", ""), which no pair of symbols is */
        long l1 = unmap(m, (size_t)(sp - m), scratch);
        long l2 = l1 >= 0 ? unmap(sp + 1, ml - (size_t)(sp + 1 - m), scratch + l1) : -1;
        if (l1 <= 0 || l2 <= 0) continue; /* a side BPE can never produce */
        slot *s = table_find(&b->merge, b->pool, scratch, (size_t)(l1 + l2), NULL, 0, (uint32_t)l1);
        if (s->val >= 0) continue; /* the first rank stays */
        size_t off;
        if (pool_add(b, scratch, (size_t)(l1 + l2), &off)) return bpe_oom(err, errlen, name);
        s = table_find(&b->merge, b->pool, scratch, (size_t)(l1 + l2), NULL, 0, (uint32_t)l1);
        *s = (slot){.off = off, .len = (uint32_t)(l1 + l2), .split = (uint32_t)l1, .val = i};
        if ((size_t)(l1 + l2) > b->max_merge) b->max_merge = (size_t)(l1 + l2);
    }
    return 0;
}

/* The special tokens, longest first (cmp_u64). 0, or -1 (err). */
static int bpe_specials(spade_bpe *b, const char *name, char *err, size_t errlen) {
    int n = b->n;
    uint64_t *keys = malloc((size_t)n * sizeof *keys);
    b->special = malloc((size_t)n * sizeof *b->special);
    if (!keys || !b->special) {
        free(keys);
        return bpe_oom(err, errlen, name);
    }
    for (int i = 0; i < n; i++)
        if (b->tok[i].attr & (A_CONTROL | A_USER | A_UNKNOWN))
            keys[b->n_special++] = (uint64_t)(uint32_t) ~(uint32_t)b->tok[i].text_len << 32 | (uint32_t)i;
    qsort(keys, (size_t)b->n_special, sizeof *keys, cmp_u64);
    for (int i = 0; i < b->n_special; i++) b->special[i] = (int)(keys[i] & 0xffffffffu);
    free(keys);
    return 0;
}

/* BOS, EOS and whether to add them (absent keys: llama.cpp's default id 11,
 * when the vocabulary has one; add_bos: the pre-tokenizer's default). 0, or
 * -1 (err). */
static int bpe_bos_eos(spade_bpe *b, const spade_bpe_config *cfg, const char *name, int bos_default, char *err,
                       size_t errlen) {
    int n = b->n;
    int dflt = n > 11 ? 11 : -1;
    int bos = cfg->bos_id == SPADE_BPE_UNSET ? dflt : cfg->bos_id,
        eos = cfg->eos_id == SPADE_BPE_UNSET ? dflt : cfg->eos_id;
    if (bos >= n || bos < -1 || eos >= n || eos < -1) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.%s_token_id: %d is not a token id (vocabulary %d)", name,
                   bos >= n || bos < -1 ? "bos" : "eos", bos >= n || bos < -1 ? bos : eos, n);
        return -1;
    }
    b->bos = bos;
    b->eos = eos;
    if (eos >= 0) b->eog[eos] = 1;
    b->add_bos = cfg->add_bos == SPADE_BPE_UNSET ? bos_default : !!cfg->add_bos;
    b->add_eos = cfg->add_eos == SPADE_BPE_UNSET ? 0 : !!cfg->add_eos;
    if ((b->add_bos && bos < 0) || (b->add_eos && eos < 0)) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.add_%s_token is set but there is no %s token", name,
                   b->add_bos && bos < 0 ? "bos" : "eos", b->add_bos && bos < 0 ? "BOS" : "EOS");
        return -1;
    }
    return 0;
}

int spade_bpe_new(spade_bpe **out, const spade_bpe_config *cfg, const char *name, char *err, size_t errlen) {
    *out = NULL;
    if (!name) name = "tokenizer";
    if (!cfg || cfg->n_tokens < 1 || cfg->n_tokens > SPADE_BPE_MAX_TOKENS || !cfg->tokens) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.tokens: %d tokens (want 1..%d)", name, cfg ? cfg->n_tokens : 0,
                   SPADE_BPE_MAX_TOKENS);
        return -1;
    }
    if (cfg->n_merges < 0 || cfg->n_merges > SPADE_BPE_MAX_MERGES || (cfg->n_merges && !cfg->merges)) {
        spade_errf(err, errlen, "%s: tokenizer.ggml.merges: %d merges (want 0..%d)", name, cfg->n_merges,
                   SPADE_BPE_MAX_MERGES);
        return -1;
    }
    /* No pre-tokenizer named: llama.cpp then runs its "default" regex set,
     * which spade does not implement (no model spade targets uses it). */
    const char *pre = cfg->pre ? cfg->pre : "(missing)";
    spade_bpe *b = calloc(1, sizeof *b);
    if (!b) return bpe_oom(err, errlen, name);
    int bos_default;
    if (pre_parse(pre, &b->pre, &b->ignore_merges, &bos_default)) {
        spade_errf(
            err, errlen,
            "%s: tokenizer.ggml.pre: '%.40s' is not a pre-tokenizer spade knows (gpt-2, llama-bpe, qwen2, smollm)",
            name, pre);
        free(b);
        return -1;
    }
    snprintf(b->pre_name, sizeof b->pre_name, "%s", pre);
    int n = b->n = cfg->n_tokens;
    b->tok = calloc((size_t)n, sizeof *b->tok);
    b->eog = calloc((size_t)n, 1);
    /* one token's or merge's bytes, unmapped (both sides of a merge at once) */
    char *scratch = malloc(SPADE_BPE_MAX_TEXT * 2 + 16);
    int rc = -1;
    if (!b->tok || !b->eog || !scratch || table_init(&b->by_bytes, (size_t)n) || table_init(&b->by_text, (size_t)n) ||
        table_init(&b->merge, (size_t)cfg->n_merges))
        bpe_oom(err, errlen, name);
    else {
        for (int i = 0; i < 256; i++) b->single[i] = -1;
        rc = bpe_tokens(b, cfg, name, scratch, err, errlen);
        if (!rc) rc = bpe_pieces(b, name, scratch, err, errlen);
        if (!rc) rc = bpe_merges(b, cfg, name, scratch, err, errlen);
    }
    free(scratch);
    if (!rc) rc = bpe_specials(b, name, err, errlen);
    if (!rc) rc = bpe_bos_eos(b, cfg, name, bos_default, err, errlen);
    if (rc) {
        spade_bpe_free(b);
        return -1;
    }
    b->im_start = spade_bpe_find(b, "<|im_start|>");
    b->im_end = spade_bpe_find(b, "<|im_end|>");
    *out = b;
    return 0;
}

int spade_bpe_vocab(const spade_bpe *b) { return b->n; }
int spade_bpe_bos(const spade_bpe *b) { return b->bos; }
int spade_bpe_eos(const spade_bpe *b) { return b->eos; }
int spade_bpe_add_bos(const spade_bpe *b) { return b->add_bos; }
const char *spade_bpe_pre(const spade_bpe *b) { return b->pre_name; }

int spade_bpe_type(const spade_bpe *b, int id) {
    if (id < 0 || id >= b->n) return -1;
    int a = b->tok[id].attr;
    return a & A_CONTROL   ? SPADE_BPE_TYPE_CONTROL
           : a & A_USER    ? SPADE_BPE_TYPE_USER_DEFINED
           : a & A_UNKNOWN ? SPADE_BPE_TYPE_UNKNOWN
           : a & A_NORMAL  ? SPADE_BPE_TYPE_NORMAL
           : a & A_BYTE    ? SPADE_BPE_TYPE_BYTE
           : a & A_UNUSED  ? SPADE_BPE_TYPE_UNUSED
                           : SPADE_BPE_TYPE_UNDEFINED;
}

int spade_bpe_is_eog(const spade_bpe *b, int id) { return id >= 0 && id < b->n && b->eog[id]; }

int spade_bpe_find(const spade_bpe *b, const char *text) {
    const slot *s = table_find(&b->by_text, b->pool, text, strlen(text), NULL, 0, UINT32_MAX);
    return s->val;
}

const char *spade_bpe_piece(const spade_bpe *b, int id, int special, size_t *len) {
    *len = 0;
    if (id < 0 || id >= b->n) return NULL;
    const token *k = &b->tok[id];
    if (!special && (k->attr & (A_CONTROL | A_UNKNOWN))) return "";
    *len = k->piece_len;
    return b->pool + k->piece;
}

/* ---------------------------------------------------------------- output */

void spade_bpe_out_free(spade_bpe_out *o) {
    free(o->ids);
    free(o->start);
    free(o->end);
    *o = (spade_bpe_out){0};
}

static int out_push(spade_bpe_out *o, int32_t id, size_t s, size_t e) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        int32_t *ni = realloc(o->ids, cap * sizeof *ni);
        if (ni) o->ids = ni;
        size_t *ns = ni ? realloc(o->start, cap * sizeof *ns) : NULL;
        if (ns) o->start = ns;
        size_t *ne = ns ? realloc(o->end, cap * sizeof *ne) : NULL;
        if (!ne) return -1;
        o->end = ne;
        o->cap = cap;
    }
    o->ids[o->n] = id;
    o->start[o->n] = s;
    o->end[o->n] = e;
    o->n++;
    return 0;
}

/* ---------------------------------------------------------------- pre-tokenizers */

/* A fragment of text as code points: cp[i] came from source bytes
 * [src[i], src[i + 1]). */
typedef struct {
    uint32_t *cp;
    uint8_t *fl;
    size_t *src;
    size_t n;
    size_t *cuts, ncuts, cap; /* word lengths, in code points */
} words;

static int cut(words *w, size_t len) {
    if (!len) return 0;
    if (w->ncuts == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        size_t *nc = realloc(w->cuts, cap * sizeof *nc);
        if (!nc) return -1;
        w->cuts = nc;
        w->cap = cap;
    }
    w->cuts[w->ncuts++] = len;
    return 0;
}

#define FL(p) ((p) >= ini && (p) < end ? w->fl[p] : UCD_NONE)
#define CP(p) ((p) >= ini && (p) < end ? w->cp[p] : 0xffffffffu)
#define IS_L(f) (((f)&0x0f) == UCD_L && (f) != UCD_NONE)
#define IS_N(f) (((f)&0x0f) == UCD_N && (f) != UCD_NONE)
#define IS_WS(f) (((f)&UCD_WS) && (f) != UCD_NONE)
#define IS_OTHER(f) ((f) != UCD_NONE && !IS_WS(f) && !IS_L(f) && !IS_N(f))
#define EMIT(to)                                                                                                       \
    do {                                                                                                               \
        if (cut(&o, (to)-prev)) return -1;                                                                             \
        prev = (to);                                                                                                   \
    } while (0)

static uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Each number code point alone (smollm's first regex, \p{N}, through
 * std::regex: the text between matches stays one piece). */
static int split_digits(words *w, words *outw) {
    words o = *outw;
    size_t ini = 0;
    for (size_t c = 0; c < w->ncuts; c++) {
        size_t end = ini + w->cuts[c], prev = ini;
        for (size_t p = ini; p < end; p++)
            if (IS_N(w->fl[p])) {
                EMIT(p);
                EMIT(p + 1);
            }
        EMIT(end);
        ini = end;
    }
    *outw = o;
    return 0;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) as
 * llama.cpp's unicode_regex_split_custom_gpt2 matches it. */
static int split_gpt2(words *w, words *outw) {
    words o = *outw;
    size_t ini = 0;
    for (size_t c = 0; c < w->ncuts; c++) {
        size_t end = ini + w->cuts[c], prev = ini;
        for (size_t pos = ini; pos < end;) {
            uint32_t cpt = CP(pos);
            int f = FL(pos);
            if (cpt == '\'' && pos + 1 < end) {
                uint32_t n1 = CP(pos + 1);
                if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                    EMIT(pos + 2);
                    pos += 2;
                    continue;
                }
                if (pos + 2 < end) {
                    uint32_t n2 = CP(pos + 2);
                    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                        EMIT(pos + 3);
                        pos += 3;
                        continue;
                    }
                }
            }
            int f2 = cpt == ' ' ? FL(pos + 1) : f;
            if (IS_L(f2) || IS_N(f2) || IS_OTHER(f2)) {
                int kind = IS_L(f2) ? 1 : IS_N(f2) ? 2 : 3;
                pos += cpt == ' ';
                for (;;) {
                    int g = FL(pos);
                    if (!(kind == 1 ? IS_L(g) : kind == 2 ? IS_N(g) : IS_OTHER(g))) break;
                    pos++;
                }
                EMIT(pos);
                continue;
            }
            size_t nws = 0;
            while (IS_WS(FL(pos + nws))) nws++;
            if (nws > 1 && CP(pos + nws) != 0xffffffffu) {
                pos += nws - 1;
                EMIT(pos);
                continue;
            }
            if (nws > 0) {
                pos += nws;
                EMIT(pos);
                continue;
            }
            EMIT(++pos);
        }
        ini = end;
    }
    *outw = o;
    return 0;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ as llama.cpp's
 * llama3 (D = 3) and qwen2 (D = 1) matchers do it. */
static int split_llama3(words *w, words *outw, size_t maxd) {
    words o = *outw;
    size_t ini = 0;
    for (size_t c = 0; c < w->ncuts; c++) {
        size_t end = ini + w->cuts[c], prev = ini;
        for (size_t pos = ini; pos < end;) {
            uint32_t cpt = CP(pos);
            int f = FL(pos);
            if (cpt == '\'' && pos + 1 < end) {
                uint32_t n1 = ascii_lower(CP(pos + 1));
                if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                    EMIT(pos + 2);
                    pos += 2;
                    continue;
                }
                if (pos + 2 < end) {
                    uint32_t n2 = ascii_lower(CP(pos + 2));
                    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                        EMIT(pos + 3);
                        pos += 3;
                        continue;
                    }
                }
            }
            if (!(cpt == '\r' || cpt == '\n' || IS_N(f)) && (IS_L(f) || IS_L(FL(pos + 1)))) {
                pos++;
                while (IS_L(FL(pos))) pos++;
                EMIT(pos);
                continue;
            }
            if (IS_N(f)) {
                size_t d0 = pos;
                while (IS_N(FL(pos))) {
                    if (++pos - d0 >= maxd) {
                        EMIT(pos);
                        d0 = pos;
                    }
                }
                EMIT(pos);
                continue;
            }
            int f2 = cpt == ' ' ? FL(pos + 1) : f;
            if (IS_OTHER(f2)) {
                pos += cpt == ' ';
                while (IS_OTHER(FL(pos))) pos++;
                while (CP(pos) == '\r' || CP(pos) == '\n') pos++;
                EMIT(pos);
                continue;
            }
            size_t nws = 0, last_rn = 0;
            while (IS_WS(FL(pos + nws))) {
                uint32_t c2 = CP(pos + nws);
                if (c2 == '\r' || c2 == '\n') last_rn = pos + nws + 1;
                nws++;
            }
            if (last_rn > 0) {
                pos = last_rn;
                EMIT(pos);
                continue;
            }
            if (nws > 1 && CP(pos + nws) != 0xffffffffu) {
                pos += nws - 1;
                EMIT(pos);
                continue;
            }
            if (nws > 0) {
                pos += nws;
                EMIT(pos);
                continue;
            }
            EMIT(++pos);
        }
        ini = end;
    }
    *outw = o;
    return 0;
}

/* ---------------------------------------------------------------- BPE on one word */

typedef struct {
    int rank;
    int left;
    uint32_t llen, rlen;
} bigram;

typedef struct {
    size_t off; /* into the word's bytes */
    size_t len; /* 0: merged away */
    int prev, next;
} sym;

typedef struct {
    bigram *h;
    size_t n, cap;
    sym *s;
    size_t ns, scap;
    char *bytes;
    size_t *bsrc; /* per byte: the code point index it came from */
    size_t nb, bcap;
} scratch;

static int bg_less(const bigram *a, const bigram *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int heap_push(scratch *sc, bigram g) {
    if (sc->n == sc->cap) {
        size_t cap = sc->cap ? sc->cap * 2 : 64;
        bigram *nh = realloc(sc->h, cap * sizeof *nh);
        if (!nh) return -1;
        sc->h = nh;
        sc->cap = cap;
    }
    size_t i = sc->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bg_less(&g, &sc->h[p])) break;
        sc->h[i] = sc->h[p];
        i = p;
    }
    sc->h[i] = g;
    return 0;
}

static bigram heap_pop(scratch *sc) {
    bigram top = sc->h[0], last = sc->h[--sc->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const bigram *mv = &last;
        if (l < sc->n && bg_less(&sc->h[l], mv)) {
            m = l;
            mv = &sc->h[l];
        }
        if (r < sc->n && bg_less(&sc->h[r], mv)) m = r;
        if (m == i) break;
        sc->h[i] = sc->h[m];
        i = m;
    }
    if (sc->n) sc->h[i] = last;
    return top;
}

static int try_pair(const spade_bpe *b, scratch *sc, int l, int r) {
    if (l < 0 || r < 0) return 0;
    const sym *L = &sc->s[l], *R = &sc->s[r];
    if (L->len + R->len > b->max_merge) return 0;
    const slot *s =
        table_find(&b->merge, b->pool, sc->bytes + L->off, L->len, sc->bytes + R->off, R->len, (uint32_t)L->len);
    if (s->val < 0) return 0;
    return heap_push(sc, (bigram){.rank = s->val, .left = l, .llen = (uint32_t)L->len, .rlen = (uint32_t)R->len});
}

/* Encodes the word sc->bytes[0..nb) (code points w->cp[c0..]) and appends
 * its tokens, with source offsets, to out. */
static int bpe_word(const spade_bpe *b, scratch *sc, const words *w, spade_bpe_out *out) {
    size_t nb = sc->nb;
    sc->ns = 0;
    sc->n = 0;
    if (nb > sc->scap) {
        sym *ns = realloc(sc->s, nb * sizeof *ns);
        if (!ns) return -1;
        sc->s = ns;
        sc->scap = nb;
    }
    const slot *whole = b->ignore_merges ? table_find(&b->by_bytes, b->pool, sc->bytes, nb, NULL, 0, UINT32_MAX) : NULL;
    if (whole && whole->val >= 0) {
        sc->s[0] = (sym){.off = 0, .len = nb, .prev = -1, .next = -1};
        sc->ns = 1;
    } else {
        /* One symbol per byte: the byte-encoded word has one character per byte. */
        for (size_t i = 0; i < nb; i++)
            sc->s[i] = (sym){.off = i, .len = 1, .prev = (int)i - 1, .next = i + 1 < nb ? (int)i + 1 : -1};
        sc->ns = nb;
        for (size_t i = 1; i < nb; i++)
            if (try_pair(b, sc, (int)i - 1, (int)i)) return -1;
        while (sc->n) {
            bigram g = heap_pop(sc);
            sym *L = &sc->s[g.left];
            if (!L->len || L->len != g.llen || L->next < 0) continue;
            sym *R = &sc->s[L->next];
            if (!R->len || R->len != g.rlen) continue; /* stale: a side has grown since */
            L->len += R->len;
            R->len = 0;
            L->next = R->next;
            if (R->next >= 0) sc->s[R->next].prev = g.left;
            if (try_pair(b, sc, L->prev, g.left) || try_pair(b, sc, g.left, L->next)) return -1;
        }
    }
    for (int i = 0; i >= 0 && (size_t)i < sc->ns; i = sc->s[i].next) {
        const sym *S = &sc->s[i];
        if (!S->len) continue;
        size_t s0 = w->src[sc->bsrc[S->off]], s1 = w->src[sc->bsrc[S->off + S->len - 1] + 1];
        const slot *t = table_find(&b->by_bytes, b->pool, sc->bytes + S->off, S->len, NULL, 0, UINT32_MAX);
        if (t->val >= 0) {
            if (out_push(out, t->val, s0, s1)) return -1;
            continue;
        }
        /* Not a token: llama.cpp looks up each byte of the symbol's
         * byte-encoded text as a one-byte token text, dropping misses. */
        for (size_t k = 0; k < S->len; k++) {
            char enc[4];
            size_t el = utf8_put(byte_to_cp((unsigned char)sc->bytes[S->off + k]), enc);
            for (size_t e = 0; e < el; e++) {
                int id = b->single[(unsigned char)enc[e]];
                if (id >= 0 && out_push(out, id, s0, s1)) return -1;
            }
        }
    }
    return 0;
}

/* Reads t[0..len) into code points (w) and cuts it into words (w2->cuts). */
static int pretokenize(const spade_bpe *b, const char *t, size_t len, size_t base, words *w, words *w2) {
    *w = (words){0};
    *w2 = (words){0};
    w->cp = malloc((len + 1) * sizeof *w->cp);
    w->fl = malloc(len + 1);
    w->src = malloc((len + 1) * sizeof *w->src);
    if (!w->cp || !w->fl || !w->src) return -1;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = utf8_next((const unsigned char *)t + i, len - i, &cp);
        w->cp[w->n] = cp;
        w->fl[w->n] = (uint8_t)ucd(cp);
        w->src[w->n] = base + i;
        w->n++;
        i += k;
    }
    w->src[w->n] = base + len;
    if (cut(w, w->n)) return -1;
    if (b->pre == PRE_SMOLLM) {
        if (split_digits(w, w2)) return -1;
        free(w->cuts);
        w->cuts = w2->cuts;
        w->ncuts = w2->ncuts;
        w->cap = w2->cap;
        w2->cuts = NULL;
        w2->ncuts = w2->cap = 0;
    }
    return b->pre == PRE_GPT2 || b->pre == PRE_SMOLLM ? split_gpt2(w, w2)
                                                      : split_llama3(w, w2, b->pre == PRE_LLAMA3 ? 3 : 1);
}

static void words_free(words *w, words *w2) {
    free(w->cp);
    free(w->fl);
    free(w->src);
    free(w->cuts);
    free(w2->cuts);
}

int spade_bpe_words(const spade_bpe *b, const char *text, size_t len, size_t **ends, size_t *n, char *err,
                    size_t errlen) {
    words w, w2;
    *ends = NULL;
    *n = 0;
    int rc = pretokenize(b, text, len, 0, &w, &w2);
    size_t *e = rc ? NULL : malloc((w2.ncuts + 1) * sizeof *e);
    if (!e) {
        words_free(&w, &w2);
        spade_errf(err, errlen, "tokenizer: out of memory splitting %zu bytes", len);
        return -1;
    }
    size_t c0 = 0;
    for (size_t c = 0; c < w2.ncuts; c++) {
        c0 += w2.cuts[c];
        e[c] = w.src[c0];
    }
    *ends = e;
    *n = w2.ncuts;
    words_free(&w, &w2);
    return 0;
}

/* Pre-tokenizes and encodes raw text t[0..len) (source offsets from base). */
static int encode_text(const spade_bpe *b, const char *t, size_t len, size_t base, spade_bpe_out *out) {
    words w, w2;
    scratch sc = {0};
    int rc = -1;
    if (pretokenize(b, t, len, base, &w, &w2)) goto done;
    size_t c0 = 0;
    for (size_t c = 0; c < w2.ncuts; c++) {
        size_t nc = w2.cuts[c];
        if (sc.bcap < nc * 4) {
            size_t cap = nc * 4;
            char *nb = realloc(sc.bytes, cap);
            if (nb) sc.bytes = nb;
            size_t *ns = nb ? realloc(sc.bsrc, cap * sizeof *ns) : NULL;
            if (!ns) goto done;
            sc.bsrc = ns;
            sc.bcap = cap;
        }
        sc.nb = 0;
        for (size_t i = c0; i < c0 + nc; i++) {
            size_t k = utf8_put(w.cp[i], sc.bytes + sc.nb);
            for (size_t j = 0; j < k; j++) sc.bsrc[sc.nb + j] = i;
            sc.nb += k;
        }
        if (bpe_word(b, &sc, &w, out)) goto done;
        c0 += nc;
    }
    rc = 0;
done:
    words_free(&w, &w2);
    free(sc.h);
    free(sc.s);
    free(sc.bytes);
    free(sc.bsrc);
    return rc;
}

/* ---------------------------------------------------------------- encode / decode */

typedef struct {
    size_t off, len;
    int id; /* -1: raw text */
} frag;

/* The first occurrence of st[0..sl) in text[p..e), or e. */
static size_t find(const char *text, size_t p, size_t e, const char *st, size_t sl) {
    if (!sl) return e;
    for (; p + sl <= e; p++) {
        const char *m = memchr(text + p, st[0], e - sl + 1 - p);
        if (!m) return e;
        p = (size_t)(m - text);
        if (!memcmp(m, st, sl)) return p;
    }
    return e;
}

int spade_bpe_encode(const spade_bpe *b, const char *text, size_t len, unsigned flags, spade_bpe_out *out, char *err,
                     size_t errlen) {
    int parse = !!(flags & SPADE_BPE_PARSE_SPECIAL);
    frag *f = NULL, *g = NULL;
    size_t nf = 0, cap = 0;
    if (flags & SPADE_BPE_ADD_SPECIAL && b->add_bos && out_push(out, b->bos, 0, 0)) goto oom;
    if (len) {
        cap = 16;
        if (!(f = malloc(cap * sizeof *f))) goto oom;
        f[nf++] = (frag){.off = 0, .len = len, .id = -1};
    }
    /* llama.cpp's tokenizer_st_partition: each special token in turn, longest
     * first, splits every raw fragment at each of its occurrences. */
    for (int si = 0; si < b->n_special && nf; si++) {
        const token *k = &b->tok[b->special[si]];
        if (!parse && (k->attr & (A_CONTROL | A_UNKNOWN))) continue;
        const char *st = b->pool + k->text;
        size_t sl = k->text_len, ng = 0, gcap = nf + 16;
        if (!(g = malloc(gcap * sizeof *g))) goto oom;
        for (size_t i = 0; i < nf; i++) {
            size_t p = f[i].off, e = f[i].off + f[i].len;
            for (;;) {
                /* Room for a left part, the token and one more piece. */
                if (ng + 3 > gcap) {
                    gcap = gcap * 2 + 4;
                    frag *ng2 = realloc(g, gcap * sizeof *g);
                    if (!ng2) goto oom;
                    g = ng2;
                }
                size_t mo = f[i].id < 0 ? find(text, p, e, st, sl) : e;
                if (mo == e) break;
                if (mo > p) g[ng++] = (frag){.off = p, .len = mo - p, .id = -1};
                g[ng++] = (frag){.off = mo, .len = sl, .id = b->special[si]};
                p = mo + sl;
            }
            if (f[i].id >= 0)
                g[ng++] = f[i];
            else if (p < e)
                g[ng++] = (frag){.off = p, .len = e - p, .id = -1};
        }
        free(f);
        f = g;
        g = NULL;
        nf = ng;
    }
    for (size_t i = 0; i < nf; i++) {
        if (f[i].id >= 0) {
            if (out_push(out, f[i].id, f[i].off, f[i].off + f[i].len)) goto oom;
        } else if (encode_text(b, text + f[i].off, f[i].len, f[i].off, out))
            goto oom;
    }
    if (flags & SPADE_BPE_ADD_SPECIAL && b->add_eos && out_push(out, b->eos, len, len)) goto oom;
    free(f);
    return 0;
oom:
    free(f);
    free(g);
    spade_errf(err, errlen, "tokenizer: out of memory encoding %zu bytes", len);
    return -1;
}

int spade_bpe_decode(const spade_bpe *b, const int32_t *ids, size_t n, int special, char **text, size_t *len, char *err,
                     size_t errlen) {
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        if (!spade_bpe_piece(b, ids[i], special, &pl)) {
            spade_errf(err, errlen, "token %zu is %d: not a token id (vocabulary %d)", i, (int)ids[i], b->n);
            return -1;
        }
        total += pl;
    }
    char *o = malloc(total + 1);
    if (!o) {
        spade_errf(err, errlen, "out of memory decoding %zu tokens", n);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = spade_bpe_piece(b, ids[i], special, &pl);
        memcpy(o + k, p, pl);
        k += pl;
    }
    o[k] = 0;
    *text = o;
    *len = k;
    return 0;
}

/* ---------------------------------------------------------------- ChatML */

int spade_bpe_chat(const spade_bpe *b, const spade_chat_msg *msgs, size_t n, int gen_prompt, spade_bpe_out *out,
                   uint8_t **trainable, char *err, size_t errlen) {
    *trainable = NULL;
    if (b->im_start < 0 || b->im_end < 0) {
        spade_errf(err, errlen,
                   "chat template: the vocabulary has no %s token (ChatML needs <|im_start|> and <|im_end|>)",
                   b->im_start < 0 ? "<|im_start|>" : "<|im_end|>");
        return -1;
    }
    size_t first = out->n;
    uint8_t *mask = NULL;
    size_t mcap = 0;
    char *buf = NULL;
    size_t bcap = 0;
    for (size_t m = 0; m <= n; m++) {
        int last = m == n;
        if (last && !gen_prompt) break;
        const char *role = last ? "assistant" : msgs[m].role;
        size_t rl = strlen(role), cl = last ? 0 : msgs[m].len;
        int train = !last && !strcmp(role, "assistant");
        if (rl + 1 + cl > bcap) {
            bcap = rl + 1 + cl + 64;
            char *nb = realloc(buf, bcap);
            if (!nb) goto oom;
            buf = nb;
        }
        memcpy(buf, role, rl);
        buf[rl] = '\n';
        if (cl) memcpy(buf + rl + 1, msgs[m].content, cl);
        size_t at = out->n;
        if (out_push(out, b->im_start, 0, 0) || spade_bpe_encode(b, buf, rl + 1 + cl, 0, out, err, errlen)) goto oom;
        size_t body = out->n;
        if (!last && (out_push(out, b->im_end, 0, 0) || spade_bpe_encode(b, "\n", 1, 0, out, err, errlen))) goto oom;
        if (out->n - first > mcap) {
            mcap = (out->n - first) * 2;
            uint8_t *nm = realloc(mask, mcap);
            if (!nm) goto oom;
            mask = nm;
        }
        for (size_t i = at; i < out->n; i++) {
            int t = 0;
            if (train && i > at && i < body) t = out->end[i] > rl + 1; /* carries content bytes */
            if (train && i == body) t = 1; /* its <|im_end|> */
            mask[i - first] = (uint8_t)t;
        }
        /* Offsets name bytes of this message's own buffer: make them 0 so
         * nobody reads them as offsets into something else. */
        for (size_t i = at; i < out->n; i++) out->start[i] = out->end[i] = 0;
    }
    free(buf);
    if (!mask && !(mask = malloc(1))) goto oom;
    *trainable = mask;
    return 0;
oom:
    free(buf);
    free(mask);
    spade_errf(err, errlen, "chat template: out of memory");
    return -1;
}

/* ---------------------------------------------------------------- the fixture file */

static int hexval(char h) {
    return h >= '0' && h <= '9'   ? h - '0'
           : h >= 'a' && h <= 'f' ? h - 'a' + 10
           : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                  : -1;
}

/* Undoes the fixture's escapes (\\ \n \r \t \xHH) in place; -1 on a bad one. */
static long unescape(char *s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            s[o++] = s[i];
            continue;
        }
        if (++i >= n) return -1;
        char c = s[i];
        if (c == '\\')
            s[o++] = '\\';
        else if (c == 'n')
            s[o++] = '\n';
        else if (c == 'r')
            s[o++] = '\r';
        else if (c == 't')
            s[o++] = '\t';
        else if (c == 'x' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            s[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else
            return -1;
    }
    return (long)o;
}

static int parse_int(const char *s, long lo, long hi, long *v) {
    char *e;
    errno = 0;
    long x = strtol(s, &e, 10);
    if (e == s || *e || errno || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

/* A fixture file being read: the counts its header lines give, the tokens
 * and merges read so far, the config they go into; bpe_file_free frees it. */
typedef struct bpe_file {
    char **tok, **mer;
    size_t *tl, *ml;
    int32_t *ty;
    long nt, nm, it, im; /* tokens and merges promised (-1: no such line yet) and read */
    spade_bpe_config cfg;
    char pre[64];
} bpe_file;

enum { BPE_LINE_OK, BPE_LINE_BAD, BPE_LINE_OOM };

static void bpe_file_free(bpe_file *f) {
    if (f->tok)
        for (long i = 0; i < f->nt; i++) free(f->tok[i]);
    if (f->mer)
        for (long i = 0; i < f->nm; i++) free(f->mer[i]);
    free(f->tok);
    free(f->mer);
    free(f->tl);
    free(f->ml);
    free(f->ty);
}

/* One of the nt token lines, "TYPE TEXT". */
static int bpe_token_line(bpe_file *f, char *line) {
    char *sp = strchr(line, ' ');
    long v;
    if (!sp) return BPE_LINE_BAD;
    *sp = 0;
    if (parse_int(line, 0, 255, &v)) return BPE_LINE_BAD;
    long l = unescape(sp + 1, strlen(sp + 1));
    if (l < 0) return BPE_LINE_BAD;
    f->ty[f->it] = (int32_t)v;
    f->tl[f->it] = (size_t)l;
    if (!(f->tok[f->it] = malloc((size_t)l + 1))) return BPE_LINE_OOM;
    memcpy(f->tok[f->it], sp + 1, (size_t)l);
    f->it++;
    return BPE_LINE_OK;
}

/* One of the nm merge lines, n bytes. */
static int bpe_merge_line(bpe_file *f, char *line, size_t n) {
    long l = unescape(line, n);
    if (l < 0) return BPE_LINE_BAD;
    f->ml[f->im] = (size_t)l;
    if (!(f->mer[f->im] = malloc((size_t)l + 1))) return BPE_LINE_OOM;
    memcpy(f->mer[f->im], line, (size_t)l);
    f->im++;
    return BPE_LINE_OK;
}

/* A "KEY VALUE" line: pre, bos, eos, add_bos, add_eos, then tokens N (once)
 * and merges M (once, after the N tokens). */
static int bpe_key_line(bpe_file *f, char *line) {
    char *sp = strchr(line, ' ');
    if (!sp) return BPE_LINE_BAD;
    *sp++ = 0;
    long v;
    if (!strcmp(line, "pre")) {
        snprintf(f->pre, sizeof f->pre, "%s", sp);
    } else if (!strcmp(line, "bos") || !strcmp(line, "eos") || !strcmp(line, "add_bos") || !strcmp(line, "add_eos")) {
        if (parse_int(sp, -1, SPADE_BPE_MAX_TOKENS, &v)) return BPE_LINE_BAD;
        int *field = !strcmp(line, "bos")       ? &f->cfg.bos_id
                     : !strcmp(line, "eos")     ? &f->cfg.eos_id
                     : !strcmp(line, "add_bos") ? &f->cfg.add_bos
                                                : &f->cfg.add_eos;
        *field = (int)v;
    } else if (!strcmp(line, "tokens") && f->nt < 0) {
        if (parse_int(sp, 1, SPADE_BPE_MAX_TOKENS, &f->nt)) return BPE_LINE_BAD;
        f->tok = calloc((size_t)f->nt, sizeof *f->tok);
        f->tl = calloc((size_t)f->nt, sizeof *f->tl);
        f->ty = calloc((size_t)f->nt, sizeof *f->ty);
        if (!f->tok || !f->tl || !f->ty) return BPE_LINE_OOM;
    } else if (!strcmp(line, "merges") && f->nm < 0 && f->nt >= 0 && f->it == f->nt) {
        if (parse_int(sp, 0, SPADE_BPE_MAX_MERGES, &f->nm)) return BPE_LINE_BAD;
        f->mer = calloc((size_t)f->nm + 1, sizeof *f->mer);
        f->ml = calloc((size_t)f->nm + 1, sizeof *f->ml);
        if (!f->mer || !f->ml) return BPE_LINE_OOM;
    } else {
        return BPE_LINE_BAD;
    }
    return BPE_LINE_OK;
}

/* Every line of fp into f: 0, or -1 having said why (file:line). */
static int bpe_file_read(bpe_file *f, FILE *fp, const char *path, char *err, size_t errlen) {
    char *line = malloc(SPADE_BPE_MAX_TEXT * 4 + 64);
    long lineno = 0;
    int st = BPE_LINE_OK;
    if (!line) {
        spade_errf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    while (st == BPE_LINE_OK && fgets(line, SPADE_BPE_MAX_TEXT * 4 + 64, fp)) {
        lineno++;
        size_t n = strlen(line);
        if (!n || line[n - 1] != '\n') {
            spade_errf(err, errlen, "%s:%ld: line too long or not ended by a newline", path, lineno);
            free(line);
            return -1;
        }
        line[--n] = 0;
        if (lineno == 1) {
            if (strcmp(line, "spade-bpe-vocab 1")) {
                spade_errf(err, errlen, "%s:1: not a spade BPE vocabulary (want 'spade-bpe-vocab 1')", path);
                free(line);
                return -1;
            }
            continue;
        }
        st = f->nt >= 0 && f->it < f->nt   ? bpe_token_line(f, line)
             : f->nm >= 0 && f->im < f->nm ? bpe_merge_line(f, line, n)
                                           : bpe_key_line(f, line);
    }
    free(line);
    if (st == BPE_LINE_BAD) spade_errf(err, errlen, "%s:%ld: malformed line", path, lineno);
    if (st == BPE_LINE_OOM) spade_errf(err, errlen, "%s: out of memory", path);
    if (st != BPE_LINE_OK) return -1;
    if (ferror(fp)) {
        spade_errf(err, errlen, "%s: read error", path);
        return -1;
    }
    if (f->nt < 0 || f->it < f->nt || f->nm < 0 || f->im < f->nm) {
        spade_errf(err, errlen, "%s:%ld: truncated (%ld of %ld tokens, %ld of %ld merges)", path, lineno, f->it, f->nt,
                   f->im, f->nm);
        return -1;
    }
    return 0;
}

int spade_bpe_load(spade_bpe **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        spade_errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    bpe_file f = {.nt = -1,
                  .nm = -1,
                  .cfg = {.bos_id = SPADE_BPE_UNSET,
                          .eos_id = SPADE_BPE_UNSET,
                          .add_bos = SPADE_BPE_UNSET,
                          .add_eos = SPADE_BPE_UNSET},
                  .pre = "(missing)"};
    int rc = -1;
    if (!bpe_file_read(&f, fp, path, err, errlen)) {
        f.cfg.n_tokens = (int)f.nt;
        f.cfg.tokens = (const char *const *)f.tok;
        f.cfg.token_lens = f.tl;
        f.cfg.token_types = f.ty;
        f.cfg.n_merges = (int)f.nm;
        f.cfg.merges = (const char *const *)f.mer;
        f.cfg.merge_lens = f.ml;
        f.cfg.pre = f.pre;
        rc = spade_bpe_new(out, &f.cfg, path, err, errlen);
    }
    bpe_file_free(&f);
    fclose(fp);
    return rc;
}
