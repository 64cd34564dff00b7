/* chat.h — the roles' turns on a chat model: the one definition of the texts
 * every chat-template policy reads, whether it runs here (agent/transcript.c
 * lays them out in ChatML with the model's own tokens) or behind a server
 * (agent/remote_agent.c sends them as chat messages; a remote designer calls
 * spade_chat_designer_messages).
 *
 * What it is: the agent's system line (with or without a reasoning budget),
 * the hint arm's system line, the hint writer's system line, and the
 * designer's system card, which the build extracts from the marked section
 * "The DSL in brief" of docs/dsl.md (core/chat_card.sh), so the card a model
 * reads is the documented one and cannot drift from it.
 * What it is not: a tokenizer or a template renderer (core/policy/bpe.h's
 * spade_bpe_chat lays messages out as ChatML), nor the designer's request
 * (designer/prompt.h builds the user turn: family, memory, grounding).
 */
#ifndef SPADE_CHAT_H
#define SPADE_CHAT_H

#include <stddef.h>

#include "policy/bpe.h"

/* The agent's system line into buf (cap bytes, NUL-terminated); returns its
 * length. reasoning_tokens = 0: one action on one line; > 0: think in at most
 * that many tokens, then give the action as \boxed{...}. */
size_t spade_chat_agent_system(int reasoning_tokens, char *buf, size_t cap);

/* The hint arm's system line, "Hint: HINT", into buf (cap bytes,
 * NUL-terminated, cut to fit); returns its length. */
size_t spade_chat_hint_line(const char *hint, size_t hint_len, char *buf, size_t cap);

/* The designer's system card (what spade is, the DSL's rules, an example, and
 * what to answer with): a static text of *len bytes. */
const char *spade_chat_designer_card(size_t *len);

/* The system line of the hint writer (designer.hint = self): static text. */
const char *spade_chat_hint_writer_system(size_t *len);

/* The designer's turns for a request (designer/prompt.h's spade_prompt_build
 * with chat set): msgs[0] the system card, msgs[1] the user turn pointing at
 * request (not copied). Returns 2, the number of messages. */
int spade_chat_designer_messages(const char *request, size_t len, spade_chat_msg msgs[2]);

#endif /* SPADE_CHAT_H */
