/* prompt.h — the designer's prompt: what the designer is asked to write, the
 * target family, a grounding excerpt, and the memory block, within a budget
 * of the policy's context; and the hint writer's prompt (the source, then the
 * instruction to write its hint).
 *
 * What it is: text assembly with a token budget. The fixed instructions come
 * first, then the memory block (up to memory_share of what is left), then the
 * grounding excerpt (the rest); each piece is cut at a line boundary, marked
 * "...", so that what the designer reads is real code up to a point. Token
 * counts come from a callback (the policy's tokenizer; NULL counts bytes) and
 * are taken line by line; the whole prompt is counted once more at the end
 * and cut further if the per-line sum underestimated it, so the result never
 * exceeds the budget.
 * What it is not: tokenisation or the role tokens around the text (the
 * transcript layer adds them), nor the choice of excerpt and memory (corpus.h,
 * core/archive.h's spade_memory_select).
 */
#ifndef SPADE_DESIGNER_PROMPT_H
#define SPADE_DESIGNER_PROMPT_H

#include <stddef.h>

typedef size_t (*spade_token_count_fn)(void *ctx, const char *text, size_t len);

typedef struct spade_prompt_opts {
    int budget; /* tokens the whole prompt may take (> the instructions) */
    spade_token_count_fn count; /* NULL: one token per byte */
    void *count_ctx;
    double memory_share; /* of the budget left after the instructions (0.4) */
    /* 1: the user turn of a chat model (core/chat.h): the instructions are the
     * system card's (spade_chat_designer_messages adds it; its tokens and the
     * template's markup count against the budget), the sources shown are in
     * ```c blocks, and the text ends by asking for one new environment of
     * the family in one ```c block instead of "Source:\n". */
    int chat;
    /* non-NULL: the request that ends the text instead of the default one
     * (the rewrite task: "Rewrite ... in one ```c block."); ends with "\n" */
    const char *request;
} spade_prompt_opts;
void spade_prompt_opts_default(spade_prompt_opts *o);

/* One memory entry: a positive (kind 0), or a negative that was too hard
 * (kind -1, pass rate < 0.1) or too easy (kind +1, > 0.9). */
typedef struct spade_prompt_memory {
    const char *source;
    size_t len;
    const char *family;
    double pass, regret;
    int kind;
} spade_prompt_memory;

/* Builds the prompt for one environment of `family`. excerpt (may be NULL: no
 * corpus) is the grounding document and its name. *out is malloc'd. The
 * returned text ends with "Source:\n" (o->chat: with the request for a fenced
 * block). 0, or -1 when the budget cannot hold even the instructions (err
 * names both numbers). A remote designer sends the chat form as
 * spade_chat_designer_messages(text) (core/chat.h). */
int spade_prompt_build(const spade_prompt_opts *o, const char *family, const char *excerpt_name, const char *excerpt,
                       size_t excerpt_len, const spade_prompt_memory *mem, int n_mem, char **out, size_t *out_len,
                       char *err, size_t errlen);

/* The rewrite task's request (opts.request): the change in words (what
 * spade_variant_make_told says), then the ask for the whole changed source in
 * one ```c block. Into out (cap bytes). */
void spade_rewrite_request(const char *change, char *out, size_t cap);

/* The hint writer's prompt (designer.hint = self): a short header, the
 * environment's source (cut at a line boundary, "...", to fit o->budget),
 * then the instruction to write a hint that helps without giving the answer;
 * it ends with "Hint:\n". o->memory_share is not used. *out is malloc'd. 0,
 * or -1 when the budget cannot hold the fixed text (err names both numbers). */
int spade_hint_prompt_build(const spade_prompt_opts *o, const char *src, size_t len, char **out, size_t *out_len,
                            char *err, size_t errlen);

/* The family of slot `slot` at iteration `it`: families rotate in windows of
 * `window` (the reference's 3 of 6 skills), window k = families[k*window ..]
 * modulo n, slots round-robin over the window. */
int spade_family_for_slot(int n_families, int window, int it, int slot);

/* 1 when `family` is one of the comma-separated names of `list` (whole
 * names: "math" is not in "mathx,grid"), else 0; a NULL list holds none. */
int spade_family_listed(const char *list, const char *family);

#endif /* SPADE_DESIGNER_PROMPT_H */
