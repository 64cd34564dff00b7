/* policy_agent.c — the policy playing through the episode layer
 * (policy_agent.h): slots, batched prefill and decode, transcripts.
 *
 * What it is not: the transcript format (transcript.c) or the decoder
 * (core/policy/decode.c).
 */
#include "agent/policy_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errbuf.h"
#include "policy/bpe.h"
#include "rng.h"
#include "runtime.h"

typedef struct ep_state {
    int slot;
    int synced; /* transcript tokens already in the slot */
    int open_action; /* the last action was cut by max tokens: its end of turn is still to come */
    spade_transcript tr;
} ep_state;

typedef struct pa {
    spade_policy *p;
    spade_tokenizer *tok;
    spade_decoder *dec;
    spade_policy_agent_opts o;
    int *free_slots, n_free;
    /* per-call scratch, sized for max_live */
    int *slots, *counts, *status, *out_tok, *out_len, *out_status, *max_tokens, *which;
    const int **toks;
    float *out_logp;
    uint64_t *seeds;
    int T; /* tokens a turn may sample: max_action_tokens + reasoning_tokens */
    int stops[2], n_stops, end_of_turn; /* the tokenizer's (<|end|>, or <|im_end|> and EOS) */
    char *action; /* the actions of this call, each NUL-terminated, stride action_cap */
    size_t action_cap;
    long sampled, turns;
} pa;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Adds the seconds since t to *acc, when the caller asked for them. */
static void add_since(double *acc, double t) {
    if (acc) *acc += now_s() - t;
}

void spade_policy_agent_opts_default(spade_policy_agent_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_live = 32;
    o->max_action_tokens = 48;
    o->temperature = 1.0f;
    o->top_p = 1.0f;
}

static int pa_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    pa *a = ctx;
    if (a->n_free == 0) {
        spade_errf(err, errlen, "policy agent: more live episodes than its %d decoding slots (raise agent max_live)",
                   a->o.max_live);
        return -1;
    }
    ep_state *s = calloc(1, sizeof *s);
    if (!s) {
        spade_errf(err, errlen, "policy agent: out of memory");
        return -1;
    }
    s->slot = a->free_slots[--a->n_free];
    spade_transcript_init(&s->tr);
    if (spade_decoder_reset(a->dec, s->slot, err, errlen) < 0) {
        a->free_slots[a->n_free++] = s->slot;
        free(s);
        return -1;
    }
    (void)v;
    *state = s;
    return 0;
}

static int pa_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    pa *a = ctx;
    int live = 0;
    for (int i = 0; i < n; i++) {
        const spade_ep_view *v = &views[i];
        ep_state *s = v->state;
        acts[i] = (spade_ep_act){0};
        if (v->step == 0)
            spade_transcript_agent_open_budget(&s->tr, a->tok, v->obs, spade_ep_obs_len_without_hint(v), v->hint,
                                               v->hint_len, a->o.reasoning_tokens);
        else {
            if (s->open_action) spade_transcript_close_turn(&s->tr, a->tok);
            spade_transcript_agent_turn(&s->tr, a->tok, v->obs, v->obs_len);
        }
        s->open_action = 0;
        if (s->tr.oom) {
            spade_errf(err, errlen, "policy agent: out of memory for a transcript");
            return -1;
        }
        a->slots[live] = s->slot;
        a->toks[live] = s->tr.tok + s->synced;
        a->counts[live] = s->tr.len - s->synced;
        a->which[live++] = i;
    }
    double t = now_s();
    if (live && spade_decoder_append_batch(a->dec, a->slots, a->toks, a->counts, live, a->status, err, errlen) < 0)
        return -1;
    add_since(a->o.t_prefill, t);
    int m = 0; /* the episodes that fit go on to sampling */
    for (int k = 0; k < live; k++) {
        int i = a->which[k];
        ep_state *s = views[i].state;
        if (a->status[k] == SPADE_SLOT_CONTEXT_FULL) { /* the transcript keeps only what the policy read */
            s->tr.len = s->synced;
            acts[i].stop = "context_full";
            continue;
        }
        s->synced = s->tr.len;
        int room = spade_policy_config(a->p)->context - spade_decoder_len(a->dec, s->slot);
        if (room <= 0) {
            acts[i].stop = "context_full";
            continue;
        }
        a->slots[m] = s->slot;
        a->max_tokens[m] = room < a->T ? room : a->T;
        /* a repeat of a seed draws its own stream (repeat 0 is the stream without repeats); both arms of a
         * (seed, repeat) draw the same one, common random numbers: where the hint changes nothing they play
         * alike, so the pair's difference (regret) carries the hint's effect and less sampling noise */
        uint64_t es = views[i].repeat
                          ? spade_mix64(views[i].seed ^ spade_mix64(0x72657074ULL + (uint64_t)views[i].repeat))
                          : views[i].seed;
        uint64_t arm = a->o.arm_streams && views[i].hint != NULL;
        a->seeds[m] = spade_mix64(a->o.seed ^ spade_mix64(es ^ spade_mix64((uint64_t)views[i].step * 2 + arm)));
        a->which[m++] = i;
    }
    if (!m) return 0;
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = a->o.temperature;
    so.top_p = a->o.top_p;
    so.max_tokens = a->T;
    so.stop = a->stops;
    so.n_stop = a->n_stops;
    t = now_s();
    if (spade_decoder_sample(a->dec, a->slots, m, &so, a->seeds, a->max_tokens, a->out_tok, a->out_logp, a->out_len,
                             a->out_status, err, errlen) < 0)
        return -1;
    add_since(a->o.t_decode, t);
    for (int k = 0; k < m; k++) {
        int i = a->which[k];
        ep_state *s = views[i].state;
        const int *t = a->out_tok + (size_t)k * a->T;
        int len = a->out_len[k], last = len > 0 ? t[len - 1] : -1;
        int stopped = last >= 0 && (last == a->stops[0] || (a->n_stops > 1 && last == a->stops[1]));
        spade_transcript_sampled(&s->tr, t, a->out_logp + (size_t)k * a->T, len);
        s->synced = s->tr.len; /* the decoder appended the drawn tokens itself */
        s->open_action = last != a->end_of_turn; /* an EOS that is not the end of turn still needs one */
        a->sampled += len;
        a->turns++;
        char *out = a->action + (size_t)k * a->action_cap;
        size_t got = 0;
        spade_tokenizer_decode(a->tok, t, (size_t)(stopped ? len - 1 : len), 0, out, a->action_cap, &got);
        if (got >= a->action_cap) got = a->action_cap - 1;
        if (a->o.reasoning_tokens > 0) { /* the answer of what it wrote: what the DSL's parsers read first */
            size_t at = 0, n_ans = got;
            spade_answer_span(out, got, &at, &n_ans);
            memmove(out, out + at, n_ans);
            out[n_ans] = 0;
            got = n_ans;
        }
        acts[i].text = out;
        acts[i].len = got;
    }
    return 0;
}

static void pa_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    pa *a = ctx;
    ep_state *s = state;
    (void)v;
    if (!s) return;
    if (a->o.on_episode && !s->tr.oom) a->o.on_episode(a->o.ctx, o, &s->tr);
    a->free_slots[a->n_free++] = s->slot;
    spade_transcript_free(&s->tr);
    free(s);
}

static void pa_free(void *ctx) {
    pa *a = ctx;
    if (!a) return;
    spade_decoder_free(a->dec);
    free(a->free_slots);
    free(a->slots);
    free(a->counts);
    free(a->status);
    free(a->out_tok);
    free(a->out_len);
    free(a->out_status);
    free(a->max_tokens);
    free(a->which);
    free(a->toks);
    free(a->out_logp);
    free(a->seeds);
    free(a->action);
    free(a);
}

spade_agent *spade_agent_policy(spade_policy *p, const spade_policy_agent_opts *o, char *err, size_t errlen) {
    if (o->max_live < 1 || o->max_action_tokens < 1 || o->reasoning_tokens < 0 || o->reasoning_tokens > 1 << 20) {
        spade_errf(err, errlen,
                   "policy agent: max_live (%d) and max_action_tokens (%d) must be >= 1, reasoning_tokens (%d) in "
                   "[0, 1048576]",
                   o->max_live, o->max_action_tokens, o->reasoning_tokens);
        return NULL;
    }
    spade_tokenizer *tk = spade_policy_tokenizer(p);
    const spade_bpe *bpe = spade_tokenizer_bpe(tk);
    if (bpe && (spade_bpe_find(bpe, "<|im_start|>") < 0 || spade_bpe_find(bpe, "<|im_end|>") < 0)) {
        spade_errf(err, errlen,
                   "policy agent: the model's vocabulary has no <|im_start|>/<|im_end|>: spade lays a pretrained "
                   "model's turns out in ChatML only");
        return NULL;
    }
    pa *a = calloc(1, sizeof *a);
    spade_agent *ag = calloc(1, sizeof *ag);
    if (!a || !ag) goto oom;
    a->p = p;
    a->tok = spade_policy_tokenizer(p);
    a->o = *o;
    int L = o->max_live, T = o->max_action_tokens + o->reasoning_tokens;
    a->T = T;
    a->n_stops = spade_tokenizer_turn_stops(a->tok, a->stops, 2);
    a->end_of_turn = spade_tokenizer_end_of_turn(a->tok);
    a->action_cap = (size_t)T * 64 + 1;
    if (spade_decoder_new(&a->dec, p, L, err, errlen) < 0) goto fail;
    a->free_slots = malloc(L * sizeof(int));
    a->slots = malloc(L * sizeof(int));
    a->counts = malloc(L * sizeof(int));
    a->status = malloc(L * sizeof(int));
    a->out_tok = malloc((size_t)L * T * sizeof(int));
    a->out_len = malloc(L * sizeof(int));
    a->out_status = malloc(L * sizeof(int));
    a->max_tokens = malloc(L * sizeof(int));
    a->which = malloc(L * sizeof(int));
    a->toks = malloc(L * sizeof(int *));
    a->out_logp = malloc((size_t)L * T * sizeof(float));
    a->seeds = malloc(L * sizeof(uint64_t));
    a->action = malloc((size_t)L * a->action_cap);
    if (!a->free_slots || !a->slots || !a->counts || !a->status || !a->out_tok || !a->out_len || !a->out_status ||
        !a->max_tokens || !a->which || !a->toks || !a->out_logp || !a->seeds || !a->action)
        goto oom;
    for (int i = 0; i < L; i++) a->free_slots[i] = L - 1 - i; /* slot 0 is handed out first */
    a->n_free = L;
    ag->name = "policy";
    ag->wants = 0;
    ag->ctx = a;
    ag->begin = pa_begin;
    ag->act = pa_act;
    ag->end = pa_end;
    ag->free = pa_free;
    return ag;
oom:
    spade_errf(err, errlen, "policy agent: out of memory");
fail:
    pa_free(a);
    free(ag);
    return NULL;
}

void spade_policy_agent_counts(const spade_agent *ag, long *sampled_tokens, long *turns) {
    const pa *a = ag->ctx;
    if (sampled_tokens) *sampled_tokens = a->sampled;
    if (turns) *turns = a->turns;
}
