/* loop.c — one self-play iteration (loop.h), and the designer's
 * self-written hint (designer.hint = self: write_hints below).
 *
 * What it is not: a scheduler across iterations (the run's iterations and
 * checkpoints are cli/cmd_train.c's).
 */
#include "selfplay/loop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/policy_agent.h"
#include "agent/transcript.h"
#include "designer/plays.h"
#include "designer/prompt.h"
#include "selfplay/template.h"
#include "episodes.h"
#include "check.h" /* spade_mix64 */
#include "errbuf.h"
#include "source.h"
#include "vendi.h"

void spade_selfplay_opts_default(spade_selfplay_opts *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->envs = 8;
    o->max_source_tokens = 512;
    o->temperature = 1.0f;
    o->top_p = 1.0f;
    o->reward = SPADE_DREWARD_BLEND;
    o->invalid_reward = -0.5;
    o->train_designer = 1;
    o->use_corpus = 1;
    o->use_memory = 1;
    spade_memory_opts_default(&o->memory);
    o->family_window = 3;
    o->hint_temperature = 0.3f;
    o->hint_tokens = 64;
    o->hole_tokens = 8;
    spade_gate_opts_default(&o->gates);
    o->gates.stop_at_first = 1;
    o->plays = 8;
    o->repeats = 1;
    o->regen_every = 1;
    spade_rl_opts_default(&o->rl);
}

static uint64_t mix(uint64_t x) { return spade_mix64(x); }
static uint64_t stream(uint64_t seed, int it, int slot, uint64_t what) {
    return mix(seed ^ mix(((uint64_t)it << 32) ^ ((uint64_t)slot << 8) ^ what));
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

char *spade_extract_source(const char *text, size_t len, size_t *out_len) {
    const char *start = text, *end = text + len;
    const char *fence = NULL;
    for (const char *p = text; p + 3 <= end; p++)
        if (!memcmp(p, "```", 3) && (p == text || p[-1] == '\n')) {
            fence = p;
            break;
        }
    if (fence) {
        const char *body = memchr(fence, '\n', (size_t)(end - fence));
        if (body) {
            body++;
            const char *close = NULL;
            for (const char *p = body; p + 3 <= end; p++)
                if (!memcmp(p, "```", 3) && p[-1] == '\n') {
                    close = p;
                    break;
                }
            start = body;
            end = close ? close : end;
        }
    }
    size_t n = (size_t)(end - start);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, start, n);
    out[n] = 0;
    if (out_len) *out_len = n;
    return out;
}

static size_t count_tokens(void *ctx, const char *text, size_t len) { return spade_tokenizer_count(ctx, text, len); }

/* What the agent's no-hint plays of each environment left for training. */
typedef struct agent_eps {
    spade_transcript *tr; /* [2 * plays] by episode index within one paired run */
    int n;
} agent_eps;

static void keep_episode(void *ctx, const spade_ep_outcome *o, const spade_transcript *t) {
    agent_eps *a = ctx;
    if (o->episode < 0 || o->episode >= a->n) return;
    spade_transcript *d = &a->tr[o->episode];
    spade_transcript_clear(d);
    for (int i = 0; i < t->len; i++)
        if (t->mask[i]) spade_transcript_sampled(d, &t->tok[i], &t->logp[i], 1);
        else spade_transcript_special(d, t->tok[i]);
}

typedef struct written {
    spade_transcript tr;  /* <|designer|> prompt <|source|> sampled */
    char *source;
    size_t source_len;
    char corpus_item[256];
    char family[32];         /* the target family of its prompt (or its archived row's) */
    spade_gate_report gates;
    spade_paired paired;
    uint64_t seeds[256];
    spade_ep_outcome *plays; /* [2 * plays] */
    char *hint;              /* designer.hint = self: the hint every seed's hint arm sees; NULL: the HINT block's */
    size_t hint_len;
    char hint_seen[512];     /* the hint the first hint play saw (the archive's hint column) */
    double reward;
    int keep;                /* in the designer's update */
    int kind;                /* 0 written now, 1 kept from the last writing, 2 replayed from the archive */
    long archive_id;         /* kind 1 and 2: its row */
    float embedding[SPADE_VENDI_DIM];
    float games[SPADE_VENDI_DIM]; /* template mode: the embedding of the game its filling sets (vendi_n_games) */
    const spade_template *tpl;    /* template mode: the template it fills */
} written;

/* The archive's valid environments: ids of iteration `only` (>= 0), or the
 * `limit` with the highest regret among iterations before `before`. */
typedef struct pick {
    int only, before, limit, n;
    long id[SPADE_SP_MAX_ENVS];
    double regret[SPADE_SP_MAX_ENVS];
} pick;

static int pick_env(void *ctx, const spade_archive_env *e) {
    pick *p = ctx;
    if (p->only >= 0) {
        if (e->iteration == p->only && p->n < p->limit) p->id[p->n++] = e->id;
        return 0;
    }
    if (e->iteration >= p->before || !isfinite(e->regret)) return 0;
    int full = p->n == p->limit, at = full ? p->limit - 1 : p->n++; /* insertion into the top list; ties: the newer kept */
    if (full && e->regret <= p->regret[at]) return 0;
    while (at > 0 && p->regret[at - 1] < e->regret) {
        p->id[at] = p->id[at - 1];
        p->regret[at] = p->regret[at - 1];
        at--;
    }
    p->id[at] = e->id;
    p->regret[at] = e->regret;
    return 0;
}

/* Fills w[0..) with the environments p names, read from the archive; returns how many. */
static int load_envs(spade_archive *a, const pick *p, int kind, int hint_self, written *w, int room, char *err,
                     size_t errlen) {
    int k = 0;
    for (int i = p->n - 1; i >= 0 && k < room; i--) { /* each_env walks newest first: oldest first here */
        spade_archive_env e;
        if (spade_archive_get_env(a, p->id[i], &e, err, errlen) != 0) return -1;
        w[k].source = (char *)e.source;
        w[k].source_len = e.source_len;
        e.source = NULL;
        snprintf(w[k].corpus_item, sizeof w[k].corpus_item, "%s", e.corpus_item);
        snprintf(w[k].family, sizeof w[k].family, "%s", e.family);
        w[k].gates.first_failed = -1;
        w[k].kind = kind;
        w[k].archive_id = e.id;
        if (e.embedding && e.embed_dim == SPADE_VENDI_DIM) memcpy(w[k].embedding, e.embedding, sizeof w[k].embedding);
        if (hint_self) { /* played again with the hint it was archived with, not a new one */
            w[k].hint_len = strlen(e.hint);
            w[k].hint = malloc(w[k].hint_len + 1);
            if (!w[k].hint) {
                spade_archive_env_clear(&e);
                spade_errf(err, errlen, "self-play: out of memory");
                return -1;
            }
            memcpy(w[k].hint, e.hint, w[k].hint_len + 1);
        }
        spade_archive_env_clear(&e);
        spade_transcript_init(&w[k].tr);
        k++;
    }
    return k;
}

/* designer.hint = self: every written source is read by the same policy,
 * in one decoding batch, and its completion is the hint
 * (<|designer|> HINT_PROMPT <|hint|> HINT <|end|>). Each slot draws from its
 * own stream of (run seed, iteration, slot), so a resumed run writes the same
 * hints. The tokens live only here: no transcript of them reaches the update. */
static int write_hints(spade_selfplay *s, const spade_selfplay_opts *o, int it, written *w, int n,
                       spade_selfplay_metrics *m, char *err, size_t errlen) {
    int ctx = spade_policy_config(s->p)->context, T = o->hint_tokens > 0 ? o->hint_tokens : 1;
    spade_tokenizer *tok = spade_policy_tokenizer(s->p);
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = ctx - T - 2;
    po.count = count_tokens;
    po.count_ctx = tok;
    spade_transcript tr[SPADE_SP_MAX_ENVS];
    int slots[SPADE_SP_MAX_ENVS], counts[SPADE_SP_MAX_ENVS], status[SPADE_SP_MAX_ENVS], maxt[SPADE_SP_MAX_ENVS],
        lens[SPADE_SP_MAX_ENVS], st2[SPADE_SP_MAX_ENVS], at[SPADE_SP_MAX_ENVS], k = 0, rc = -1;
    const int *toks[SPADE_SP_MAX_ENVS];
    uint64_t seeds[SPADE_SP_MAX_ENVS];
    spade_decoder *dec = NULL;
    int *out = NULL;
    char *text = NULL;
    for (int i = 0; i < n; i++) spade_transcript_init(&tr[i]);
    for (int i = 0; i < n; i++) {
        w[i].hint = calloc(1, 1); /* an empty source gets the empty hint */
        w[i].hint_len = 0;
        if (!w[i].hint) {
            spade_errf(err, errlen, "self-play: out of memory");
            goto done;
        }
        if (!w[i].source || !w[i].source_len) continue;
        char *prompt = NULL, e2[300];
        size_t plen = 0;
        if (spade_hint_prompt_build(&po, w[i].source, w[i].source_len, &prompt, &plen, e2, sizeof e2) < 0) {
            spade_errf(err, errlen, "designer.hint_tokens = %d leaves %d of the policy's %d context tokens: %s", T,
                       po.budget, ctx, e2);
            goto done;
        }
        spade_transcript_special(&tr[k], SPADE_TOK_DESIGNER);
        spade_transcript_text(&tr[k], tok, prompt, plen);
        spade_transcript_special(&tr[k], SPADE_TOK_HINT);
        free(prompt);
        if (tr[k].oom) {
            spade_errf(err, errlen, "self-play: out of memory for a hint prompt");
            goto done;
        }
        at[k] = i;
        slots[k] = k, toks[k] = tr[k].tok, counts[k] = tr[k].len;
        seeds[k] = stream(o->seed, it, i, 0x68696e74ULL);
        k++;
    }
    if (k == 0) {
        rc = 0;
        goto done;
    }
    if (spade_decoder_new(&dec, s->p, k, err, errlen) < 0 ||
        spade_decoder_append_batch(dec, slots, toks, counts, k, status, err, errlen) < 0)
        goto done;
    for (int j = 0; j < k; j++) {
        int room = ctx - spade_decoder_len(dec, j);
        maxt[j] = room < 1 ? 1 : room < T ? room : T;
    }
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = o->hint_temperature;
    so.top_p = o->top_p;
    so.max_tokens = T;
    size_t cap = (size_t)T * 64 + 1;
    out = malloc((size_t)k * T * sizeof *out);
    text = malloc(cap);
    if (!out || !text) {
        spade_errf(err, errlen, "self-play: out of memory");
        goto done;
    }
    if (spade_decoder_sample(dec, slots, k, &so, seeds, maxt, out, NULL, lens, st2, err, errlen) < 0) goto done;
    for (int j = 0; j < k; j++) {
        written *x = &w[at[j]];
        const int *t = out + (size_t)j * T;
        int len = lens[j], ended = len > 0 && t[len - 1] == SPADE_TOK_END;
        m->hint_tokens += len;
        size_t got = 0;
        spade_tokenizer_decode(tok, t, (size_t)(ended ? len - 1 : len), 0, text, cap, &got);
        if (got >= cap) got = cap - 1;
        /* surrounding blank space dropped; at most what the archive's hint column holds, so the
         * archived hint is the one played */
        size_t a = 0, b = got;
        for (size_t z = 0; z < b; z++) /* a hint is text: a NUL byte ends it */
            if (!text[z]) b = z;
        while (a < b && (text[a] == ' ' || text[a] == '\n' || text[a] == '\t' || text[a] == '\r')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\n' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
        if (b - a > sizeof x->hint_seen - 1) b = a + sizeof x->hint_seen - 1;
        char *h = malloc(b - a + 1);
        if (!h) {
            spade_errf(err, errlen, "self-play: out of memory");
            goto done;
        }
        memcpy(h, text + a, b - a);
        h[b - a] = 0;
        free(x->hint);
        x->hint = h;
        x->hint_len = b - a;
    }
    rc = 0;
done:
    spade_decoder_free(dec);
    for (int i = 0; i < n; i++) spade_transcript_free(&tr[i]);
    free(out);
    free(text);
    return rc;
}

/* Wraps the playing agent to keep the hint its first hint episode saw (the
 * embedded HINT block's text at that seed) for the archive. */
typedef struct hint_spy {
    spade_agent *inner;
    char *seen;
    size_t cap;
    int got;
} hint_spy;

static int spy_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    hint_spy *h = ctx;
    if (!h->got && v->hint) {
        snprintf(h->seen, h->cap, "%.*s", (int)(v->hint_len < h->cap ? v->hint_len : h->cap - 1), v->hint);
        h->got = 1;
    }
    return h->inner->begin ? h->inner->begin(h->inner->ctx, v, state, err, errlen) : 0;
}
static int spy_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    hint_spy *h = ctx;
    return h->inner->act(h->inner->ctx, n, views, acts, err, errlen);
}
static void spy_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    hint_spy *h = ctx;
    if (h->inner->end) h->inner->end(h->inner->ctx, v, state, o);
}

/* designer.reward = learning_potential (designer/reward.h): after[i], for each
 * valid environment i < n written now, is its no-hint pass rate replayed by a
 * copy of the policy that has taken the agent's half of this iteration's
 * update alone (the same samples, options and AdamW moments: the step the
 * agent would take were there no designer samples). The replays use the
 * paired plays' seeds and agent stream, so they draw nothing new and a
 * resumed run measures the same; the policy itself is not touched, and the
 * shared update then starts from it as with every other reward. With no agent
 * sample there is no step: after = before, no replay. NAN for the others.
 * 0, 1 stopped, -1 error. */
static int lookahead(spade_selfplay *s, const spade_selfplay_opts *o, int it, const written *w, int n, int plays,
                     const spade_grpo_sample *samples, int n_agent, const spade_policy_agent_opts *ao0,
                     const spade_episodes_opts *eo, double *after, char *err, size_t errlen) {
    int any = 0, R = o->repeats > 1 ? o->repeats : 1;
    for (int i = 0; i < n; i++) {
        after[i] = NAN;
        any |= w[i].gates.first_failed < 0;
    }
    if (!any) return 0;
    if (n_agent == 0) {
        for (int i = 0; i < n; i++)
            if (w[i].gates.first_failed < 0) after[i] = w[i].paired.pass_nohint;
        return 0;
    }
    spade_policy *q = NULL;
    size_t P = spade_policy_num_params(s->p);
    float *mv = malloc(2 * P * sizeof *mv);
    spade_ep_request *req = calloc((size_t)plays, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)plays, sizeof *out);
    int rc = -1;
    if (!mv || !req || !out) {
        spade_errf(err, errlen, "learning potential: out of memory");
        goto done;
    }
    if (spade_policy_clone(&q, s->p, spade_policy_backend_name(s->p), err, errlen) != 0 ||
        spade_policy_get_moments(s->p, mv, mv + P, err, errlen) != 0 ||
        spade_policy_set_moments(q, mv, mv + P, err, errlen) != 0)
        goto done;
    spade_grpo_opts go = o->rl.grpo;
    go.adv_mode = SPADE_GRPO_ADV_GIVEN;
    go.token_norm = SPADE_GRPO_NORM_ROLE;
    spade_grpo_stats st;
    if (spade_grpo_update(q, NULL, samples, n_agent, &go, &o->rl.adamw, &st, err, errlen) < 0) goto done;
    spade_policy_agent_opts ao = *ao0;
    ao.on_episode = NULL;
    ao.ctx = NULL;
    for (int i = 0; i < n; i++) {
        if (w[i].gates.first_failed >= 0) continue;
        ao.seed = stream(o->seed, it, i, 0x61676e74ULL); /* the paired plays' agent stream */
        for (int k = 0; k < plays; k++) req[k] = (spade_ep_request){0, w[i].seeds[k], 0, k % R};
        spade_agent *a = spade_agent_policy(q, &ao, err, errlen);
        if (!a) goto done;
        spade_ep_spec spec = {"generated.c", w[i].source, w[i].source_len, NULL, plays};
        int pr = spade_episodes_play(s->sb, &spec, 1, req, plays, a, eo, out, err, errlen);
        spade_agent_free(a);
        if (pr < 0) goto done;
        if (eo->stop && *eo->stop) {
            rc = 1;
            goto done;
        }
        double sum = 0;
        for (int k = 0; k < plays; k++) sum += out[k].success;
        after[i] = sum / plays;
    }
    rc = 0;
done:
    spade_policy_free(q);
    free(mv);
    free(req);
    free(out);
    return rc;
}

/* The iteration's learning-potential figures (NAN unless that is the reward). */
static void lp_means(const spade_selfplay_opts *o, const written *w, int n, const double *after,
                     spade_selfplay_metrics *m) {
    double lp = 0, pa = 0;
    int k = 0;
    for (int i = 0; o->reward == SPADE_DREWARD_LEARNING_POTENTIAL && i < n; i++)
        if (w[i].gates.first_failed < 0 && isfinite(after[i])) {
            lp += spade_lp_lookahead(w[i].paired.pass_nohint, after[i]);
            pa += after[i];
            k++;
        }
    m->learning_potential = k ? lp / k : NAN;
    m->pass_after = k ? pa / k : NAN;
}

int spade_selfplay_iteration(spade_selfplay *s, const spade_selfplay_opts *o, int it,
                             const volatile sig_atomic_t *stop, spade_selfplay_metrics *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    m->iteration = it;
    m->vendi_n = NAN;
    m->vendi_n_games = NAN;
    m->learning_potential = m->pass_after = NAN;
    int K = o->regen_every > 1 ? o->regen_every : 1, regen = it % K == 0, base_it = it - it % K;
    int n = !regen ? 0 : o->envs < SPADE_SP_MAX_ENVS ? o->envs : SPADE_SP_MAX_ENVS, plays = o->plays > 256 ? 256 : o->plays;
    int n_all = n; /* n written now, then the kept and the replayed ones */
    int R = o->repeats > 1 ? o->repeats : 1; /* plays of a seed an arm */
    if (plays % R) {
        spade_errf(err, errlen, "self-play: plays (%d) is not a multiple of repeats (%d)", plays, R);
        return -1;
    }
    int ctx = spade_policy_config(s->p)->context;
    spade_tokenizer *tok = spade_policy_tokenizer(s->p);
    written *w = calloc(2 * SPADE_SP_MAX_ENVS, sizeof *w);
    agent_eps ae = {calloc((size_t)2 * plays, sizeof(spade_transcript)), 2 * plays};
    /* agent samples: both arms' plays of every environment played (train_hint_arm), and the designer's */
    spade_grpo_sample *samples = calloc((size_t)2 * SPADE_SP_MAX_ENVS * (2 * plays + 1), sizeof *samples);
    spade_transcript *agent_tr = calloc((size_t)4 * SPADE_SP_MAX_ENVS * plays, sizeof *agent_tr);
    double *refs = NULL;
    const char **ref_names = NULL;
    spade_decoder *dec = NULL;
    int rc = -1, n_agent = 0;
    if (!w || !ae.tr || !samples || !agent_tr) {
        spade_errf(err, errlen, "self-play: out of memory");
        goto done;
    }
    double t0 = now_s();

    /* the fixed-pool part, if any, first: it trains on its own (agent/rl.h) */
    if (o->pool_envs > 0 && s->pool) {
        spade_rl_opts ro = o->rl;
        ro.envs_per_iter = o->pool_envs;
        ro.seed = mix(o->seed ^ 0x706f6f6cULL);
        int r = spade_rl_iteration(s->p, NULL, s->sb, s->pool, it, &ro, stop, &m->pool, err, errlen);
        if (r != 0) {
            rc = r;
            goto done;
        }
    }

    /* 1. prompts: family, grounding excerpt, memory */
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = ctx - o->max_source_tokens - 2;
    po.count = count_tokens;
    po.count_ctx = tok;
    for (int i = 0; i < n && o->n_templates > 0; i++) { /* template mode: one line, the template's family */
        const spade_template *t = w[i].tpl = o->templates[((long)it * n + i) % o->n_templates];
        const char *nm = spade_template_name(t), *b = strrchr(nm, '/');
        snprintf(w[i].family, sizeof w[i].family, "%s", spade_template_family(t));
        snprintf(w[i].corpus_item, sizeof w[i].corpus_item, "%s", b ? b + 1 : nm);
        char *prompt = NULL;
        size_t plen = 0;
        spade_transcript_init(&w[i].tr);
        if (spade_template_prompt(t, &prompt, &plen) < 0) {
            spade_errf(err, errlen, "self-play: out of memory for a prompt");
            goto done;
        }
        spade_transcript_designer_open(&w[i].tr, tok, prompt, plen);
        free(prompt);
    }
    for (int i = 0; i < n && o->n_templates == 0; i++) {
        uint64_t rng = stream(o->seed, it, i, 0x70726f6dULL);
        int f = spade_family_for_slot(o->n_families, o->family_window, it, i);
        snprintf(w[i].family, sizeof w[i].family, "%s", f >= 0 ? o->families[f] : "any");
        const char *excerpt = NULL, *name = NULL;
        size_t elen = 0;
        if (s->corpus && o->use_corpus) {
            const spade_corpus_item *item = spade_corpus_item_at(s->corpus, spade_corpus_draw(s->corpus, &rng));
            excerpt = item->text, elen = item->len, name = item->name;
            snprintf(w[i].corpus_item, sizeof w[i].corpus_item, "%s", item->name);
        }
        spade_prompt_memory mem[4];
        spade_archive_env got[4];
        int n_mem = 0;
        if (o->use_memory && s->archive) {
            long pos[4], neg;
            int np = 0;
            if (spade_memory_select(s->archive, w[i].family, &o->memory, &rng, pos, &np, &neg, err, errlen) < 0) goto done;
            for (int k = 0; k < np + (neg >= 0) && n_mem < 4; k++) {
                long id = k < np ? pos[k] : neg;
                if (spade_archive_get_env(s->archive, id, &got[n_mem], err, errlen) != 0) continue;
                spade_archive_env *e = &got[n_mem];
                mem[n_mem] = (spade_prompt_memory){e->source, e->source_len, e->family, e->pass_nohint, e->regret,
                                                   k < np ? 0 : (e->pass_nohint < 0.5 ? -1 : +1)};
                n_mem++;
            }
        }
        char *prompt = NULL;
        size_t plen = 0;
        int pr = spade_prompt_build(&po, w[i].family, name, excerpt, elen, mem, n_mem, &prompt, &plen, err, errlen);
        for (int k = 0; k < n_mem; k++) spade_archive_env_clear(&got[k]);
        if (pr < 0) goto done;
        spade_transcript_init(&w[i].tr);
        spade_transcript_designer_open(&w[i].tr, tok, prompt, plen);
        free(prompt);
        if (w[i].tr.oom) {
            spade_errf(err, errlen, "self-play: out of memory for a prompt");
            goto done;
        }
    }
    if (stop && *stop) { rc = 1; goto done; }

    /* 2. the designer writes: every slot sampled together (or, designer.source = files, given sources) */
    if (n == 0) {
        /* not a writing iteration (selfplay.regen_every) */
    } else if (o->n_files > 0) {
        for (int i = 0; i < n; i++) {
            int f = (int)(((long)it * n + i) % o->n_files);
            w[i].source = malloc(o->file_lens[f] + 1);
            if (!w[i].source) {
                spade_errf(err, errlen, "self-play: out of memory");
                goto done;
            }
            memcpy(w[i].source, o->files[f], o->file_lens[f] + 1);
            w[i].source_len = o->file_lens[f];
            snprintf(w[i].corpus_item, sizeof w[i].corpus_item, "%s", o->file_names[f]);
        }
    } else if (o->n_templates > 0) {
        spade_template_slot *ts = calloc((size_t)n, sizeof *ts);
        if (!ts) {
            spade_errf(err, errlen, "self-play: out of memory");
            goto done;
        }
        for (int i = 0; i < n; i++) {
            ts[i].tpl = w[i].tpl;
            ts[i].seed = stream(o->seed, it, i, 0x746d706cULL);
            ts[i].tr = &w[i].tr;
        }
        spade_template_opts to = {o->temperature, o->top_p, o->hole_tokens};
        int dr = spade_template_decode(s->p, ts, n, &to, err, errlen);
        for (int i = 0; dr == 0 && i < n; i++) {
            w[i].source = ts[i].source, w[i].source_len = ts[i].source_len;
            ts[i].source = NULL;
            m->source_tokens += ts[i].sampled;
            double x[SPADE_VENDI_DIM];
            spade_template_embed((const char *const *)ts[i].fill, ts[i].fill_len, spade_template_holes(ts[i].tpl), x,
                                 SPADE_VENDI_DIM);
            for (int k = 0; k < SPADE_VENDI_DIM; k++) w[i].embedding[k] = (float)x[k];
            spade_template_embed_games((const char *const *)ts[i].fill, ts[i].fill_len, spade_template_holes(ts[i].tpl),
                                       x, SPADE_VENDI_DIM);
            for (int k = 0; k < SPADE_VENDI_DIM; k++) w[i].games[k] = (float)x[k];
        }
        for (int i = 0; i < n; i++) spade_template_slot_clear(&ts[i]);
        free(ts);
        if (dr < 0) goto done;
    } else if (spade_decoder_new(&dec, s->p, n, err, errlen) < 0) goto done;
    else {
        int slots[SPADE_SP_MAX_ENVS], counts[SPADE_SP_MAX_ENVS], status[SPADE_SP_MAX_ENVS], maxt[SPADE_SP_MAX_ENVS],
            lens[SPADE_SP_MAX_ENVS], st2[SPADE_SP_MAX_ENVS];
        const int *toks[SPADE_SP_MAX_ENVS];
        uint64_t seeds[SPADE_SP_MAX_ENVS];
        for (int i = 0; i < n; i++) slots[i] = i, toks[i] = w[i].tr.tok, counts[i] = w[i].tr.len;
        if (spade_decoder_append_batch(dec, slots, toks, counts, n, status, err, errlen) < 0) goto done;
        int T = o->max_source_tokens;
        int *out = malloc((size_t)n * T * sizeof *out);
        float *lp = malloc((size_t)n * T * sizeof *lp);
        if (!out || !lp) {
            free(out);
            free(lp);
            spade_errf(err, errlen, "self-play: out of memory");
            goto done;
        }
        for (int i = 0; i < n; i++) {
            int room = ctx - spade_decoder_len(dec, i);
            maxt[i] = room < 1 ? 1 : room < T ? room : T;
            seeds[i] = stream(o->seed, it, i, 0x736f7572ULL);
        }
        spade_sample_opts so;
        spade_sample_opts_default(&so);
        so.temperature = o->temperature;
        so.top_p = o->top_p;
        so.max_tokens = T;
        if (spade_decoder_sample(dec, slots, n, &so, seeds, maxt, out, lp, lens, st2, err, errlen) < 0) {
            free(out);
            free(lp);
            goto done;
        }
        char *text = malloc((size_t)T * 64 + 1);
        for (int i = 0; text && i < n; i++) {
            const int *t = out + (size_t)i * T;
            int len = lens[i], ended = len > 0 && t[len - 1] == SPADE_TOK_END;
            spade_transcript_sampled(&w[i].tr, t, lp + (size_t)i * T, len);
            m->source_tokens += len;
            size_t got = 0;
            spade_tokenizer_decode(tok, t, (size_t)(ended ? len - 1 : len), 0, text, (size_t)T * 64 + 1, &got);
            w[i].source = spade_extract_source(text, got < (size_t)T * 64 ? got : (size_t)T * 64, &w[i].source_len);
        }
        free(text);
        free(out);
        free(lp);
        spade_decoder_free(dec);
        dec = NULL;
    }
    if (o->hint_self && n > 0 && write_hints(s, o, it, w, n, m, err, errlen) < 0) goto done;
    m->written = n;
    m->t_design = now_s() - t0;
    if (stop && *stop) { rc = 1; goto done; }

    /* 3. gates; novelty against the corpus and this iteration's earlier valid ones */
    double t1 = now_s();
    refs = malloc((size_t)(s->n_refs + n) * SPADE_VENDI_DIM * sizeof *refs);
    ref_names = malloc((size_t)(s->n_refs + n) * sizeof *ref_names);
    if (!refs || !ref_names) {
        spade_errf(err, errlen, "self-play: out of memory");
        goto done;
    }
    /* template mode: the fillings are compared, with this iteration's earlier valid ones only (every filled
     * source is a near-duplicate of the corpus's and of the others' by construction) */
    int n_refs = o->n_templates > 0 ? 0 : s->n_refs;
    if (n_refs) memcpy(refs, s->refs, (size_t)n_refs * SPADE_VENDI_DIM * sizeof *refs);
    for (int k = 0; k < n_refs; k++) ref_names[k] = s->ref_names[k];
    char names[SPADE_SP_MAX_ENVS][48]; /* lives until the plays: the gates of later slots read it */
    for (int i = 0; i < n; i++) {
        char file[64];
        snprintf(file, sizeof file, "iteration-%d-env-%d.c", it, i);
        spade_gate_opts go = o->gates;
        go.refs = refs;
        go.ref_names = ref_names;
        go.n_refs = n_refs;
        go.dim = SPADE_VENDI_DIM;
        go.hint = w[i].hint;
        go.hint_len = w[i].hint_len;
        /* novelty against what the prompt showed too (drawn again from the prompt's stream), by text and by
         * behaviour, when the designer wrote from that prompt (not given files, not a template); the gates'
         * seeds from the run seed */
        spade_gate_shown sh = {0};
        if (o->n_templates == 0 && o->n_files == 0 && spade_gate_shown_draw(&sh, s->corpus && o->use_corpus ? s->corpus : NULL,
                                                         o->use_memory ? s->archive : NULL, w[i].family, &o->memory,
                                                         stream(o->seed, it, i, 0x70726f6dULL), w[i].corpus_item,
                                                         err, errlen) < 0)
            goto done;
        go.shown = sh.src;
        go.shown_len = sh.len;
        go.shown_names = sh.name;
        go.n_shown = sh.n;
        go.run_seed = o->seed;
        const char *src = w[i].source ? w[i].source : "";
        double *x = refs + (size_t)n_refs * SPADE_VENDI_DIM;
        if (o->n_templates > 0) { /* the filling's embedding, made when it was decoded */
            for (int k = 0; k < SPADE_VENDI_DIM; k++) x[k] = w[i].embedding[k];
            go.embedding = x;
        }
        int grc = spade_gates_run(s->sb, file, src, w[i].source ? w[i].source_len : 0, &go, &w[i].gates, err, errlen);
        spade_gate_shown_clear(&sh);
        if (grc < 0) goto done;
        if (o->n_templates == 0) {
            spade_vendi_embed(src, w[i].source ? w[i].source_len : 0, x, SPADE_VENDI_DIM);
            for (int k = 0; k < SPADE_VENDI_DIM; k++) w[i].embedding[k] = (float)x[k];
        }
        if (w[i].gates.first_failed < 0) {
            m->valid++;
            snprintf(names[i], sizeof names[i], "this iteration's environment %d", i);
            ref_names[n_refs++] = names[i];
        } else m->failed_gate[w[i].gates.first_failed]++;
        if (stop && *stop) { rc = 1; goto done; }
    }
    m->t_gates = now_s() - t1;

    /* the environments played again: the last writing's valid ones, and past ones by regret */
    if (s->archive && !regen) {
        pick pk = {base_it, 0, SPADE_SP_MAX_ENVS, 0, {0}, {0}};
        if (spade_archive_each_env(s->archive, 1, NULL, 0, pick_env, &pk, err, errlen) < 0) goto done;
        int k = load_envs(s->archive, &pk, 1, o->hint_self, w + n_all, 2 * SPADE_SP_MAX_ENVS - n_all, err, errlen);
        if (k < 0) goto done;
        n_all += k;
        m->kept = k;
    }
    if (s->archive && o->replay > 0) {
        pick pk = {-1, base_it, o->replay < SPADE_SP_MAX_ENVS ? o->replay : SPADE_SP_MAX_ENVS, 0, {0}, {0}};
        if (spade_archive_each_env(s->archive, 1, NULL, o->memory.window, pick_env, &pk, err, errlen) < 0) goto done;
        int k = load_envs(s->archive, &pk, 2, o->hint_self, w + n_all, 2 * SPADE_SP_MAX_ENVS - n_all, err, errlen);
        if (k < 0) goto done;
        n_all += k;
        m->replayed = k;
    }

    /* 4. paired plays of every valid environment by one policy snapshot */
    double t2 = now_s();
    spade_policy_agent_opts ao;
    spade_policy_agent_opts_default(&ao);
    ao.max_live = o->rl.max_live > 2 * plays ? o->rl.max_live : 2 * plays;
    ao.max_action_tokens = o->rl.max_action_tokens;
    ao.temperature = o->rl.temperature;
    ao.top_p = o->rl.top_p;
    ao.on_episode = keep_episode;
    ao.ctx = &ae;
    spade_episodes_opts eo;
    spade_episodes_opts_default(&eo);
    eo.max_live = ao.max_live;
    eo.stop = stop;
    double sum_reward = 0;
    int played = 0;
    for (int i = 0; i < n_all; i++) {
        if (w[i].gates.first_failed >= 0) continue;
        played++;
        ao.seed = stream(o->seed, it, i, 0x61676e74ULL);
        /* plays / R seeds, each R times in a row (w[i].seeds holds every play's, for the archive) */
        for (int k = 0; k < plays; k++) w[i].seeds[k] = stream(o->seed, it, i, 0x73656564ULL + (uint64_t)(k / R));
        w[i].plays = calloc((size_t)2 * plays, sizeof *w[i].plays);
        spade_agent *a = spade_agent_policy(s->p, &ao, err, errlen);
        if (!a || !w[i].plays) {
            if (a) spade_agent_free(a);
            if (!w[i].plays) spade_errf(err, errlen, "self-play: out of memory");
            goto done;
        }
        spade_ep_spec spec = {"generated.c", w[i].source, w[i].source_len, NULL, 2 * plays};
        const char *hint1[1] = {w[i].hint};
        size_t hint1_len[1] = {w[i].hint_len};
        eo.hints = w[i].hint ? hint1 : NULL;
        eo.hint_lens = hint1_len;
        for (int k = 0; k < 2 * plays; k++) spade_transcript_clear(&ae.tr[k]);
        hint_spy spy = {a, w[i].hint_seen, sizeof w[i].hint_seen, 0};
        spade_agent spied = {a->name, a->wants, &spy, spy_begin, spy_act, spy_end, NULL};
        uint64_t distinct[256];
        for (int k = 0; k < plays / R; k++) distinct[k] = w[i].seeds[k * R];
        int pr = spade_paired_play(s->sb, &spec, &spied, distinct, plays / R, R, &eo, w[i].plays, &w[i].paired, err,
                                   errlen);
        spade_agent_free(a);
        if (pr < 0) goto done;
        if (stop && *stop) { rc = 1; goto done; }
        m->pass_nohint += w[i].paired.pass_nohint;
        m->pass_hint += w[i].paired.pass_hint;
        m->regret += w[i].paired.regret;
        /* the agent learns from its no-hint plays (and, with selfplay.train_hint_arm, from its
         * hint plays, a group of their own): returns z-scored within the environment's arm */
        for (int arm = 0; arm < 1 + (o->train_hint_arm != 0); arm++) {
            const spade_ep_outcome *po = w[i].plays + (size_t)arm * plays;
            double mean = 0, var = 0;
            for (int k = 0; k < plays; k++) mean += po[k].ret / plays;
            for (int k = 0; k < plays; k++) var += (po[k].ret - mean) * (po[k].ret - mean) / plays;
            if (var <= 1e-12) continue;
            for (int k = 0; k < plays; k++) {
                spade_transcript *t = &ae.tr[arm * plays + k];
                int trained = 0;
                for (int j = 0; j < t->len; j++) trained += t->mask[j];
                if (!trained || po[k].end == SPADE_EP_FAILED) continue;
                spade_transcript *keep = &agent_tr[n_agent];
                *keep = *t; /* take the buffers over */
                spade_transcript_init(t);
                spade_grpo_sample *g = &samples[n_agent++];
                g->tokens = keep->tok;
                g->len = keep->len;
                g->mask = keep->mask;
                g->old_logprobs = keep->logp;
                g->reward = (float)po[k].ret;
                g->advantage = (float)((po[k].ret - mean) / sqrt(var));
                g->group = (arm ? 3000 : 1000) + i;
                g->role = 1;
                m->hint_arm_samples += arm;
            }
        }
    }
    m->t_play = now_s() - t2;
    double after[SPADE_SP_MAX_ENVS];
    if (o->reward == SPADE_DREWARD_LEARNING_POTENTIAL) {
        double t5 = now_s();
        int lr = lookahead(s, o, it, w, n, plays, samples, n_agent, &ao, &eo, after, err, errlen);
        if (lr != 0) {
            rc = lr;
            goto done;
        }
        m->t_lookahead = now_s() - t5;
    }

    /* 5. designer rewards, centred per family */
    const char *fam[SPADE_SP_MAX_ENVS];
    double r[SPADE_SP_MAX_ENVS];
    int keep[SPADE_SP_MAX_ENVS];
    for (int i = 0; i < n; i++) {
        int valid = w[i].gates.first_failed < 0;
        fam[i] = w[i].family;
        w[i].reward = valid ? spade_dreward(o->reward, &w[i].paired, &after[i]) : o->invalid_reward;
        if (valid) sum_reward += w[i].reward;
        r[i] = w[i].reward;
        keep[i] = valid || !o->invalid_drop;
    }
    if (played) {
        m->pass_nohint /= played;
        m->pass_hint /= played;
        m->regret /= played;
    } else m->pass_nohint = m->pass_hint = m->regret = NAN;
    m->designer_reward = m->valid ? sum_reward / m->valid : NAN;
    lp_means(o, w, n, after, m);
    spade_center_per_family(r, fam, keep, n);

    /* 6. one update on both roles' samples */
    double t3 = now_s();
    int ns = n_agent;
    for (int i = 0; o->train_designer && !o->n_files && i < n; i++) {
        if (!keep[i] || fabs(r[i]) < 1e-12) continue; /* a centred reward of 0 carries no signal */
        spade_grpo_sample *g = &samples[ns++];
        g->tokens = w[i].tr.tok;
        g->len = w[i].tr.len;
        g->mask = w[i].tr.mask;
        g->old_logprobs = w[i].tr.logp;
        g->reward = (float)w[i].reward;
        g->advantage = (float)r[i];
        g->group = i;
        g->role = 0;
        m->designer_samples++;
    }
    m->agent_samples = n_agent;
    if (ns > 0) {
        spade_grpo_opts go = o->rl.grpo;
        go.adv_mode = SPADE_GRPO_ADV_GIVEN;
        go.token_norm = SPADE_GRPO_NORM_ROLE;
        spade_grpo_stats st;
        if (spade_grpo_update(s->p, NULL, samples, ns, &go, &o->rl.adamw, &st, err, errlen) < 0) goto done;
        m->loss = st.loss;
        m->grad_norm = st.grad_norm;
        m->role_grad_norm[0] = st.role_grad_norm[0];
        m->role_grad_norm[1] = st.role_grad_norm[1];
    }
    m->t_update = now_s() - t3;

    /* 7. the archive, one transaction */
    double t4 = now_s();
    if (s->archive) {
        if (spade_archive_begin(s->archive, err, errlen) < 0) goto done;
        for (int i = n; i < n_all; i++) { /* played again: new plays of their archived rows */
            double s0[256], s1[256], r0[256], r1[256];
            for (int k = 0; k < plays; k++) {
                s0[k] = w[i].plays[k].success, s1[k] = w[i].plays[plays + k].success;
                r0[k] = w[i].plays[k].ret, r1[k] = w[i].plays[plays + k].ret;
            }
            if (spade_archive_add_plays(s->archive, w[i].archive_id, plays, w[i].seeds, s0, s1, r0, r1, err, errlen) < 0)
                goto done;
        }
        for (int i = 0; i < n; i++) {
            spade_archive_env e = {0};
            e.iteration = it;
            snprintf(e.family, sizeof e.family, "%s", w[i].family);
            snprintf(e.corpus_item, sizeof e.corpus_item, "%s", w[i].corpus_item);
            e.source = w[i].source ? w[i].source : "";
            e.source_len = w[i].source ? w[i].source_len : 0;
            /* the hint used: the self-written one, else what the hint arm saw at its first seed */
            snprintf(e.hint, sizeof e.hint, "%s", w[i].hint ? w[i].hint : w[i].hint_seen);
            e.hash = spade_source_fingerprint(e.source, e.source_len);
            int ff = w[i].gates.first_failed;
            if (ff >= 0) {
                snprintf(e.gate, sizeof e.gate, "%s", spade_gate_name((spade_gate)ff));
                snprintf(e.reason, sizeof e.reason, "%s", w[i].gates.detail[ff]);
                e.pass_nohint = e.pass_hint = e.regret = NAN;
            } else {
                e.pass_nohint = w[i].paired.pass_nohint;
                e.pass_hint = w[i].paired.pass_hint;
                e.regret = w[i].paired.regret;
                e.plays = plays;
            }
            e.reward = w[i].reward;
            e.embedding = w[i].embedding;
            e.embed_dim = SPADE_VENDI_DIM;
            long id;
            if (spade_archive_add_env(s->archive, &e, &id, err, errlen) < 0) goto done;
            if (ff < 0) {
                double s0[256], s1[256], r0[256], r1[256];
                for (int k = 0; k < plays; k++) {
                    s0[k] = w[i].plays[k].success, s1[k] = w[i].plays[plays + k].success;
                    r0[k] = w[i].plays[k].ret, r1[k] = w[i].plays[plays + k].ret;
                }
                if (spade_archive_add_plays(s->archive, id, plays, w[i].seeds, s0, s1, r0, r1, err, errlen) < 0) goto done;
            }
        }
    }
    /* diversity of this iteration's valid environments */
    if (m->valid > 0) {
        double *X = malloc((size_t)m->valid * SPADE_VENDI_DIM * sizeof *X), v;
        int k = 0;
        for (int i = 0; X && i < n; i++)
            if (w[i].gates.first_failed < 0) {
                for (int d = 0; d < SPADE_VENDI_DIM; d++) X[(size_t)k * SPADE_VENDI_DIM + d] = w[i].embedding[d];
                k++;
            }
        if (X && spade_vendi(X, k, SPADE_VENDI_DIM, &v, err, errlen) == 0) m->vendi_n = v / k;
        /* template mode: the same over the games the fillings set, which Vendi/n of the fillings
         * (every one a different text) cannot see */
        k = 0;
        for (int i = 0; X && o->n_templates > 0 && i < n; i++)
            if (w[i].gates.first_failed < 0) {
                for (int d = 0; d < SPADE_VENDI_DIM; d++) X[(size_t)k * SPADE_VENDI_DIM + d] = w[i].games[d];
                k++;
            }
        if (k > 0 && spade_vendi(X, k, SPADE_VENDI_DIM, &v, err, errlen) == 0) m->vendi_n_games = v / k;
        free(X);
    }
    if (s->archive) {
        char json[4096];
        spade_selfplay_metrics_json(m, json, sizeof json);
        if (spade_archive_add_iteration(s->archive, it, json, err, errlen) < 0 ||
            spade_archive_commit(s->archive, err, errlen) < 0)
            goto done;
    }
    m->t_archive = now_s() - t4;
    rc = 0;
done:
    if (rc != 0 && s->archive) spade_archive_rollback_after(s->archive, it - 1, NULL, 0);
    spade_decoder_free(dec);
    for (int i = 0; w && i < n_all; i++) {
        spade_transcript_free(&w[i].tr);
        free(w[i].source);
        free(w[i].plays);
        free(w[i].hint);
    }
    for (int k = 0; ae.tr && k < ae.n; k++) spade_transcript_free(&ae.tr[k]);
    for (int k = 0; agent_tr && k < n_agent; k++) spade_transcript_free(&agent_tr[k]);
    free(ae.tr);
    free(agent_tr);
    free(samples);
    free(w);
    free(refs);
    free(ref_names);
    return rc;
}

static void num(char *b, size_t cap, double v) {
    if (isfinite(v)) snprintf(b, cap, "%.6g", v);
    else snprintf(b, cap, "null");
}

void spade_selfplay_metrics_json(const spade_selfplay_metrics *m, char *out, size_t cap) {
    char p0[32], p1[32], rg[32], dr[32], vn[32], gates[600] = "";
    num(p0, sizeof p0, m->pass_nohint);
    num(p1, sizeof p1, m->pass_hint);
    num(rg, sizeof rg, m->regret);
    num(dr, sizeof dr, m->designer_reward);
    num(vn, sizeof vn, m->vendi_n);
    char lp[32], pa[32], vg[32];
    num(vg, sizeof vg, m->vendi_n_games);
    num(lp, sizeof lp, m->learning_potential);
    num(pa, sizeof pa, m->pass_after);
    size_t at = 0;
    for (int g = 0; g < SPADE_GATE_COUNT; g++)
        at += (size_t)snprintf(gates + at, sizeof gates - at, "%s\"%s\":%d", g ? "," : "", spade_gate_name((spade_gate)g),
                               m->failed_gate[g]);
    snprintf(out, cap,
             "{\"iteration\":%d,\"written\":%d,\"valid\":%d,\"kept\":%d,\"replayed\":%d,\"failed_at\":{%s},\"pass\":%s,\"pass_hint\":%s,\"regret\":%s,"
             "\"designer_reward\":%s,\"vendi_n\":%s,\"designer_samples\":%d,\"agent_samples\":%d,\"source_tokens\":%ld,"
             "\"hint_tokens\":%ld,"
             "\"loss\":%.6g,\"grad_norm\":%.6g,\"grad_norm_designer\":%.6g,\"grad_norm_agent\":%.6g,"
             "\"pool_success\":%.6g,"
             "\"learning_potential\":%s,\"pass_after\":%s,\"vendi_n_games\":%s,\"hint_arm_samples\":%d,"
             "\"t_design\":%.3f,\"t_gates\":%.3f,\"t_play\":%.3f,\"t_update\":%.3f,\"t_archive\":%.3f,\"t_lookahead\":%.3f}",
             m->iteration, m->written, m->valid, m->kept, m->replayed, gates, p0, p1, rg, dr, vn, m->designer_samples, m->agent_samples,
             m->source_tokens, m->hint_tokens, m->loss, m->grad_norm, m->role_grad_norm[0], m->role_grad_norm[1], m->pool.success_rate,
             lp, pa, vg, m->hint_arm_samples,
             m->t_design, m->t_gates, m->t_play, m->t_update, m->t_archive, m->t_lookahead);
}
