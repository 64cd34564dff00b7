/* template.h — the designer filling templates ([designer] source = template):
 * every slot's holes decoded together in one decoding batch, each slot's
 * transcript recording the template's text as observation (mask 0) and the
 * hole tokens as sampled (mask 1, with their log-probs), and the filled
 * source spliced from what each hole kept.
 *
 *   <|designer|> PROMPT <|source|> PIECE_0 HOLE_1 PIECE_1 ... HOLE_H PIECE_H <|end|>
 *
 * Hole k is sampled after PIECE_(k-1) until <|end|>, a token whose text holds
 * a newline, or hole_tokens tokens; it keeps the sampled text before its
 * first newline (designer/template.h, spade_template_hole_text). The tokens
 * stay in the transcript as sampled (what the policy wrote and conditioned on
 * afterwards), so the GRPO sample is the transcript with mask 1 exactly on
 * the hole tokens. The closing <|end|> is not sampled (mask 0).
 * What it is: selfplay/ code over the decoder (core/policy), the transcript
 * (agent/) and the template text (designer/). What it is not: the parsing or
 * splicing of a template (designer/template.h), nor the rest of the loop.
 */
#ifndef SPADE_SELFPLAY_TEMPLATE_H
#define SPADE_SELFPLAY_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/transcript.h"
#include "designer/template.h"
#include "policy/policy.h"

typedef struct spade_template_slot {
    const spade_template *tpl; /* in */
    uint64_t seed; /* in: hole k draws from the stream seeded by spade_mix64(seed + k) */
    spade_transcript *tr; /* in: the opening (<|designer|> PROMPT <|source|>); out: the whole transcript */
    char *fill[SPADE_TEMPLATE_MAX_HOLES]; /* out: each hole's kept text (malloc'd, NUL-terminated) */
    size_t fill_len[SPADE_TEMPLATE_MAX_HOLES];
    char *source; /* out: the filled source (malloc'd) */
    size_t source_len;
    int sampled; /* out: tokens sampled, over all holes */
} spade_template_slot;
void spade_template_slot_clear(spade_template_slot *s); /* frees the outputs (not tr) */

typedef struct spade_template_opts {
    float temperature, top_p; /* the designer's sampling */
    int hole_tokens; /* designer.hole_tokens: at most this many tokens per hole (8) */
} spade_template_opts;

/* Fills n slots' templates with p in one decoder. 0, or -1 with err (out of
 * memory, the decoder, or a transcript that would pass the context: the load
 * check, spade_template_fits, keeps a run from getting here). */
int spade_template_decode(spade_policy *p, spade_template_slot *s, int n, const spade_template_opts *o, char *err,
                          size_t errlen);

/* The most tokens a transcript of t can take under p's tokenizer with
 * hole_tokens per hole (the opening with its prompt, every piece, every hole
 * at its limit, the closing <|end|>); *pieces gets the pieces' share. On a
 * chat model the opening is its chat turns: the designer card as the system
 * turn, the ChatML markup and the request (agent/transcript.h). */
int spade_template_tokens(spade_policy *p, const spade_template *t, int hole_tokens, int *pieces);
/* 0 when that fits p's context; else -1, err naming the template file and the counts. */
int spade_template_fits(spade_policy *p, const spade_template *t, int hole_tokens, char *err, size_t errlen);

#endif /* SPADE_SELFPLAY_TEMPLATE_H */
