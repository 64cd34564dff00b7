/* tokenizer.c — the byte tokenizer and byte-level BPE (see tokenizer.h).
 *
 * What it is: the pre-split into chunks, the fast encoder (a heap of adjacent
 * pairs by merge rank inside each chunk, and a cache of chunk encodings), the
 * slow reference encoder it is tested against, the trainer, and the text file
 * format. What it is not: the policy's use of it (gpt.c, checkpoint.c) or the
 * command (cli/cmd_tokenizer.c).
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

static const char *const special_names[SPADE_TOK_COUNT - 256] = {
    "end", "designer", "agent", "observation", "action", "hint", "source",
};

#define NSPECIAL (SPADE_TOK_COUNT - 256)
#define MAX_MERGES (SPADE_TOK_MAX_VOCAB - SPADE_TOK_COUNT)
#define MAXC SPADE_BPE_MAX_CHUNK

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

/* Cache of chunk encodings: open addressing over (hash, bytes) with the bytes
 * and tokens in two arenas; emptied whole when either fills (a text's chunk
 * vocabulary is small, so refilling is cheap and no eviction order is needed). */
#define CACHE_SLOTS (1u << 15)
#define CACHE_BYTES (1u << 19)
#define CACHE_TOKS (1u << 19)
typedef struct {
    uint64_t h;
    uint32_t boff, toff;
    uint8_t blen, tlen; /* blen 0: empty slot */
} centry;
typedef struct {
    centry e[CACHE_SLOTS];
    size_t used, bused, tused;
    unsigned char bytes[CACHE_BYTES];
    uint16_t toks[CACHE_TOKS];
} chunk_cache;

struct spade_tokenizer {
    int nmerges, cap;
    int (*merges)[2];         /* merge i: tokens merges[i][0], merges[i][1] -> 263 + i */
    uint32_t *off;            /* (263 + cap + 1) offsets of each token's bytes in pieces */
    unsigned char *pieces;
    uint64_t *mkey;           /* pair -> merge index: open addressing, mval -1 = empty */
    int32_t *mval;
    size_t mmask;
    int32_t *bytepair;        /* (256 * 256) merge of two byte tokens, -1 none: every chunk starts as bytes */
    int cache_on;
    chunk_cache *cache;       /* allocated on first use */
    size_t hits, misses;
};

static uint64_t pair_key(int a, int b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }
/* the high bits of the product mix both ids (tables stay under 2^24 slots) */
static size_t pair_hash(uint64_t k) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 40); }

static inline int merge_rank(const spade_tokenizer *t, int a, int b) {
    if ((a | b) < 256) return t->bytepair ? t->bytepair[a << 8 | b] : -1;
    uint64_t k = pair_key(a, b);
    for (size_t i = pair_hash(k) & t->mmask;; i = (i + 1) & t->mmask) {
        if (t->mval[i] < 0) return -1;
        if (t->mkey[i] == k) return t->mval[i];
    }
}

/* A tokenizer with room for cap merges and none yet. */
static spade_tokenizer *tok_alloc(int cap) {
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
static int tok_add_merge(spade_tokenizer *t, int a, int b, char *why, size_t whylen) {
    int i = t->nmerges, defined = SPADE_TOK_COUNT + i;
    if (i >= t->cap) {
        spade_errf(why, whylen, "more merges than the %d announced", t->cap);
        return -1;
    }
    int ab[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        if (ab[k] < 0 || ab[k] >= defined) {
            spade_errf(why, whylen, "token %d is not defined before merge %d (ids 0..%d are)", ab[k], i,
                   defined - 1);
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
        spade_errf(why, whylen, "the merged token would be %zu bytes, over the %d-byte chunk limit", la + lb,
               MAXC);
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
    *out = tok_alloc(0);
    if (!*out) {
        spade_errf(err, errlen, "tokenizer: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    return 0;
}

void spade_tokenizer_free(spade_tokenizer *t) {
    if (!t) return;
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
    spade_tokenizer *c = tok_alloc(t->nmerges);
    if (!c) {
        *out = NULL;
        spade_errf(err, errlen, "tokenizer: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    for (int i = 0; i < t->nmerges; i++) tok_add_merge(c, t->merges[i][0], t->merges[i][1], NULL, 0);
    c->cache_on = t->cache_on;
    *out = c;
    return 0;
}

int spade_tokenizer_equal(const spade_tokenizer *a, const spade_tokenizer *b) {
    if (a->nmerges != b->nmerges) return 0;
    return !memcmp(a->merges, b->merges, (size_t)a->nmerges * sizeof *a->merges);
}

const char *spade_tokenizer_kind(const spade_tokenizer *t) { return t->nmerges ? "bpe" : "bytes"; }
int spade_tokenizer_vocab(const spade_tokenizer *t) { return SPADE_TOK_COUNT + t->nmerges; }
int spade_tokenizer_num_merges(const spade_tokenizer *t) { return t->nmerges; }

const unsigned char *spade_tokenizer_piece(const spade_tokenizer *t, int id, size_t *len) {
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
#define HPUSH(v)                                                              \
    do {                                                                      \
        uint32_t x_ = (v);                                                    \
        size_t c_ = hn++;                                                     \
        while (c_ && heap[(c_ - 1) / 2] > x_) {                               \
            heap[c_] = heap[(c_ - 1) / 2];                                    \
            c_ = (c_ - 1) / 2;                                                \
        }                                                                     \
        heap[c_] = x_;                                                        \
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

static uint64_t chunk_hash(const unsigned char *s, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ull;
    return h | 1; /* never 0 */
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

static int decode_v(const spade_tokenizer *t, int V, const int *toks, size_t n, int render_special,
                    char *out, size_t outcap, size_t *outlen) {
    size_t len = 0;
    int rc = 0;
#define PUT(ch)                                                               \
    do {                                                                      \
        if (len + 1 < outcap) out[len] = (char)(ch);                          \
        len++;                                                                \
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

int spade_tok_decode(const int *toks, size_t n, int render_special, char *out, size_t outcap,
                     size_t *outlen) {
    return decode_v(NULL, SPADE_TOK_COUNT, toks, n, render_special, out, outcap, outlen);
}

int spade_tokenizer_decode(const spade_tokenizer *t, const int *toks, size_t n, int render_special,
                           char *out, size_t outcap, size_t *outlen) {
    return decode_v(t, SPADE_TOK_COUNT + t->nmerges, toks, n, render_special, out, outcap, outlen);
}

/* ================================================================ training */

typedef struct {
    uint64_t h;
    uint32_t off;   /* in the trainer's byte arena */
    uint32_t len;
    int64_t count;
} tchunk;

struct spade_bpe_trainer {
    unsigned char *arena;
    size_t alen, acap;
    tchunk *ch;
    size_t nch, chcap;
    int32_t *tab;   /* open addressing over ch indices, -1 empty */
    size_t tmask;
    size_t bytes;
};

int spade_bpe_trainer_new(spade_bpe_trainer **out, char *err, size_t errlen) {
    spade_bpe_trainer *tr = calloc(1, sizeof *tr);
    if (tr) {
        tr->tmask = 1023;
        tr->tab = malloc((tr->tmask + 1) * sizeof *tr->tab);
    }
    if (!tr || !tr->tab) {
        free(tr);
        *out = NULL;
        spade_errf(err, errlen, "tokenizer training: out of memory");
        return SPADE_POLICY_ENOMEM;
    }
    memset(tr->tab, 0xff, (tr->tmask + 1) * sizeof *tr->tab);
    *out = tr;
    return 0;
}

void spade_bpe_trainer_free(spade_bpe_trainer *tr) {
    if (!tr) return;
    free(tr->arena);
    free(tr->ch);
    free(tr->tab);
    free(tr);
}

void spade_bpe_trainer_counts(const spade_bpe_trainer *tr, size_t *bytes, size_t *unique_chunks) {
    if (bytes) *bytes = tr->bytes;
    if (unique_chunks) *unique_chunks = tr->nch;
}

static int trainer_grow(spade_bpe_trainer *tr) {
    size_t ncap = (tr->tmask + 1) * 2;
    int32_t *nt = malloc(ncap * sizeof *nt);
    if (!nt) return -1;
    memset(nt, 0xff, ncap * sizeof *nt);
    for (size_t k = 0; k < tr->nch; k++) {
        size_t i = (size_t)tr->ch[k].h & (ncap - 1);
        while (nt[i] >= 0) i = (i + 1) & (ncap - 1);
        nt[i] = (int32_t)k;
    }
    free(tr->tab);
    tr->tab = nt;
    tr->tmask = ncap - 1;
    return 0;
}

int spade_bpe_trainer_add(spade_bpe_trainer *tr, const void *bytes, size_t n, char *err,
                          size_t errlen) {
    const unsigned char *s = bytes;
    for (size_t i = 0; i < n;) {
        size_t e = chunk_end(s, n, i), len = e - i;
        uint64_t h = chunk_hash(s + i, len);
        size_t k = (size_t)h & tr->tmask;
        int32_t found = -1;
        for (; tr->tab[k] >= 0; k = (k + 1) & tr->tmask) {
            tchunk *c = &tr->ch[tr->tab[k]];
            if (c->h == h && c->len == len && !memcmp(tr->arena + c->off, s + i, len)) {
                found = tr->tab[k];
                break;
            }
        }
        if (found >= 0) {
            tr->ch[found].count++;
        } else {
            if (tr->nch >= INT32_MAX / 2 || tr->alen + len > UINT32_MAX) goto oom;
            if (tr->nch == tr->chcap) {
                size_t nc = tr->chcap ? tr->chcap * 2 : 4096;
                tchunk *nch = realloc(tr->ch, nc * sizeof *nch);
                if (!nch) goto oom;
                tr->ch = nch;
                tr->chcap = nc;
            }
            if (tr->alen + len > tr->acap) {
                size_t nc = tr->acap ? tr->acap * 2 : 1 << 16;
                unsigned char *na = realloc(tr->arena, nc);
                if (!na) goto oom;
                tr->arena = na;
                tr->acap = nc;
            }
            memcpy(tr->arena + tr->alen, s + i, len);
            tr->ch[tr->nch] = (tchunk){.h = h, .off = (uint32_t)tr->alen, .len = (uint32_t)len, .count = 1};
            tr->alen += len;
            tr->tab[k] = (int32_t)tr->nch++;
            if (tr->nch * 2 > tr->tmask + 1 && trainer_grow(tr)) goto oom;
        }
        tr->bytes += len;
        i = e;
    }
    return 0;
oom:
    spade_errf(err, errlen, "tokenizer training: out of memory after %zu unique chunks", tr->nch);
    return SPADE_POLICY_ENOMEM;
}

/* The state of one training run: every unique chunk is a word of symbols with
 * its count; every adjacent pair has a total count (over words, weighted) and
 * the list of words it may occur in (stale entries are skipped when read). A
 * max-heap of (count, pair) finds the best pair; entries go stale when counts
 * drop and are re-pushed with the current count when popped (counts only rise
 * for pairs with the newest token, which are pushed when they do). */
typedef struct {
    int a, b;
    int64_t count;
    uint32_t *list;
    uint32_t llen, lcap;
    int touched;    /* merge index that last pushed it */
} tpair;
typedef struct {
    int64_t count;
    int a, b;
} hentry;
typedef struct {
    tpair *p;
    size_t np, pcap;
    int32_t *tab;
    size_t tmask;
    hentry *heap;
    size_t hn, hcap;
} tstate;

static int hbetter(const hentry *x, const hentry *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static int hpush(tstate *s, int64_t count, int a, int b) {
    if (s->hn == s->hcap) {
        size_t nc = s->hcap ? s->hcap * 2 : 4096;
        hentry *nh = realloc(s->heap, nc * sizeof *nh);
        if (!nh) return -1;
        s->heap = nh;
        s->hcap = nc;
    }
    hentry x = {.count = count, .a = a, .b = b};
    size_t c = s->hn++;
    while (c && hbetter(&x, &s->heap[(c - 1) / 2])) {
        s->heap[c] = s->heap[(c - 1) / 2];
        c = (c - 1) / 2;
    }
    s->heap[c] = x;
    return 0;
}

static hentry hpop(tstate *s) {
    hentry top = s->heap[0], last = s->heap[--s->hn];
    size_t c = 0;
    for (;;) {
        size_t l = 2 * c + 1;
        if (l >= s->hn) break;
        if (l + 1 < s->hn && hbetter(&s->heap[l + 1], &s->heap[l])) l++;
        if (!hbetter(&s->heap[l], &last)) break;
        s->heap[c] = s->heap[l];
        c = l;
    }
    if (s->hn) s->heap[c] = last;
    return top;
}

/* The index of pair (a, b), created when create is set; -1 when absent or out of memory. */
static int64_t pair_find(tstate *s, int a, int b, int create) {
    uint64_t k = pair_key(a, b);
    size_t i = pair_hash(k) & s->tmask;
    for (; s->tab[i] >= 0; i = (i + 1) & s->tmask) {
        tpair *p = &s->p[s->tab[i]];
        if (p->a == a && p->b == b) return s->tab[i];
    }
    if (!create) return -1;
    if (s->np == s->pcap) {
        size_t nc = s->pcap ? s->pcap * 2 : 4096;
        tpair *np = realloc(s->p, nc * sizeof *np);
        if (!np) return -1;
        s->p = np;
        s->pcap = nc;
    }
    s->p[s->np] = (tpair){.a = a, .b = b, .touched = -1};
    s->tab[i] = (int32_t)s->np;
    int64_t idx = (int64_t)s->np++;
    if (s->np * 2 > s->tmask + 1) {
        size_t ncap = (s->tmask + 1) * 2;
        int32_t *nt = malloc(ncap * sizeof *nt);
        if (!nt) return -1;
        memset(nt, 0xff, ncap * sizeof *nt);
        for (size_t q = 0; q < s->np; q++) {
            size_t j = pair_hash(pair_key(s->p[q].a, s->p[q].b)) & (ncap - 1);
            while (nt[j] >= 0) j = (j + 1) & (ncap - 1);
            nt[j] = (int32_t)q;
        }
        free(s->tab);
        s->tab = nt;
        s->tmask = ncap - 1;
    }
    return idx;
}

static int pair_list_add(tpair *p, uint32_t w) {
    if (p->llen && p->list[p->llen - 1] == w) return 0;
    if (p->llen == p->lcap) {
        uint32_t nc = p->lcap ? p->lcap * 2 : 4;
        uint32_t *nl = realloc(p->list, nc * sizeof *nl);
        if (!nl) return -1;
        p->list = nl;
        p->lcap = nc;
    }
    p->list[p->llen++] = w;
    return 0;
}

int spade_bpe_trainer_finish(spade_bpe_trainer *tr, int vocab, spade_tokenizer **out, char *err,
                             size_t errlen) {
    *out = NULL;
    if (vocab < SPADE_TOK_COUNT || vocab > SPADE_TOK_MAX_VOCAB) {
        spade_errf(err, errlen, "tokenizer training: vocabulary %d outside [%d, %d]", vocab, SPADE_TOK_COUNT,
               SPADE_TOK_MAX_VOCAB);
        return SPADE_POLICY_EINVAL;
    }
    int want = vocab - SPADE_TOK_COUNT, rc = SPADE_POLICY_ENOMEM;
    size_t nw = tr->nch;
    tstate s = {0};
    int32_t *sym = malloc((tr->alen ? tr->alen : 1) * sizeof *sym);
    uint32_t *wlen = malloc((nw ? nw : 1) * sizeof *wlen);
    int *stamp = malloc((nw ? nw : 1) * sizeof *stamp);
    uint32_t *tmp = NULL;
    size_t tmpcap = 0;
    int64_t *touched = malloc(((size_t)2 * MAXC + 1) * sizeof *touched);
    size_t ntouched = 0, touchedcap = (size_t)2 * MAXC + 1;
    spade_tokenizer *t = tok_alloc(want);
    s.tmask = 4095;
    s.tab = malloc((s.tmask + 1) * sizeof *s.tab);
    if (!sym || !wlen || !stamp || !touched || !t || !s.tab) goto done;
    memset(s.tab, 0xff, (s.tmask + 1) * sizeof *s.tab);
    for (size_t w = 0; w < nw; w++) {
        const tchunk *c = &tr->ch[w];
        for (uint32_t i = 0; i < c->len; i++) sym[c->off + i] = tr->arena[c->off + i];
        wlen[w] = c->len;
        stamp[w] = -1;
        for (uint32_t i = 0; i + 1 < c->len; i++) {
            int64_t pi = pair_find(&s, sym[c->off + i], sym[c->off + i + 1], 1);
            if (pi < 0 || pair_list_add(&s.p[pi], (uint32_t)w)) goto done;
            s.p[pi].count += c->count;
        }
    }
    for (size_t q = 0; q < s.np; q++)
        if (hpush(&s, s.p[q].count, s.p[q].a, s.p[q].b)) goto done;
    while (t->nmerges < want && s.hn) {
        hentry top = hpop(&s);
        int64_t pi = pair_find(&s, top.a, top.b, 0);
        int64_t cnt = s.p[pi].count;
        if (cnt != top.count) {
            if (cnt > 0 && hpush(&s, cnt, top.a, top.b)) goto done;
            continue;
        }
        if (cnt < 2) break;
        int m = t->nmerges, a = top.a, b = top.b, z = SPADE_TOK_COUNT + m;
        if (tok_add_merge(t, a, b, NULL, 0)) break; /* a chunk is at most MAXC bytes: cannot happen */
        /* the list is copied: creating pairs below may move s.p */
        uint32_t ll = s.p[pi].llen;
        if (ll > tmpcap) {
            uint32_t *nt = realloc(tmp, ll * sizeof *nt);
            if (!nt) goto done;
            tmp = nt;
            tmpcap = ll;
        }
        memcpy(tmp, s.p[pi].list, ll * sizeof *tmp);
        s.p[pi].llen = 0; /* every word holding it is rewritten below */
        ntouched = 0;
        for (uint32_t q = 0; q < ll; q++) {
            uint32_t w = tmp[q];
            if (stamp[w] == m) continue;
            stamp[w] = m;
            int32_t *ws = sym + tr->ch[w].off;
            uint32_t L = wlen[w], i;
            for (i = 0; i + 1 < L; i++)
                if (ws[i] == a && ws[i + 1] == b) break;
            if (i + 1 >= L) continue;
            int64_t f = tr->ch[w].count;
            for (i = 0; i + 1 < L; i++) s.p[pair_find(&s, ws[i], ws[i + 1], 0)].count -= f;
            uint32_t nl = 0;
            for (i = 0; i < L;) {
                if (i + 1 < L && ws[i] == a && ws[i + 1] == b) {
                    ws[nl++] = z;
                    i += 2;
                } else {
                    ws[nl++] = ws[i++];
                }
            }
            wlen[w] = nl;
            for (i = 0; i + 1 < nl; i++) {
                int with_z = ws[i] == z || ws[i + 1] == z;
                int64_t qi = pair_find(&s, ws[i], ws[i + 1], with_z);
                if (qi < 0) goto done;
                s.p[qi].count += f;
                if (with_z) {
                    if (pair_list_add(&s.p[qi], w)) goto done;
                    if (s.p[qi].touched != m) {
                        s.p[qi].touched = m;
                        if (ntouched == touchedcap) {
                            int64_t *nt = realloc(touched, touchedcap * 2 * sizeof *nt);
                            if (!nt) goto done;
                            touched = nt;
                            touchedcap *= 2;
                        }
                        touched[ntouched++] = qi;
                    }
                }
            }
        }
        for (size_t q = 0; q < ntouched; q++)
            if (hpush(&s, s.p[touched[q]].count, s.p[touched[q]].a, s.p[touched[q]].b)) goto done;
    }
    /* trim to the merges learned: the vocabulary the caller sees is exact */
    if (t->nmerges < want) {
        spade_tokenizer *c;
        if (spade_tokenizer_clone(&c, t, NULL, 0)) goto done;
        spade_tokenizer_free(t);
        t = c;
    }
    *out = t;
    t = NULL;
    rc = 0;
done:
    if (rc) spade_errf(err, errlen, "tokenizer training: out of memory (%zu unique chunks, %zu pairs)", nw, s.np);
    for (size_t q = 0; q < s.np; q++) free(s.p[q].list);
    free(s.p);
    free(s.tab);
    free(s.heap);
    free(sym);
    free(wlen);
    free(stamp);
    free(tmp);
    free(touched);
    spade_tokenizer_free(t);
    return rc;
}

/* ================================================================ file */

#define FILE_MAGIC "spade-tokenizer"
#define FILE_VERSION 1
#define SPLIT_NAME "code-1"

static uint64_t fnv1a(const void *data, size_t n) {
    const unsigned char *b = data;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

typedef struct {
    char *b;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *s, const char *p, size_t n) {
    if (s->oom) return;
    if (s->n + n + 1 > s->cap) {
        size_t nc = s->cap ? s->cap : 4096;
        while (s->n + n + 1 > nc) nc *= 2;
        char *nb = realloc(s->b, nc);
        if (!nb) {
            s->oom = 1;
            return;
        }
        s->b = nb;
        s->cap = nc;
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
    s->b[s->n] = 0;
}

static void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) sb_put(s, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

int spade_tokenizer_serialize(const spade_tokenizer *t, char **buf, size_t *len, char *err,
                              size_t errlen) {
    sbuf s = {0};
    sb_printf(&s, "%s %d\nsplit %s\nmerges %d\n", FILE_MAGIC, FILE_VERSION, SPLIT_NAME, t->nmerges);
    for (int i = 0; i < t->nmerges; i++) {
        sb_printf(&s, "%d %d # \"", t->merges[i][0], t->merges[i][1]);
        int id = SPADE_TOK_COUNT + i;
        for (uint32_t j = t->off[id]; j < t->off[id + 1]; j++) {
            unsigned char c = t->pieces[j];
            if (c == '"' || c == '\\') sb_printf(&s, "\\%c", c);
            else if (c == '\n') sb_put(&s, "\\n", 2);
            else if (c == '\t') sb_put(&s, "\\t", 2);
            else if (c == '\r') sb_put(&s, "\\r", 2);
            else if (c >= 0x20 && c < 0x7f) sb_put(&s, (const char *)&c, 1);
            else sb_printf(&s, "\\x%02x", c);
        }
        sb_put(&s, "\"\n", 2);
    }
    if (!s.oom) sb_printf(&s, "end fnv1a %016llx\n", (unsigned long long)fnv1a(s.b, s.n));
    if (s.oom) {
        free(s.b);
        spade_errf(err, errlen, "tokenizer: out of memory writing %d merges", t->nmerges);
        return SPADE_POLICY_ENOMEM;
    }
    *buf = s.b;
    *len = s.n;
    return 0;
}

/* Parses "A B" (then optional spaces and a '#' comment) at the start of line. */
static int parse_merge_line(const char *line, int *a, int *b) {
    const char *p = line;
    long v[2];
    for (int k = 0; k < 2; k++) {
        if (k && *p++ != ' ') return -1;
        if (*p < '0' || *p > '9') return -1;
        char *end;
        errno = 0;
        v[k] = strtol(p, &end, 10);
        if (errno || end - p > 6) return -1;
        p = end;
    }
    while (*p == ' ') p++;
    if (*p && *p != '#') return -1;
    *a = (int)v[0];
    *b = (int)v[1];
    return 0;
}

int spade_tokenizer_parse(spade_tokenizer **out, const char *buf, size_t len, const char *name,
                          char *err, size_t errlen) {
    *out = NULL;
    char line[1024], why[200];
    size_t pos = 0;
    int lineno = 0, nm = -1, got = 0;
    spade_tokenizer *t = NULL;
    size_t end_at = 0; /* offset of the 'end' line */
    for (;;) {
        if (pos >= len) break;
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        lineno++;
        if (!nl) {
            spade_errf(err, errlen, "%s: line %d: truncated: the file ends inside a line (no newline)", name, lineno);
            goto fail;
        }
        if (ll >= sizeof line || memchr(buf + pos, 0, ll)) {
            spade_errf(err, errlen, "%s: line %d: %s", name, lineno,
                   ll >= sizeof line ? "line too long: not a spade tokenizer file, or corrupt"
                                     : "NUL byte in the line: the file is corrupt");
            goto fail;
        }
        memcpy(line, buf + pos, ll);
        line[ll] = 0;
        size_t start = pos;
        pos += ll + 1;
        if (lineno == 1) {
            int ver;
            char tail;
            if (strncmp(line, FILE_MAGIC " ", sizeof FILE_MAGIC)) {
                spade_errf(err, errlen, "%s: not a spade tokenizer file (it does not start with \"%s\")", name,
                       FILE_MAGIC);
                goto fail;
            }
            if (sscanf(line + sizeof FILE_MAGIC, "%d%c", &ver, &tail) != 1 || ver != FILE_VERSION) {
                spade_errf(err, errlen, "%s: line 1: format version '%s', this build reads version %d", name,
                       line + sizeof FILE_MAGIC, FILE_VERSION);
                goto fail;
            }
        } else if (lineno == 2) {
            if (strcmp(line, "split " SPLIT_NAME)) {
                spade_errf(err, errlen, "%s: line 2: expected 'split %s' (the only pre-split rule this build has), got '%.80s'",
                       name, SPLIT_NAME, line);
                goto fail;
            }
        } else if (lineno == 3) {
            char *e;
            errno = 0;
            long m = strncmp(line, "merges ", 7) ? -1 : strtol(line + 7, &e, 10);
            if (m < 0 || errno || *e || line[7] < '0' || line[7] > '9' || m > MAX_MERGES) {
                spade_errf(err, errlen, "%s: line 3: expected 'merges M' with M in [0, %d], got '%.80s'", name,
                       MAX_MERGES, line);
                goto fail;
            }
            nm = (int)m;
            t = tok_alloc(nm);
            if (!t) {
                spade_errf(err, errlen, "%s: out of memory for %d merges", name, nm);
                spade_tokenizer_free(t);
                return SPADE_POLICY_ENOMEM;
            }
        } else if (got < nm) {
            int a, b;
            if (!strncmp(line, "end ", 4)) {
                spade_errf(err, errlen, "%s: line %d: truncated: 'end' after %d of the %d merges", name, lineno,
                       got, nm);
                goto fail;
            }
            if (parse_merge_line(line, &a, &b)) {
                spade_errf(err, errlen, "%s: line %d: merge %d: expected two token ids 'A B', got '%.80s'", name,
                       lineno, got, line);
                goto fail;
            }
            if (tok_add_merge(t, a, b, why, sizeof why)) {
                spade_errf(err, errlen, "%s: line %d: merge %d: %s", name, lineno, got, why);
                goto fail;
            }
            got++;
        } else {
            unsigned long long want;
            char *e;
            if (strncmp(line, "end fnv1a ", 10) || strlen(line + 10) != 16 ||
                (errno = 0, want = strtoull(line + 10, &e, 16), errno || *e)) {
                spade_errf(err, errlen, "%s: line %d: expected 'end fnv1a HASH' after the %d merges, got '%.80s'",
                       name, lineno, nm, line);
                goto fail;
            }
            uint64_t h = fnv1a(buf, start);
            if (h != want) {
                spade_errf(err, errlen,
                       "%s: checksum mismatch (the end line says %016llx, the contents hash to %016llx): "
                       "the file is corrupt or was edited",
                       name, want, (unsigned long long)h);
                goto fail;
            }
            end_at = pos;
            break;
        }
    }
    if (!end_at) {
        if (lineno < 3)
            spade_errf(err, errlen, "%s: truncated: %s", name,
                   lineno == 0 ? "the file is empty" : "it ends before the 'merges M' line");
        else
            spade_errf(err, errlen, "%s: truncated: it ends after %d of the %d merges, with no 'end' line", name,
                   got, nm);
        goto fail;
    }
    if (end_at < len) {
        spade_errf(err, errlen, "%s: line %d: trailing data after the 'end' line", name, lineno + 1);
        goto fail;
    }
    *out = t;
    return 0;
fail:
    spade_tokenizer_free(t);
    return SPADE_POLICY_EFORMAT;
}

int spade_tokenizer_save(const spade_tokenizer *t, const char *path, char *err, size_t errlen) {
    char *buf;
    size_t len;
    int rc = spade_tokenizer_serialize(t, &buf, &len, err, errlen);
    if (rc) return rc;
    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        free(buf);
        spade_errf(err, errlen, "%s: out of memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    rc = fd < 0 ? -1 : 0;
    for (size_t o = 0; !rc && o < len;) {
        ssize_t w = write(fd, buf + o, len - o);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) rc = -1;
        else o += (size_t)w;
    }
    if (!rc && fsync(fd)) rc = -1;
    int saved = errno;
    if (fd >= 0 && close(fd) && !rc) {
        rc = -1;
        saved = errno;
    }
    if (!rc && rename(tmp, path)) {
        rc = -1;
        saved = errno;
    }
    if (rc) {
        spade_errf(err, errlen, "%s: cannot write the tokenizer: %s", path, strerror(saved));
        unlink(tmp);
        rc = SPADE_POLICY_EIO;
    }
    free(tmp);
    free(buf);
    return rc;
}

int spade_tokenizer_load(spade_tokenizer **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        spade_errf(err, errlen, "%s: %s", path, strerror(errno));
        return SPADE_POLICY_EIO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        spade_errf(err, errlen, "%s: not a regular file", path);
        fclose(f);
        return SPADE_POLICY_EIO;
    }
    /* the largest valid file: MAX_MERGES lines of two ids and a 64-byte piece escaped */
    if (st.st_size > (off_t)MAX_MERGES * 300 + 4096) {
        spade_errf(err, errlen, "%s: %lld bytes: too large for a spade tokenizer file", path, (long long)st.st_size);
        fclose(f);
        return SPADE_POLICY_EFORMAT;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        spade_errf(err, errlen, "%s: out of memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    size_t got = fread(buf, 1, n, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr || got != n) {
        free(buf);
        spade_errf(err, errlen, "%s: read error or the file changed while reading", path);
        return SPADE_POLICY_EIO;
    }
    int rc = spade_tokenizer_parse(out, buf, n, path, err, errlen);
    free(buf);
    return rc;
}
