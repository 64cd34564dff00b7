/* transcript_text.c — rendered transcripts back into tokens (transcript_text.h).
 *
 * What it is not: the renderer (agent/transcript.c); the two meet in
 * tests/test_demos.c, which checks that encoding a render gives back the
 * transcript's tokens.
 */
#include "transcript_text.h"

#include <string.h>

#include "policy/tokenizer.h"

#include "policy/bpe.h"

/* The special token whose marker starts at s (n bytes left), its marker length in *mlen; -1 if none. */
static int marker(const char *s, size_t n, size_t *mlen) {
    if (n < 5 || s[0] != '<' || s[1] != '|') return -1;
    size_t lim = n < 24 ? n : 24;
    for (size_t i = 2; i + 1 < lim; i++) {
        if (s[i] == '|' && s[i + 1] == '>') {
            char name[24];
            memcpy(name, s + 2, i - 2);
            name[i - 2] = 0;
            int tok = spade_tok_lookup(name);
            if (tok >= 0) *mlen = i + 2;
            return tok;
        }
        if (!(s[i] >= 'a' && s[i] <= 'z')) return -1;
    }
    return -1;
}

static int blank(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\n' && p[i] != '\t' && p[i] != '\r') return 0;
    return 1;
}

void spade_transcript_text_walk(const char *s, size_t len, void (*text)(void *ctx, const char *p, size_t n),
                                void (*special)(void *ctx, int tok), void *ctx) {
    size_t start = 0, i = 0;
    int prev = -1; /* the last marker seen (-1: none yet) */
    while (i < len) {
        size_t ml = 0;
        int tok = s[i] == '<' ? marker(s + i, len - i, &ml) : -1;
        if (tok < 0) {
            i++;
            continue;
        }
        size_t n = i - start;
        int sep = (prev == -1 || prev == SPADE_TOK_END) && (tok == SPADE_TOK_AGENT || tok == SPADE_TOK_DESIGNER) &&
                  blank(s + start, n);
        if (n && !sep) text(ctx, s + start, n);
        special(ctx, tok);
        prev = tok;
        i += ml;
        start = i;
    }
    if (len > start && !(prev == SPADE_TOK_END && blank(s + start, len - start))) text(ctx, s + start, len - start);
}

typedef struct {
    spade_tokenizer *t;
    int *out;
    size_t n;
} enc;

static void enc_text(void *ctx, const char *p, size_t n) {
    enc *e = ctx;
    e->n += spade_tokenizer_encode(e->t, p, n, e->out + e->n);
}

static void enc_special(void *ctx, int tok) {
    enc *e = ctx;
    e->out[e->n++] = tok;
}

size_t spade_transcript_text_encode(spade_tokenizer *t, const char *s, size_t len, int *out) {
    if (spade_tokenizer_is_chat(t)) {
        spade_bpe_out o = {0};
        size_t n = 0;
        if (!spade_bpe_encode(spade_tokenizer_bpe(t), s, len, SPADE_BPE_PARSE_SPECIAL, &o, NULL, 0))
            for (; n < o.n && n < len; n++) out[n] = o.ids[n]; /* room for len, as tokenizer.h promises */
        spade_bpe_out_free(&o);
        return n;
    }
    enc e = {.t = t, .out = out};
    spade_transcript_text_walk(s, len, enc_text, enc_special, &e);
    return e.n;
}

/* 1 when tok[at..] begins with pat[0..n). */
static int match(const int *tok, size_t len, size_t at, const int *pat, size_t n) {
    return n && at + n <= len && !memcmp(tok + at, pat, n * sizeof *pat);
}

void spade_transcript_text_answers(spade_tokenizer *t, const int *tok, size_t n, unsigned char *ans,
                                   unsigned char *start) {
    int open[16], sys[16], chat = spade_tokenizer_is_chat(t), end = spade_tokenizer_end_of_turn(t);
    size_t no = 0, ns = 0;
    if (chat) {
        no = spade_transcript_text_encode(t, "<|im_start|>assistant\n", 22, open);
        ns = spade_transcript_text_encode(t, "<|im_start|>system", 18, sys);
    }
    int agent = spade_tokenizer_special(t, SPADE_TOK_AGENT), designer = spade_tokenizer_special(t, SPADE_TOK_DESIGNER);
    int action = spade_tokenizer_special(t, SPADE_TOK_ACTION), source = spade_tokenizer_special(t, SPADE_TOK_SOURCE);
    int on = 0, last_sys = 0; /* inside an answer; the last turn opened was a system turn */
    for (size_t i = 0; i < n; i++) {
        int k = tok[i], is_sys = chat && match(tok, n, i, sys, ns), other = chat && ns && k == sys[0] && !is_sys;
        if (start) start[i] = (unsigned char)(chat ? is_sys && !last_sys : k == agent || k == designer);
        if (is_sys) last_sys = 1;
        if (other) last_sys = 0;
        if (ans) ans[i] = (unsigned char)on;
        if (on && k == end) on = 0;
        if (chat && !on && match(tok, n, i, open, no)) {
            for (size_t j = 1; j < no; j++) {
                if (ans) ans[i + j] = 0;
                if (start) start[i + j] = 0;
            }
            i += no - 1;
            on = 1;
        } else if (!chat && (k == action || k == source)) {
            on = 1;
        }
    }
}
