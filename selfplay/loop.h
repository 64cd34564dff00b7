/* loop.h — one iteration of self-play: the designer writes environments, the
 * gates judge them, the agent plays each valid one with and without its hint
 * on the same seeds, both roles are rewarded, and one GRPO update trains the
 * shared policy on both roles' masked samples; everything lands in the
 * archive.
 *
 * What it is: the composition of the roles (designer/, agent/) over core.
 * It lives above both (selfplay/), so neither role includes the other and
 * core includes neither (docs/architecture.md). An iteration draws everything
 * (corpus items, families, seeds, samples) from the run seed and its number,
 * and reads the archive only as it was after the previous iteration, so a
 * run resumed from iteration k's checkpoint and archive replays iteration k+1
 * exactly.
 * What it is not: the run directory, config, checkpoints and progress
 * display (cli/cmd_train.c).
 */
#ifndef SPADE_SELFPLAY_LOOP_H
#define SPADE_SELFPLAY_LOOP_H

#include <signal.h>
#include <stdint.h>

#include "agent/pool.h"
#include "agent/rl.h"
#include "archive.h"
#include "designer/corpus.h"
#include "designer/gates.h"
#include "designer/reward.h"
#include "designer/template.h"
#include "policy/policy.h"

#define SPADE_SP_MAX_ENVS 64
#define SPADE_SP_MAX_FAMILIES 16

typedef struct spade_selfplay_opts {
    uint64_t seed;
    /* designer */
    int envs; /* designer.envs: environments written per iteration (8) */
    int max_source_tokens; /* designer.max_source_tokens (512) */
    float temperature, top_p; /* designer.temperature (1.0), designer.top_p (1.0) */
    spade_dreward_kind reward; /* designer.reward (blend) */
    int invalid_drop; /* designer.invalid = drop (0: penalise) */
    double invalid_reward; /* designer.invalid_reward (-0.5) */
    int train_designer; /* designer.train (1): 0 = frozen designer, no designer samples in the update */
    int use_corpus; /* corpus.enabled (1) */
    int use_memory; /* memory.enabled (1) */
    spade_memory_opts memory;
    char families[SPADE_SP_MAX_FAMILIES][32];
    int n_families, family_window; /* designer.families, designer.family_window (3) */
    spade_gate_opts gates;
    /* designer.hint = self: after the sources, one decoding batch of the same
     * policy reads each source and writes its hint (what the hint arm and the
     * hint_echo gate see, and what the archive keeps); never trained on.
     * 0 = embedded: the source's HINT block is the hint. */
    int hint_self;
    float hint_temperature; /* designer.hint_temperature (0.3, the reference's) */
    int hint_tokens; /* designer.hint_tokens: at most this many tokens per hint (64) */
    /* designer.source = files: slot i of iteration it "writes" file (it * envs + i) mod n_files instead of
     * sampling the policy (measuring the gates and regret of a given set; the designer is not trained) */
    const char *const *files;
    const char *const *file_names;
    const size_t *file_lens;
    int n_files;
    /* designer.source = template: slot i of iteration it fills template (it * envs + i) mod n_templates, its holes
     * sampled from the policy (selfplay/template.h); the prompt is one line (no corpus excerpt, no memory), the
     * family is the template's, and novelty and Vendi compare the fillings (spade_template_embed), not the sources */
    const spade_template *const *templates;
    int n_templates;
    int hole_tokens; /* designer.hole_tokens: at most this many tokens per hole (8) */
    /* designer.source = remote ([designer.policy] backend = remote): a served model writes every slot's source
     * from the same prompt (designer/remote_designer.h); its replies are recorded in the archive and read back
     * by a resumed iteration. Never trained on (train_designer must be 0); the agent is the local policy. */
    struct spade_remote *remote;
    const char *writer; /* the archive's envs.writer of what remote writes: "remote:URL#MODEL" */
    /* agent */
    int plays; /* selfplay.plays: plays per valid environment an arm, with and without the hint (8) */
    int repeats; /* selfplay.repeats: plays of each seed an arm (1; plays / repeats seeds): >= 2
                  * makes the plateau per seed (designer/reward.h: bimodal environments) */
    int regen_every; /* selfplay.regen_every: write new environments every K iterations (1); in between the
                      * valid ones of the last writing are played again (both arms) and the agent trains on them */
    int replay; /* selfplay.replay: past valid environments with the highest regret played too (0; PLR) */
    int pool_envs; /* selfplay.pool_envs: fixed-pool environments the agent also trains on per iteration (0) */
    int train_hint_arm; /* selfplay.train_hint_arm (0): the agent also trains on its hint plays, so it keeps
                         * reading hints (regret is still measured before the update, on the same snapshot) */
    spade_rl_opts rl; /* the agent's options (and the pool plays when pool_envs > 0) */
} spade_selfplay_opts;
void spade_selfplay_opts_default(spade_selfplay_opts *o);

typedef struct spade_selfplay_metrics {
    int iteration;
    int written, valid;
    int kept, replayed; /* environments played again: from the last writing, from the archive by regret */
    int failed_gate[SPADE_GATE_COUNT]; /* by the first gate failed */
    double pass_nohint, pass_hint, regret, designer_reward; /* means over valid environments */
    double vendi_n; /* Vendi/n of this iteration's valid environments (NAN when none) */
    double vendi_n_games; /* template mode: the same over the games their fillings set
                           * (spade_template_embed_games; NAN otherwise or when none) */
    double learning_potential,
        pass_after; /* designer.reward = learning_potential: means over the valid
                     * environments written, of the potential and of the look-ahead's pass rate (NAN otherwise) */
    int designer_samples, agent_samples;
    int hint_arm_samples; /* of agent_samples, those of hint plays (selfplay.train_hint_arm) */
    float loss, grad_norm, role_grad_norm[2];
    long source_tokens;
    long hint_tokens; /* tokens sampled for self-written hints (designer.hint = self); not in the update */
    spade_rl_metrics pool; /* the fixed-pool part (pool_envs > 0) */
    double t_design, t_gates, t_play, t_update, t_archive;
    double t_lookahead; /* the learning-potential look-ahead: its trial step and replays */
    /* The iteration's wall seconds by phase, "time_s" in the JSON (docs/selfplay.md): pool (the fixed-pool
     * part), prompts (with the memory and replays read), design_prefill (the prompts read into the decoder),
     * design_decode (the rest of the writing: sampling, template holes, a served designer's replies), hints,
     * gates, play, lookahead, update (with the rewards), archive. They are disjoint, so they sum to at most
     * total; play_prefill and play_decode are parts of play (the agent reading observations and sampling).
     * cpu: the process's CPU seconds over the iteration, every thread's (on a loaded machine the wall
     * seconds are mostly waiting for a core; on an idle one cpu approaches threads x total). */
    struct spade_sp_times {
        double pool, prompts, design_prefill, design_decode, hints, gates, play, play_prefill, play_decode, lookahead,
            update, archive, total, cpu;
    } time;
    /* designer.source = remote: slots sent to the server, and read back from the archive's record (a resumed
     * iteration); not in the JSON, so a resumed run's lines equal an unbroken one's */
    int remote_asked, remote_recorded;
} spade_selfplay_metrics;

/* The loop's fixed context: the policy (trained in place), the sandbox, the
 * corpus (may be NULL when corpus.enabled = false), the archive, the fixed
 * pool (may be NULL), the reference embeddings for novelty. */
typedef struct spade_selfplay {
    spade_policy *p;
    spade_sandbox *sb;
    spade_corpus *corpus;
    spade_archive *archive;
    spade_pool *pool;
    const double *refs; /* corpus embeddings (n_refs x SPADE_VENDI_DIM) for the novelty gate */
    const char *const *ref_names;
    int n_refs;
} spade_selfplay;

/* One iteration (it >= 0). The archive's rows of iteration it are written in
 * one transaction, committed at the end. stop (may be NULL) abandons the
 * iteration (nothing is written or trained) and returns 1. 0 done, -1 error. */
int spade_selfplay_iteration(spade_selfplay *s, const spade_selfplay_opts *o, int it, const volatile sig_atomic_t *stop,
                             spade_selfplay_metrics *m, char *err, size_t errlen);

/* The iteration's metrics as one JSON object (the archive's iterations row
 * and the run's JSONL line; timings are the t_* keys, last). */
void spade_selfplay_metrics_json(const spade_selfplay_metrics *m, char *out, size_t cap);

/* The source in a designer's completion: the first ``` fenced block when
 * there is one (its language tag dropped), else the whole text. Into out
 * (malloc'd). */
char *spade_extract_source(const char *text, size_t len, size_t *out_len);

#endif /* SPADE_SELFPLAY_LOOP_H */
