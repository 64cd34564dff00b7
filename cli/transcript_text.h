/* transcript_text.h — reading a rendered transcript file (what spade demos
 * writes; the format is agent/transcript.h's) back into the policy's tokens, for spade
 * pretrain: every "<|name|>" marker of a special token (spade_tok_lookup)
 * becomes that token, and the text between markers is encoded piece by piece
 * by the policy's tokenizer, exactly as agent/transcript.c encodes each
 * observation, hint and action, so a demonstration trains on the tokens the
 * agent reads and writes. Whitespace between an <|end|> and the next
 * <|agent|> or <|designer|> (or the end of the file) separates transcripts and
 * is no token.
 * A pretrained model's tokenizer (spade_tokenizer_is_chat) reads the ChatML
 * render instead: the whole text encoded by the model's BPE with its control
 * tokens (<|im_start|>, <|im_end|>) parsed, as llama.cpp tokenizes a rendered
 * chat; the "\n" between transcripts is ChatML's own separator.
 * What it is not: a parser of turns (nothing here knows what an observation
 * is), nor a validator: a "<|...|>" that names no special token stays text.
 */
#ifndef SPADE_CLI_TRANSCRIPT_TEXT_H
#define SPADE_CLI_TRANSCRIPT_TEXT_H

#include <stddef.h>

#include "policy/tokenizer.h"

/* Calls text(ctx, p, n) for each run of text and special(ctx, tok) for each
 * marker, in order (separating whitespace skipped). */
void spade_transcript_text_walk(const char *s, size_t len, void (*text)(void *ctx, const char *p, size_t n),
                                void (*special)(void *ctx, int tok), void *ctx);

/* Encodes s into out, which must have room for len tokens (never more);
 * returns the number of tokens. */
size_t spade_transcript_text_encode(spade_tokenizer *t, const char *s, size_t len, int *out);

/* What a role wrote in the tokens of a transcript file (n of them, as
 * spade_transcript_text_encode gives them), as agent/transcript.h masks it:
 * ans[i] = 1 on the answers, else 0 (may be NULL); start[i] = 1 where a
 * transcript starts, else 0 (may be NULL). In spade's format an answer is
 * what follows <|action|> or <|source|>, up to and with its <|end|>, and a
 * transcript starts at <|agent|> or <|designer|>; in a chat model's ChatML
 * an answer is what follows "<|im_start|>assistant\n", up to and with its
 * <|im_end|>, and a transcript starts at each "<|im_start|>system" that
 * follows no other system turn directly (the hint arm's second system line
 * belongs to its transcript). spade pretrain's loss = answers. */
void spade_transcript_text_answers(spade_tokenizer *t, const int *tok, size_t n, unsigned char *ans,
                                   unsigned char *start);

#endif /* SPADE_CLI_TRANSCRIPT_TEXT_H */
