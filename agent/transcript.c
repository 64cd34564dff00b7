/* transcript.c — laying out transcripts (transcript.h): spade's format for
 * spade's tokenizers, ChatML (the roles' texts of core/chat.h, the markup of
 * core/policy/bpe.h's spade_bpe_chat) for a pretrained model's.
 *
 * What it is not: a parser. A rendered transcript is for reading and for
 * pretraining on text; nothing reads one back into turns.
 */
#include "transcript.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "policy/bpe.h"

void spade_transcript_init(spade_transcript *t) { memset(t, 0, sizeof *t); }

void spade_transcript_free(spade_transcript *t) {
    free(t->tok);
    free(t->mask);
    free(t->logp);
    spade_transcript_init(t);
}

void spade_transcript_clear(spade_transcript *t) {
    t->len = 0;
    t->oom = 0;
}

static int room(spade_transcript *t, size_t n) {
    if (t->oom) return -1;
    if ((size_t)t->len + n <= (size_t)t->cap) return 0;
    size_t cap = t->cap ? (size_t)t->cap : 256;
    while (cap < (size_t)t->len + n) cap *= 2;
    if (cap > (size_t)1 << 30) return t->oom = 1, -1;
    int *nt = realloc(t->tok, cap * sizeof *nt);
    if (nt) t->tok = nt;
    unsigned char *nm = realloc(t->mask, cap);
    if (nm) t->mask = nm;
    float *nl = realloc(t->logp, cap * sizeof *nl);
    if (nl) t->logp = nl;
    if (!nt || !nm || !nl) return t->oom = 1, -1;
    t->cap = (int)cap;
    return 0;
}

static void push(spade_transcript *t, int tok, int mask, float logp) {
    if (room(t, 1)) return;
    t->tok[t->len] = tok;
    t->mask[t->len] = (unsigned char)mask;
    t->logp[t->len++] = logp;
}

void spade_transcript_special(spade_transcript *t, int token) { push(t, token, 0, 0); }

static void encode(spade_transcript *t, spade_tokenizer *tok, const char *text, size_t len, int mask) {
    if (!len || room(t, len)) return; /* an encoding is never longer than its text */
    size_t n = spade_tokenizer_encode(tok, text, len, t->tok + t->len);
    memset(t->mask + t->len, mask, n);
    memset(t->logp + t->len, 0, n * sizeof *t->logp);
    t->len += (int)n;
}

void spade_transcript_text(spade_transcript *t, spade_tokenizer *tok, const char *text, size_t len) {
    encode(t, tok, text, len, 0);
}

void spade_transcript_sampled(spade_transcript *t, const int *toks, const float *logp, int n) {
    for (int i = 0; i < n; i++) push(t, toks[i], 1, logp ? logp[i] : 0);
}

void spade_keep_episode(void *ctx, const spade_ep_outcome *o, const spade_transcript *t) {
    spade_kept_episodes *c = ctx;
    if (o->episode < 0 || o->episode >= c->n) return;
    spade_transcript *d = &c->tr[o->episode];
    spade_transcript_clear(d);
    for (int i = 0; i < t->len; i++) {
        if (t->mask[i])
            spade_transcript_sampled(d, &t->tok[i], &t->logp[i], 1);
        else
            spade_transcript_special(d, t->tok[i]);
    }
    if (d->oom) c->oom = 1;
    if (c->o) {
        c->o[o->episode] = *o;
        c->have[o->episode] = 1;
    }
}

/* ChatML: msgs laid out by the model's template, then the assistant's
 * opening "<|im_start|>assistant\n"; all of it the prompt (untrained). A
 * vocabulary without ChatML's tokens makes the transcript unusable (oom). */
static void chat_prompt(spade_transcript *t, spade_tokenizer *tok, const spade_chat_msg *msgs, size_t n) {
    spade_bpe_out o = {0};
    uint8_t *trainable = NULL;
    if (t->oom) return;
    if (spade_bpe_chat(spade_tokenizer_bpe(tok), msgs, n, 1, &o, &trainable, NULL, 0) || room(t, o.n))
        t->oom = 1;
    else
        for (size_t i = 0; i < o.n; i++) push(t, o.ids[i], 0, 0);
    free(trainable);
    spade_bpe_out_free(&o);
}

void spade_transcript_agent_open(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len,
                                 const char *hint, size_t hint_len) {
    spade_transcript_agent_open_budget(t, tok, obs, obs_len, hint, hint_len, 0);
}

void spade_transcript_agent_open_budget(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len,
                                        const char *hint, size_t hint_len, int reasoning_tokens) {
    if (!spade_tokenizer_is_chat(tok)) {
        push(t, SPADE_TOK_AGENT, 0, 0);
        push(t, SPADE_TOK_OBSERVATION, 0, 0);
        encode(t, tok, obs, obs_len, 0);
        if (hint) {
            push(t, SPADE_TOK_HINT, 0, 0);
            encode(t, tok, hint, hint_len, 0);
        }
        push(t, SPADE_TOK_ACTION, 0, 0);
        return;
    }
    char sys[512], *hl = NULL;
    spade_chat_msg m[3];
    size_t n = 0, sl = spade_chat_agent_system(reasoning_tokens, sys, sizeof sys);
    m[n++] = (spade_chat_msg){.role = "system", .content = sys, .len = sl};
    if (hint) {
        size_t cap = hint_len + 8;
        if (!(hl = malloc(cap))) {
            t->oom = 1;
            return;
        }
        m[n++] =
            (spade_chat_msg){.role = "system", .content = hl, .len = spade_chat_hint_line(hint, hint_len, hl, cap)};
    }
    m[n++] = (spade_chat_msg){.role = "user", .content = obs ? obs : "", .len = obs ? obs_len : 0};
    chat_prompt(t, tok, m, n);
    free(hl);
}

void spade_transcript_agent_turn(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len) {
    if (!spade_tokenizer_is_chat(tok)) {
        push(t, SPADE_TOK_OBSERVATION, 0, 0);
        encode(t, tok, obs, obs_len, 0);
        push(t, SPADE_TOK_ACTION, 0, 0);
        return;
    }
    encode(t, tok, "\n", 1, 0); /* what ChatML puts after the assistant's <|im_end|> */
    spade_chat_msg m = {.role = "user", .content = obs ? obs : "", .len = obs ? obs_len : 0};
    chat_prompt(t, tok, &m, 1);
}

void spade_transcript_close_turn(spade_transcript *t, spade_tokenizer *tok) {
    push(t, spade_tokenizer_end_of_turn(tok), 0, 0);
}

void spade_transcript_agent_action(spade_transcript *t, spade_tokenizer *tok, const char *act, size_t len) {
    encode(t, tok, act, len, 1);
    push(t, spade_tokenizer_end_of_turn(tok), 1, 0);
}

void spade_transcript_designer_open(spade_transcript *t, spade_tokenizer *tok, const char *prompt, size_t len) {
    if (!spade_tokenizer_is_chat(tok)) {
        push(t, SPADE_TOK_DESIGNER, 0, 0);
        encode(t, tok, prompt, len, 0);
        push(t, SPADE_TOK_SOURCE, 0, 0);
        return;
    }
    spade_chat_msg m[2];
    int n = spade_chat_designer_messages(prompt ? prompt : "", prompt ? len : 0, m);
    chat_prompt(t, tok, m, (size_t)n);
}

void spade_transcript_designer_source(spade_transcript *t, spade_tokenizer *tok, const char *src, size_t len) {
    if (!spade_tokenizer_is_chat(tok)) {
        encode(t, tok, src, len, 1);
        push(t, SPADE_TOK_END, 1, 0);
        return;
    }
    /* the answer the card asks for: the source in one fenced block */
    size_t nl = len && src[len - 1] != '\n', cap = len + nl + 12;
    char *b = malloc(cap);
    if (!b) {
        t->oom = 1;
        return;
    }
    size_t k = (size_t)snprintf(b, cap, "```c\n");
    memcpy(b + k, src, len);
    k += len;
    if (nl) b[k++] = '\n';
    memcpy(b + k, "```", 3);
    k += 3;
    encode(t, tok, b, k, 1);
    free(b);
    push(t, spade_tokenizer_end_of_turn(tok), 1, 0);
}

int spade_transcript_render(const spade_transcript *t, spade_tokenizer *tok, char **out, size_t *out_len) {
    size_t cap = (size_t)t->len * 64 + 16; /* a BPE token is at most 64 bytes; a special one is "<|observation|>" */
    char *buf = malloc(cap);
    *out = NULL;
    if (!buf || t->oom) {
        free(buf);
        return -1;
    }
    size_t n = 0;
    if (spade_tokenizer_decode(tok, t->tok, (size_t)t->len, 1, buf, cap, &n) < 0) {
        free(buf);
        return -1;
    }
    buf[n < cap ? n : cap - 1] = 0;
    *out = buf;
    if (out_len) *out_len = n;
    return 0;
}
