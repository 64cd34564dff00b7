/* agents.h — the agents core ships for the episode layer (episodes.h): the
 * reference agents of spade run and the checker, and scripted agents for tests
 * and the designer's gates.
 *
 * Every constructor returns a heap agent (free it with spade_agent_free) or
 * NULL when out of memory. Every agent here decides each episode's actions from
 * that episode alone (its request seed, its observations, its hint), so it
 * plays the same whatever the batch, and paired requests (same seed, with and
 * without the hint) are comparable.
 * What it is not: the policy agent (agent/, written against episodes.h).
 */
#ifndef SPADE_AGENTS_H
#define SPADE_AGENTS_H

#include <stdint.h>
#include <stdio.h>

#include "episodes.h"

/* random: short random actions (spade_random_action of check.h: an integer,
 * a direction word, a common word or a few letters). Episode e draws from a
 * splitmix64 stream seeded with seed ^ (e's request seed * 0x9E3779B97F4A7C15)
 * ^ 0xA5A5A5A5. */
spade_agent *spade_agent_random(uint64_t seed);

/* solve: plays the environment's SOLVE action each step. An environment
 * without SOLVE: the episode ends as agent_stop "no_solve". */
spade_agent *spade_agent_solve(void);

/* stdin: one action per line read from in (the trailing \n or \r\n removed),
 * for each live episode in episode order. End of input (or a read
 * interrupted by a signal) tells the layer the agent has no more actions. */
spade_agent *spade_agent_stdin(FILE *in);

/* no-op: the empty action, every step. */
spade_agent *spade_agent_noop(void);

/* What a scripted agent does once its list of actions is used up. */
typedef enum spade_script_tail {
    SPADE_TAIL_STOP = 0, /* the episode ends as agent_stop "script_end" */
    SPADE_TAIL_CYCLE, /* start the list again */
    SPADE_TAIL_EMPTY, /* the empty action from then on */
} spade_script_tail;

/* The pieces of a text, in this order, each kept once (its first occurrence):
 *   numbers: maximal runs "-?[0-9]+(.[0-9]+)?" ("-" only when not after a
 *            letter or digit), e.g. "42", "-3", "2.5";
 *   words:   maximal runs of non-space bytes with ASCII punctuation trimmed
 *            from both ends ("(left)," -> "left"; a sign before a digit
 *            stays: "-7," -> "-7"), non-empty;
 *   lines:   each line with surrounding spaces trimmed, non-empty.
 * A NUL byte ends the text. */
typedef struct spade_pieces {
    int n;
    const char **p; /* [n], NUL-terminated */
    size_t *len; /* [n] */
    char *store;
} spade_pieces;
/* 0, or -1 when out of memory (then *out is empty). */
int spade_text_pieces(const char *text, size_t len, spade_pieces *out);
/* The words alone (as above), in order, each occurrence kept: "north north
 * east" is three; what a hint that lists the moves says. */
int spade_text_words(const char *text, size_t len, spade_pieces *out);
void spade_pieces_free(spade_pieces *pc);

/* hint-echo: the pieces of the episode's hint at reset (spade_text_pieces),
 * one per step in that order; then tail. Wants the hint
 * (SPADE_AGENT_WANTS_HINT), so it works on episodes that do not append it. A
 * hint without pieces: the empty action, then tail. */
spade_agent *spade_agent_hint_echo(spade_script_tail tail);

/* hint-words: the words of the episode's hint (spade_text_words), one per
 * step in order, repeats kept; then tail. Wants the hint. */
spade_agent *spade_agent_hint_words(spade_script_tail tail);

/* observation-echo: at step t (0, 1, ...) piece t mod P of the latest
 * observation's P pieces (spade_text_pieces); the empty action when it has
 * none. */
spade_agent *spade_agent_obs_echo(void);

/* piece-echo: one piece per episode, the same every step: episode e plays
 * piece e % n of its text, where piece 0 is the whole text (spaces trimmed
 * from both ends) and piece k >= 1 is piece k - 1 of spade_text_pieces. The
 * text is the hint at reset (from_hint: wants the hint) or else the first
 * observation (what was shown to be typed back). An episode whose text has no piece of its number ends as
 * agent_stop "no_piece" (the designer's gates: an answer that is the hint's
 * k-th number, or the observation's, wins every seed). n >= 1. */
spade_agent *spade_agent_piece_echo(int from_hint, int n);

/* script: actions[0..n) replayed one per step in every episode (the strings
 * are copied); then tail. */
spade_agent *spade_agent_script(const char *const *actions, int n, spade_script_tail tail);

/* probes: episode e plays probes[e % n] (lens[e % n] bytes: binary and NUL
 * bytes allowed; the bytes are copied) at each of its first `steps` steps
 * (0: every step), then ends as agent_stop "script_end". One odd input per
 * episode, so a batch of them finds which input breaks an environment (the
 * checker's arbitrary_actions, the designer's probe_actions gate). */
spade_agent *spade_agent_probes(const char *const *probes, const size_t *lens, int n, int steps);

#endif /* SPADE_AGENTS_H */
