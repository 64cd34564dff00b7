/* runtime.h — the per-call context behind the DSL helpers (dsl/runtime.c).
 *
 * What it is: the internal side of <spade/dsl.h>. An environment calls say(),
 * reward(), rand_range(), ...; those land in dsl/runtime.c, which acts on the
 * spade_rt the host (core/host.c) points spade_rt_current at before every call
 * into the environment. Also the symbol allowlist the JIT (core/jit) hands to
 * tcc_add_symbol: the only addresses JIT-compiled environment code can reach.
 * What it is not: installed, nor a public API; environments never see this
 * header, and nothing here is thread-safe (a worker is single-threaded; one host
 * is driven by one thread at a time).
 */
#ifndef SPADE_RUNTIME_H
#define SPADE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

/* Which helper writes into the output buffer during a call: say() everywhere
 * but SOLVE, act() only in SOLVE; the other one is ignored, so a SOLVE block
 * that also says something does not pollute its reference action. */
typedef enum spade_rt_sink {
    SPADE_RT_SAY = 0,
    SPADE_RT_ACT = 1,
} spade_rt_sink;

typedef struct spade_rt {
    char *out; /* out_cap + 1 bytes, always NUL-terminated at out_len */
    size_t out_len; /* bytes written so far */
    size_t out_cap; /* at most this many bytes of text */
    int overflow; /* something was said past out_cap and dropped */
    int sink; /* spade_rt_sink */
    double reward; /* this call's reward (reward() and finish(1)) */
    int bad_reward; /* reward() got NaN, an infinity or a value beyond +-SPADE_REWARD_MAX */
    int terminated; /* finish() was called */
    int success; /* finish(nonzero) was called first */
    long steps; /* what steps() answers */
    uint64_t *rng; /* 4 words of xoshiro256** state, owned by the instance */
} spade_rt;

/* The context of the call in progress; the helpers do nothing harmful when it
 * is NULL (output is dropped, randomness comes from a fixed fallback stream). */
extern spade_rt *spade_rt_current;

/* Resets rt for one call: empty output (out must hold out_cap + 1 bytes), no
 * reward, not terminated. */
void spade_rt_begin(spade_rt *rt, char *out, size_t out_cap, uint64_t *rng, long steps, int sink);
/* Appends n raw bytes to rt's output, flagging overflow (and dropping them) when
 * they do not fit. Used by the host for text that is not the environment's
 * (tool results, the tool list). Returns 0, or -1 on overflow. */
int spade_rt_append(spade_rt *rt, const char *text, size_t n);

/* xoshiro256** seeded through splitmix64: the instances' generator. */
void spade_rng_seed(uint64_t state[4], uint64_t seed);
uint64_t spade_rng_next(uint64_t state[4]);

/* Where the final answer lies in text[0..len): the last balanced \boxed{...},
 * else the last <answer>...</answer> (tags in any case), else everything,
 * blanks trimmed. Never reads past len. spade_answer() is this plus a copy. */
void spade_answer_span(const char *text, size_t len, size_t *start, size_t *span_len);

/* The allowlist: every spade_ helper of <spade/dsl.h>, the libc subset it
 * declares under SPADE_JIT, and memset/memcpy/memmove (tcc emits calls to them
 * for struct copies and initialisers). The ctype functions point at wrappers
 * that accept any int (glibc's index a table and read out of bounds on values
 * outside [-1, 255]). */
typedef struct {
    const char *name;
    void *addr;
} spade_dsl_symbol;

extern const spade_dsl_symbol spade_dsl_symbols[];
extern const size_t spade_dsl_nsymbols;

/* The address of name in the allowlist, or NULL. */
void *spade_dsl_symbol_lookup(const char *name);

#endif /* SPADE_RUNTIME_H */
