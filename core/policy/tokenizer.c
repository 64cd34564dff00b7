/* tokenizer.c — the byte tokenizer and byte-level BPE (see tokenizer.h):
 * encoding and decoding.
 *
 * What it is: the tokenizer object, the pre-split into chunks, the fast
 * encoder (a heap of adjacent pairs by merge rank inside each chunk, and a
 * cache of chunk encodings), the slow reference encoder it is tested against,
 * and decoding. What it is not: the trainer (tokenizer_train.c), the text file
 * format (tokenizer_file.c), the policy's use of it (gpt.c, checkpoint.c) or
 * the command (cli/cmd_tokenizer.c).
 */
#include "policy/tokenizer.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errbuf.h"
#include "policy/backend.h"
#include "policy/tokenizer_internal.h"

static const char *const special_names[SPADE_TOK_COUNT - 256] = {
    "end", "designer", "agent", "observation", "action", "hint", "source",
};

/* ================================================================ bytes */

size_t spade_tok_encode(const void *bytes, size_t n, int *out) {
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) out[i] = b[i];
    return n;
}

const char *spade_tok_name(int tok) {
    if (tok < 256 || tok >= SPADE_TOK_COUNT) return NULL;
    return special_names[tok - 256];
}

int spade_tok_lookup(const char *name) {
    size_t n = strlen(name);
    if (n >= 4 && !strncmp(name, "<|", 2) && !strcmp(name + n - 2, "|>")) {
        name += 2;
        n -= 4;
    }
    for (int i = 0; i < NSPECIAL; i++)
        if (strlen(special_names[i]) == n && !strncmp(special_names[i], name, n)) return 256 + i;
    return -1;
}

/* ================================================================ objects */

static inline int merge_rank(const spade_tokenizer *t, int a, int b) {
    if ((a | b) < 256) return t->bytepair ? t->bytepair[a << 8 | b] : -1;
    uint64_t k = pair_key(a, b);
    for (size_t i = pair_hash(k) & t->mmask;; i = (i + 1) & t->mmask) {
        if (t->mval[i] < 0) return -1;
        if (t->mkey[i] == k) return t->mval[i];
    }
}

/* A tokenizer with room for cap merges and none yet. */
spade_tokenizer *spade_tok_alloc(int cap) {
    spade_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cap = cap;
    size_t mcap = 16;
    while (mcap < 4 * (size_t)cap) mcap *= 2; /* load <= 1/4: most lookups are misses, which probe to a gap */
    t->mmask = mcap - 1;
    t->merges = malloc(((size_t)cap + 1) * sizeof *t->merges);
    t->off = malloc(((size_t)SPADE_TOK_COUNT + cap + 1) * sizeof *t->off);
    t->pieces = malloc(256 + (size_t)cap * MAXC);
    t->mkey = malloc(mcap * sizeof *t->mkey);
    t->mval = malloc(mcap * sizeof *t->mval);
    t->bytepair = cap ? malloc(65536 * sizeof *t->bytepair) : NULL;
    if (!t->merges || !t->off || !t->pieces || !t->mkey || !t->mval || (cap && !t->bytepair)) {
        spade_tokenizer_free(t);
        return NULL;
    }
    memset(t->mval, 0xff, mcap * sizeof *t->mval);
    if (t->bytepair) memset(t->bytepair, 0xff, 65536 * sizeof *t->bytepair);
    for (int i = 0; i < 256; i++) {
        t->pieces[i] = (unsigned char)i;
        t->off[i] = (uint32_t)i;
    }
    for (int i = 256; i <= SPADE_TOK_COUNT; i++) t->off[i] = 256; /* specials: no bytes */
    t->cache_on = 1;
    return t;
}

/* Appends merge (a, b); on a bad merge returns -1 with the reason in why. */
int spade_tok_add_merge(spade_tokenizer *t, int a, int b, char *why, size_t whylen) {
    int i = t->nmerges, defined = SPADE_TOK_COUNT + i;
    if (i >= t->cap) {
        spade_errf(why, whylen, "more merges than the %d announced", t->cap);
        return -1;
    }
    int ab[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        if (ab[k] < 0 || ab[k] >= defined) {
            spade_errf(why, whylen, "token %d is not defined before merge %d (ids 0..%d are)", ab[k], i, defined - 1);
            return -1;
        }
        if (ab[k] >= 256 && ab[k] < SPADE_TOK_COUNT) {
            spade_errf(why, whylen, "token %d is the special token <|%s|>, which never merges", ab[k],
                       special_names[ab[k] - 256]);
            return -1;
        }
    }
    int dup = merge_rank(t, a, b);
    if (dup >= 0) {
        spade_errf(why, whylen, "the pair %d %d is already merge %d", a, b, dup);
        return -1;
    }
    size_t la = t->off[a + 1] - t->off[a], lb = t->off[b + 1] - t->off[b];
    if (la + lb > MAXC) {
        spade_errf(why, whylen, "the merged token would be %zu bytes, over the %d-byte chunk limit", la + lb, MAXC);
        return -1;
    }
    uint32_t o = t->off[defined];
    memcpy(t->pieces + o, t->pieces + t->off[a], la);
    memcpy(t->pieces + o + la, t->pieces + t->off[b], lb);
    t->off[defined + 1] = o + (uint32_t)(la + lb);
    t->merges[i][0] = a;
    t->merges[i][1] = b;
    uint64_t key = pair_key(a, b);
    size_t s = pair_hash(key) & t->mmask;
    while (t->mval[s] >= 0) s = (s + 1) & t->mmask;
    t->mkey[s] = key;
    t->mval[s] = i;
    if ((a | b) < 256) t->bytepair[a << 8 | b] = i;
    t->nmerges++;
    return 0;
}

int spade_tokenizer_new_bytes(spade_tokenizer **out, char *err, size_t errlen) {
    *out = spade_tok_alloc(0);
    if (!*out) {
        spade_errf(err, errlen, "tokenizer: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    return 0;
}

void spade_tokenizer_free(spade_tokenizer *t) {
    if (!t) return;
    gguf_tok_release(t->gg);
    free(t->merges);
    free(t->off);
    free(t->pieces);
    free(t->mkey);
    free(t->mval);
    free(t->bytepair);
    free(t->cache);
    free(t);
}

int spade_tokenizer_clone(spade_tokenizer **out, const spade_tokenizer *t, char *err, size_t errlen) {
    if (t->gg) return gguf_tok_clone(out, t, err, errlen);
    spade_tokenizer *c = spade_tok_alloc(t->nmerges);
    if (!c) {
        *out = NULL;
        spade_errf(err, errlen, "tokenizer: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    for (int i = 0; i < t->nmerges; i++) spade_tok_add_merge(c, t->merges[i][0], t->merges[i][1], NULL, 0);
    c->cache_on = t->cache_on;
    *out = c;
    return 0;
}

int spade_tokenizer_equal(const spade_tokenizer *a, const spade_tokenizer *b) {
    if (a->gg || b->gg) return gguf_tok_equal(a, b);
    if (a->nmerges != b->nmerges) return 0;
    return !memcmp(a->merges, b->merges, (size_t)a->nmerges * sizeof *a->merges);
}

const char *spade_tokenizer_kind(const spade_tokenizer *t) { return t->gg ? "gguf" : t->nmerges ? "bpe" : "bytes"; }
int spade_tokenizer_vocab(const spade_tokenizer *t) { return t->gg ? gguf_tok_vocab(t) : SPADE_TOK_COUNT + t->nmerges; }
int spade_tokenizer_num_merges(const spade_tokenizer *t) { return t->nmerges; }

const unsigned char *spade_tokenizer_piece(const spade_tokenizer *t, int id, size_t *len) {
    if (t->gg) return gguf_tok_piece(t, id, len);
    if (id < 0 || id >= SPADE_TOK_COUNT + t->nmerges || (id >= 256 && id < SPADE_TOK_COUNT)) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->off[id + 1] - t->off[id];
    return t->pieces + t->off[id];
}

void spade_tokenizer_cache_stats(const spade_tokenizer *t, size_t *hits, size_t *misses) {
    if (hits) *hits = t->hits;
    if (misses) *misses = t->misses;
}

void spade_tokenizer_set_cache(spade_tokenizer *t, int on) { t->cache_on = on != 0; }

/* ================================================================ pre-split */

enum { C_SPACE, C_WS, C_WORD, C_PUNCT };

/* Byte classes: letters, digits, '_' and every byte >= 0x80 (so UTF-8
 * sequences stay inside words) are word bytes; ' ' and the other ASCII
 * whitespace are space; everything else (NUL and controls included) is
 * punctuation. */
/* a table, laid out by its rows */
/* clang-format off */
static const unsigned char byte_class[256] = {
#define R16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
    /* 0x00 */ C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT,
    C_PUNCT, C_WS, C_WS, C_WS, C_WS, C_WS, C_PUNCT, C_PUNCT,
    /* 0x10 */ R16(C_PUNCT),
    /* 0x20 */ C_SPACE, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT,
    C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT,
    /* 0x30 */ C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD,
    C_WORD, C_WORD, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT,
    /* 0x40 */ C_PUNCT, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD,
    C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD,
    /* 0x50 */ C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD,
    C_WORD, C_WORD, C_WORD, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_WORD,
    /* 0x60 */ C_PUNCT, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD,
    C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD,
    /* 0x70 */ C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD, C_WORD,
    C_WORD, C_WORD, C_WORD, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT, C_PUNCT,
    /* 0x80..0xff */ R16(C_WORD), R16(C_WORD), R16(C_WORD), R16(C_WORD),
    R16(C_WORD), R16(C_WORD), R16(C_WORD), R16(C_WORD),
#undef R16
};
/* clang-format on */

/* End of the chunk that starts at i (the pre-split "code-1"), the first rule
 * that applies:
 *   1. a word run with a prefix of one space or of one or two punctuation
 *      bytes: " x", "(x", "->next", "(&x";
 *   2. a word run;
 *   3. a punctuation run with at most one leading space, then any newlines
 *      and, after a newline, the indentation but for the last space when a
 *      word or punctuation follows: ");\n   " + " return";
 *   4. a whitespace run, which also leaves its last space to a word or
 *      punctuation run that follows: "\n   " + " x".
 * Every chunk is at most MAXC bytes (a longer run is cut there). */
static inline size_t chunk_end(const unsigned char *s, size_t n, size_t i) {
    size_t lim = n - i > MAXC ? i + MAXC : n, k;
    int c = byte_class[s[i]], c1 = i + 1 < lim ? byte_class[s[i + 1]] : -1;
    if (c == C_PUNCT && c1 == C_PUNCT && i + 2 < lim && byte_class[s[i + 2]] == C_WORD) {
        k = i + 3;
    } else if (c == C_WORD || ((c == C_SPACE || c == C_PUNCT) && c1 == C_WORD)) {
        k = i + 1;
    } else if (c == C_PUNCT || (c == C_SPACE && c1 == C_PUNCT)) {
        for (k = i + 1; k < lim && byte_class[s[k]] == C_PUNCT;) k++;
        if (k < lim && s[k] == '\n') {
            while (k < lim && s[k] == '\n') k++;
            size_t k0 = k;
            while (k < lim && s[k] == ' ') k++;
            if (k < n && k > k0 && byte_class[s[k]] >= C_WORD) k--;
        }
        return k;
    } else {
        for (k = i + 1; k < lim && byte_class[s[k]] <= C_WS;) k++;
        if (k < n && k - i > 1 && s[k - 1] == ' ' && byte_class[s[k]] >= C_WORD) k--;
        return k;
    }
    while (k < lim && byte_class[s[k]] == C_WORD) k++;
    return k;
}

size_t spade_tok_chunk_end(const unsigned char *s, size_t n, size_t i) { return chunk_end(s, n, i); }

size_t spade_tokenizer_split(const void *bytes, size_t n, size_t *ends) {
    const unsigned char *s = bytes;
    size_t k = 0;
    for (size_t i = 0; i < n; i = ends[k++]) ends[k] = chunk_end(s, n, i);
    return k;
}

/* ================================================================ encode */

/* Merges inside one chunk (n <= MAXC bytes) by rank: a min-heap of
 * rank * 64 + position, so equal ranks pop left to right (the order the
 * reference and training merge in). A merge only creates pairs with the new
 * token, whose ranks are above the one just applied, so ranks pop in order. */
static size_t encode_chunk(const spade_tokenizer *t, const unsigned char *s, size_t n, int *out) {
    int sym[MAXC];
    int8_t nxt[MAXC], prv[MAXC], alive[MAXC];
    uint32_t heap[3 * MAXC];
    size_t hn = 0;
#define HPUSH(v)                                                                                                       \
    do {                                                                                                               \
        uint32_t x_ = (v);                                                                                             \
        size_t c_ = hn++;                                                                                              \
        while (c_ && heap[(c_ - 1) / 2] > x_) {                                                                        \
            heap[c_] = heap[(c_ - 1) / 2];                                                                             \
            c_ = (c_ - 1) / 2;                                                                                         \
        }                                                                                                              \
        heap[c_] = x_;                                                                                                 \
    } while (0)
    for (size_t i = 0; i < n; i++) {
        sym[i] = s[i];
        nxt[i] = (int8_t)(i + 1);
        prv[i] = (int8_t)((int)i - 1);
        alive[i] = 1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        int r = merge_rank(t, sym[i], sym[i + 1]);
        if (r >= 0) HPUSH((uint32_t)r * MAXC + (uint32_t)i);
    }
    while (hn) {
        uint32_t top = heap[0], last = heap[--hn];
        size_t c = 0;
        for (;;) {
            size_t l = 2 * c + 1;
            if (l >= hn) break;
            if (l + 1 < hn && heap[l + 1] < heap[l]) l++;
            if (heap[l] >= last) break;
            heap[c] = heap[l];
            c = l;
        }
        if (hn) heap[c] = last;
        int r = (int)(top / MAXC), i = (int)(top % MAXC), j = nxt[i];
        if (!alive[i] || j >= (int)n || sym[i] != t->merges[r][0] || sym[j] != t->merges[r][1]) continue;
        sym[i] = SPADE_TOK_COUNT + r;
        alive[j] = 0;
        nxt[i] = nxt[j];
        if (nxt[j] < (int)n) prv[(int)nxt[j]] = (int8_t)i;
        if (prv[i] >= 0) {
            int r2 = merge_rank(t, sym[(int)prv[i]], sym[i]);
            if (r2 >= 0) HPUSH((uint32_t)r2 * MAXC + (uint32_t)prv[i]);
        }
        if (nxt[i] < (int)n) {
            int r2 = merge_rank(t, sym[i], sym[(int)nxt[i]]);
            if (r2 >= 0) HPUSH((uint32_t)r2 * MAXC + (uint32_t)i);
        }
    }
#undef HPUSH
    size_t k = 0;
    for (int i = 0; i < (int)n; i = nxt[i]) out[k++] = sym[i];
    return k;
}

static size_t encode_cached(spade_tokenizer *t, const unsigned char *s, size_t n, int *out) {
    chunk_cache *c = t->cache;
    uint64_t h = chunk_hash(s, n);
    size_t i = (size_t)h & (CACHE_SLOTS - 1);
    for (; c->e[i].blen; i = (i + 1) & (CACHE_SLOTS - 1)) {
        centry *e = &c->e[i];
        if (e->h == h && e->blen == n && !memcmp(c->bytes + e->boff, s, n)) {
            t->hits++;
            for (size_t k = 0; k < e->tlen; k++) out[k] = c->toks[e->toff + k];
            return e->tlen;
        }
    }
    t->misses++;
    size_t k = encode_chunk(t, s, n, out);
    if (c->used >= CACHE_SLOTS / 2 || c->bused + n > CACHE_BYTES || c->tused + k > CACHE_TOKS) {
        memset(c->e, 0, sizeof c->e);
        c->used = c->bused = c->tused = 0;
        i = (size_t)h & (CACHE_SLOTS - 1);
    }
    centry *e = &c->e[i];
    e->h = h;
    e->blen = (uint8_t)n;
    e->tlen = (uint8_t)k;
    e->boff = (uint32_t)c->bused;
    e->toff = (uint32_t)c->tused;
    memcpy(c->bytes + c->bused, s, n);
    for (size_t m = 0; m < k; m++) c->toks[c->tused + m] = (uint16_t)out[m];
    c->bused += n;
    c->tused += k;
    c->used++;
    return k;
}

/* The tokens of one pre-split chunk s[0..len) (len <= MAXC) into out. */
static size_t encode_one(spade_tokenizer *t, const unsigned char *s, size_t len, int use_cache, int *out) {
    if (len == 1) {
        out[0] = s[0];
        return 1;
    }
    if (len == 2) {
        int r = merge_rank(t, s[0], s[1]);
        if (r >= 0) {
            out[0] = SPADE_TOK_COUNT + r;
            return 1;
        }
        out[0] = s[0];
        out[1] = s[1];
        return 2;
    }
    return use_cache ? encode_cached(t, s, len, out) : encode_chunk(t, s, len, out);
}

static int cache_ready(spade_tokenizer *t) {
    if (t->cache_on && !t->cache) t->cache = calloc(1, sizeof *t->cache);
    return t->cache_on && t->cache;
}

size_t spade_tokenizer_encode(spade_tokenizer *t, const void *bytes, size_t n, int *out) {
    const unsigned char *s = bytes;
    if (t->gg) return gguf_tok_encode(t, bytes, n, out);
    if (!t->nmerges) return spade_tok_encode(bytes, n, out);
    int use_cache = cache_ready(t);
    size_t k = 0;
    for (size_t i = 0, e; i < n; i = e) {
        e = chunk_end(s, n, i);
        k += encode_one(t, s + i, e - i, use_cache, out + k);
    }
    return k;
}

size_t spade_tokenizer_count(spade_tokenizer *t, const void *bytes, size_t n) {
    const unsigned char *s = bytes;
    if (t->gg) return gguf_tok_encode(t, bytes, n, NULL);
    if (!t->nmerges) return n; /* bytes: one token each */
    int use_cache = cache_ready(t), chunk[MAXC];
    size_t k = 0;
    for (size_t i = 0, e; i < n; i = e) {
        e = chunk_end(s, n, i);
        k += encode_one(t, s + i, e - i, use_cache, chunk);
    }
    return k;
}

size_t spade_tokenizer_encode_ref(const spade_tokenizer *t, const void *bytes, size_t n, int *out) {
    if (t->gg) return gguf_tok_encode(t, bytes, n, out);
    const unsigned char *s = bytes;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t e = chunk_end(s, n, i), m = e - i;
        int sym[MAXC];
        for (size_t j = 0; j < m; j++) sym[j] = s[i + j];
        for (;;) {
            int best = -1;
            for (size_t j = 0; j + 1 < m; j++) {
                int r = merge_rank(t, sym[j], sym[j + 1]);
                if (r >= 0 && (best < 0 || r < best)) best = r;
            }
            if (best < 0) break;
            int a = t->merges[best][0], b = t->merges[best][1];
            size_t w = 0;
            for (size_t j = 0; j < m;) {
                if (j + 1 < m && sym[j] == a && sym[j + 1] == b) {
                    sym[w++] = SPADE_TOK_COUNT + best;
                    j += 2;
                } else {
                    sym[w++] = sym[j++];
                }
            }
            m = w;
        }
        for (size_t j = 0; j < m; j++) out[k++] = sym[j];
        i = e;
    }
    return k;
}

/* ================================================================ decode */

static int decode_v(const spade_tokenizer *t, int V, const int *toks, size_t n, int render_special, char *out,
                    size_t outcap, size_t *outlen) {
    size_t len = 0;
    int rc = 0;
#define PUT(ch)                                                                                                        \
    do {                                                                                                               \
        if (len + 1 < outcap) out[len] = (char)(ch);                                                                   \
        len++;                                                                                                         \
    } while (0)
    for (size_t i = 0; i < n; i++) {
        int tk = toks[i];
        if (tk < 0 || tk >= V) {
            rc = SPADE_POLICY_EINVAL;
            break;
        }
        if (tk < 256) {
            PUT(tk);
        } else if (tk < SPADE_TOK_COUNT) {
            if (render_special) {
                const char *nm = special_names[tk - 256];
                PUT('<');
                PUT('|');
                for (; *nm; nm++) PUT(*nm);
                PUT('|');
                PUT('>');
            }
        } else {
            const unsigned char *p = t->pieces + t->off[tk];
            for (uint32_t j = t->off[tk]; j < t->off[tk + 1]; j++, p++) PUT(*p);
        }
    }
#undef PUT
    if (outcap) out[len < outcap ? len : outcap - 1] = 0;
    if (outlen) *outlen = len;
    return rc;
}

int spade_tok_decode(const int *toks, size_t n, int render_special, char *out, size_t outcap, size_t *outlen) {
    return decode_v(NULL, SPADE_TOK_COUNT, toks, n, render_special, out, outcap, outlen);
}

int spade_tokenizer_decode(const spade_tokenizer *t, const int *toks, size_t n, int render_special, char *out,
                           size_t outcap, size_t *outlen) {
    if (t->gg) return gguf_tok_decode(t, toks, n, render_special, out, outcap, outlen);
    return decode_v(t, SPADE_TOK_COUNT + t->nmerges, toks, n, render_special, out, outcap, outlen);
}
