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

int spade_template_decode(spade_policy *p, spade_template_slot *s, int n, const spade_template_opts *o, char *err,
                          size_t errlen) {
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    int ctx = spade_policy_config(p)->context, T = o->hole_tokens > 0 ? o->hole_tokens : 1, n_stop = 0, rc = -1;
    int maxh = 0;
    int *slots = malloc((size_t)n * 6 * sizeof *slots), *stop = stop_tokens(tok, &n_stop);
    const int **toks = malloc((size_t)n * sizeof *toks);
    uint64_t *seeds = malloc((size_t)n * sizeof *seeds);
    int *out = malloc((size_t)n * T * sizeof *out);
    float *lp = malloc((size_t)n * T * sizeof *lp);
    char *text = NULL;
    spade_decoder *dec = NULL;
    if (!slots || !stop || !toks || !seeds || !out || !lp) {
        spade_errf(err, errlen, "template designer: out of memory");
        goto done;
    }
    int *counts = slots + n, *status = slots + 2 * n, *maxt = slots + 3 * n, *lens = slots + 4 * n,
        *fed = slots + 5 * n;
    size_t cap = 1, pl;
    for (int id = 0; id < spade_tokenizer_vocab(tok); id++) { /* the longest text T tokens can decode to */
        size_t len = 0;
        if (spade_tokenizer_piece(tok, id, &len) && len + 1 > cap) cap = len + 1;
    }
    cap = cap * (size_t)T + 1;
    if (!(text = malloc(cap))) {
        spade_errf(err, errlen, "template designer: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int H = spade_template_holes(s[i].tpl);
        if (H > maxh) maxh = H;
        const char *piece = spade_template_piece(s[i].tpl, 0, &pl);
        spade_transcript_text(s[i].tr, tok, piece, pl);
        fed[i] = 0;
        s[i].sampled = 0;
    }
    if (spade_decoder_new(&dec, p, n, err, errlen) < 0) goto done;
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = o->temperature;
    so.top_p = o->top_p;
    so.max_tokens = T;
    so.stop = stop;
    so.n_stop = n_stop;
    for (int h = 0; h < maxh; h++) {
        /* what each slot's transcript holds past what its decoder slot has read: the opening and the piece before this
         * hole */
        int k = 0, q = 0;
        for (int i = 0; i < n; i++) {
            if (h >= spade_template_holes(s[i].tpl)) continue;
            if (s[i].tr->oom) {
                spade_errf(err, errlen, "template designer: out of memory for a transcript");
                goto done;
            }
            if (s[i].tr->len > fed[i]) {
                slots[k] = i, toks[k] = s[i].tr->tok + fed[i], counts[k] = s[i].tr->len - fed[i];
                k++;
            }
        }
        if (k > 0 && spade_decoder_append_batch(dec, slots, toks, counts, k, status, err, errlen) < 0) goto done;
        for (int j = 0; j < k; j++)
            if (status[j] != 0) {
                spade_errf(err, errlen,
                           "[designer] template = %s: the transcript passes the policy's context of %d tokens "
                           "before hole %d",
                           spade_template_name(s[slots[j]].tpl), ctx, h + 1);
                goto done;
            }
        for (int i = 0; i < n; i++) {
            if (h >= spade_template_holes(s[i].tpl)) continue;
            fed[i] = s[i].tr->len;
            int room = ctx - spade_decoder_len(dec, i);
            if (room < 1) {
                spade_errf(err, errlen, "[designer] template = %s: no context left for hole %d",
                           spade_template_name(s[i].tpl), h + 1);
                goto done;
            }
            slots[q] = i;
            maxt[q] = room < T ? room : T;
            seeds[q] = spade_mix64(s[i].seed + (uint64_t)h);
            q++;
        }
        if (spade_decoder_sample(dec, slots, q, &so, seeds, maxt, out, lp, lens, status, err, errlen) < 0) goto done;
        for (int j = 0; j < q; j++) {
            spade_template_slot *x = &s[slots[j]];
            const int *t = out + (size_t)j * T;
            int len = lens[j], ended = len > 0 && t[len - 1] == spade_tokenizer_end_of_turn(tok);
            spade_transcript_sampled(x->tr, t, lp + (size_t)j * T, len);
            x->sampled += len;
            fed[slots[j]] += len; /* the decoder holds the sampled tokens already */
            size_t got = 0;
            spade_tokenizer_decode(tok, t, (size_t)(ended ? len - 1 : len), 0, text, cap, &got);
            if (got >= cap) got = cap - 1;
            size_t kept = spade_template_hole_text(text, got);
            x->fill[h] = malloc(kept + 1);
            if (!x->fill[h]) {
                spade_errf(err, errlen, "template designer: out of memory");
                goto done;
            }
            memcpy(x->fill[h], text, kept);
            x->fill[h][kept] = 0;
            x->fill_len[h] = kept;
            const char *piece = spade_template_piece(x->tpl, h + 1, &pl);
            spade_transcript_text(x->tr, tok, piece, pl);
        }
    }
    for (int i = 0; i < n; i++) {
        spade_transcript_special(s[i].tr, spade_tokenizer_end_of_turn(tok));
        if (s[i].tr->oom || s[i].tr->len > ctx) {
            spade_errf(err, errlen, "[designer] template = %s: %s", spade_template_name(s[i].tpl),
                       s[i].tr->oom ? "out of memory for a transcript" : "the filled transcript passes the context");
            goto done;
        }
        if (spade_template_fill(s[i].tpl, (const char *const *)s[i].fill, s[i].fill_len, &s[i].source,
                                &s[i].source_len) < 0) {
            spade_errf(err, errlen, "template designer: out of memory");
            goto done;
        }
    }
    rc = 0;
done:
    spade_decoder_free(dec);
    free(slots);
    free(stop);
    free(toks);
    free(seeds);
    free(out);
    free(lp);
    free(text);
    return rc;
}
