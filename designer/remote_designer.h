/* remote_designer.h — a designer served behind an OpenAI-compatible server
 * ([designer.policy] backend = remote, docs/scale.md): the designer's prompt
 * as chat turns, the replies asked for in one batch, and every reply recorded
 * in the archive (its replies table) so that a resumed iteration reads what
 * the server wrote instead of asking again.
 *
 * What it is: the writing of a fixed designer that is not trained here (the
 * paper's fixed-pool baseline, or a large served model writing for a local
 * agent). No log-probs are asked for: nothing trains on these tokens.
 * What it is not: the prompt (designer/prompt.c builds its text), the source
 * extraction or the gates (selfplay/, designer/gates.c), nor the HTTP client
 * (core/remote.c).
 */
#ifndef SPADE_DESIGNER_REMOTE_DESIGNER_H
#define SPADE_DESIGNER_REMOTE_DESIGNER_H

#include <stddef.h>
#include <stdint.h>

#include "archive.h"
#include "remote.h"

#define SPADE_DESIGNER_TURNS_MAX 4

/* The designer's request as chat turns: a short system card, then the
 * prompt designer/prompt.c built as the user turn. The one place these turns
 * are made. Not yet core/chat.h's card (about 870 tokens): llama.cpp's server
 * in the tests decodes one token a batch, and the card made each request take
 * minutes and outgrow its 2,048-token context. Fills
 * out[0..n) (the texts point into prompt or static storage); returns n. */
int spade_designer_chat_turns(const char *prompt, size_t len, spade_remote_msg out[SPADE_DESIGNER_TURNS_MAX]);

/* "remote:URL#MODEL" of r into out (the archive's envs.writer). */
void spade_designer_remote_writer(const spade_remote *r, char *out, size_t cap);

typedef struct spade_designer_remote_opts {
    int max_tokens; /* per reply (designer.max_source_tokens) */
    float temperature; /* the client's (it is in the request digest) */
} spade_designer_remote_opts;

/* Slot i of iteration it: the reply to prompts[i] (seeds[i] as the request's
 * seed). A reply the archive recorded for the same request is read back; the
 * others are asked for in one spade_remote_chat call and recorded, committed,
 * before this returns. a may be NULL (nothing read or recorded). texts[i] is
 * malloc'd (the caller frees); *asked and *recorded count the slots sent to
 * the server and those read back. 0, or -1 with err and nothing allocated. */
int spade_designer_remote_write(spade_remote *r, spade_archive *a, int it, int n, const char *const *prompts,
                                const size_t *lens, const uint64_t *seeds, const spade_designer_remote_opts *o,
                                char **texts, size_t *text_lens, int *asked, int *recorded, char *err, size_t errlen);

#endif /* SPADE_DESIGNER_REMOTE_DESIGNER_H */
