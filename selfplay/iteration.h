/* iteration.h — one self-play iteration as its phases, over one struct they
 * share, so loop.c runs them in order and a test can run (or fake) one alone.
 *
 * What it is: spade_selfplay_iteration (loop.h) is spade_sp_begin, then each
 * phase below in this order while they return 0, then spade_sp_end. A phase
 * reads what the phases before it left in the struct and writes only its own
 * fields (named at each); every phase returns 0, 1 when the run's stop flag
 * was seen (nothing is written or trained), or -1 with err. The kill points
 * (core/killpoint.h) sit at the same phase boundaries as before the split.
 * What it is not: an API for anyone but loop.c and tests/test_selfplay.c; the
 * phases' order is the loop's contract (loop.h), not a menu.
 */
#ifndef SPADE_SELFPLAY_ITERATION_H
#define SPADE_SELFPLAY_ITERATION_H

#include <stddef.h>

#include "agent/policy_agent.h"
#include "agent/transcript.h"
#include "designer/gates.h"
#include "designer/plays.h"
#include "designer/prompt.h"
#include "selfplay/loop.h"
#include "vendi.h"

/* The most plays of one environment an arm (selfplay.plays' cap). */
#define SPADE_SP_MAX_PLAYS 256

/* One environment of the iteration: written now (w[0..n)), kept from the last
 * writing or replayed from the archive (w[n..n_all)). */
typedef struct spade_sp_env {
    spade_transcript tr; /* <|designer|> prompt <|source|> sampled */
    char *prompt; /* designer.source = remote: the prompt's text, the served designer's user turn */
    size_t prompt_len;
    char *source; /* NULL: the designer wrote nothing usable */
    size_t source_len;
    char corpus_item[256];
    char family[32]; /* the target family of its prompt (or its archived row's) */
    const spade_template *tpl; /* template mode: the template it fills */
    char *hint; /* designer.hint = self: the hint every seed's hint arm sees; NULL: the HINT block's */
    size_t hint_len;
    spade_gate_report gates;
    float embedding[SPADE_VENDI_DIM];
    float games[SPADE_VENDI_DIM]; /* template mode: the embedding of the game its filling sets (vendi_n_games) */
    long archive_id; /* kept and replayed ones: its row */
    uint64_t seeds[SPADE_SP_MAX_PLAYS]; /* every play's seed, play k of either arm */
    spade_ep_outcome *plays; /* [2 * plays]: the no-hint arm, then the hint arm */
    spade_paired paired;
    char hint_seen[512]; /* the hint the first hint play saw (the archive's hint column) */
    double reward;
    /* what its prompt showed (the grounding excerpt, the memory's sources, their rows owned here):
     * novelty compares against it, by text and by behaviour, when the designer wrote from it */
    spade_gate_shown shown;
} spade_sp_env;

typedef struct spade_sp_iter {
    /* given (spade_sp_begin) */
    spade_selfplay *s;
    const spade_selfplay_opts *o;
    int it;
    const volatile sig_atomic_t *stop;
    spade_selfplay_metrics *m;
    /* the shape: a writing iteration (regen) writes n; its last writing was base_it */
    int regen, base_it, n, n_all, plays, R;
    double t0; /* when the iteration began (t_design counts the pool part too) */
    spade_sp_env *w; /* [2 * SPADE_SP_MAX_ENVS] */
    /* the writing phase's allocations: malloc, or a test's failing one */
    void *(*alloc)(size_t);
    /* gates: the novelty references, the corpus's then this iteration's valid ones */
    double *refs;
    const char **ref_names;
    int n_refs;
    char names[SPADE_SP_MAX_ENVS][48];
    /* plays: the agent, its options, one paired run's transcripts by episode */
    spade_policy_agent_opts ao;
    spade_episodes_opts eo;
    spade_kept_episodes ae;
    int played;
    /* the update's samples: the agent's [0, n_agent) (their buffers in agent_tr), then the designer's to ns */
    spade_grpo_sample *samples;
    spade_transcript *agent_tr;
    int n_agent, ns;
    /* rewards: the look-ahead's pass rates (NAN where none), the centred rewards and who is kept */
    double after[SPADE_SP_MAX_ENVS];
    double r[SPADE_SP_MAX_ENVS];
    int keep[SPADE_SP_MAX_ENVS];
} spade_sp_iter;

/* Checks the options and allocates; on -1 nothing is left to free. */
int spade_sp_begin(spade_sp_iter *x, spade_selfplay *s, const spade_selfplay_opts *o, int it,
                   const volatile sig_atomic_t *stop, spade_selfplay_metrics *m, char *err, size_t errlen);
/* Frees everything; rc != 0 rolls the archive back to before iteration it. */
void spade_sp_end(spade_sp_iter *x, int rc);

typedef int (*spade_sp_phase)(spade_sp_iter *x, char *err, size_t errlen);

int spade_sp_pool(spade_sp_iter *x, char *err, size_t errlen); /* m->pool; trains the policy */
int spade_sp_prompts(spade_sp_iter *x, char *err, size_t errlen); /* w[i].tr, family, corpus_item, tpl */
int spade_sp_replays(spade_sp_iter *x, char *err, size_t errlen); /* w[n..n_all) */
int spade_sp_write(spade_sp_iter *x, char *err, size_t errlen); /* w[i].source, embedding, games; tr */
int spade_sp_hints(spade_sp_iter *x, char *err, size_t errlen); /* w[i].hint */
int spade_sp_gates(spade_sp_iter *x, char *err, size_t errlen); /* w[i].gates, embedding; refs */
int spade_sp_plays(spade_sp_iter *x, char *err, size_t errlen); /* w[i].seeds, plays, paired; samples */
int spade_sp_lookahead(spade_sp_iter *x, char *err, size_t errlen); /* after */
int spade_sp_rewards(spade_sp_iter *x, char *err, size_t errlen); /* w[i].reward, r, keep */
int spade_sp_update(spade_sp_iter *x, char *err, size_t errlen); /* designer samples; trains the policy */
int spade_sp_archive(spade_sp_iter *x, char *err, size_t errlen); /* the archive's rows; m->vendi_* */

/* Pieces the phases are made of, for the tests. */
/* The agent's samples from w[i]'s paired plays (in ae.tr, by episode): each
 * arm trained (the hint arm with selfplay.train_hint_arm) is one group whose
 * returns are z-scored by GRPO's group mode; an arm whose returns are all
 * equal, a failed play and a play with no sampled token give nothing. */
int spade_sp_agent_samples(spade_sp_iter *x, int i, char *err, size_t errlen);
/* The designer's samples (after the rewards): every kept slot with a
 * non-zero centred reward, unless the designer is frozen or given files. */
void spade_sp_designer_samples(spade_sp_iter *x);
/* An archived environment as a prompt's memory entry: a positive (kind 0) or
 * a negative, too hard (-1) below a 0.5 pass rate, else too easy (+1). */
spade_prompt_memory spade_sp_memory_entry(const spade_archive_env *e, int negative);

#endif /* SPADE_SELFPLAY_ITERATION_H */
