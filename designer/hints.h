/* hints.h — the designer's self-written hints (designer.hint = self) and the
 * agent wrapper that records the hint an environment's own HINT block gave.
 *
 * What it is: spade_hints_write reads every written source with the same
 * policy, in one decoding batch, and keeps each completion as that
 * environment's hint (<|designer|> HINT_PROMPT <|hint|> HINT <|end|>); the
 * tokens are never trained on. spade_hint_spy wraps the agent of the paired
 * plays to keep the hint its first hint episode saw, for the archive.
 * What it is not: the hint prompt (prompt.h) or the choice of seeds (the
 * loop draws one stream per slot, so a resumed run writes the same hints).
 */
#ifndef SPADE_DESIGNER_HINTS_H
#define SPADE_DESIGNER_HINTS_H

#include <stddef.h>
#include <stdint.h>

#include "episodes.h"
#include "policy/policy.h"

typedef struct spade_hints_opts {
    float temperature, top_p; /* designer.hint_temperature, designer.top_p */
    int max_tokens; /* designer.hint_tokens: at most this many tokens a hint (>= 1) */
    size_t max_len; /* at most this many bytes kept (the archive's hint column, less its NUL) */
} spade_hints_opts;

/* For each i < n: hint[i] (malloc'd, NUL-terminated, hint_len[i] bytes) is
 * what policy p wrote for src[i] (src_len[i] bytes; an empty source gets "")
 * drawing from seeds[i], with its surrounding blank space dropped and cut at
 * a NUL byte and at o->max_len. *tokens grows by the tokens sampled. 0, or -1
 * with err; either way every hint[i] set (NULL or a string) is the caller's
 * to free. */
int spade_hints_write(spade_policy *p, const spade_hints_opts *o, const char *const *src, const size_t *src_len,
                      const uint64_t *seeds, int n, char **hint, size_t *hint_len, long *tokens, char *err,
                      size_t errlen);

/* Plays as `inner` does and copies into seen (cap bytes, NUL-terminated) the
 * hint of the first episode whose view has one. Fill with spade_hint_spy_init;
 * play with &spy->agent while spy and inner live. */
typedef struct spade_hint_spy {
    spade_agent agent;
    spade_agent *inner;
    char *seen;
    size_t cap;
    int got;
} spade_hint_spy;
void spade_hint_spy_init(spade_hint_spy *spy, spade_agent *inner, char *seen, size_t cap);

#endif /* SPADE_DESIGNER_HINTS_H */
