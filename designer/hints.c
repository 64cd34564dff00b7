/* hints.c — the designer's self-written hints and the hint spy (hints.h).
 *
 * What it is not: a trainer; no transcript of a hint's tokens leaves this file.
 */
#include "designer/hints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "designer/prompt.h"
#include "errbuf.h"
#include "policy/bpe.h"

static size_t count_tokens(void *ctx, const char *text, size_t len) { return spade_tokenizer_count(ctx, text, len); }

static int blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

/* <|designer|> HINT_PROMPT(src) <|hint|> into *out (malloc'd, *count tokens);
 * for a chat model, ChatML: the hint writer's system line, the prompt as the
 * user turn, the assistant's opening. */
static int prompt_tokens(const spade_prompt_opts *po, spade_tokenizer *tok, int T, int ctx, const char *src, size_t len,
                         int **out, int *count, char *err, size_t errlen) {
    char *prompt = NULL, e2[300];
    size_t plen = 0;
    if (spade_hint_prompt_build(po, src, len, &prompt, &plen, e2, sizeof e2) < 0) {
        spade_errf(err, errlen, "designer.hint_tokens = %d leaves %d of the policy's %d context tokens: %s", T,
                   po->budget, ctx, e2);
        return -1;
    }
    if (spade_tokenizer_is_chat(tok)) {
        size_t sl;
        const char *sys = spade_chat_hint_writer_system(&sl);
        spade_chat_msg m[2] = {{.role = "system", .content = sys, .len = sl},
                               {.role = "user", .content = prompt, .len = plen}};
        spade_bpe_out o = {0};
        uint8_t *trainable = NULL;
        int rc = spade_bpe_chat(spade_tokenizer_bpe(tok), m, 2, 1, &o, &trainable, e2, sizeof e2);
        free(prompt);
        free(trainable);
        if (!rc && !(*out = malloc((o.n ? o.n : 1) * sizeof **out))) rc = -1, snprintf(e2, sizeof e2, "out of memory");
        if (rc) {
            spade_bpe_out_free(&o);
            spade_errf(err, errlen, "self-play: a hint prompt: %s", e2);
            return -1;
        }
        for (size_t i = 0; i < o.n; i++) (*out)[i] = o.ids[i];
        *count = (int)o.n;
        spade_bpe_out_free(&o);
        return 0;
    }
    *out = malloc((plen + 2) * sizeof **out); /* an encoding is never longer than its text */
    if (!*out) {
        free(prompt);
        spade_errf(err, errlen, "self-play: out of memory for a hint prompt");
        return -1;
    }
    size_t n = spade_tokenizer_encode(tok, prompt, plen, *out + 1);
    free(prompt);
    (*out)[0] = SPADE_TOK_DESIGNER;
    (*out)[n + 1] = SPADE_TOK_HINT;
    *count = (int)n + 2;
    return 0;
}

/* What a completion keeps as a hint: up to its first NUL byte (a hint is
 * text), blank space around it dropped, at most max_len bytes (what the
 * archive's hint column holds, so the archived hint is the one played).
 * malloc'd; NULL when out of memory. */
static char *trimmed(const char *text, size_t got, size_t max_len, size_t *len) {
    size_t a = 0, b = got;
    for (size_t z = 0; z < b; z++)
        if (!text[z]) b = z;
    while (a < b && blank(text[a])) a++;
    while (b > a && blank(text[b - 1])) b--;
    if (b - a > max_len) b = a + max_len;
    char *h = malloc(b - a + 1);
    if (!h) return NULL;
    memcpy(h, text + a, b - a);
    h[b - a] = 0;
    *len = b - a;
    return h;
}

int spade_hints_write(spade_policy *p, const spade_hints_opts *o, const char *const *src, const size_t *src_len,
                      const uint64_t *seeds, int n, char **hint, size_t *hint_len, long *tokens, char *err,
                      size_t errlen) {
    int ctx = spade_policy_config(p)->context, T = o->max_tokens > 0 ? o->max_tokens : 1;
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = ctx - T - 2;
    po.count = count_tokens;
    po.count_ctx = tok;
    if ((po.chat = spade_tokenizer_is_chat(tok))) { /* the system line and the template's markup share the context */
        size_t sl;
        const char *sys = spade_chat_hint_writer_system(&sl);
        po.budget -= (int)spade_tokenizer_count(tok, sys, sl) + 16;
    }
    int **tr = calloc(n > 0 ? (size_t)n : 1, sizeof *tr); /* each prompt's tokens */
    int *ints = calloc(7 * (size_t)(n > 0 ? n : 1), sizeof *ints);
    const int **toks = calloc(n > 0 ? (size_t)n : 1, sizeof *toks);
    uint64_t *slot_seeds = calloc(n > 0 ? (size_t)n : 1, sizeof *slot_seeds);
    spade_decoder *dec = NULL;
    int *out = NULL, k = 0, rc = -1;
    char *text = NULL;
    for (int i = 0; i < n; i++) hint[i] = NULL;
    if (!tr || !ints || !toks || !slot_seeds) {
        spade_errf(err, errlen, "self-play: out of memory");
        goto done;
    }
    int *slots = ints, *counts = ints + n, *status = ints + 2 * n, *maxt = ints + 3 * n, *lens = ints + 4 * n,
        *st2 = ints + 5 * n, *at = ints + 6 * n;
    for (int i = 0; i < n; i++) {
        hint[i] = calloc(1, 1); /* an empty source gets the empty hint */
        hint_len[i] = 0;
        if (!hint[i]) {
            spade_errf(err, errlen, "self-play: out of memory");
            goto done;
        }
        if (!src[i] || !src_len[i]) continue;
        if (prompt_tokens(&po, tok, T, ctx, src[i], src_len[i], &tr[k], &counts[k], err, errlen) < 0) goto done;
        at[k] = i;
        slots[k] = k, toks[k] = tr[k];
        slot_seeds[k] = seeds[i];
        k++;
    }
    if (k == 0) {
        rc = 0;
        goto done;
    }
    if (spade_decoder_new(&dec, p, k, err, errlen) < 0 ||
        spade_decoder_append_batch(dec, slots, toks, counts, k, status, err, errlen) < 0)
        goto done;
    for (int j = 0; j < k; j++) {
        int room = ctx - spade_decoder_len(dec, j);
        maxt[j] = room < 1 ? 1 : room < T ? room : T;
    }
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = o->temperature;
    so.top_p = o->top_p;
    so.max_tokens = T;
    int stops[2];
    so.n_stop = spade_tokenizer_turn_stops(tok, stops, 2), so.stop = stops; /* <|end|>, or <|im_end|> and EOS */
    size_t cap = (size_t)T * 64 + 1;
    out = malloc((size_t)k * T * sizeof *out);
    text = malloc(cap);
    if (!out || !text) {
        spade_errf(err, errlen, "self-play: out of memory");
        goto done;
    }
    if (spade_decoder_sample(dec, slots, k, &so, slot_seeds, maxt, out, NULL, lens, st2, err, errlen) < 0) goto done;
    for (int j = 0; j < k; j++) {
        int i = at[j];
        const int *t = out + (size_t)j * T;
        int len = lens[j], ended = len > 0 && (t[len - 1] == stops[0] || (so.n_stop > 1 && t[len - 1] == stops[1]));
        *tokens += len;
        size_t got = 0;
        spade_tokenizer_decode(tok, t, (size_t)(ended ? len - 1 : len), 0, text, cap, &got);
        if (got >= cap) got = cap - 1;
        size_t hl;
        char *h = trimmed(text, got, o->max_len, &hl);
        if (!h) {
            spade_errf(err, errlen, "self-play: out of memory");
            goto done;
        }
        free(hint[i]);
        hint[i] = h;
        hint_len[i] = hl;
    }
    rc = 0;
done:
    spade_decoder_free(dec);
    for (int i = 0; tr && i < n; i++) free(tr[i]);
    free(tr);
    free(ints);
    free(toks);
    free(slot_seeds);
    free(out);
    free(text);
    return rc;
}

static int spy_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    spade_hint_spy *h = ctx;
    if (!h->got && v->hint) {
        snprintf(h->seen, h->cap, "%.*s", (int)(v->hint_len < h->cap ? v->hint_len : h->cap - 1), v->hint);
        h->got = 1;
    }
    return h->inner->begin ? h->inner->begin(h->inner->ctx, v, state, err, errlen) : 0;
}

static int spy_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    spade_hint_spy *h = ctx;
    return h->inner->act(h->inner->ctx, n, views, acts, err, errlen);
}

static void spy_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    spade_hint_spy *h = ctx;
    if (h->inner->end) h->inner->end(h->inner->ctx, v, state, o);
}

void spade_hint_spy_init(spade_hint_spy *spy, spade_agent *inner, char *seen, size_t cap) {
    *spy = (spade_hint_spy){
        .agent = {.name = inner->name,
                  .wants = inner->wants,
                  .ctx = spy,
                  .begin = spy_begin,
                  .act = spy_act,
                  .end = spy_end,
                  .free = NULL},
        .inner = inner,
        .seen = seen,
        .cap = cap,
        .got = 0,
    };
}
