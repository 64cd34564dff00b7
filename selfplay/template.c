/* template.c — the designer filling templates in one decoding batch
 * (template.h).
 *
 * What it is not: the loop around it (loop.c) or the template text
 * (designer/template.c).
 */
#include "selfplay/template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "rng.h"

void spade_template_slot_clear(spade_template_slot *s) {
    for (int k = 0; k < SPADE_TEMPLATE_MAX_HOLES; k++) {
        free(s->fill[k]);
        s->fill[k] = NULL;
        s->fill_len[k] = 0;
    }
    free(s->source);
    s->source = NULL;
    s->source_len = 0;
}

/* The end of turn (<|end|>, or a chat model's <|im_end|>) and every token
 * whose text holds a newline: where a hole stops. */
static int *stop_tokens(spade_tokenizer *tok, int *n) {
    int V = spade_tokenizer_vocab(tok), k = 0;
    int *s = malloc((size_t)(V + 1) * sizeof *s);
    if (!s) return NULL;
    s[k++] = spade_tokenizer_end_of_turn(tok);
    for (int id = 0; id < V; id++) {
        size_t len;
        const unsigned char *piece = spade_tokenizer_piece(tok, id, &len);
        if (piece && memchr(piece, '\n', len)) s[k++] = id;
    }
    *n = k;
    return s;
}

int spade_template_tokens(spade_policy *p, const spade_template *t, int hole_tokens, int *pieces) {
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    char *prompt = NULL;
    size_t plen = 0, pl;
    /* the opening as the designer's turn lays it out (spade's role tokens, or a chat model's system card, ChatML
     * markup and request: the same function self-play opens it with), then the closing end of turn */
    long n = 1;
    if (spade_template_prompt(t, &prompt, &plen) == 0) {
        spade_transcript open;
        spade_transcript_init(&open);
        spade_transcript_designer_open(&open, tok, prompt, plen);
        n += open.len;
        spade_transcript_free(&open);
    }
    free(prompt);
    long pc = 0;
    for (int k = 0; k <= spade_template_holes(t); k++) {
        const char *piece = spade_template_piece(t, k, &pl);
        pc += (long)spade_tokenizer_count(tok, piece, pl);
    }
    if (pieces) *pieces = (int)pc;
    return (int)(n + pc + (long)spade_template_holes(t) * hole_tokens);
}

int spade_template_fits(spade_policy *p, const spade_template *t, int hole_tokens, char *err, size_t errlen) {
    int pieces, need = spade_template_tokens(p, t, hole_tokens, &pieces), ctx = spade_policy_config(p)->context;
    if (need <= ctx) return 0;
    int H = spade_template_holes(t), chat = spade_tokenizer_is_chat(spade_policy_tokenizer(p));
    spade_errf(err, errlen,
               "[designer] template = %s: %d tokens of template text + %d holes x designer.hole_tokens %d + %d of "
               "%s = %d, over the policy's context of %d tokens (raise [policy] context, lower [designer] "
               "hole_tokens or shorten the template)",
               spade_template_name(t), pieces, H, hole_tokens, need - pieces - H * hole_tokens,
               chat ? "the chat turns (the designer card, ChatML markup and the request)" : "prompt and role tokens",
               need, ctx);
    return -1;
}

/* One decoding batch of template slots: the buffers every hole reuses, the
 * decoder, and what each slot's decoder slot has read (fed); tpl_batch_free
 * frees it. */
typedef struct tpl_batch {
    spade_policy *p;
    spade_tokenizer *tok;
    spade_template_slot *s;
    int n, ctx, T, maxh; /* T: the tokens a hole may take */
    int *slots, *counts, *status, *maxt, *lens, *fed; /* n each, in one allocation (slots) */
    int *stop, n_stop;
    const int **toks;
    uint64_t *seeds;
    int *out; /* n x T sampled tokens, lp their log-probabilities */
    float *lp;
    char *text; /* cap bytes: the longest text T tokens can decode to */
    size_t cap;
    spade_decoder *dec;
    spade_sample_opts so;
    char *err;
    size_t errlen;
} tpl_batch;

static void tpl_batch_free(tpl_batch *b) {
    spade_decoder_free(b->dec);
    free(b->slots);
    free(b->stop);
    free(b->toks);
    free(b->seeds);
    free(b->out);
    free(b->lp);
    free(b->text);
}

static int tpl_oom(tpl_batch *b) {
    spade_errf(b->err, b->errlen, "template designer: out of memory");
    return -1;
}

/* The buffers, sized for n slots of T tokens: 0, or -1 having said why. */
static int tpl_batch_alloc(tpl_batch *b) {
    int n = b->n, T = b->T;
    b->slots = malloc((size_t)n * 6 * sizeof *b->slots);
    b->stop = stop_tokens(b->tok, &b->n_stop);
    b->toks = malloc((size_t)n * sizeof *b->toks);
    b->seeds = malloc((size_t)n * sizeof *b->seeds);
    b->out = malloc((size_t)n * T * sizeof *b->out);
    b->lp = malloc((size_t)n * T * sizeof *b->lp);
    if (!b->slots || !b->stop || !b->toks || !b->seeds || !b->out || !b->lp) return tpl_oom(b);
    b->counts = b->slots + n, b->status = b->slots + 2 * n, b->maxt = b->slots + 3 * n, b->lens = b->slots + 4 * n,
    b->fed = b->slots + 5 * n;
    size_t cap = 1;
    for (int id = 0; id < spade_tokenizer_vocab(b->tok); id++) {
        size_t len = 0;
        if (spade_tokenizer_piece(b->tok, id, &len) && len + 1 > cap) cap = len + 1;
    }
    b->cap = cap * (size_t)T + 1;
    if (!(b->text = malloc(b->cap))) return tpl_oom(b);
    return 0;
}

/* Each transcript given its template's first piece, the decoder made, and the
 * sampling options every hole uses: 0, or -1. */
static int tpl_batch_open(tpl_batch *b, const spade_template_opts *o) {
    size_t pl;
    for (int i = 0; i < b->n; i++) {
        spade_template_slot *x = &b->s[i];
        int H = spade_template_holes(x->tpl);
        if (H > b->maxh) b->maxh = H;
        const char *piece = spade_template_piece(x->tpl, 0, &pl);
        spade_transcript_text(x->tr, b->tok, piece, pl);
        b->fed[i] = 0;
        x->sampled = 0;
    }
    if (spade_decoder_new(&b->dec, b->p, b->n, b->err, b->errlen) < 0) return -1;
    spade_sample_opts_default(&b->so);
    b->so.temperature = o->temperature;
    b->so.top_p = o->top_p;
    b->so.max_tokens = b->T;
    b->so.stop = b->stop;
    b->so.n_stop = b->n_stop;
    return 0;
}

/* Before hole h: what each slot's transcript holds past what its decoder slot
 * has read (the opening and the piece before this hole), appended. */
static int tpl_feed(tpl_batch *b, int h) {
    spade_template_slot *s = b->s;
    int k = 0;
    for (int i = 0; i < b->n; i++) {
        if (h >= spade_template_holes(s[i].tpl)) continue;
        if (s[i].tr->oom) {
            spade_errf(b->err, b->errlen, "template designer: out of memory for a transcript");
            return -1;
        }
        if (s[i].tr->len > b->fed[i]) {
            b->slots[k] = i, b->toks[k] = s[i].tr->tok + b->fed[i], b->counts[k] = s[i].tr->len - b->fed[i];
            k++;
        }
    }
    if (k > 0 && spade_decoder_append_batch(b->dec, b->slots, b->toks, b->counts, k, b->status, b->err, b->errlen) < 0)
        return -1;
    for (int j = 0; j < k; j++)
        if (b->status[j] != 0) {
            spade_errf(b->err, b->errlen,
                       "[designer] template = %s: the transcript passes the policy's context of %d tokens "
                       "before hole %d",
                       spade_template_name(s[b->slots[j]].tpl), b->ctx, h + 1);
            return -1;
        }
    return 0;
}

/* The j-th sampled slot's tokens for hole h: into its transcript, its fill
 * (the hole's text, cut where a hole ends), then the template's next piece. */
static int tpl_take(tpl_batch *b, int h, int j) {
    spade_template_slot *x = &b->s[b->slots[j]];
    const int *t = b->out + (size_t)j * b->T;
    int len = b->lens[j], ended = len > 0 && t[len - 1] == spade_tokenizer_end_of_turn(b->tok);
    spade_transcript_sampled(x->tr, t, b->lp + (size_t)j * b->T, len);
    x->sampled += len;
    b->fed[b->slots[j]] += len; /* the decoder holds the sampled tokens already */
    size_t got = 0, pl;
    spade_tokenizer_decode(b->tok, t, (size_t)(ended ? len - 1 : len), 0, b->text, b->cap, &got);
    if (got >= b->cap) got = b->cap - 1;
    size_t kept = spade_template_hole_text(b->text, got);
    if (!(x->fill[h] = malloc(kept + 1))) return tpl_oom(b);
    memcpy(x->fill[h], b->text, kept);
    x->fill[h][kept] = 0;
    x->fill_len[h] = kept;
    const char *piece = spade_template_piece(x->tpl, h + 1, &pl);
    spade_transcript_text(x->tr, b->tok, piece, pl);
    return 0;
}

/* Hole h of every slot whose template has it, sampled in one batch. */
static int tpl_hole(tpl_batch *b, int h) {
    spade_template_slot *s = b->s;
    if (tpl_feed(b, h) < 0) return -1;
    int q = 0;
    for (int i = 0; i < b->n; i++) {
        if (h >= spade_template_holes(s[i].tpl)) continue;
        b->fed[i] = s[i].tr->len;
        int room = b->ctx - spade_decoder_len(b->dec, i);
        if (room < 1) {
            spade_errf(b->err, b->errlen, "[designer] template = %s: no context left for hole %d",
                       spade_template_name(s[i].tpl), h + 1);
            return -1;
        }
        b->slots[q] = i;
        b->maxt[q] = room < b->T ? room : b->T;
        b->seeds[q] = spade_mix64(s[i].seed + (uint64_t)h);
        q++;
    }
    if (spade_decoder_sample(b->dec, b->slots, q, &b->so, b->seeds, b->maxt, b->out, b->lp, b->lens, b->status, b->err,
                             b->errlen) < 0)
        return -1;
    for (int j = 0; j < q; j++)
        if (tpl_take(b, h, j) < 0) return -1;
    return 0;
}

/* Each transcript's closing end of turn, and its template filled into source. */
static int tpl_finish(tpl_batch *b) {
    for (int i = 0; i < b->n; i++) {
        spade_template_slot *x = &b->s[i];
        spade_transcript_special(x->tr, spade_tokenizer_end_of_turn(b->tok));
        if (x->tr->oom || x->tr->len > b->ctx) {
            spade_errf(b->err, b->errlen, "[designer] template = %s: %s", spade_template_name(x->tpl),
                       x->tr->oom ? "out of memory for a transcript" : "the filled transcript passes the context");
            return -1;
        }
        if (spade_template_fill(x->tpl, (const char *const *)x->fill, x->fill_len, &x->source, &x->source_len) < 0)
            return tpl_oom(b);
    }
    return 0;
}

int spade_template_decode(spade_policy *p, spade_template_slot *s, int n, const spade_template_opts *o, char *err,
                          size_t errlen) {
    tpl_batch b = {.p = p,
                   .tok = spade_policy_tokenizer(p),
                   .s = s,
                   .n = n,
                   .ctx = spade_policy_config(p)->context,
                   .T = o->hole_tokens > 0 ? o->hole_tokens : 1,
                   .err = err,
                   .errlen = errlen};
    int rc = tpl_batch_alloc(&b) < 0 || tpl_batch_open(&b, o) < 0 ? -1 : 0;
    for (int h = 0; !rc && h < b.maxh; h++) rc = tpl_hole(&b, h);
    if (!rc) rc = tpl_finish(&b);
    tpl_batch_free(&b);
    return rc;
}
