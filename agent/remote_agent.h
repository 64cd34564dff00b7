/* remote_agent.h — a served model as an agent of the episode layer: each live
 * episode is a chat (the observation as the user turn, the action as the
 * assistant's, the hint as a system line in the hint arm), and each round's
 * actions of all live episodes are requested together (core/remote.h keeps
 * up to `concurrency` in flight).
 *
 * What it is: the agent role of `spade eval remote:URL#MODEL` and `spade run
 * --agent remote:URL#MODEL`. An action is the reply's first line, trimmed;
 * with a reasoning budget the reply may think first (core/chat.h's system line
 * says so) and the action is its last \boxed{...} (dsl/runtime.h's
 * spade_answer_span, as the local policy agent reads it).
 * An episode whose chat outgrows SPADE_REMOTE_CHAT_MAX bytes ends as
 * agent_stop "context_full". What it is not: a trainer (no transcripts, no
 * log-probs kept), nor the owner of the client: r must outlive the agent.
 */
#ifndef SPADE_AGENT_REMOTE_AGENT_H
#define SPADE_AGENT_REMOTE_AGENT_H

#include <stdint.h>

#include "episodes.h"
#include "remote.h"

#define SPADE_REMOTE_CHAT_MAX (192 * 1024)

/* A heap agent (free with spade_agent_free), or NULL with err. seed: the
 * requests' seeds derive from it, the episode's seed and repeat, and the step.
 * reasoning_tokens 0: one line per action in the client's max_tokens; R > 0:
 * a reply may run to R + answer_tokens tokens (answer_tokens <= 0: 64) over
 * several lines, its answer the action. */
spade_agent *spade_agent_remote(spade_remote *r, uint64_t seed, int reasoning_tokens, int answer_tokens, char *err,
                                size_t errlen);

#endif /* SPADE_AGENT_REMOTE_AGENT_H */
