/* tokenizer_train.c — the byte-level BPE trainer (spade_bpe_trainer, tokenizer.h):
 * chunk counts from text, then merges by pair count with a heap and the pair
 * index updated in place.
 * What it is not: encoding (tokenizer.c) or the file format (tokenizer_file.c).
 */
#include "policy/tokenizer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errbuf.h"
#include "policy/backend.h"
#include "policy/tokenizer_internal.h"

/* ================================================================ training */

typedef struct {
    uint64_t h;
    uint32_t off; /* in the trainer's byte arena */
    uint32_t len;
    int64_t count;
} tchunk;

struct spade_bpe_trainer {
    unsigned char *arena;
    size_t alen, acap;
    tchunk *ch;
    size_t nch, chcap;
    int32_t *tab; /* open addressing over ch indices, -1 empty */
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

int spade_bpe_trainer_add(spade_bpe_trainer *tr, const void *bytes, size_t n, char *err, size_t errlen) {
    const unsigned char *s = bytes;
    for (size_t i = 0; i < n;) {
        size_t e = spade_tok_chunk_end(s, n, i), len = e - i;
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
    int touched; /* merge index that last pushed it */
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

/* One training run's working state over the trainer's chunks: each chunk's
 * symbols as merged so far (sym, wlen), the pair table and heap (s), the
 * buffers a merge reuses, and the tokenizer the merges go into; merge_run_free
 * frees it. */
typedef struct merge_run {
    spade_bpe_trainer *tr;
    tstate s;
    int32_t *sym;
    uint32_t *wlen;
    int *stamp; /* the last merge that rewrote each chunk */
    uint32_t *tmp; /* the chunks holding the pair being merged, copied */
    size_t tmpcap;
    int64_t *touched; /* the pairs a merge made, to go back on the heap */
    size_t ntouched, touchedcap;
    spade_tokenizer *t;
} merge_run;

static void merge_run_free(merge_run *r) {
    for (size_t q = 0; q < r->s.np; q++) free(r->s.p[q].list);
    free(r->s.p);
    free(r->s.tab);
    free(r->s.heap);
    free(r->sym);
    free(r->wlen);
    free(r->stamp);
    free(r->tmp);
    free(r->touched);
    spade_tokenizer_free(r->t);
}

/* The buffers, every chunk's pairs counted and the heap filled: 0, or -1 (out of memory). */
static int merge_run_open(merge_run *r, int want) {
    spade_bpe_trainer *tr = r->tr;
    size_t nw = tr->nch;
    r->sym = malloc((tr->alen ? tr->alen : 1) * sizeof *r->sym);
    r->wlen = malloc((nw ? nw : 1) * sizeof *r->wlen);
    r->stamp = malloc((nw ? nw : 1) * sizeof *r->stamp);
    r->touchedcap = (size_t)2 * MAXC + 1;
    r->touched = malloc(r->touchedcap * sizeof *r->touched);
    r->t = spade_tok_alloc(want);
    r->s.tmask = 4095;
    r->s.tab = malloc((r->s.tmask + 1) * sizeof *r->s.tab);
    if (!r->sym || !r->wlen || !r->stamp || !r->touched || !r->t || !r->s.tab) return -1;
    memset(r->s.tab, 0xff, (r->s.tmask + 1) * sizeof *r->s.tab);
    for (size_t w = 0; w < nw; w++) {
        const tchunk *c = &tr->ch[w];
        for (uint32_t i = 0; i < c->len; i++) r->sym[c->off + i] = tr->arena[c->off + i];
        r->wlen[w] = c->len;
        r->stamp[w] = -1;
        for (uint32_t i = 0; i + 1 < c->len; i++) {
            int64_t pi = pair_find(&r->s, r->sym[c->off + i], r->sym[c->off + i + 1], 1);
            if (pi < 0 || pair_list_add(&r->s.p[pi], (uint32_t)w)) return -1;
            r->s.p[pi].count += c->count;
        }
    }
    for (size_t q = 0; q < r->s.np; q++)
        if (hpush(&r->s, r->s.p[q].count, r->s.p[q].a, r->s.p[q].b)) return -1;
    return 0;
}

/* Pair qi, which merge m made, noted once to go back on the heap. */
static int merge_touch(merge_run *r, int64_t qi, int m) {
    if (r->s.p[qi].touched == m) return 0;
    r->s.p[qi].touched = m;
    if (r->ntouched == r->touchedcap) {
        int64_t *nt = realloc(r->touched, r->touchedcap * 2 * sizeof *nt);
        if (!nt) return -1;
        r->touched = nt;
        r->touchedcap *= 2;
    }
    r->touched[r->ntouched++] = qi;
    return 0;
}

/* Chunk w rewritten by merge m (a b -> z): its old pairs uncounted, the new
 * ones counted, those with z listed. 0, or -1 (out of memory). */
static int merge_chunk(merge_run *r, uint32_t w, int a, int b, int z, int m) {
    if (r->stamp[w] == m) return 0;
    r->stamp[w] = m;
    tstate *s = &r->s;
    int32_t *ws = r->sym + r->tr->ch[w].off;
    uint32_t L = r->wlen[w], i;
    for (i = 0; i + 1 < L; i++)
        if (ws[i] == a && ws[i + 1] == b) break;
    if (i + 1 >= L) return 0;
    int64_t f = r->tr->ch[w].count;
    for (i = 0; i + 1 < L; i++) s->p[pair_find(s, ws[i], ws[i + 1], 0)].count -= f;
    uint32_t nl = 0;
    for (i = 0; i < L;) {
        if (i + 1 < L && ws[i] == a && ws[i + 1] == b) {
            ws[nl++] = z;
            i += 2;
        } else {
            ws[nl++] = ws[i++];
        }
    }
    r->wlen[w] = nl;
    for (i = 0; i + 1 < nl; i++) {
        int with_z = ws[i] == z || ws[i + 1] == z;
        int64_t qi = pair_find(s, ws[i], ws[i + 1], with_z);
        if (qi < 0) return -1;
        s->p[qi].count += f;
        if (with_z && (pair_list_add(&s->p[qi], w) || merge_touch(r, qi, m))) return -1;
    }
    return 0;
}

/* Merge m of pair pi (a b -> z) in every chunk that holds it, and the pairs
 * it made back on the heap. 0, or -1 (out of memory). */
static int merge_apply(merge_run *r, int64_t pi, int a, int b, int z, int m) {
    /* the list is copied: creating pairs below may move s.p */
    uint32_t ll = r->s.p[pi].llen;
    if (ll > r->tmpcap) {
        uint32_t *nt = realloc(r->tmp, ll * sizeof *nt);
        if (!nt) return -1;
        r->tmp = nt;
        r->tmpcap = ll;
    }
    memcpy(r->tmp, r->s.p[pi].list, ll * sizeof *r->tmp);
    r->s.p[pi].llen = 0; /* every word holding it is rewritten below */
    r->ntouched = 0;
    for (uint32_t q = 0; q < ll; q++)
        if (merge_chunk(r, r->tmp[q], a, b, z, m)) return -1;
    for (size_t q = 0; q < r->ntouched; q++) {
        const tpair *p = &r->s.p[r->touched[q]];
        if (hpush(&r->s, p->count, p->a, p->b)) return -1;
    }
    return 0;
}

/* The most frequent pair merged, again and again, until want merges or no
 * pair occurs twice. 0, or -1 (out of memory). */
static int merge_loop(merge_run *r, int want) {
    tstate *s = &r->s;
    while (r->t->nmerges < want && s->hn) {
        hentry top = hpop(s);
        int64_t pi = pair_find(s, top.a, top.b, 0);
        int64_t cnt = s->p[pi].count;
        if (cnt != top.count) { /* a stale entry: the pair's count changed since it was pushed */
            if (cnt > 0 && hpush(s, cnt, top.a, top.b)) return -1;
            continue;
        }
        if (cnt < 2) break;
        int m = r->t->nmerges, z = SPADE_TOK_COUNT + m;
        if (spade_tok_add_merge(r->t, top.a, top.b, NULL, 0)) break; /* a chunk is at most MAXC bytes: cannot happen */
        if (merge_apply(r, pi, top.a, top.b, z, m)) return -1;
    }
    return 0;
}

/* The tokenizer cut to the merges learned: the vocabulary the caller sees is exact. */
static int merge_trim(merge_run *r, int want) {
    if (r->t->nmerges >= want) return 0;
    spade_tokenizer *c;
    if (spade_tokenizer_clone(&c, r->t, NULL, 0)) return -1;
    spade_tokenizer_free(r->t);
    r->t = c;
    return 0;
}

int spade_bpe_trainer_finish(spade_bpe_trainer *tr, int vocab, spade_tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    if (vocab < SPADE_TOK_COUNT || vocab > SPADE_TOK_MAX_VOCAB) {
        spade_errf(err, errlen, "tokenizer training: vocabulary %d outside [%d, %d]", vocab, SPADE_TOK_COUNT,
                   SPADE_TOK_MAX_VOCAB);
        return SPADE_POLICY_EINVAL;
    }
    int want = vocab - SPADE_TOK_COUNT, rc = SPADE_POLICY_ENOMEM;
    merge_run r = {.tr = tr};
    if (!merge_run_open(&r, want) && !merge_loop(&r, want) && !merge_trim(&r, want)) {
        *out = r.t;
        r.t = NULL;
        rc = 0;
    }
    if (rc)
        spade_errf(err, errlen, "tokenizer training: out of memory (%zu unique chunks, %zu pairs)", tr->nch, r.s.np);
    merge_run_free(&r);
    return rc;
}
