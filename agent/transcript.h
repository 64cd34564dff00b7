/* transcript.h — the one way an episode or a designer sample becomes tokens:
 * for rollouts (what the policy reads while it plays), for training (the
 * masked GRPO sample), and for pretraining demonstrations (spade demos).
 *
 * The format (docs/transcripts.md), in the policy's tokens:
 *   agent:    <|agent|> <|observation|> OBS_0 [<|hint|> HINT] <|action|> ACT_1 <|end|>
 *                       <|observation|> OBS_1 <|action|> ACT_2 <|end|> ...
 *   designer: <|designer|> PROMPT <|source|> SOURCE <|end|>
 * OBS, HINT, ACT, PROMPT and SOURCE are text encoded by the policy's
 * tokenizer. Tool results are observations. The hint arm's hint follows the
 * first observation after its own token (the text the environment returned
 * is kept as it was). Only what the role wrote is trained: the mask is 1 on
 * ACT tokens and their <|end|> when the policy sampled them (the agent), on
 * SOURCE and its <|end|> (the designer); 0 everywhere else. An action cut by
 * agent.max_action_tokens gets an <|end|> the policy did not write (mask 0).
 *
 * A pretrained model's tokenizer (spade_tokenizer_is_chat: the "gguf" kind)
 * has no such tokens: its transcripts are the model's chat template, ChatML,
 * with the roles' texts of core/chat.h:
 *   agent:    <|im_start|>system\nAGENT_SYSTEM<|im_end|>\n
 *             [<|im_start|>system\nHint: HINT<|im_end|>\n]
 *             <|im_start|>user\nOBS_0<|im_end|>\n<|im_start|>assistant\n ACT_1 <|im_end|>
 *             \n<|im_start|>user\nOBS_1<|im_end|>\n<|im_start|>assistant\n ACT_2 <|im_end|> ...
 *   designer: <|im_start|>system\nCARD<|im_end|>\n<|im_start|>user\nREQUEST<|im_end|>\n
 *             <|im_start|>assistant\n SOURCE <|im_end|>
 * trained the same way (the tokens the role sampled and the <|im_end|> it
 * sampled; everything else, the system lines and the hint included, masked).
 * AGENT_SYSTEM says the reasoning budget when there is one; a demonstrated
 * SOURCE is written as the card asks, in one ```c block.
 * What it is not: the episode layer (core/episodes.h) or the decoder; this
 * only lays out tokens, masks and the log-probs recorded at sampling time.
 */
#ifndef SPADE_AGENT_TRANSCRIPT_H
#define SPADE_AGENT_TRANSCRIPT_H

#include <stddef.h>

#include "episodes.h"
#include "policy/policy.h"

typedef struct spade_transcript {
    int *tok; /* (len) */
    unsigned char *mask; /* (len) 1 = written by the role */
    float *logp; /* (len) sampling-time log p(tok[t] | tok[0..t)) where mask = 1, else 0 */
    int len, cap;
    int oom; /* an append ran out of memory: the transcript is unusable */
} spade_transcript;

void spade_transcript_init(spade_transcript *t);
void spade_transcript_free(spade_transcript *t);
void spade_transcript_clear(spade_transcript *t);

/* Appends one token, untrained. */
void spade_transcript_special(spade_transcript *t, int token);
/* Appends text (encoded by tok), untrained. */
void spade_transcript_text(spade_transcript *t, spade_tokenizer *tok, const char *text, size_t len);
/* Appends tokens the policy sampled, trained, with their log-probs (NULL: 0). */
void spade_transcript_sampled(spade_transcript *t, const int *toks, const float *logp, int n);

/* The pieces of the agent format, so the policy agent appends exactly what a
 * whole transcript holds: the opening (<|agent|>, first observation, hint,
 * <|action|>) and each later turn (<|observation|> OBS <|action|>). */
void spade_transcript_agent_open(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len,
                                 const char *hint, size_t hint_len);
/* The same with the agent's reasoning budget (agent.reasoning_tokens), which
 * a chat model's system line states; spade's format does not show it. */
void spade_transcript_agent_open_budget(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len,
                                        const char *hint, size_t hint_len, int reasoning_tokens);
void spade_transcript_agent_turn(spade_transcript *t, spade_tokenizer *tok, const char *obs, size_t obs_len);
/* Closes an action the policy did not end (cut by its token budget): the
 * end of turn (<|end|>, or <|im_end|>), untrained. */
void spade_transcript_close_turn(spade_transcript *t, spade_tokenizer *tok);
/* A whole demonstrated step: the action as written, then <|end|> (both trained). */
void spade_transcript_agent_action(spade_transcript *t, spade_tokenizer *tok, const char *act, size_t len);
/* The designer: <|designer|> PROMPT <|source|>, then (a demonstration) SOURCE <|end|>. */
void spade_transcript_designer_open(spade_transcript *t, spade_tokenizer *tok, const char *prompt, size_t len);
void spade_transcript_designer_source(spade_transcript *t, spade_tokenizer *tok, const char *src, size_t len);

/* What a trainer keeps of a run's episodes, by episode index: the policy
 * agent's on_episode (spade_policy_agent_opts) with ctx a spade_kept_episodes
 * copies each transcript into tr[episode] (its tokens, mask and log-probs)
 * and, when o is not NULL, the outcome into o[episode] and 1 into
 * have[episode]. Episodes outside [0, n) are ignored. A copy that runs out of
 * memory sets oom: the caller checks it after the run. */
typedef struct spade_kept_episodes {
    spade_transcript *tr; /* [n] */
    spade_ep_outcome *o; /* [n] or NULL */
    int *have; /* [n], or NULL when o is */
    long n;
    int oom;
} spade_kept_episodes;
void spade_keep_episode(void *ctx, const spade_ep_outcome *o, const spade_transcript *t);

/* The transcript as text with the special tokens written out (<|agent|>, ...;
 * for a chat model its ChatML, <|im_start|> ...), for people and for the
 * demonstrations file; *out is malloc'd. */
int spade_transcript_render(const spade_transcript *t, spade_tokenizer *tok, char **out, size_t *out_len);

#endif /* SPADE_AGENT_TRANSCRIPT_H */
