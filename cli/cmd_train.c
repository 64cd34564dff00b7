/* cmd_train.c — `spade train CONFIG` and `spade train RUN_DIR`: agent RL on a
 * fixed pool of environments ([designer] enabled = false), with a run
 * directory, JSONL metrics per iteration, a progress line on a terminal,
 * atomic checkpoints, and resume after SIGINT or kill -9 with nothing lost.
 *
 * What it is: the command and the run directory:
 *   RUN/config.ini          the config the run was started with (resume reads it)
 *   RUN/config.base         the directory that config was in: its relative paths
 *                           ([pool] dirs, [policy] init) still mean the same on resume
 *   RUN/policy-K.ckpt       the policy after iteration K (the latest only)
 *   RUN/state               "iteration K" and the checkpoint's name (written
 *                           atomically after the checkpoint)
 *   RUN/train.jsonl         one JSON object per completed iteration
 * An iteration's log line is written before its checkpoint; a resumed run
 * drops log lines past the checkpoint it resumes from and plays them again,
 * and because an iteration depends only on the run seed, its number and the
 * policy (agent/rl.h), it plays them exactly as before.
 * With [designer] enabled = true it runs self-play instead (selfplay/loop.h):
 * the designer writes environments, the gates judge them, the agent plays the
 * valid ones with and without their hint, both roles train; RUN/spade.db is
 * the archive (rolled back on resume to the last completed iteration).
 * The config is read by train_config.c, the directory's files are written by
 * run_dir.c, the curriculum is agent/curriculum.c; this file opens the run and
 * plays its iterations.
 * What it is not: library code (it prints and owns the process).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/pool.h"
#include "agent/eval.h"
#include "agent/rl.h"
#include "archive.h"
#include "killpoint.h"
#include "designer/corpus.h"
#include "designer/template.h"
#include "selfplay/loop.h"
#include "selfplay/template.h"
#include "vendi.h"
#include "agent/curriculum.h"
#include "cli.h"
#include "run_dir.h"
#include "train_config.h"
#include "cmd_pretrain.h"
#include "heldout.h"
#include "policy/backend.h"
#include "policy/policy.h"
#include "policy/pretrained.h"
#include "policy/models.h"
#include "designer/remote_designer.h"
#include "remote.h"

/* ---- the run ---- */

static volatile sig_atomic_t stop_requested;
static void on_signal(int s) {
    (void)s;
    stop_requested = 1;
}

static void pool_report(void *ctx, const char *line) {
    FILE *log = ctx;
    fprintf(stderr, "%s\n", line);
    if (log) fprintf(log, "%s\n", line);
}

/* The held-out suite, played by the policy as it is after iteration it: one
 * JSONL line {"iteration":it,"eval":{...}} (the same seeds every time). */
static int eval_heldout(FILE *log, spade_policy *p, spade_sandbox *sb, int it, int episodes, int reasoning_tokens,
                        char *err, size_t errlen) {
    char dir[SPADE_PATH_MAX], **files = NULL;
    int nf = 0, rc = -1;
    if (spade_heldout_dir(dir, sizeof dir, err, errlen) < 0 || spade_heldout_files(dir, &files, &nf, err, errlen) < 0)
        return -1;
    spade_ep_spec *specs = calloc((size_t)nf, sizeof *specs);
    char **srcs = calloc((size_t)nf, sizeof *srcs);
    spade_eval_row *rows = calloc((size_t)nf, sizeof *rows);
    int n = 0;
    for (int i = 0; specs && srcs && rows && i < nf; i++) {
        size_t len;
        if (spade_read_source(files[i], &srcs[n], &len, err, errlen) < 0) goto done;
        specs[n] = (spade_ep_spec){files[i], srcs[n], len, NULL, episodes};
        n++;
    }
    spade_eval_opts o;
    spade_eval_opts_default(&o);
    o.episodes = episodes;
    o.references = 0;
    o.seed = 777;
    o.reasoning_tokens = reasoning_tokens; /* the agent evaluated as it plays in training */
    if (spade_eval(p, sb, specs, n, &o, rows, err, errlen) < 0) goto done;
    double sum = 0;
    fprintf(log, "{\"iteration\":%d,\"eval\":{\"suite\":\"heldout\",\"episodes\":%d,\"per_env\":{", it, episodes);
    for (int i = 0; i < n; i++) {
        const char *b = strrchr(files[i], '/');
        fprintf(log, "%s\"%.*s\":%.4f", i ? "," : "", (int)strcspn(b + 1, "."), b + 1, rows[i].policy.success);
        sum += rows[i].policy.success;
    }
    fprintf(log, "},\"success\":%.6f}}\n", n ? sum / n : 0);
    rc = 0;
done:
    for (int i = 0; i < nf; i++) free(files[i]);
    for (int i = 0; srcs && i < n; i++) free(srcs[i]);
    free(files);
    free(srcs);
    free(specs);
    free(rows);
    return rc;
}

static void write_metrics(FILE *f, const spade_rl_metrics *m, const spade_pool *pool, const char *const *ovr) {
    fprintf(f,
            "{\"iteration\":%d,\"envs\":%d,\"episodes\":%ld,\"success\":%.6f,\"mean_return\":%.6f,\"mean_steps\":%.4f,"
            "\"failed\":%ld,\"context_full\":%ld,\"truncated\":%ld,\"samples\":%d,\"groups\":%d,\"dropped_groups\":%d,"
            "\"trained_tokens\":%ld,\"sampled_tokens\":%ld,\"turns\":%ld,\"loss\":%.6g,\"grad_norm\":%.6g,"
            "\"clip_frac\":%.6g,\"mean_ratio\":%.6g,\"updated\":%s,\"per_env\":{",
            m->iteration, m->envs, m->episodes, m->success_rate, m->mean_return, m->mean_steps, m->failed,
            m->context_full, m->truncated, m->n_samples, m->n_groups, m->n_dropped, m->trained_tokens,
            m->sampled_tokens, m->turns, m->loss, m->grad_norm, m->clip_frac, m->mean_ratio,
            m->updated ? "true" : "false");
    for (int e = 0; e < m->envs; e++) {
        const spade_pool_entry *pe = spade_pool_entry_at(pool, m->env_index[e]);
        const char *pp = ovr && ovr[m->env_index[e]] ? ovr[m->env_index[e]] : pe->params;
        fprintf(f, "%s\"%s%s%s\":%.4f", e ? "," : "", pe->name, pp[0] ? ":" : "", pp, m->env_success[e]);
    }
    fprintf(f, "},\"t_play\":%.3f,\"t_update\":%.3f}\n", m->t_play, m->t_update);
}

/* The embedded default's model and length (train_default, below). */
#define DEFAULT_MODEL "smollm2-135m-instruct"
#define DEFAULT_ITERATIONS 4

void cli_usage_train(FILE *out) {
    fprintf(out, "usage: spade train\n"
                 "       spade train CONFIG\n"
                 "       spade train RUN_DIR\n"
                 "       spade train --preset gpt\n"
                 "\n"
                 "With no argument: the embedded default (runs/default, or $SPADE_TRAIN_DIR): a few self-play\n"
                 "iterations on the pretrained " DEFAULT_MODEL " ($SPADE_TRAIN_MODEL: another\n"
                 "known name or a .gguf path), writing whole environments; minutes an iteration on 2 cores.\n"
                 "--preset gpt: a tiny GPT pretrained from scratch on stdenv, then self-play (runs/default-gpt;\n"
                 "configs/default-template.ini and configs/default-fixed.ini start from its base).\n"
                 "\n"
                 "Self-play ([designer] enabled = true, the default's): the policy writes environments as\n"
                 "the designer, the gates judge them, and it plays the valid ones as the agent with and\n"
                 "without their hint; both roles train. Otherwise agent RL on a fixed pool (GRPO over\n"
                 "masked multi-turn episodes: each iteration plays [agent] plays episodes of [agent] envs\n"
                 "environments on distinct seeds and makes one update on the actions' tokens).\n"
                 "CONFIG is an .ini with [run] dir, iterations, seed; [policy] init = CKPT or the\n"
                 "policy keys; [pool] envs = SPEC (repeatable) and dirs = DIR (every .c; changed and\n"
                 "new files join at the next iteration); [agent] envs, plays, max_action_tokens,\n"
                 "reasoning_tokens, max_live, temperature, top_p, advantage = zscore|mean; [grpo] lr, epochs,\n"
                 "minibatch, eps_low, eps_high, tis_cap (docs/train.md). [designer] enabled = true\n"
                 "runs self-play instead: the designer's, corpus and memory keys are in docs/selfplay.md.\n"
                 "[designer] source = template, template = FILE, hole_tokens = N: the policy fills only\n"
                 "the @@ holes of an environment template (a loop a small policy can move; docs/selfplay.md).\n"
                 "[designer.policy] backend = remote, url = URL, model = NAME (and api_key_env, concurrency,\n"
                 "timeout_s, retries): a model behind an OpenAI-compatible server writes the environments,\n"
                 "not trained ([designer] train = false); the local policy learns as the agent (docs/scale.md).\n"
                 "The run directory gets config.ini, train.jsonl (one object per iteration), the\n"
                 "latest checkpoint and a state file. spade train RUN_DIR, or the same CONFIG again,\n"
                 "resumes a run from its last completed iteration (after Ctrl-C or kill -9) and lands\n"
                 "where the uninterrupted run would have. Iterations are numbered from 0 everywhere.\n"
                 "Exit status: 0 done, 1 failure or interrupted, 2 bad config.\n");
}

/* ---- `spade train` with no argument: self-play on a pretrained model ---- */

/* The one policy is the pretrained DEFAULT_MODEL (./bootstrap fetches it; $SPADE_TRAIN_MODEL,
 * a known name or a .gguf path, takes another), in its chat form: it writes whole sources as the
 * designer, the gates judge them, it plays the valid ones with and without their hint, and one
 * GRPO update trains both roles. The knobs are the smallest that still make a meaningful
 * iteration (BENCHMARKS.md, "One self-play iteration on a pretrained model"). No fixed-pool
 * part: on SmolLM2 it was 60% of an iteration's time and won nothing, so no update came of it
 * ([selfplay] pool_envs in the run's config.ini turns it on). LoRA of rank 8 ([policy] lora_rank):
 * the update holds 3.6 GB for Qwen instead of ~18, and a checkpoint is the adapters, not 1.6 GB
 * of SmolLM2's weights and moments an iteration. Qwen2.5-Coder gets a 3,072-token context and
 * 1,024-token sources: at 2,048 and 384 its sources were cut, or copied a grounding source that
 * had been cut to fit, and none compiled; at 768 every compile failure of 20 sources was a cut
 * mid-statement, at 1,024 2 of 20 (docs/selfplay.md). designer.family_window = 1: rewards are
 * centred per family, and with the window of 3 two of the 4 slots are alone in their family,
 * where a centred reward is 0 whatever the source did; one family an iteration makes the 4
 * sources one group. [grpo] micro_batch = 1: the training
 * activations hold micro_batch x the longest sequence, ~2.4 MB a token for Qwen and 1.2 MB more a
 * trained token (the head runs on those only), so the default 8 of ~3,000-token designer samples
 * (~1,000 trained) would ask for ~66 GB; one at a time is ~8.3 GB (BENCHMARKS.md, branch headrows).
 * [policy] sample_weights at the file's own precision, on the cpu backend: the designer's 4 slots
 * decode through 8-bit copies for Qwen2.5-Coder (its file is Q5_0/Q8_0/Q4_K/Q6_K) and the 4-bit
 * ones for SmolLM2 (its file's Q4_1): 4 slots of Qwen at a 2,048-token context 1.1-1.5x the tokens
 * of F32 (1.12x on the quieter of two loaded rounds), mean KL(f32 || q8_0) 0.0003 nats a token on
 * C; SmolLM2 1.1-1.3x, KL 0.003 (BENCHMARKS.md, "Sampling weights for the embedded default").
 * GRPO's old log-probs are then the quantized distribution's, the new ones F32's: that small
 * off-policy gap is the price. Written only where auto resolves to cpu (the key is the cpu
 * backend's). SPADE_TRAIN_QUICK=1 shrinks it to one iteration of two short sources (the test
 * suite runs the whole path with it). */
static const char DEFAULT_PRETRAINED[] =
    "; written by `spade train` (the embedded default): self-play on the pretrained %s\n"
    "[run]\ndir = .\niterations = %d\nseed = 1\n"
    "[policy]\nmodel = %s\ncontext = %d\nlora_rank = 8\n%s"
    "[designer]\nenabled = true\nsource = policy\nenvs = %d\nmax_source_tokens = %d\ntemperature = 0.7\n"
    "max_step_ms = 50\nfamily_window = 1\n"
    "[selfplay]\nplays = %d\npool_envs = 0\n"
    "[pool]\ndirs = %s\n"
    "[agent]\nplays = %d\nmax_action_tokens = 16\n"
    "[grpo]\nlr = 1e-5\nmicro_batch = 1\n";

/* The stdenv/ directory beside the binary or installed, or CLI_FAIL having said where it looked. */
static int find_stdenv(char *stdenv, size_t cap, const char *what) {
    spade_data_path("stdenv", stdenv, cap);
    struct stat sst;
    if (stat(stdenv, &sst) == 0 && S_ISDIR(sst.st_mode)) return CLI_OK;
    char tried[3 * 4200];
    return cli_err(CLI_FAIL, "train",
                   "no stdenv/ directory %s: tried %s. Run the spade of a built source tree (its "
                   "stdenv/ sits beside it), or install spade (make install) so that the installed one is there",
                   what, spade_data_tried("stdenv", tried, sizeof tried));
}

/* The model's file, or CLI_OK with *skip set under SPADE_TRAIN_QUICK when it is absent (a test
 * machine bootstrapped without models), or the exit code with what to run. */
static int default_model(const char *spec, int quick, int *skip) {
    char path[4096], err[1024];
    *skip = 0;
    if (spade_model_resolve(spec, path, sizeof path, err, sizeof err) == 0) return CLI_OK;
    if (quick) {
        printf("spade train: SPADE_TRAIN_QUICK: skipped, no model to run on: %s\n", err);
        *skip = 1;
        return CLI_OK;
    }
    if (spade_model_find(spec)) { /* a known model, not fetched: fetched now, as on first use anywhere */
        printf("spade train: the embedded default runs on %s, not fetched yet: fetching it (spade model fetch)\n",
               spec);
        char *args[] = {"model", "fetch", (char *)spec, NULL};
        if (cli_model(NULL, 3, args) == CLI_OK && spade_model_resolve(spec, path, sizeof path, err, sizeof err) == 0)
            return CLI_OK;
    }
    return cli_err(CLI_FAIL, "train", "the embedded default needs its model: %s", err);
}

/* 1 when RUN holds a state file: a run of the embedded default or a preset that was stopped. */
static int has_state(const char *run) {
    char path[4200];
    snprintf(path, sizeof path, "%s/state", run);
    return access(path, F_OK) == 0;
}

/* Goes on with the stopped run in RUN (what names it in the message). */
static int resume_stopped(spade_sandbox *sb, const char *run, const char *what) {
    printf("spade train: resuming %s in %s\n", what, run);
    char *args[] = {"train", (char *)run, NULL};
    return cli_train(sb, 2, args);
}

/* 1 when backend = auto (the default's) runs on the cpu backend here, the one sample_weights is for. */
static int on_cpu(void) {
    spade_backend be;
    char note[512], err[1024];
    if (spade_backend_open("auto", &be, note, sizeof note, err, sizeof err)) return 0;
    int cpu = !strcmp(be.vt->name, "cpu");
    spade_backend_close(&be);
    return cpu;
}

static int train_default(spade_sandbox *sb) {
    const char *quick = getenv("SPADE_TRAIN_QUICK"), *dir = getenv("SPADE_TRAIN_DIR");
    const char *model = getenv("SPADE_TRAIN_MODEL");
    int q = quick && *quick && strcmp(quick, "0"), skip;
    char run[2048], stdenv[2048], path[4200], text[4096], mabs[4096];
    snprintf(run, sizeof run, "%s", dir && *dir ? dir : "runs/default");
    if (!model || !*model) model = DEFAULT_MODEL;
    if (!spade_model_find(model) && realpath(model, mabs)) model = mabs; /* the config lives in the run dir */
    if (find_stdenv(stdenv, sizeof stdenv, "for the agent's pool") != CLI_OK) return CLI_FAIL;
    if (has_state(run)) return resume_stopped(sb, run, "the default run");
    int rc = default_model(model, q, &skip);
    if (rc != CLI_OK || skip) return rc;
    if (cli_mkdir_p(run) < 0) return cli_err(CLI_FAIL, "train", "%s: %s", run, strerror(errno));
    int iters = q ? 1 : DEFAULT_ITERATIONS;
    printf("spade train: the embedded default in %s: %d self-play iteration%s on the pretrained %s, its one\n"
           "  policy writing whole environments as the designer and playing the valid ones as the agent\n",
           run, iters, iters == 1 ? "" : "s", model);
    int coder = !strcmp(model, "qwen2.5-coder-0.5b-instruct"); /* a model that writes C: room to finish */
    const char *sample = !on_cpu()                       ? ""
                         : coder                         ? "sample_weights = q8_0\n"
                         : !strcmp(model, DEFAULT_MODEL) ? "sample_weights = q4_1\n"
                                                         : ""; /* another file: its precision unknown */
    int n = snprintf(text, sizeof text, DEFAULT_PRETRAINED, model, iters, model,
                     q       ? 1280
                     : coder ? 3072
                             : 2048,
                     sample, q ? 2 : 4,
                     q       ? 32
                     : coder ? 1024
                             : 384,
                     q ? 2 : 4, stdenv, q ? 2 : 4);
    snprintf(path, sizeof path, "%s/selfplay.ini", run);
    if (n < 0 || (size_t)n >= sizeof text || cli_write_atomic(path, text, (size_t)n) < 0)
        return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
    char *args[] = {"train", path, NULL};
    rc = cli_train(sb, 2, args);
    if (rc == CLI_OK)
        printf("Train your own: docs/selfplay.md (self-play) and docs/train.md (a fixed pool). The presets:\n"
               "  %s train --preset gpt                   a tiny GPT pretrained from scratch, then self-play\n"
               "  %s train configs/default-template.ini   after it, the designer fills a template's holes\n",
               cli_self(), cli_self());
    return rc;
}

/* ---- `spade train --preset gpt`: the from-scratch GPT (the embedded default before issue 17) ---- */

/* A short base pretraining on stdenv (a BPE trained on it first), then a few
 * self-play iterations whose agent also trains on two stdenv environments per
 * iteration; on 2 CPU cores it ends in about a minute. Its base
 * (runs/default-gpt/base) is what configs/default-template.ini and
 * configs/default-fixed.ini start from. SPADE_TRAIN_QUICK=1 shrinks both (the
 * test suite runs the whole path with it). */
static const char GPT_PRETRAIN[] =
    "; written by `spade train --preset gpt`: the base policy's pretraining\n"
    "[policy]\nlayers = 2\nheads = 4\nwidth = 96\ncontext = 640\nbackend = auto\nseed = 1\ntokenizer = bpe\n"
    "[pretrain]\ndata = %s\nout = %s/base\nsteps = %d\nbatch = 8\nseq = 128\nlr = 2e-3\nwarmup = 20\n"
    "checkpoint_every = 100\nsample_every = 100000\ntokenizer_vocab = 2048\nseed = 1\n";
static const char GPT_SELFPLAY[] =
    "; written by `spade train --preset gpt`: self-play from the base policy\n"
    "[run]\ndir = .\niterations = %d\nseed = 1\n"
    "[policy]\ninit = base/policy.ckpt\n"
    "[designer]\nenabled = true\nenvs = 4\nmax_source_tokens = 320\ntemperature = 0.8\nmax_step_ms = 50\n"
    "[selfplay]\nplays = 6\npool_envs = 2\n"
    "[pool]\ndirs = %s\n"
    "[agent]\nplays = 6\nmax_action_tokens = 16\n"
    "[grpo]\nlr = 3e-4\n";

static int train_preset_gpt(spade_sandbox *sb) {
    const char *quick = getenv("SPADE_TRAIN_QUICK");
    int q = quick && *quick && strcmp(quick, "0");
    const char *dir = getenv("SPADE_TRAIN_DIR");
    char run[2048], stdenv[2048], path[4200], text[4096];
    snprintf(run, sizeof run, "%s", dir && *dir ? dir : "runs/default-gpt");
    if (find_stdenv(stdenv, sizeof stdenv, "to pretrain on") != CLI_OK) return CLI_FAIL;
    if (has_state(run)) return resume_stopped(sb, run, "the gpt preset's run");
    if (cli_mkdir_p(run) < 0) return cli_err(CLI_FAIL, "train", "%s: %s", run, strerror(errno));
    printf("spade train: the gpt preset in %s: a short base pretraining on %s, then self-play\n", run, stdenv);
    snprintf(path, sizeof path, "%s/base/policy.ckpt", run);
    if (access(path, F_OK) != 0 || access(run, F_OK) != 0) {
        char abs[4096];
        if (!realpath(run, abs)) snprintf(abs, sizeof abs, "%s", run);
        int n = snprintf(text, sizeof text, GPT_PRETRAIN, stdenv, abs, q ? 8 : 400);
        snprintf(path, sizeof path, "%s/pretrain.ini", run);
        if (cli_write_atomic(path, text, (size_t)n) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
        char *args[] = {"pretrain", path, NULL};
        int rc = spade_cmd_pretrain(2, args);
        if (rc) return rc;
    }
    int n = snprintf(text, sizeof text, GPT_SELFPLAY, q ? 2 : 6, stdenv);
    snprintf(path, sizeof path, "%s/selfplay.ini", run);
    if (cli_write_atomic(path, text, (size_t)n) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
    char *args[] = {"train", path, NULL};
    int rc = cli_train(sb, 2, args);
    if (rc == CLI_OK)
        printf("Train your own: docs/selfplay.md (self-play) and docs/train.md (a fixed pool).\n"
               "A designer that does learn at this size fills only a template's holes: [designer]\n"
               "source = template (%s train configs/default-template.ini, from this base; docs/selfplay.md).\n",
               cli_self());
    return rc;
}

/* What a run holds while it goes; train_close frees it. */
typedef struct train_run {
    tr_config *c;
    char dir_ckpt[4400]; /* the state's checkpoint, when done >= 0 */
    char log_path[4400];
    int done; /* the last iteration done, -1 for none */
    spade_policy *p;
    spade_heldout_guard *guard;
    spade_registry *reg;
    spade_pool *pool;
    spade_curriculum *cu;
    spade_corpus *corpus;
    spade_archive *archive;
    double *refs; /* (n_refs, SPADE_VENDI_DIM) the corpus's embeddings, for novelty */
    const char **ref_names;
    int n_refs, n_src;
    char **src_text, **src_names; /* designer.source = files */
    size_t *src_lens;
    spade_remote *remote; /* designer.source = remote: the served designer's client */
    char writer[1600]; /* its "remote:URL#MODEL" (the archive's envs.writer) */
    FILE *log;
} train_run;

static void train_close(train_run *r) {
    if (r->log) fclose(r->log);
    spade_pool_free(r->pool);
    free(r->cu);
    spade_corpus_free(r->corpus);
    spade_archive_close(r->archive);
    spade_remote_free(r->remote);
    free(r->refs);
    free(r->ref_names);
    for (int i = 0; i < r->n_src; i++) free(r->src_text[i]), free(r->src_names[i]);
    free(r->src_text);
    free(r->src_names);
    free(r->src_lens);
    spade_registry_free(r->reg);
    spade_heldout_guard_free(r->guard);
    spade_policy_free(r->p);
    for (int i = 0; r->c && i < r->c->n_tpl; i++) spade_template_free(r->c->tpl[i]), r->c->tpl[i] = NULL;
}

/* The config (a file, or a run directory's config.ini with its config.base), the run directory
 * made or resumed (the same config again resumes; another one for the same dir is refused), and
 * the policy: the state's checkpoint, [policy] init, or a new one. CLI_OK or the exit code. */
static int train_open(train_run *r, tr_config *c, const char *arg) {
    char cfg_path[4200], err[2048], path0[4400], path[4400];
    struct stat st;
    r->c = c;
    int resume_dir = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
    if (resume_dir)
        snprintf(cfg_path, sizeof cfg_path, "%s/config.ini", arg);
    else
        snprintf(cfg_path, sizeof cfg_path, "%s", arg);
    if (resume_dir && stat(cfg_path, &st) != 0)
        return cli_err(CLI_FAIL, "train", "%s: not a run directory (no config.ini)", arg);
    char base[4200] = "", *base_arg = NULL;
    if (resume_dir) { /* relative paths keep meaning what they meant when the run started */
        snprintf(path0, sizeof path0, "%s/config.base", arg);
        FILE *bf = fopen(path0, "r");
        if (bf && fgets(base, sizeof base, bf)) {
            base[strcspn(base, "\n")] = 0;
            base_arg = base;
        }
        if (bf) fclose(bf);
    }
    int rc = cli_train_config_load(cfg_path, base_arg, c);
    if (rc) return rc;
    if (resume_dir) snprintf(c->dir, sizeof c->dir, "%s", arg); /* the run is where it is now */
    cli_path_clean(c->dir); /* configs/../runs/x is printed and written as runs/x */
    if (cli_mkdir_p(c->dir) < 0) return cli_err(CLI_FAIL, "train", "%s: %s", c->dir, strerror(errno));
    snprintf(path, sizeof path, "%s/config.ini", c->dir);
    snprintf(r->log_path, sizeof r->log_path, "%s/train.jsonl", c->dir);
    r->done = cli_run_read_state(c->dir, r->dir_ckpt, sizeof r->dir_ckpt);
    if (r->done == -2) return cli_err(CLI_FAIL, "train", "%s/state: unreadable; the run cannot resume", c->dir);
    int fresh = 0; /* this call wrote RUN/config.ini: a failure before the first iteration takes it back */
    if (!resume_dir && r->done >= 0) {
        /* the config a run started from, given again, resumes it (docs/train.md); another config
         * pointing at the same [run] dir would silently mix two runs, so it is refused */
        int diff = cli_train_config_differs(cfg_path, path);
        if (diff)
            return cli_err(CLI_FAIL, "train",
                           "%s already holds a run (iteration %d done) started from another config: %s differs from %s "
                           "at line %d. Resume that run with %s train %s (edit %s to change it), or give this config "
                           "another [run] dir",
                           c->dir, r->done, cfg_path, path, diff, cli_self(), c->dir, path);
        resume_dir = 1;
    }
    if (!resume_dir) {
        fresh = 1;
        /* config.base before config.ini: config.ini makes the directory a run, so a kill
         * between the two leaves no run that would resume with its relative paths taken
         * from the run directory instead of the config's */
        char abs[4096], line[4200];
        if (!realpath(c->base[0] ? c->base : ".", abs)) snprintf(abs, sizeof abs, "%s", c->base[0] ? c->base : ".");
        int k = snprintf(line, sizeof line, "%s\n", abs);
        snprintf(path0, sizeof path0, "%s/config.base", c->dir);
        if (cli_write_atomic(path0, line, (size_t)k) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path0);
        if (cli_copy_file(cfg_path, path) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
    }
    if (resume_dir) { /* what a killed run left past its last completed iteration goes */
        cli_run_trim_log(r->log_path, r->done);
        cli_run_tidy(c->dir, r->done >= 0 ? r->dir_ckpt : "");
    }
    if (r->done >= 0) {
        if (spade_policy_load(&r->p, r->dir_ckpt, NULL, err, sizeof err))
            return cli_err(CLI_FAIL, "train", "cannot resume: %s", err);
        printf("resuming %s after iteration %d\n", c->dir, r->done);
    } else if (c->init[0] && c->model[0]) {
        if (fresh) cli_run_unmake(c->dir);
        return cli_err(CLI_USAGE, "train", "[policy] init and model exclude each other");
    } else if (c->init[0]) {
        /* [policy] lora_rank puts adapters on a checkpoint that has none */
        if (spade_policy_load(&r->p, c->init, NULL, err, sizeof err) ||
            (c->gpt.lora_rank && !spade_policy_lora_rank(r->p) &&
             spade_policy_lora(r->p, c->gpt.lora_rank, c->gpt.lora_alpha, c->gpt.lora_targets, err, sizeof err))) {
            if (fresh) cli_run_unmake(c->dir);
            return cli_err(CLI_FAIL, "train", "%s", err);
        }
    } else if (c->model[0]) {
        /* the config's [policy] context, backend and lora_* apply; the rest is the model's */
        spade_model_opts mo = {.backend = c->gpt.backend,
                               .context = c->gpt.context,
                               .lora_rank = c->gpt.lora_rank,
                               .lora_alpha = c->gpt.lora_alpha,
                               .lora_targets = c->gpt.lora_targets};
        if (spade_policy_from_model(&r->p, c->model, &mo, err, sizeof err)) {
            if (fresh) cli_run_unmake(c->dir);
            return cli_err(CLI_FAIL, "train", "%s", err);
        }
    } else if (spade_policy_new(&r->p, &c->gpt, err, sizeof err)) {
        if (fresh) cli_run_unmake(c->dir);
        return cli_err(CLI_FAIL, "train", "%s", err);
    }
    /* [policy] sample_weights applies to a loaded or resumed policy too (not saved in checkpoints) */
    if (c->gpt.sample_weights[0] && spade_policy_set_sample_weights(r->p, c->gpt.sample_weights, err, sizeof err))
        return cli_err(CLI_FAIL, "train", "%s", err);
    return CLI_OK;
}

/* Self-play's inputs: the corpus (guarded against the held-out suite) and its embeddings for
 * novelty, the families, the given sources (designer.source = files) or templates, and the
 * archive rolled back to the last completed iteration. CLI_OK or the exit code. */
static int train_open_designer(train_run *r) {
    tr_config *c = r->c;
    char err[2048], path[4400];
    const char *cd[TR_MAX_LIST];
    for (int i = 0; i < c->n_corpus; i++) cd[i] = c->corpus_dirs[i];
    int refused = 0;
    if (c->sp.use_corpus && spade_corpus_new(&r->corpus, cd, c->n_corpus, r->guard, 0, &refused, err, sizeof err) < 0)
        return cli_err(CLI_FAIL, "train", "%s", err);
    int nc = r->corpus ? spade_corpus_count(r->corpus) : 0;
    r->refs = calloc((size_t)(nc ? nc : 1) * SPADE_VENDI_DIM, sizeof *r->refs);
    r->ref_names = calloc((size_t)(nc ? nc : 1), sizeof *r->ref_names);
    for (int i = 0; r->refs && r->ref_names && i < nc; i++) {
        const spade_corpus_item *it = spade_corpus_item_at(r->corpus, i);
        spade_vendi_embed(it->text, it->len, r->refs + (size_t)r->n_refs * SPADE_VENDI_DIM, SPADE_VENDI_DIM);
        r->ref_names[r->n_refs++] = it->name;
    }
    if (!c->sp.n_families && r->corpus) /* the corpus's families, in order of first appearance */
        for (int i = 0; i < nc && c->sp.n_families < SPADE_SP_MAX_FAMILIES; i++) {
            const char *f = spade_corpus_item_at(r->corpus, i)->family;
            int seen = !*f;
            for (int k = 0; k < c->sp.n_families && !seen; k++) seen = !strcmp(c->sp.families[k], f);
            if (!seen) snprintf(c->sp.families[c->sp.n_families++], 32, "%s", f);
        }
    if (c->source_files) { /* the given sources, sorted, as the designer's "writing" */
        char **fp;
        int nf;
        if (spade_heldout_files(c->source_dir, &fp, &nf, err, sizeof err) < 0 || nf == 0)
            return cli_err(CLI_FAIL, "train", "[designer] files = %s: %s", c->source_dir,
                           nf == 0 ? "no .c files" : err);
        r->src_names = fp;
        r->src_text = calloc((size_t)nf, sizeof *r->src_text);
        r->src_lens = calloc((size_t)nf, sizeof *r->src_lens);
        for (int i = 0; r->src_text && r->src_lens && i < nf; i++) {
            if (spade_read_source(fp[i], &r->src_text[i], &r->src_lens[i], err, sizeof err) < 0)
                return cli_err(CLI_FAIL, "train", "%s", err);
            r->n_src++;
        }
        c->sp.files = (const char *const *)r->src_text;
        c->sp.file_lens = r->src_lens;
        c->sp.file_names = (const char *const *)fp;
        c->sp.n_files = r->n_src;
    }
    if (c->source_template) { /* each template, filled at its longest, must fit the policy's context */
        for (int i = 0; i < c->n_tpl; i++)
            if (spade_template_fits(r->p, c->tpl[i], c->sp.hole_tokens, err, sizeof err) < 0)
                return cli_err(CLI_USAGE, "train", "%s", err);
        c->sp.templates = (const spade_template *const *)c->tpl;
        c->sp.n_templates = c->n_tpl;
    }
    if (c->source_remote) { /* the served designer: its model checked now, before anything plays */
        spade_remote_opts ro;
        spade_remote_opts_default(&ro);
        ro.url = c->r_url;
        ro.model = c->r_model;
        ro.api_key_env = c->r_key_env[0] ? c->r_key_env : NULL;
        ro.concurrency = c->r_concurrency;
        ro.timeout_s = c->r_timeout_s;
        ro.retries = c->r_retries;
        ro.max_tokens = c->sp.max_source_tokens;
        ro.temperature = c->sp.temperature;
        ro.logprobs = 0; /* nothing trains on the designer's tokens */
        if (spade_remote_new(&r->remote, &ro, err, sizeof err) < 0)
            return cli_err(CLI_FAIL, "train", "[designer.policy]: %s", err);
        spade_designer_remote_writer(r->remote, r->writer, sizeof r->writer);
        c->sp.remote = r->remote;
        c->sp.writer = r->writer;
        printf("spade train: the designer is served: %s, model %s (not trained; the archive's envs.writer and "
               "replies record it)\n",
               spade_remote_endpoint(r->remote), spade_remote_model(r->remote));
    }
    snprintf(path, sizeof path, "%s/spade.db", c->dir);
    if (spade_archive_open(&r->archive, path, err, sizeof err) < 0 ||
        spade_archive_rollback_after(r->archive, r->done, err, sizeof err) < 0)
        return cli_err(CLI_FAIL, "train", "%s", err);
    printf("spade train: self-play; corpus %d items (%d held-out files kept out), %d families, archive %s\n", nc,
           refused, c->sp.n_families, path);
    return CLI_OK;
}

/* The curriculum's levels and windows, from the state file when the run resumes. */
static int train_open_curriculum(train_run *r) {
    tr_config *c = r->c;
    if (!(r->cu = calloc(1, sizeof *r->cu))) return cli_err(CLI_FAIL, "train", "out of memory");
    static const char *cur_env[SPADE_POOL_MAX], *cur_env_param[SPADE_POOL_MAX];
    for (int i = 0; i < c->n_cur_env; i++) cur_env[i] = c->cur_env[i], cur_env_param[i] = c->cur_env_param[i];
    spade_curriculum_init(r->cu, &(spade_curriculum_opts){.levels = c->cur_levels,
                                                          .window = c->cur_window,
                                                          .up = c->cur_up,
                                                          .down = c->cur_down,
                                                          .param = c->cur_param,
                                                          .env = cur_env,
                                                          .env_param = cur_env_param,
                                                          .n_env = c->n_cur_env});
    if (c->curriculum && r->done >= 0) {
        char sp[4400], line[256];
        snprintf(sp, sizeof sp, "%s/state", c->dir);
        FILE *sf = fopen(sp, "r");
        while (sf && fgets(line, sizeof line, sf)) spade_curriculum_state_read(r->cu, line);
        if (sf) fclose(sf);
    }
    return CLI_OK;
}

/* The checkpoint of iteration it, then the state file naming it (with the curriculum's lines),
 * then the previous checkpoint unlinked: a kill between any two leaves a run that resumes. */
static int train_checkpoint(train_run *r, int it) {
    char name[64], old[4400], path[4400], err[2048];
    snprintf(name, sizeof name, "policy-%d.ckpt", it);
    snprintf(path, sizeof path, "%s/%s", r->c->dir, name);
    if (spade_policy_save(r->p, path, err, sizeof err)) return cli_err(CLI_FAIL, "train", "%s", err);
    spade_killpoint("checkpoint", it); /* the new checkpoint written, the state not yet */
    int prev = cli_run_read_state(r->c->dir, old, sizeof old);
    static char state_text[SPADE_POOL_MAX * 64 + 512];
    int n = snprintf(state_text, sizeof state_text, "iteration %d checkpoint %s\n", it, name);
    if (r->c->curriculum) spade_curriculum_state_lines(r->cu, state_text, sizeof state_text, &n);
    snprintf(path, sizeof path, "%s/state", r->c->dir);
    if (cli_write_atomic(path, state_text, (size_t)n) < 0) return cli_err(CLI_FAIL, "train", "%s: cannot write", path);
    spade_killpoint("state", it); /* the state written, the previous checkpoint not yet unlinked */
    if (prev >= 0 && prev != it) unlink(old);
    return CLI_OK;
}

/* A self-play iteration's log line, with the pool's update (its samples and whether it stepped) in a run
 * with a pool part, added for the closing words, and its progress line. */
static void selfplay_log(train_run *r, const spade_selfplay_metrics *sm) {
    const tr_config *c = r->c;
    char json[4096];
    spade_selfplay_metrics_json(sm, json, sizeof json);
    size_t jl = strlen(json);
    if (c->sp.pool_envs > 0 && jl > 1 && json[jl - 1] == '}' && jl + 64 < sizeof json) /* a run with a pool part */
        snprintf(json + jl - 1, sizeof json - jl + 1, ",\"pool_samples\":%d,\"pool_updated\":%s}", sm->pool.n_samples,
                 sm->pool.updated ? "true" : "false");
    fprintf(r->log, "%s\n", json);
}

/* The iteration's seconds by phase, compact (train.jsonl's "time_s" has them all): the designer's
 * prefill+decoding, the gates, the plays, the update; the fixed-pool part, the self-written hints
 * and the look-ahead when the run has them. */
static void selfplay_times(const tr_config *c, const spade_selfplay_metrics *sm, char *out, size_t cap) {
    const struct spade_sp_times *t = &sm->time;
    size_t at = (size_t)snprintf(out, cap, "%.0fs: design %.1f+%.1f", t->total, t->design_prefill, t->design_decode);
    if (c->sp.hint_self && at < cap) at += (size_t)snprintf(out + at, cap - at, " hints %.1f", t->hints);
    if (at < cap)
        at += (size_t)snprintf(out + at, cap - at, " gates %.1f play %.1f update %.1f", t->gates, t->play, t->update);
    if (c->sp.pool_envs > 0 && at < cap) at += (size_t)snprintf(out + at, cap - at, " pool %.1f", t->pool);
    if (c->sp.reward == SPADE_DREWARD_LEARNING_POTENTIAL && at < cap)
        snprintf(out + at, cap - at, " lookahead %.1f", t->lookahead);
}

static void selfplay_progress(const tr_config *c, const spade_selfplay_metrics *sm, int it, int tty) {
    char pool_part[64] = "", times[256];
    if (c->sp.pool_envs > 0) snprintf(pool_part, sizeof pool_part, "  pool %.2f", sm->pool.success_rate);
    selfplay_times(c, sm, times, sizeof times);
    printf("%siter %d [0..%d]  valid %d/%d  pass %.2f  +hint %.2f  regret %.3f  designer %.3f  vendi/n %.2f%s  %s%s",
           tty ? "\r" : "", it, c->iterations - 1, sm->valid, sm->written, sm->pass_nohint, sm->pass_hint, sm->regret,
           sm->designer_reward, sm->vendi_n, pool_part, times, tty ? "" : "\n");
    fflush(stdout);
}

static void pool_progress(const tr_config *c, const spade_rl_metrics *m, int it, int tty) {
    printf("%siter %d [0..%d]  success %.3f  return %.3f  steps %.1f  failed %ld  ctx_full %ld  groups %d (-%d)  "
           "loss %.4f  |g| %.3f  play %.1fs  update %.1fs%s",
           tty ? "\r" : "", it, c->iterations - 1, m->success_rate, m->mean_return, m->mean_steps, m->failed,
           m->context_full, m->n_groups, m->n_dropped, m->loss, m->grad_norm, m->t_play, m->t_update, tty ? "" : "\n");
    fflush(stdout);
}

/* Iterations done+1 .. iterations-1, each: play (self-play or the fixed pool), log, held-out
 * evaluation when due, checkpoint when due, progress. CLI_OK, or the exit code (an interrupt
 * is CLI_FAIL with how to resume said). */
static int train_iterations(train_run *r, spade_sandbox *sb) {
    tr_config *c = r->c;
    char err[2048];
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int tty = isatty(STDOUT_FILENO);
    for (int it = r->done + 1; it < c->iterations; it++) {
        if (r->pool && spade_pool_refresh(r->pool, err, sizeof err) < 0) return cli_err(CLI_FAIL, "train", "%s", err);
        spade_rl_metrics m;
        spade_selfplay_metrics sm;
        int rr;
        if (c->designer) {
            spade_selfplay s = {r->p, sb, r->corpus, r->archive, r->pool, r->refs, r->ref_names, r->n_refs};
            rr = spade_selfplay_iteration(&s, &c->sp, it, &stop_requested, &sm, err, sizeof err);
        } else {
            if (c->curriculum) {
                spade_curriculum_prepare(r->cu, sb, r->pool);
                c->rl.params_override = r->cu->ptr;
                c->rl.n_override = spade_pool_count(r->pool);
            }
            rr = spade_rl_iteration(r->p, NULL, sb, r->pool, it, &c->rl, &stop_requested, &m, err, sizeof err);
        }
        if (rr < 0) return cli_err(CLI_FAIL, "train", "iteration %d: %s", it, err);
        if (rr == 1 || stop_requested) {
            char last[48] = "none is done yet";
            if (it > 0) snprintf(last, sizeof last, "iteration %d is the last done", it - 1);
            fprintf(stderr, "spade train: interrupted in iteration %d (%s); resume with: %s train %s\n", it, last,
                    cli_self(), c->dir);
            return CLI_FAIL;
        }
        /* the log line before the checkpoint: a resume drops lines past its checkpoint and plays them again */
        if (c->designer)
            selfplay_log(r, &sm);
        else {
            write_metrics(r->log, &m, r->pool, c->curriculum ? r->cu->ptr : NULL);
            if (c->curriculum) spade_curriculum_update(r->cu, &m);
        }
        fflush(r->log);
        fsync(fileno(r->log));
        spade_killpoint("logged", it);
        if (c->eval_every > 0 && ((it + 1) % c->eval_every == 0 || it == c->iterations - 1)) {
            if (eval_heldout(r->log, r->p, sb, it, c->eval_episodes, c->rl.reasoning_tokens, err, sizeof err) < 0)
                return cli_err(CLI_FAIL, "train", "iteration %d: held-out evaluation: %s", it, err);
            fflush(r->log);
            fsync(fileno(r->log));
        }
        if (((it + 1) % c->checkpoint_every == 0 || it == c->iterations - 1) && train_checkpoint(r, it) != CLI_OK)
            return CLI_FAIL;
        if (c->source_remote)
            fprintf(stderr,
                    "spade train: iteration %d: the served designer was asked for %d sources, %d read back "
                    "from the archive's record\n",
                    it, sm.remote_asked, sm.remote_recorded);
        if (c->designer)
            selfplay_progress(c, &sm, it, tty);
        else
            pool_progress(c, &m, it, tty);
    }
    if (tty) printf("\n");
    return CLI_OK;
}

int cli_train(spade_sandbox *sb, int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        cli_usage_train(stdout);
        return CLI_OK;
    }
    if (argc == 1) return train_default(sb);
    if (argc == 3 && !strcmp(argv[1], "--preset")) {
        if (!strcmp(argv[2], "gpt")) return train_preset_gpt(sb);
        return cli_err(CLI_USAGE, "train",
                       "--preset %s: the presets are gpt (a tiny GPT pretrained from scratch) "
                       "and, after it, configs/default-template.ini (spade train CONFIG)",
                       argv[2]);
    }
    if (argc != 2) return cli_err(CLI_USAGE, "train", "give a CONFIG file or a RUN_DIR (spade train --help)");
    static tr_config c;
    train_run r = {0};
    int rc = train_open(&r, &c, argv[1]);
    if (rc != CLI_OK) {
        train_close(&r);
        return rc;
    }
    char err[2048];
    /* the pool, guarded against the held-out suite */
    if (spade_heldout_guard_new(&r.guard, NULL, err, sizeof err) < 0 ||
        spade_registry_new(&r.reg, NULL, 0, err, sizeof err) < 0) {
        rc = cli_err(CLI_FAIL, "train", "%s", err);
        goto out;
    }
    const char *specs[TR_MAX_LIST], *dirs[TR_MAX_LIST];
    for (int i = 0; i < c.n_specs; i++) specs[i] = c.specs[i];
    for (int i = 0; i < c.n_dirs; i++) dirs[i] = c.dirs[i];
    rc = CLI_FAIL;
    if (!(r.log = fopen(r.log_path, "a"))) {
        cli_err(CLI_FAIL, "train", "%s: %s", r.log_path, strerror(errno));
        goto out;
    }
    if ((c.n_specs || c.n_dirs) && spade_pool_new(&r.pool, sb, r.reg, specs, c.n_specs, dirs, c.n_dirs, r.guard,
                                                  pool_report, NULL, err, sizeof err) < 0) {
        cli_err(CLI_FAIL, "train", "%s", err);
        goto out;
    }
    if (c.designer && (rc = train_open_designer(&r)) != CLI_OK) goto out;
    rc = CLI_FAIL;
    if (r.done + 1 >= c.iterations) {
        printf("spade train: %s is complete (%d iterations), numbered 0..%d; raise [run] iterations in %s/config.ini "
               "to go on\n",
               c.dir, c.iterations, c.iterations - 1, c.dir);
        cli_train_summary(stdout, c.dir, r.done >= 0 ? r.dir_ckpt : "", c.designer, c.iterations);
        rc = CLI_OK;
        goto out;
    }
    printf("spade train: %d environments in the pool, policy %zu parameters on %s, iterations %d..%d\n",
           r.pool ? spade_pool_count(r.pool) : 0, spade_policy_num_params(r.p), spade_policy_backend_name(r.p),
           r.done + 1, c.iterations - 1);
    if (train_open_curriculum(&r) != CLI_OK || train_iterations(&r, sb) != CLI_OK) goto out;
    printf("spade train: done; metrics in %s, the policy in %s\n", r.log_path, c.dir);
    if (r.remote) {
        long req, ret;
        double out_s;
        spade_remote_counts(r.remote, &req, &ret, &out_s);
        printf("spade train: the served designer: %ld requests, %ld retries, %.1f s of outage\n", req, ret, out_s);
    }
    {
        char last[4400] = "";
        cli_run_read_state(c.dir, last, sizeof last);
        cli_train_summary(stdout, c.dir, last, c.designer, c.iterations);
    }
    rc = CLI_OK;
out:
    train_close(&r);
    return rc;
}
