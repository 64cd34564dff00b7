/* transcript.c — laying out transcripts (transcript.h).
 *
 * What it is not: a parser. A rendered transcript is for reading and for
 * pretraining on text; nothing reads one back into turns.
 */
#include "transcript.h"

#include <stdlib.h>
#include <string.h>

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

void spade_transcript_agent_open(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len,
                                 const char *hint, size_t hint_len) {
    push(t, SPADE_TOK_AGENT, 0, 0);
    push(t, SPADE_TOK_OBSERVATION, 0, 0);
    encode(t, tok, obs, obs_len, 0);
    if (hint) {
        push(t, SPADE_TOK_HINT, 0, 0);
        encode(t, tok, hint, hint_len, 0);
    }
    push(t, SPADE_TOK_ACTION, 0, 0);
}

void spade_transcript_agent_turn(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len) {
    push(t, SPADE_TOK_OBSERVATION, 0, 0);
    encode(t, tok, obs, obs_len, 0);
    push(t, SPADE_TOK_ACTION, 0, 0);
}

void spade_transcript_agent_action(spade_transcript *t, spade_tokenizer *tok, const char *act, size_t len) {
    encode(t, tok, act, len, 1);
    push(t, SPADE_TOK_END, 1, 0);
}

void spade_transcript_designer_open(spade_transcript *t, spade_tokenizer *tok, const char *prompt, size_t len) {
    push(t, SPADE_TOK_DESIGNER, 0, 0);
    encode(t, tok, prompt, len, 0);
    push(t, SPADE_TOK_SOURCE, 0, 0);
}

void spade_transcript_designer_source(spade_transcript *t, spade_tokenizer *tok, const char *src, size_t len) {
    encode(t, tok, src, len, 1);
    push(t, SPADE_TOK_END, 1, 0);
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
