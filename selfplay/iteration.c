/* iteration.c — the phases of one self-play iteration (iteration.h).
 *
 * What it is not: their order and the stop/kill points between them
 * (loop.c), nor any role's logic: each phase hands its data to a room
 * (designer/, agent/, core/) and keeps what comes back.
 */
#include "selfplay/iteration.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "designer/hints.h"
#include "designer/remote_designer.h"
#include "episodes.h"
#include "errbuf.h"
#include "killpoint.h"
#include "rng.h"
#include "selfplay/template.h"
#include "source.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t count_tokens(void *ctx, const char *text, size_t len) { return spade_tokenizer_count(ctx, text, len); }

/* Where the source in a completion lies: the first ``` fenced block when
 * there is one (its language tag dropped), else the whole text. */
static void extract_range(const char *text, size_t len, size_t *at, size_t *n) {
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
    *at = (size_t)(start - text);
    *n = (size_t)(end - start);
}

char *spade_extract_source(const char *text, size_t len, size_t *out_len) {
    size_t at, n;
    extract_range(text, len, &at, &n);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, text + at, n);
    out[n] = 0;
    if (out_len) *out_len = n;
    return out;
}

static int stopped(const spade_sp_iter *x) { return x->stop && *x->stop; }

static int oom(char *err, size_t errlen, const char *what) {
    spade_errf(err, errlen, "self-play: out of memory%s%s", what ? " for " : "", what ? what : "");
    return -1;
}

int spade_sp_begin(spade_sp_iter *x, spade_selfplay *s, const spade_selfplay_opts *o, int it,
                   const volatile sig_atomic_t *stop, spade_selfplay_metrics *m, char *err, size_t errlen) {
    memset(x, 0, sizeof *x);
    memset(m, 0, sizeof *m);
    m->iteration = it;
    m->vendi_n = NAN;
    m->vendi_n_games = NAN;
    m->learning_potential = m->pass_after = NAN;
    int K = o->regen_every > 1 ? o->regen_every : 1;
    x->regen = it % K == 0;
    x->base_it = it - it % K;
    x->n = !x->regen ? 0 : o->envs < SPADE_SP_MAX_ENVS ? o->envs : SPADE_SP_MAX_ENVS;
    x->n_all = x->n;
    x->plays = o->plays > SPADE_SP_MAX_PLAYS ? SPADE_SP_MAX_PLAYS : o->plays;
    x->R = o->repeats > 1 ? o->repeats : 1; /* plays of a seed an arm */
    if (x->plays % x->R) {
        spade_errf(err, errlen, "self-play: plays (%d) is not a multiple of repeats (%d)", x->plays, x->R);
        return -1;
    }
    x->s = s;
    x->o = o;
    x->it = it;
    x->stop = stop;
    x->m = m;
    x->alloc = malloc;
    x->t0 = now_s();
    for (int i = 0; i < SPADE_SP_MAX_ENVS; i++) x->after[i] = NAN;
    x->w = calloc(2 * SPADE_SP_MAX_ENVS, sizeof *x->w);
    x->ae = (spade_kept_episodes){.tr = calloc((size_t)2 * x->plays, sizeof(spade_transcript)), .n = 2 * x->plays};
    /* agent samples: both arms' plays of every environment played (train_hint_arm), and the designer's */
    x->samples = calloc((size_t)2 * SPADE_SP_MAX_ENVS * (2 * x->plays + 1), sizeof *x->samples);
    x->agent_tr = calloc((size_t)4 * SPADE_SP_MAX_ENVS * x->plays, sizeof *x->agent_tr);
    if (!x->w || !x->ae.tr || !x->samples || !x->agent_tr) return oom(err, errlen, NULL);
    return 0;
}

void spade_sp_end(spade_sp_iter *x, int rc) {
    if (!x->s) return; /* refused before anything was made */
    if (rc != 0 && x->s->archive) spade_archive_rollback_after(x->s->archive, x->it - 1, NULL, 0);
    for (int i = 0; x->w && i < x->n_all; i++) {
        spade_transcript_free(&x->w[i].tr);
        free(x->w[i].source);
        free(x->w[i].plays);
        free(x->w[i].hint);
        free(x->w[i].prompt);
        spade_gate_shown_clear(&x->w[i].shown);
    }
    for (long k = 0; x->ae.tr && k < x->ae.n; k++) spade_transcript_free(&x->ae.tr[k]);
    for (int k = 0; x->agent_tr && k < x->n_agent; k++) spade_transcript_free(&x->agent_tr[k]);
    free(x->ae.tr);
    free(x->agent_tr);
    free(x->samples);
    free(x->w);
    free(x->refs);
    free(x->ref_names);
    memset(x, 0, sizeof *x);
}

/* The fixed-pool part first: the agent trains on it alone (agent/rl.h), so
 * the paired plays below see the policy after it, as the update will. */
int spade_sp_pool(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    if (o->pool_envs <= 0 || !x->s->pool) return 0;
    spade_rl_opts ro = o->rl;
    ro.envs_per_iter = o->pool_envs;
    ro.seed = spade_mix64(o->seed ^ 0x706f6f6cULL);
    return spade_rl_iteration(x->s->p, NULL, x->s->sb, x->s->pool, x->it, &ro, x->stop, &x->m->pool, err, errlen);
}

spade_prompt_memory spade_sp_memory_entry(const spade_archive_env *e, int negative) {
    return (spade_prompt_memory){
        .source = e->source,
        .len = e->source_len,
        .family = e->family,
        .pass = e->pass_nohint,
        .regret = e->regret,
        .kind = !negative              ? 0
                : e->pass_nohint < 0.5 ? -1
                                       : +1,
    };
}

/* Slot i's memory block: the rows spade_memory_select picks, read back. A row
 * that cannot be read stops the iteration: a prompt without its memory would
 * be another prompt than the resumed run's. */
static int read_memory(spade_sp_iter *x, int i, uint64_t *rng, spade_prompt_memory *mem, spade_archive_env *got,
                       int *n_mem, char *err, size_t errlen) {
    long pos[4], neg;
    int np = 0;
    if (spade_memory_select(x->s->archive, x->w[i].family, &x->o->memory, rng, pos, &np, &neg, err, errlen) < 0)
        return -1;
    for (int k = 0; k < np + (neg >= 0) && *n_mem < 4; k++) {
        long id = k < np ? pos[k] : neg;
        char e2[400] = "";
        int g = spade_archive_get_env(x->s->archive, id, &got[*n_mem], e2, sizeof e2);
        if (g != 0) {
            spade_errf(err, errlen, "designer memory: environment %ld of the archive: %s", id,
                       g > 0 ? "not found" : e2);
            return -1;
        }
        mem[*n_mem] = spade_sp_memory_entry(&got[*n_mem], k >= np);
        (*n_mem)++;
    }
    return 0;
}

/* 1. Prompts: each slot's family, grounding excerpt and memory (or, with
 * templates, the template's one line), drawn from the slot's own stream so a
 * resumed run asks the same. */
int spade_sp_prompts(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    spade_selfplay *s = x->s;
    spade_tokenizer *tok = spade_policy_tokenizer(s->p);
    spade_sp_env *w = x->w;
    int n = x->n;
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    /* a served designer's context is not the local policy's: its prompt gets the builder's default budget */
    if (!o->remote) po.budget = spade_policy_config(s->p)->context - o->max_source_tokens - 2;
    po.count = count_tokens;
    po.count_ctx = tok;
    po.chat = spade_tokenizer_is_chat(tok); /* the request of a chat turn; the card is the system turn */
    for (int i = 0; i < n && o->n_templates > 0; i++) { /* template mode: one line, the template's family */
        const spade_template *t = w[i].tpl = o->templates[((long)x->it * n + i) % o->n_templates];
        const char *nm = spade_template_name(t), *b = strrchr(nm, '/');
        snprintf(w[i].family, sizeof w[i].family, "%s", spade_template_family(t));
        snprintf(w[i].corpus_item, sizeof w[i].corpus_item, "%s", b ? b + 1 : nm);
        char *prompt = NULL;
        size_t plen = 0;
        spade_transcript_init(&w[i].tr);
        if (spade_template_prompt(t, &prompt, &plen) < 0) return oom(err, errlen, "a prompt");
        spade_transcript_designer_open(&w[i].tr, tok, prompt, plen);
        free(prompt);
    }
    for (int i = 0; i < n && o->n_templates == 0; i++) {
        uint64_t rng = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_PROMPT);
        int f = spade_family_for_slot(o->n_families, o->family_window, x->it, i);
        snprintf(w[i].family, sizeof w[i].family, "%s", f >= 0 ? o->families[f] : "any");
        const char *excerpt = NULL, *name = NULL;
        size_t elen = 0;
        if (s->corpus && o->use_corpus) {
            const spade_corpus_item *item = spade_corpus_item_at(s->corpus, spade_corpus_draw(s->corpus, &rng));
            excerpt = item->text, elen = item->len, name = item->name;
            snprintf(w[i].corpus_item, sizeof w[i].corpus_item, "%s", item->name);
            spade_gate_shown *sh = &w[i].shown;
            sh->src[sh->n] = item->text, sh->len[sh->n] = item->len, sh->name[sh->n++] = item->name;
        }
        spade_prompt_memory mem[4];
        spade_archive_env got[4];
        int n_mem = 0, pr = 0;
        char *prompt = NULL;
        size_t plen = 0;
        if (o->use_memory && s->archive) pr = read_memory(x, i, &rng, mem, got, &n_mem, err, errlen);
        if (pr == 0)
            pr = spade_prompt_build(&po, w[i].family, name, excerpt, elen, mem, n_mem, &prompt, &plen, err, errlen);
        for (int k = 0; k < n_mem; k++) { /* the rows stay with the slot: its gates compare against them */
            spade_gate_shown *sh = &w[i].shown;
            sh->env[sh->n_env] = got[k];
            snprintf(sh->label[sh->n_env], sizeof sh->label[0], "archived environment %ld (in the memory)", got[k].id);
            sh->src[sh->n] = got[k].source, sh->len[sh->n] = got[k].source_len,
            sh->name[sh->n++] = sh->label[sh->n_env++];
        }
        if (pr < 0) return -1;
        spade_transcript_init(&w[i].tr);
        spade_transcript_designer_open(&w[i].tr, tok, prompt, plen);
        if (o->remote) /* the served designer reads the text, not our tokens */
            w[i].prompt = prompt, w[i].prompt_len = plen;
        else
            free(prompt);
        if (w[i].tr.oom) return oom(err, errlen, "a prompt");
    }
    spade_killpoint("prompts", x->it);
    return stopped(x);
}

/* The given files (designer.source = files): slot i of iteration it "writes"
 * file (it * n + i) mod n_files. */
static int write_files(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    for (int i = 0; i < x->n; i++) {
        int f = (int)(((long)x->it * x->n + i) % o->n_files);
        spade_sp_env *w = &x->w[i];
        if (!(w->source = x->alloc(o->file_lens[f] + 1))) return oom(err, errlen, NULL);
        memcpy(w->source, o->files[f], o->file_lens[f] + 1);
        w->source_len = o->file_lens[f];
        snprintf(w->corpus_item, sizeof w->corpus_item, "%s", o->file_names[f]);
    }
    return 0;
}

/* Templates: the holes of every slot sampled in one decoder; novelty and
 * Vendi compare the fillings, so their embeddings are made here. */
static int write_templates(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    int n = x->n;
    spade_template_slot *ts = x->alloc((size_t)n * sizeof *ts);
    if (!ts) return oom(err, errlen, NULL);
    memset(ts, 0, (size_t)n * sizeof *ts);
    for (int i = 0; i < n; i++) {
        ts[i].tpl = x->w[i].tpl;
        ts[i].seed = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_TEMPLATE);
        ts[i].tr = &x->w[i].tr;
    }
    spade_template_opts to = {.temperature = o->temperature, .top_p = o->top_p, .hole_tokens = o->hole_tokens};
    int dr = spade_template_decode(x->s->p, ts, n, &to, err, errlen);
    for (int i = 0; dr == 0 && i < n; i++) {
        spade_sp_env *w = &x->w[i];
        w->source = ts[i].source, w->source_len = ts[i].source_len;
        ts[i].source = NULL;
        x->m->source_tokens += ts[i].sampled;
        const char *const *fill = (const char *const *)ts[i].fill;
        int holes = spade_template_holes(ts[i].tpl);
        double e[SPADE_VENDI_DIM];
        spade_template_embed(fill, ts[i].fill_len, holes, e, SPADE_VENDI_DIM);
        for (int k = 0; k < SPADE_VENDI_DIM; k++) w->embedding[k] = (float)e[k];
        spade_template_embed_games(fill, ts[i].fill_len, holes, e, SPADE_VENDI_DIM);
        for (int k = 0; k < SPADE_VENDI_DIM; k++) w->games[k] = (float)e[k];
    }
    for (int i = 0; i < n; i++) spade_template_slot_clear(&ts[i]);
    free(ts);
    return dr < 0 ? -1 : 0;
}

/* The policy writes: every slot one decoder slot, sampled together; the
 * source is the completion's first fenced block. Out of memory here is the
 * run's failure, never an empty source the gates would call "compile". */
static int write_policy(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    spade_tokenizer *tok = spade_policy_tokenizer(x->s->p);
    int n = x->n, T = o->max_source_tokens, ctx = spade_policy_config(x->s->p)->context, rc = -1;
    int slots[SPADE_SP_MAX_ENVS], counts[SPADE_SP_MAX_ENVS], status[SPADE_SP_MAX_ENVS], maxt[SPADE_SP_MAX_ENVS],
        lens[SPADE_SP_MAX_ENVS], st2[SPADE_SP_MAX_ENVS];
    const int *toks[SPADE_SP_MAX_ENVS];
    uint64_t seeds[SPADE_SP_MAX_ENVS];
    size_t cap = (size_t)T * 64;
    int *out = NULL;
    float *lp = NULL;
    char *text = NULL;
    spade_decoder *dec = NULL;
    if (spade_decoder_new(&dec, x->s->p, n, err, errlen) < 0) return -1;
    for (int i = 0; i < n; i++) slots[i] = i, toks[i] = x->w[i].tr.tok, counts[i] = x->w[i].tr.len;
    /* the prompts share their opening (the system card, the instructions): prefilled once, copied to every slot */
    double t_pre = now_s();
    if (spade_decoder_append_shared(dec, slots, toks, counts, n, status, err, errlen) < 0) goto done;
    x->m->time.design_prefill += now_s() - t_pre;
    out = x->alloc((size_t)n * T * sizeof *out);
    lp = x->alloc((size_t)n * T * sizeof *lp);
    text = x->alloc(cap + 1);
    if (!out || !lp || !text) {
        oom(err, errlen, "the designer's sources");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int room = ctx - spade_decoder_len(dec, i);
        maxt[i] = room < 1 ? 1 : room < T ? room : T;
        seeds[i] = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_SOURCE);
    }
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = o->temperature;
    so.top_p = o->top_p;
    so.max_tokens = T;
    int stops[2];
    so.n_stop = spade_tokenizer_turn_stops(tok, stops, 2), so.stop = stops; /* <|end|>, or <|im_end|> and EOS */
    if (spade_decoder_sample(dec, slots, n, &so, seeds, maxt, out, lp, lens, st2, err, errlen) < 0) goto done;
    for (int i = 0; i < n; i++) {
        spade_sp_env *w = &x->w[i];
        const int *t = out + (size_t)i * T;
        int len = lens[i], ended = len > 0 && (t[len - 1] == stops[0] || (so.n_stop > 1 && t[len - 1] == stops[1]));
        spade_transcript_sampled(&w->tr, t, lp + (size_t)i * T, len);
        x->m->source_tokens += len;
        size_t got = 0, at = 0;
        spade_tokenizer_decode(tok, t, (size_t)(ended ? len - 1 : len), 0, text, cap + 1, &got);
        extract_range(text, got < cap ? got : cap, &at, &w->source_len);
        if (w->tr.oom || !(w->source = x->alloc(w->source_len + 1))) {
            oom(err, errlen, "the designer's sources");
            goto done;
        }
        memcpy(w->source, text + at, w->source_len);
        w->source[w->source_len] = 0;
    }
    rc = 0;
done:
    free(text);
    free(out);
    free(lp);
    spade_decoder_free(dec);
    return rc;
}

/* A served designer writes (designer.source = remote): every slot's prompt
 * in one batch, the source its reply's first fenced block as the policy's
 * would be; replies the archive recorded for this iteration are read back,
 * not asked again. */
static int write_remote(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    int n = x->n;
    const char *prompts[SPADE_SP_MAX_ENVS] = {0};
    size_t lens[SPADE_SP_MAX_ENVS] = {0}, text_lens[SPADE_SP_MAX_ENVS] = {0};
    uint64_t seeds[SPADE_SP_MAX_ENVS] = {0};
    char *texts[SPADE_SP_MAX_ENVS] = {0};
    for (int i = 0; i < n; i++) {
        prompts[i] = x->w[i].prompt ? x->w[i].prompt : "", lens[i] = x->w[i].prompt_len;
        seeds[i] = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_SOURCE);
    }
    spade_designer_remote_opts ro = {.max_tokens = o->max_source_tokens, .temperature = o->temperature};
    if (spade_designer_remote_write(o->remote, x->s->archive, x->it, n, prompts, lens, seeds, &ro, texts, text_lens,
                                    &x->m->remote_asked, &x->m->remote_recorded, err, errlen) < 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        spade_sp_env *w = &x->w[i];
        size_t at = 0;
        extract_range(texts[i], text_lens[i], &at, &w->source_len);
        if (rc == 0 && !(w->source = x->alloc(w->source_len + 1))) rc = oom(err, errlen, "the designer's sources");
        if (w->source) {
            memcpy(w->source, texts[i] + at, w->source_len);
            w->source[w->source_len] = 0;
        }
        free(texts[i]);
    }
    return rc;
}

/* 2. The designer writes: given files, template fillings, a served model's
 * replies or the policy's samples; one writer per run (designer.source). */
int spade_sp_write(spade_sp_iter *x, char *err, size_t errlen) {
    if (x->n == 0) return 0; /* not a writing iteration (selfplay.regen_every) */
    if (x->o->n_files > 0) return write_files(x, err, errlen);
    if (x->o->remote) return write_remote(x, err, errlen);
    if (x->o->n_templates > 0) return write_templates(x, err, errlen);
    return write_policy(x, err, errlen);
}

/* 3. Hints (designer.hint = self): the same policy reads each source and
 * writes the hint its hint arm will see; then the writing is done. */
int spade_sp_hints(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    if (o->hint_self && x->n > 0) {
        const char *src[SPADE_SP_MAX_ENVS];
        size_t len[SPADE_SP_MAX_ENVS], hint_len[SPADE_SP_MAX_ENVS];
        char *hint[SPADE_SP_MAX_ENVS];
        uint64_t seeds[SPADE_SP_MAX_ENVS];
        for (int i = 0; i < x->n; i++) {
            src[i] = x->w[i].source, len[i] = x->w[i].source_len;
            seeds[i] = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_HINT);
        }
        spade_hints_opts ho = {.temperature = o->hint_temperature,
                               .top_p = o->top_p,
                               .max_tokens = o->hint_tokens,
                               .max_len = sizeof x->w[0].hint_seen - 1};
        int hr =
            spade_hints_write(x->s->p, &ho, src, len, seeds, x->n, hint, hint_len, &x->m->hint_tokens, err, errlen);
        for (int i = 0; i < x->n; i++) x->w[i].hint = hint[i], x->w[i].hint_len = hint_len[i];
        if (hr < 0) return -1;
    }
    x->m->written = x->n;
    x->m->t_design = now_s() - x->t0;
    spade_killpoint("written", x->it);
    return stopped(x);
}

/* 4. Gates: each written source judged alone; novelty against the corpus and
 * this iteration's earlier valid ones (the fillings, in template mode, whose
 * sources are near-duplicates of each other by construction). */
int spade_sp_gates(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    spade_selfplay *s = x->s;
    spade_selfplay_metrics *m = x->m;
    int n = x->n;
    double t1 = now_s();
    x->refs = malloc((size_t)(s->n_refs + n) * SPADE_VENDI_DIM * sizeof *x->refs);
    x->ref_names = malloc((size_t)(s->n_refs + n) * sizeof *x->ref_names);
    if (!x->refs || !x->ref_names) return oom(err, errlen, NULL);
    x->n_refs = o->n_templates > 0 ? 0 : s->n_refs;
    if (x->n_refs) memcpy(x->refs, s->refs, (size_t)x->n_refs * SPADE_VENDI_DIM * sizeof *x->refs);
    for (int k = 0; k < x->n_refs; k++) x->ref_names[k] = s->ref_names[k];
    for (int i = 0; i < n; i++) {
        spade_sp_env *w = &x->w[i];
        char file[64];
        snprintf(file, sizeof file, "iteration-%d-env-%d.c", x->it, i);
        const char *src = w->source ? w->source : "";
        size_t len = w->source ? w->source_len : 0;
        double *e = x->refs + (size_t)x->n_refs * SPADE_VENDI_DIM; /* its embedding, a reference if valid */
        spade_gate_opts go = o->gates;
        go.refs = x->refs;
        go.ref_names = x->ref_names;
        go.n_refs = x->n_refs;
        go.dim = SPADE_VENDI_DIM;
        go.hint = w->hint;
        go.hint_len = w->hint_len;
        go.run_seed = o->seed; /* the gates' seeds: from the source and the run seed */
        if (o->n_templates == 0 && o->n_files == 0) { /* written from its prompt: not given files, not a template */
            go.shown = w->shown.src;
            go.shown_len = w->shown.len;
            go.shown_names = w->shown.name;
            go.n_shown = w->shown.n;
        }
        if (o->n_templates > 0) { /* the filling's embedding, made when it was decoded */
            for (int k = 0; k < SPADE_VENDI_DIM; k++) e[k] = w->embedding[k];
            go.embedding = e;
        }
        if (spade_gates_run(s->sb, file, src, len, &go, &w->gates, err, errlen) < 0) return -1;
        if (o->n_templates == 0) {
            spade_vendi_embed(src, len, e, SPADE_VENDI_DIM);
            for (int k = 0; k < SPADE_VENDI_DIM; k++) w->embedding[k] = (float)e[k];
        }
        if (w->gates.first_failed < 0) {
            m->valid++;
            snprintf(x->names[i], sizeof x->names[i], "this iteration's environment %d", i);
            x->ref_names[x->n_refs++] = x->names[i];
        } else
            m->failed_gate[w->gates.first_failed]++;
        if (stopped(x)) return 1;
    }
    m->t_gates = now_s() - t1;
    spade_killpoint("gates", x->it);
    return 0;
}

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
    /* insertion into the top list; ties: the newer kept */
    int full = p->n == p->limit, at = full ? p->limit - 1 : p->n++;
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

/* Appends the environments p names, read from the archive, to w[n_all..);
 * returns how many. */
static int load_envs(spade_sp_iter *x, const pick *p, char *err, size_t errlen) {
    int k = 0;
    for (int i = p->n - 1; i >= 0 && x->n_all < 2 * SPADE_SP_MAX_ENVS; i--) { /* each_env walks newest first */
        spade_archive_env e;
        if (spade_archive_get_env(x->s->archive, p->id[i], &e, err, errlen) != 0) return -1;
        spade_sp_env *w = &x->w[x->n_all++];
        w->source = (char *)e.source;
        w->source_len = e.source_len;
        e.source = NULL;
        snprintf(w->corpus_item, sizeof w->corpus_item, "%s", e.corpus_item);
        snprintf(w->family, sizeof w->family, "%s", e.family);
        w->gates.first_failed = -1;
        w->archive_id = e.id;
        if (e.embedding && e.embed_dim == SPADE_VENDI_DIM) memcpy(w->embedding, e.embedding, sizeof w->embedding);
        spade_transcript_init(&w->tr);
        if (x->o->hint_self) { /* played again with the hint it was archived with, not a new one */
            w->hint_len = strlen(e.hint);
            w->hint = malloc(w->hint_len + 1);
            if (w->hint) memcpy(w->hint, e.hint, w->hint_len + 1);
        }
        spade_archive_env_clear(&e);
        if (x->o->hint_self && !w->hint) return oom(err, errlen, NULL);
        k++;
    }
    return k;
}

/* Read with the memory, before anything is written: the environments played
 * again, the last writing's valid ones (selfplay.regen_every) and past ones
 * by regret (selfplay.replay), after the ones written now in w. */
int spade_sp_replays(spade_sp_iter *x, char *err, size_t errlen) {
    spade_archive *a = x->s->archive;
    const spade_selfplay_opts *o = x->o;
    if (a && !x->regen) {
        pick pk = {.only = x->base_it, .before = 0, .limit = SPADE_SP_MAX_ENVS};
        if (spade_archive_each_env(a, 1, NULL, 0, pick_env, &pk, err, errlen) < 0) return -1;
        int k = load_envs(x, &pk, err, errlen);
        if (k < 0) return -1;
        x->m->kept = k;
    }
    if (a && o->replay > 0) {
        int limit = o->replay < SPADE_SP_MAX_ENVS ? o->replay : SPADE_SP_MAX_ENVS;
        pick pk = {.only = -1, .before = x->base_it, .limit = limit};
        if (spade_archive_each_env(a, 1, NULL, o->memory.window, pick_env, &pk, err, errlen) < 0) return -1;
        int k = load_envs(x, &pk, err, errlen);
        if (k < 0) return -1;
        x->m->replayed = k;
    }
    return 0;
}

int spade_sp_agent_samples(spade_sp_iter *x, int i, char *err, size_t errlen) {
    int plays = x->plays;
    const spade_sp_env *w = &x->w[i];
    spade_grpo_opts zo;
    spade_grpo_opts_default(&zo);
    zo.adv_mode = SPADE_GRPO_ADV_GROUP_Z;
    zo.role_norm = 0; /* the update normalises the roles, once, over every sample */
    spade_grpo_sample g[SPADE_SP_MAX_PLAYS];
    float adv[SPADE_SP_MAX_PLAYS];
    int kept[SPADE_SP_MAX_PLAYS];
    for (int arm = 0; arm < 1 + (x->o->train_hint_arm != 0); arm++) {
        const spade_ep_outcome *po = w->plays + (size_t)arm * plays;
        /* the group is every play of the arm, failed ones included: they are what the agent did */
        for (int k = 0; k < plays; k++) g[k] = (spade_grpo_sample){.reward = (float)po[k].ret, .role = 1};
        if (spade_grpo_advantages(g, plays, &zo, adv, kept, NULL, NULL, err, errlen) != 0) return -1;
        for (int k = 0; k < plays; k++) {
            spade_transcript *t = &x->ae.tr[arm * plays + k];
            int trained = 0;
            for (int j = 0; j < t->len; j++) trained += t->mask[j];
            if (!kept[k] || !trained || po[k].end == SPADE_EP_FAILED) continue;
            spade_transcript *keep = &x->agent_tr[x->n_agent];
            *keep = *t; /* take the buffers over */
            spade_transcript_init(t);
            x->samples[x->n_agent++] = (spade_grpo_sample){
                .tokens = keep->tok,
                .len = keep->len,
                .mask = keep->mask,
                .old_logprobs = keep->logp,
                .reward = (float)po[k].ret,
                .advantage = adv[k],
                .group = (arm ? 3000 : 1000) + i,
                .role = 1,
                .temperature = x->ao.temperature, /* its old log-probs' distribution */
                .top_p = x->ao.top_p,
            };
            x->m->hint_arm_samples += arm;
        }
    }
    return 0;
}

/* 5. Paired plays: every valid environment played with and without its hint
 * on the same seeds by one policy snapshot, before anything trains, so
 * regret measures the hint and nothing else; the agent's samples come from
 * the same plays. */
int spade_sp_plays(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    spade_selfplay_metrics *m = x->m;
    int plays = x->plays, R = x->R;
    double t2 = now_s();
    spade_policy_agent_opts_default(&x->ao);
    x->ao.max_live = o->rl.max_live > 2 * plays ? o->rl.max_live : 2 * plays;
    x->ao.max_action_tokens = o->rl.max_action_tokens;
    x->ao.reasoning_tokens = o->rl.reasoning_tokens;
    x->ao.temperature = o->rl.temperature;
    x->ao.top_p = o->rl.top_p;
    x->ao.on_episode = spade_keep_episode;
    x->ao.ctx = &x->ae;
    x->ao.t_prefill = &m->time.play_prefill; /* parts of the play's time */
    x->ao.t_decode = &m->time.play_decode;
    spade_episodes_opts_default(&x->eo);
    x->eo.max_live = x->ao.max_live;
    x->eo.stop = x->stop;
    for (int i = 0; i < x->n_all; i++) {
        spade_sp_env *w = &x->w[i];
        if (w->gates.first_failed >= 0) continue;
        x->played++;
        x->ao.seed = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_AGENT);
        uint64_t distinct[SPADE_SP_MAX_PLAYS]; /* plays / R seeds, each played R times in a row */
        for (int k = 0; k < plays / R; k++)
            distinct[k] = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_SEED + (uint64_t)k);
        w->plays = calloc((size_t)2 * plays, sizeof *w->plays);
        if (!w->plays) return oom(err, errlen, NULL);
        spade_agent *a = spade_agent_policy(x->s->p, &x->ao, err, errlen);
        if (!a) return -1;
        spade_ep_spec spec = {
            .filename = "generated.c", .source = w->source, .len = w->source_len, .expected = 2 * plays};
        const char *hint1[1] = {w->hint};
        size_t hint1_len[1] = {w->hint_len};
        x->eo.hints = w->hint ? hint1 : NULL;
        x->eo.hint_lens = hint1_len;
        for (int k = 0; k < 2 * plays; k++) spade_transcript_clear(&x->ae.tr[k]);
        x->ae.oom = 0;
        spade_hint_spy spy;
        spade_hint_spy_init(&spy, a, w->hint_seen, sizeof w->hint_seen);
        int pr = spade_paired_play(x->s->sb, &spec, &spy.agent, distinct, plays / R, R, &x->eo, w->plays, &w->paired,
                                   err, errlen);
        spade_agent_free(a);
        x->eo.hints = NULL;
        x->eo.hint_lens = NULL;
        if (pr < 0) return -1;
        if (stopped(x)) return 1;
        if (x->ae.oom) return oom(err, errlen, "the agent's transcripts");
        /* the archive's seed of play k is the seed it was played on */
        for (int k = 0; k < plays; k++) w->seeds[k] = w->plays[k].seed;
        m->pass_nohint += w->paired.pass_nohint;
        m->pass_hint += w->paired.pass_hint;
        m->regret += w->paired.regret;
        if (spade_sp_agent_samples(x, i, err, errlen) < 0) return -1;
    }
    m->t_play = now_s() - t2;
    return 0;
}

/* designer.reward = learning_potential (designer/reward.h): after[i], for each
 * valid environment i < n written now, is its no-hint pass rate replayed by a
 * copy of the policy that has taken the agent's half of this iteration's
 * update alone (the same samples, options and AdamW moments: the step the
 * agent would take were there no designer samples). The replays use the
 * paired plays' seeds, repeats and agent stream, so they draw nothing new and
 * a resumed run measures the same; the policy itself is not touched. With no
 * agent sample there is no step: after = before, no replay. */
static int lookahead(spade_sp_iter *x, char *err, size_t errlen) {
    const spade_selfplay_opts *o = x->o;
    const spade_sp_env *w = x->w;
    int any = 0, plays = x->plays;
    for (int i = 0; i < x->n; i++) any |= w[i].gates.first_failed < 0;
    if (!any) return 0;
    if (x->n_agent == 0) {
        for (int i = 0; i < x->n; i++)
            if (w[i].gates.first_failed < 0) x->after[i] = w[i].paired.pass_nohint;
        return 0;
    }
    spade_policy *q = NULL;
    size_t P = spade_policy_num_trainable(x->s->p); /* the moments' size: a LoRA policy's adapters */
    float *mv = malloc(2 * P * sizeof *mv);
    spade_ep_request *req = calloc((size_t)plays, sizeof *req);
    spade_ep_outcome *out = calloc((size_t)plays, sizeof *out);
    int rc = -1;
    if (!mv || !req || !out) {
        spade_errf(err, errlen, "learning potential: out of memory");
        goto done;
    }
    /* with LoRA the copy is the adapters over the policy's own frozen base (not 2 GB of Qwen's weights again) */
    if (spade_policy_clone_adapters(&q, x->s->p, err, errlen) != 0 ||
        spade_policy_get_moments(x->s->p, mv, mv + P, err, errlen) != 0 ||
        spade_policy_set_moments(q, mv, mv + P, err, errlen) != 0)
        goto done;
    spade_grpo_opts go = o->rl.grpo;
    go.adv_mode = SPADE_GRPO_ADV_GIVEN;
    go.token_norm = SPADE_GRPO_NORM_ROLE;
    spade_grpo_stats st;
    if (spade_grpo_update(q, NULL, x->samples, x->n_agent, &go, &o->rl.adamw, &st, err, errlen) < 0) goto done;
    spade_policy_agent_opts ao = x->ao;
    ao.on_episode = NULL;
    ao.ctx = NULL;
    ao.t_prefill = ao.t_decode = NULL; /* the look-ahead's replays are its own time, not the plays' */
    for (int i = 0; i < x->n; i++) {
        if (w[i].gates.first_failed >= 0) continue;
        ao.seed = spade_rng_stream(o->seed, x->it, i, SPADE_RNG_AGENT); /* the paired plays' agent stream */
        for (int k = 0; k < plays; k++)
            req[k] = (spade_ep_request){.spec = 0, .seed = w[i].seeds[k], .repeat = k % x->R};
        spade_agent *a = spade_agent_policy(q, &ao, err, errlen);
        if (!a) goto done;
        spade_ep_spec spec = {
            .filename = "generated.c", .source = w[i].source, .len = w[i].source_len, .expected = plays};
        int pr = spade_episodes_play(x->s->sb, &spec, 1, req, plays, a, &x->eo, out, err, errlen);
        spade_agent_free(a);
        if (pr < 0) goto done;
        if (stopped(x)) {
            rc = 1;
            goto done;
        }
        double sum = 0;
        for (int k = 0; k < plays; k++) sum += out[k].success;
        x->after[i] = sum / plays;
    }
    rc = 0;
done:
    spade_policy_free(q);
    free(mv);
    free(req);
    free(out);
    return rc;
}

/* 6. The look-ahead (designer.reward = learning_potential only): its replays
 * are plays too, so the "plays" kill point comes after them. */
int spade_sp_lookahead(spade_sp_iter *x, char *err, size_t errlen) {
    if (x->o->reward == SPADE_DREWARD_LEARNING_POTENTIAL) {
        double t5 = now_s();
        int lr = lookahead(x, err, errlen);
        if (lr != 0) return lr;
        x->m->t_lookahead = now_s() - t5;
    }
    spade_killpoint("plays", x->it);
    return 0;
}

/* 7. Designer rewards: from the paired plays (or the look-ahead), the
 * invalid penalised or dropped (designer.invalid), centred per family so a
 * family's easy prompts do not outvote a hard family's. */
int spade_sp_rewards(spade_sp_iter *x, char *err, size_t errlen) {
    (void)err, (void)errlen;
    const spade_selfplay_opts *o = x->o;
    spade_selfplay_metrics *m = x->m;
    spade_sp_env *w = x->w;
    const char *fam[SPADE_SP_MAX_ENVS];
    double sum_reward = 0;
    for (int i = 0; i < x->n; i++) {
        int valid = w[i].gates.first_failed < 0;
        fam[i] = w[i].family;
        w[i].reward = valid ? spade_dreward(o->reward, &w[i].paired, &x->after[i]) : o->invalid_reward;
        if (valid) sum_reward += w[i].reward;
        x->r[i] = w[i].reward;
        x->keep[i] = valid || !o->invalid_drop;
    }
    if (x->played) {
        m->pass_nohint /= x->played;
        m->pass_hint /= x->played;
        m->regret /= x->played;
    } else
        m->pass_nohint = m->pass_hint = m->regret = NAN;
    m->designer_reward = m->valid ? sum_reward / m->valid : NAN;
    double lp = 0, pa = 0; /* the learning-potential figures, NAN unless that is the reward */
    int k = 0;
    for (int i = 0; o->reward == SPADE_DREWARD_LEARNING_POTENTIAL && i < x->n; i++)
        if (w[i].gates.first_failed < 0 && isfinite(x->after[i])) {
            lp += spade_lp_lookahead(w[i].paired.pass_nohint, x->after[i]);
            pa += x->after[i];
            k++;
        }
    m->learning_potential = k ? lp / k : NAN;
    m->pass_after = k ? pa / k : NAN;
    spade_center_per_family(x->r, fam, x->keep, x->n);
    spade_killpoint("rewards", x->it);
    return 0;
}

void spade_sp_designer_samples(spade_sp_iter *x) {
    const spade_selfplay_opts *o = x->o;
    x->ns = x->n_agent;
    for (int i = 0; o->train_designer && !o->n_files && !o->remote && i < x->n; i++) {
        if (!x->keep[i] || fabs(x->r[i]) < 1e-12) continue; /* a centred reward of 0 carries no signal */
        const spade_sp_env *w = &x->w[i];
        x->samples[x->ns++] = (spade_grpo_sample){
            .tokens = w->tr.tok,
            .len = w->tr.len,
            .mask = w->tr.mask,
            .old_logprobs = w->tr.logp,
            .reward = (float)w->reward,
            .advantage = (float)x->r[i],
            .group = i,
            .role = 0,
            .temperature = o->temperature, /* free text and template holes alike */
            .top_p = o->top_p,
        };
        x->m->designer_samples++;
    }
}

/* 8. One update on both roles' samples: one policy, one step, each role
 * scaled to unit RMS (core/policy/grpo.c) so neither drowns the other. */
int spade_sp_update(spade_sp_iter *x, char *err, size_t errlen) {
    spade_selfplay_metrics *m = x->m;
    double t3 = now_s();
    spade_sp_designer_samples(x);
    m->agent_samples = x->n_agent;
    if (x->ns > 0) {
        spade_grpo_opts go = x->o->rl.grpo;
        go.adv_mode = SPADE_GRPO_ADV_GIVEN;
        go.token_norm = SPADE_GRPO_NORM_ROLE;
        spade_grpo_stats st;
        if (spade_grpo_update(x->s->p, NULL, x->samples, x->ns, &go, &x->o->rl.adamw, &st, err, errlen) < 0) return -1;
        /* the next iteration samples for minutes: not holding a pretrained model's activations
         * (Qwen2.5-Coder: 3.4 -> 14.3 GiB after one update) through it */
        spade_policy_release_training_scratch(x->s->p);
        m->loss = st.loss;
        m->grad_norm = st.grad_norm;
        m->role_grad_norm[0] = st.role_grad_norm[0];
        m->role_grad_norm[1] = st.role_grad_norm[1];
    }
    m->t_update = now_s() - t3;
    spade_killpoint("update", x->it);
    return 0;
}

static int add_plays(spade_sp_iter *x, const spade_sp_env *w, long id, char *err, size_t errlen) {
    int plays = x->plays;
    double s0[SPADE_SP_MAX_PLAYS], s1[SPADE_SP_MAX_PLAYS], r0[SPADE_SP_MAX_PLAYS], r1[SPADE_SP_MAX_PLAYS];
    for (int k = 0; k < plays; k++) {
        s0[k] = w->plays[k].success, s1[k] = w->plays[plays + k].success;
        r0[k] = w->plays[k].ret, r1[k] = w->plays[plays + k].ret;
    }
    return spade_archive_add_plays(x->s->archive, id, plays, w->seeds, s0, s1, r0, r1, err, errlen);
}

/* Vendi/n of this iteration's valid environments; in template mode the same
 * over the games the fillings set, which Vendi/n of the fillings (every one a
 * different text) cannot see. */
static void diversity(spade_sp_iter *x, char *err, size_t errlen) {
    spade_selfplay_metrics *m = x->m;
    if (m->valid <= 0) return;
    double *X = malloc((size_t)m->valid * SPADE_VENDI_DIM * sizeof *X), v;
    int k = 0;
    for (int i = 0; X && i < x->n; i++)
        if (x->w[i].gates.first_failed < 0) {
            for (int d = 0; d < SPADE_VENDI_DIM; d++) X[(size_t)k * SPADE_VENDI_DIM + d] = x->w[i].embedding[d];
            k++;
        }
    if (X && spade_vendi(X, k, SPADE_VENDI_DIM, &v, err, errlen) == 0) m->vendi_n = v / k;
    k = 0;
    for (int i = 0; X && x->o->n_templates > 0 && i < x->n; i++)
        if (x->w[i].gates.first_failed < 0) {
            for (int d = 0; d < SPADE_VENDI_DIM; d++) X[(size_t)k * SPADE_VENDI_DIM + d] = x->w[i].games[d];
            k++;
        }
    if (k > 0 && spade_vendi(X, k, SPADE_VENDI_DIM, &v, err, errlen) == 0) m->vendi_n_games = v / k;
    free(X);
}

/* 9. The archive, one transaction: new plays of the environments played
 * again, every written one with its gate outcome, and the metrics; a run
 * killed before the commit resumes onto the last iteration's rows. */
int spade_sp_archive(spade_sp_iter *x, char *err, size_t errlen) {
    spade_archive *a = x->s->archive;
    spade_selfplay_metrics *m = x->m;
    double t4 = now_s();
    if (a) {
        if (spade_archive_begin(a, err, errlen) < 0) return -1;
        for (int i = x->n; i < x->n_all; i++) /* played again: new plays of their archived rows */
            if (add_plays(x, &x->w[i], x->w[i].archive_id, err, errlen) < 0) return -1;
        for (int i = 0; i < x->n; i++) {
            const spade_sp_env *w = &x->w[i];
            spade_archive_env e = {.iteration = x->it};
            snprintf(e.family, sizeof e.family, "%s", w->family);
            snprintf(e.corpus_item, sizeof e.corpus_item, "%s", w->corpus_item);
            if (x->o->remote) snprintf(e.writer, sizeof e.writer, "%s", x->o->writer ? x->o->writer : "remote");
            e.source = w->source ? w->source : "";
            e.source_len = w->source ? w->source_len : 0;
            /* the hint used: the self-written one, else what the hint arm saw at its first seed */
            snprintf(e.hint, sizeof e.hint, "%s", w->hint ? w->hint : w->hint_seen);
            e.hash = spade_source_fingerprint(e.source, e.source_len);
            int ff = w->gates.first_failed;
            if (ff >= 0) {
                snprintf(e.gate, sizeof e.gate, "%s", spade_gate_name((spade_gate)ff));
                snprintf(e.reason, sizeof e.reason, "%s", w->gates.detail[ff]);
                e.pass_nohint = e.pass_hint = e.regret = NAN;
            } else {
                e.pass_nohint = w->paired.pass_nohint;
                e.pass_hint = w->paired.pass_hint;
                e.regret = w->paired.regret;
                e.plays = x->plays;
            }
            e.reward = w->reward;
            e.embedding = w->embedding;
            e.embed_dim = SPADE_VENDI_DIM;
            long id;
            if (spade_archive_add_env(a, &e, &id, err, errlen) < 0) return -1;
            if (ff < 0 && add_plays(x, w, id, err, errlen) < 0) return -1;
        }
    }
    diversity(x, err, errlen);
    if (a) {
        char json[4096];
        spade_killpoint("archive", x->it); /* inside the transaction: the environments added, not committed */
        /* provisional times for the archive's copy of the metrics (the loop sets the final ones) */
        m->time.archive = now_s() - t4;
        m->time.total = now_s() - x->t0;
        spade_selfplay_metrics_json(m, json, sizeof json);
        if (spade_archive_add_iteration(a, x->it, json, err, errlen) < 0 || spade_archive_commit(a, err, errlen) < 0)
            return -1;
    }
    m->t_archive = now_s() - t4;
    return 0;
}
