/* bench_rollout.c — rollout throughput of the policy agent playing stdenv
 * environments through the episode layer (issue 8, performance), with its
 * references measured in the same run:
 *
 *   split   episodes/s and agent tokens/s of a CPU preset; wall time split
 *           into the model (time inside the agent's begin/act/end: decoder
 *           append and sample, transcripts) and the rest (the episode layer,
 *           the sandbox transport and the environments); then the same
 *           episodes replayed from their recorded actions by a replay agent,
 *           which costs nothing, so that its wall time is the environments +
 *           sandbox + layer alone. Target: that <= 5% of the rollout.
 *   batch   the same episodes with 32 live (one decoding batch) against one
 *           at a time (max_live 1); tokens/s ratio (target >= 8x).
 *   threads how the model's OpenMP threads and the sandbox workers share the
 *           cores: each OpenMP setting (wait policy, spin count, threads) in
 *           a fresh process (libgomp reads them once, when it loads): rollout
 *           and training tokens/s, alone and with a sandbox worker busy
 *           beside (a thread stepping a CPU-heavy environment).
 *
 * Every measurement runs in a child process (this program re-executed with
 * --child and the OpenMP variables of its setting), so a setting is never
 * inherited from the parent and the parts do not share warm caches. Settings
 * are alternated, best of reps each: on a shared machine a burst of other
 * work lands on one run, not on one side of a ratio.
 * What it is not: a test (tests/test_agent.c checks the agent; tests/
 * test_threads.sh checks spade's thread default), nor a learning benchmark
 * (the policy has random weights: its actions are noise, its episodes run
 * until the context is full or the environment ends them).
 *
 * Usage: bench_rollout [--quick] [--reps R] [split|batch|threads ...]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/policy_agent.h"
#include "registry.h"
#include "episodes.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"

static char err[1024];

#define DIE(...)                                                                                                       \
    do {                                                                                                               \
        fprintf(stderr, "bench_rollout: ");                                                                            \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        exit(1);                                                                                                       \
    } while (0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double load1(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* The whole file, or the run dies naming it (spade_read_source does the reading). */
static char *read_file(const char *path, size_t *len) {
    char *b = NULL, err[1024];
    if (spade_read_source(path, &b, len, err, sizeof err) < 0) DIE("%s", err);
    return b;
}

/* ------------------------------------------------------------------ */
/* child: the measurements */

/* A handful of stdenv environments of different families and lengths. */
static const char *const env_names[] = {"maze", "nim", "bank", "hanoi", "kv_chain", "knapsack"};
#define N_ENVS_MAX 6

typedef struct preset {
    const char *name;
    int layers, width, heads, context;
} preset;
static const preset presets[] = {
    /* configs/pretrain-tiny.ini's layers and width; spade train's embedded
     * default policy. Byte tokenizer, so a context of 1024 holds a few turns
     * of stdenv's observations (a BPE policy's 640 hold about as many). */
    {"L4C128", 4, 128, 4, 1024},
    {"L2C96", 2, 96, 4, 1024},
};

static spade_policy *make_policy(const preset *pr) {
    spade_gpt_config c;
    spade_gpt_config_default(&c);
    c.layers = pr->layers;
    c.width = pr->width;
    c.heads = pr->heads;
    c.context = pr->context;
    c.seed = 1;
    snprintf(c.backend, sizeof c.backend, "cpu");
    spade_policy *p;
    if (spade_policy_new(&p, &c, err, sizeof err)) DIE("%s", err);
    return p;
}

/* What one episode's agent answered, step by step (for the replay). */
typedef struct rec_act {
    char *text;
    size_t len;
    char stop[32]; /* non-empty: the agent stopped the episode here */
} rec_act;
typedef struct rec_ep {
    rec_act *a;
    int n, cap;
} rec_ep;

/* Wraps the policy agent: the time spent inside it is the model's. */
typedef struct timed {
    spade_agent *in;
    double t_model;
    rec_ep *eps;
    long n_eps;
    long read; /* transcript tokens of finished episodes: what the model read or drew */
} timed;

static void count_read(void *ctx, const spade_ep_outcome *o, const spade_transcript *tr) {
    (void)o;
    ((timed *)ctx)->read += tr->len;
}

static int tm_begin(void *ctx, const spade_ep_view *v, void **state, char *e, size_t el) {
    timed *t = ctx;
    double t0 = now();
    int rc = t->in->begin ? t->in->begin(t->in->ctx, v, state, e, el) : 0;
    t->t_model += now() - t0;
    return rc;
}

static int tm_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *e, size_t el) {
    timed *t = ctx;
    double t0 = now();
    int rc = t->in->act(t->in->ctx, n, views, acts, e, el);
    t->t_model += now() - t0;
    if (rc) return rc;
    for (int i = 0; i < n; i++) { /* recording is the bench's cost, outside both sides */
        rec_ep *r = &t->eps[views[i].episode];
        if (views[i].step != r->n) DIE("episode %ld: step %d, %d recorded", views[i].episode, views[i].step, r->n);
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 8;
            r->a = realloc(r->a, (size_t)r->cap * sizeof *r->a);
        }
        rec_act *a = &r->a[r->n++];
        memset(a, 0, sizeof *a);
        if (acts[i].stop)
            snprintf(a->stop, sizeof a->stop, "%s", acts[i].stop);
        else {
            a->text = malloc(acts[i].len + 1);
            memcpy(a->text, acts[i].text, acts[i].len);
            a->len = acts[i].len;
        }
    }
    return 0;
}

static void tm_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    timed *t = ctx;
    double t0 = now();
    if (t->in->end) t->in->end(t->in->ctx, v, state, o);
    t->t_model += now() - t0;
}

/* The replay agent: episode e's recorded actions, one per step. */
static int rp_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *e, size_t el) {
    timed *t = ctx;
    (void)e, (void)el;
    for (int i = 0; i < n; i++) {
        rec_ep *r = &t->eps[views[i].episode];
        acts[i] = (spade_ep_act){0};
        if (views[i].step >= r->n) {
            acts[i].stop = "replay_end";
            continue;
        }
        rec_act *a = &r->a[views[i].step];
        if (a->stop[0])
            acts[i].stop = a->stop;
        else
            acts[i].text = a->text, acts[i].len = a->len;
    }
    return 0;
}

typedef struct roll_res {
    double wall, model, replay;
    long episodes, tokens, turns, steps, context_full, failed, read;
} roll_res;

static int n_envs_used = N_ENVS_MAX, plays = 8;

static roll_res rollout(spade_sandbox *sb, spade_policy *p, int max_live, int do_replay) {
    spade_ep_spec specs[N_ENVS_MAX];
    char *src[N_ENVS_MAX];
    for (int e = 0; e < n_envs_used; e++) {
        char path[4096];
        size_t len;
        snprintf(path, sizeof path, "%s/stdenv/%s.c", SPADE_SRCDIR, env_names[e]);
        if (!(src[e] = read_file(path, &len))) DIE("cannot read %s", path);
        specs[e] = (spade_ep_spec){.filename = env_names[e], .source = src[e], .len = len, .expected = plays};
    }
    long n = (long)n_envs_used * plays;
    spade_ep_request *req = calloc((size_t)n, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)n, sizeof *out), *out2 = calloc((size_t)n, sizeof *out2);
    for (long i = 0; i < n; i++)
        req[i] = (spade_ep_request){.spec = (int)(i / plays), .seed = 1000 + (uint64_t)i, .hint = (int)(i & 1)};
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ao.max_live = max_live;
    ao.max_action_tokens = 32; /* agent.max_action_tokens of spade train */
    ao.seed = 7;
    timed t = {0};
    ao.on_episode = count_read;
    ao.ctx = &t;
    t.eps = calloc((size_t)n, sizeof *t.eps);
    t.n_eps = n;
    if (!(t.in = spade_agent_policy(p, &ao, err, sizeof err))) DIE("%s", err);
    spade_agent w = {
        .name = "timed-policy", .wants = t.in->wants, .ctx = &t, .begin = tm_begin, .act = tm_act, .end = tm_end};
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = max_live;
    double t0 = now();
    if (spade_episodes_play(sb, specs, n_envs_used, req, n, &w, &eo, out, err, sizeof err) < 0) DIE("%s", err);
    roll_res r = {0};
    r.wall = now() - t0;
    r.model = t.t_model;
    r.episodes = n;
    r.read = t.read;
    spade_policy_agent_counts(t.in, &r.tokens, &r.turns);
    for (long i = 0; i < n; i++) {
        r.steps += out[i].steps;
        r.failed += out[i].end == SPADE_EP_FAILED;
        r.context_full += out[i].end == SPADE_EP_AGENT_STOP && !strcmp(out[i].stop_reason, "context_full");
    }
    if (do_replay) {
        spade_agent rp = {.name = "replay", .ctx = &t, .act = rp_act};
        t0 = now();
        if (spade_episodes_play(sb, specs, n_envs_used, req, n, &rp, &eo, out2, err, sizeof err) < 0) DIE("%s", err);
        r.replay = now() - t0;
        for (long i = 0; i < n; i++) /* the replay played the same episodes */
            if (out2[i].steps != out[i].steps || out2[i].ret != out[i].ret || out2[i].end != out[i].end)
                DIE("episode %ld: replay %d steps ret %g (%s), rollout %d steps ret %g (%s)", i, out2[i].steps,
                    out2[i].ret, spade_ep_end_name(out2[i].end), out[i].steps, out[i].ret,
                    spade_ep_end_name(out[i].end));
    }
    spade_agent_free(t.in);
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < t.eps[i].n; k++) free(t.eps[i].a[k].text);
        free(t.eps[i].a);
    }
    free(t.eps);
    for (int e = 0; e < n_envs_used; e++) free(src[e]);
    free(req);
    free(out);
    free(out2);
    return r;
}

/* A sandbox worker kept busy beside the model: a thread steps a CPU-heavy
 * environment (bench/envs/work20us.c at ~2 ms a step) until told to stop.
 * The thread itself mostly waits on the worker's reply. */
typedef struct busy {
    spade_vecenv *v;
    volatile int stop;
    long steps;
    double t0, t1;
    char failed[1100]; /* the worker's failure, reported by the main thread */
    pthread_t th;
} busy;

static void *busy_main(void *arg) {
    busy *b = arg;
    spade_step_result r;
    spade_failure f;
    const char *a = "go";
    size_t al = 2;
    b->t0 = now();
    while (!b->stop) {
        if (spade_vecenv_step(b->v, &a, &al, &r, &f)) {
            snprintf(b->failed, sizeof b->failed, "%s", f.message);
            break;
        }
        b->steps++;
    }
    b->t1 = now();
    return NULL;
}

static void busy_start(spade_sandbox *sb, busy *b) {
    char path[4096];
    size_t len;
    snprintf(path, sizeof path, "%s/bench/envs/work20us.c", SPADE_SRCDIR);
    char *src = read_file(path, &len);
    if (!src) DIE("cannot read %s", path);
    spade_failure f;
    memset(b, 0, sizeof *b);
    if (spade_vecenv_new(sb, "work20us.c", src, len, "iters=900000", 1, 1, SPADE_AUTORESET_NEXT_STEP, &b->v, &f))
        DIE("busy worker: %s", f.message);
    free(src);
    spade_step_result r;
    if (spade_vecenv_reset(b->v, 1, &r, &f)) DIE("busy worker: %s", f.message);
    if (pthread_create(&b->th, NULL, busy_main, b)) DIE("pthread_create");
}

/* Returns the worker's steps/s while it ran. */
static double busy_stop(busy *b) {
    b->stop = 1;
    pthread_join(b->th, NULL);
    if (b->failed[0]) DIE("busy worker: %s", b->failed);
    spade_vecenv_free(b->v);
    return b->steps / (b->t1 - b->t0);
}

/* Training tokens/s (forward + backward + AdamW) at B=8 T=128 (the
 * pretrain-tiny shape). */
static double train_tok_s(spade_policy *p, int steps) {
    int B = 8, T = 128, N = B * T;
    int *tok = malloc(N * sizeof(int)), *tg = malloc(N * sizeof(int));
    uint64_t s = 1;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1;
        tok[i] = (int)((s >> 33) % 256);
    }
    for (int i = 0; i < N; i++) tg[i] = (i + 1) % T ? tok[i + 1] : -1;
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    double t0 = 0;
    float loss;
    for (int it = 0; it <= steps; it++) {
        if (it == 1) t0 = now();
        if (spade_policy_forward(p, tok, tg, NULL, B, T, &loss, NULL, err, sizeof err) ||
            spade_policy_backward(p, 1.0f, err, sizeof err) || spade_policy_step(p, &o, NULL, err, sizeof err))
            DIE("%s", err);
    }
    double dt = now() - t0;
    free(tok);
    free(tg);
    return (double)N * steps / dt;
}

/* --child roll PRESET MAX_LIVE REPLAY BUSY | --child train BUSY STEPS:
 * one RESULT line on stdout. */
static int child(spade_sandbox *sb, int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[0], "roll")) {
        const preset *pr = NULL;
        for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
            if (!strcmp(presets[i].name, argv[1])) pr = &presets[i];
        if (!pr) DIE("no preset %s", argv[1]);
        spade_policy *p = make_policy(pr);
        busy b;
        int bz = atoi(argv[4]);
        if (bz) busy_start(sb, &b);
        double l0 = load1(), bs = 0;
        roll_res r = rollout(sb, p, atoi(argv[2]), atoi(argv[3]));
        if (bz) bs = busy_stop(&b);
        printf("RESULT busy_s=%.1f wall=%.6f model=%.6f replay=%.6f episodes=%ld tokens=%ld turns=%ld steps=%ld "
               "context_full=%ld failed=%ld read=%ld load=%.2f\n",
               bs, r.wall, r.model, r.replay, r.episodes, r.tokens, r.turns, r.steps, r.context_full, r.failed, r.read,
               (l0 + load1()) / 2);
        spade_policy_free(p);
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[0], "train")) {
        spade_policy *p = make_policy(&presets[0]);
        busy b;
        int bz = atoi(argv[1]);
        if (bz) busy_start(sb, &b);
        double l0 = load1(), bs = 0;
        double ts = train_tok_s(p, atoi(argv[2]));
        if (bz) bs = busy_stop(&b);
        printf("RESULT tok_s=%.1f busy_s=%.1f load=%.2f\n", ts, bs, (l0 + load1()) / 2);
        spade_policy_free(p);
        return 0;
    }
    DIE("bad --child arguments");
}

/* ------------------------------------------------------------------ */
/* parent: runs children, prints the report */

static const char *self_exe;
static int quick;

typedef struct kv {
    double wall, model, replay, tokens, turns, steps, episodes, context_full, failed, read, tok_s, busy_s, load;
} kv;

static double field(const char *line, const char *key) {
    char k[64];
    snprintf(k, sizeof k, " %s=", key);
    const char *s = strstr(line, k);
    if (!s) {
        snprintf(k, sizeof k, "RESULT %s=", key);
        if (!(s = strstr(line, k))) return 0;
    }
    return atof(strchr(s, '=') + 1);
}

/* Runs a child with env (a prefix of NAME=VALUE words, may be "") and returns its result. */
static kv run_child_q(const char *env, const char *args, int q) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "env %s %s %s --child %s", env, self_exe, q ? "--quick" : "", args);
    FILE *f = popen(cmd, "r");
    if (!f) DIE("popen %s", cmd);
    char line[4096], got[4096] = "";
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "RESULT ", 7)) snprintf(got, sizeof got, "%s", line);
    if (pclose(f) != 0 || !got[0]) DIE("child failed: %s", cmd);
    kv r;
    r.wall = field(got, "wall");
    r.model = field(got, "model");
    r.replay = field(got, "replay");
    r.tokens = field(got, "tokens");
    r.turns = field(got, "turns");
    r.steps = field(got, "steps");
    r.episodes = field(got, "episodes");
    r.context_full = field(got, "context_full");
    r.failed = field(got, "failed");
    r.read = field(got, "read");
    r.busy_s = field(got, "busy_s");
    r.tok_s = field(got, "tok_s");
    r.load = field(got, "load");
    return r;
}
static kv run_child(const char *env, const char *args) { return run_child_q(env, args, quick); }

/* The OpenMP setting spade uses by default (cli/main.c): every part but
 * "threads" runs under it. */
#define SPADE_DEFAULT_ENV "OMP_WAIT_POLICY=passive"

static void part_split(int reps) {
    printf("\n== split: where a rollout's wall time goes (%d stdenv envs x %d plays, 32 live, %s) ==\n", n_envs_used,
           plays, SPADE_DEFAULT_ENV);
    printf("  %-7s %8s %8s %9s %8s %8s %9s %9s %6s\n", "preset", "wall s", "eps/s", "tokens/s", "model", "rest",
           "replay s", "replay %", "load");
    for (size_t pi = 0; pi < sizeof presets / sizeof *presets; pi++) {
        kv best = {0};
        for (int r = 0; r < reps; r++) {
            char a[256];
            snprintf(a, sizeof a, "roll %s 32 1 0", presets[pi].name);
            kv x = run_child(SPADE_DEFAULT_ENV, a);
            if (r == 0 || x.wall < best.wall) best = x;
        }
        printf("  %-7s %8.2f %8.1f %9.0f %7.1f%% %7.1f%% %9.3f %8.2f%% %6.2f\n", presets[pi].name, best.wall,
               best.episodes / best.wall, best.tokens / best.wall, 100 * best.model / best.wall,
               100 * (best.wall - best.model) / best.wall, best.replay, 100 * best.replay / best.wall, best.load);
        printf("          (%.0f episodes, %.0f turns, %.0f steps, %.0f context_full, %.0f failed; the model read or "
               "drew %.0f tokens, %.0f/s; environments + sandbox + layer alone = replay: target <= 5%%: %s)\n",
               best.episodes, best.turns, best.steps, best.context_full, best.failed, best.read, best.read / best.wall,
               best.replay / best.wall <= 0.05 ? "met" : "NOT met");
    }
}

static void part_batch(int reps) {
    printf("\n== batch: 32 live episodes decoded together vs one at a time (same episodes, %s) ==\n",
           SPADE_DEFAULT_ENV);
    for (size_t pi = 0; pi < sizeof presets / sizeof *presets; pi++) {
        double b32 = 1e30, b1 = 1e30, tok32 = 0, tok1 = 0, l = 0;
        for (int r = 0; r < reps; r++) {
            char a[256];
            snprintf(a, sizeof a, "roll %s 32 0 0", presets[pi].name);
            kv x = run_child(SPADE_DEFAULT_ENV, a);
            snprintf(a, sizeof a, "roll %s 1 0 0", presets[pi].name);
            kv y = run_child(SPADE_DEFAULT_ENV, a);
            if (x.tokens != y.tokens) DIE("32 live drew %.0f tokens, one at a time %.0f", x.tokens, y.tokens);
            if (x.wall < b32) b32 = x.wall, tok32 = x.tokens;
            if (y.wall < b1) b1 = y.wall, tok1 = y.tokens;
            l += (x.load + y.load) / 2 / reps;
        }
        double r32 = tok32 / b32, r1 = tok1 / b1;
        printf("  %-7s 32 live %7.0f tokens/s   1 live %7.0f tokens/s   ratio %.2fx (target >= 8x: %s)  load %.2f\n",
               presets[pi].name, r32, r1, r32 / r1, r32 / r1 >= 8 ? "met" : "NOT met", l);
    }
}

typedef struct setting {
    const char *name, *env;
} setting;
static const setting settings[] = {
    {"libgomp default", "-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT"},
    {"active", "-u GOMP_SPINCOUNT OMP_WAIT_POLICY=active"},
    {"spincount 10k", "-u OMP_WAIT_POLICY GOMP_SPINCOUNT=10000"},
    {"passive", "-u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive"},
    {"1 thread", "-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_NUM_THREADS=1"},
};
#define N_SET (int)(sizeof settings / sizeof *settings)

/* Always the --quick rollout (4 environments): 5 settings x 4 children a rep,
 * and with libgomp's spinning beside a busy worker a child takes minutes. */
static void part_threads(int reps) {
    int tsteps = quick ? 3 : 6;
    if (reps > 2) reps = 2;
    printf("\n== threads: OpenMP settings, the model alone and with a sandbox worker busy beside ==\n");
    printf("  rollout: L4C128, 4 envs x %d plays, 32 live; training: L4C128 B=8 T=128, %d steps; best of %d\n", plays,
           tsteps, reps);
    /* per setting: rollout tokens/s alone, with the worker busy; training
     * tokens/s alone, busy; the busy worker's steps/s beside the rollout and
     * beside the training */
    double best[N_SET][6], load[N_SET];
    for (int s = 0; s < N_SET; s++) {
        for (int k = 0; k < 6; k++) best[s][k] = 0;
        load[s] = 0;
    }
#define MAX(x, y) ((y) > (x) ? (y) : (x))
    for (int r = 0; r < reps; r++)
        for (int s = 0; s < N_SET; s++) {
            char a[256];
            for (int bz = 0; bz < 2; bz++) {
                kv x = run_child_q(settings[s].env, bz ? "roll L4C128 32 0 1" : "roll L4C128 32 0 0", 1);
                best[s][bz] = MAX(best[s][bz], x.tokens / x.wall);
                snprintf(a, sizeof a, "train %d %d", bz, tsteps);
                kv y = run_child_q(settings[s].env, a, 1);
                best[s][2 + bz] = MAX(best[s][2 + bz], y.tok_s);
                if (bz) best[s][4] = MAX(best[s][4], x.busy_s), best[s][5] = MAX(best[s][5], y.busy_s);
                load[s] += (x.load + y.load) / (2.0 * 2 * reps);
            }
        }
    printf("  %-16s %9s %9s %7s %9s | %9s %9s %7s %9s | %5s\n", "setting", "roll", "roll+busy", "ratio", "worker",
           "train", "trn+busy", "ratio", "worker", "load");
    printf("  %-16s %9s %9s %7s %9s | %9s %9s %7s %9s |\n", "", "tok/s", "tok/s", "", "steps/s", "tok/s", "tok/s", "",
           "steps/s");
    for (int s = 0; s < N_SET; s++)
        printf("  %-16s %9.0f %9.0f %6.0f%% %9.0f | %9.0f %9.0f %6.0f%% %9.0f | %5.2f\n", settings[s].name, best[s][0],
               best[s][1], 100 * best[s][1] / best[s][0], best[s][4], best[s][2], best[s][3],
               100 * best[s][3] / best[s][2], best[s][5], load[s]);
    printf("  (with the worker busy, against the libgomp default: rollout");
    for (int s = 1; s < N_SET; s++) printf(" %s %.2fx", settings[s].name, best[s][1] / best[0][1]);
    printf("; training");
    for (int s = 1; s < N_SET; s++) printf(" %s %.2fx", settings[s].name, best[s][3] / best[0][3]);
    printf(")\n  (worker: steps/s of a ~2 ms step, alone it would make ~500 on a free core)\n");
}

int main(int argc, char **argv) {
    int reps = 3, ci = -1;
    const char *parts[8];
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--child")) {
            ci = i + 1;
            break;
        } else if (np < 8 && (!strcmp(argv[i], "split") || !strcmp(argv[i], "batch") || !strcmp(argv[i], "threads")))
            parts[np++] = argv[i];
        else
            DIE("unknown argument '%s' (usage: bench_rollout [--quick] [--reps R] [split|batch|threads ...])", argv[i]);
    }
    if (quick) n_envs_used = 4, reps = reps > 1 ? 1 : reps;
    if (ci >= 0) {
        spade_sandbox *sb;
        spade_sandbox_opts so = {0};
        /* a 2 ms step of the busy worker can wait long for a core when the
         * model's threads spin: that is a figure here, not a failure */
        so.call_timeout_s = 120;
        so.cpu_limit_s = 600;
        if (spade_sandbox_new(&sb, &so, err, sizeof err)) DIE("%s", err);
        int rc = child(sb, argc - ci, argv + ci);
        spade_sandbox_free(sb);
        return rc;
    }
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) DIE("readlink /proc/self/exe");
    exe[n] = 0;
    self_exe = exe;
    if (reps < 1) reps = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("bench_rollout: %ld cores online, load average %.2f at start, %d reps (best of each)\n",
           sysconf(_SC_NPROCESSORS_ONLN), load1(), reps);
    int all = np == 0;
    for (int k = 0; k < (all ? 1 : np); k++) {
        if (all || !strcmp(parts[k], "split")) part_split(reps);
        if (all || !strcmp(parts[k], "batch")) part_batch(reps);
        if (all || !strcmp(parts[k], "threads")) part_threads(reps);
    }
    printf("\nload average %.2f at the end\n", load1());
    return 0;
}
