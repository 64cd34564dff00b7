/* bench_designer_chat.c — how often a model, asked as the self-play loop asks
 * its designer, writes an environment that compiles, passes spade check,
 * passes every gate, and is new against the source its prompt showed: the
 * before/after measurement of the designer's warm start (docs/train.md, "A
 * warm start for the designer").
 *
 * For each stdenv source of the named families (sorted), the prompt is the
 * loop's chat-form designer request (designer/prompt.h, chat: the family, that
 * source as the grounding excerpt in a ```c block, "one new environment in one
 * ```c block") within --budget tokens, laid out by agent/transcript.h in the
 * model's chat template; the model samples --samples K answers of at most
 * --max-tokens, --slots at a time, through the decoding batch the loop uses
 * (the prompts' shared card prefilled once), stopping at the end of its turn.
 * Each answer's source is its first ```c block (spade_extract_source) and is
 * judged:
 *   has ENV(" it holds an ENV(" line: the DSL's shape, whether it compiles or not
 *   compile   it loads in the sandbox
 *   check     spade check passes (no errors)
 *   gates     every gate of designer/gates.h passes, novelty included: against
 *             the corpus (stdenv/, plugins/) and the grounding source shown
 *   novel     it compiles and its text cosine (core/vendi.h's embedding) to the
 *             grounding source is below the gates' novelty_max (0.95)
 * printed as counts of N with Wilson 95% intervals, one row per prompt and a
 * total. --rewrite asks the rewrite task instead: the request states a
 * mechanical change of the grounding source (designer/variants.h's, described
 * in words), and "exact" counts answers equal to that variant; novelty is not
 * the point there (the answer is the source changed), so gates are run with
 * the shown source left out. --copy judges, instead of a model, the grounding
 * source itself as the answer (a reference row: it must compile and check and
 * fail novelty) and needs no model. --judge DIR judges again the answers a
 * run saved with --save DIR (NAME-K.txt, K < --samples), so a run stopped
 * early still counts what it sampled (the tokens column is then 0).
 *   bench/bench_designer_chat MODEL|CKPT --families F,... [--samples K]
 *       [--temperature T] [--seed S] [--budget B] [--max-tokens M]
 *       [--slots S] [--save DIR] [--judge DIR] [--rewrite] [--copy]
 * What it is not: a test (it asserts nothing), nor the designer's reward.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/eval.h"
#include "agent/transcript.h"
#include "check.h"
#include "designer/corpus.h"
#include "designer/gates.h"
#include "designer/prompt.h"
#include "designer/variants.h"
#include "heldout.h"
#include "policy/models.h"
#include "policy/policy.h"
#include "policy/pretrained.h"
#include "rng.h"
#include "sandbox/sandbox.h"
#include "selfplay/loop.h"
#include "source.h"
#include "vendi.h"

#define MAX_ENVS 64

typedef struct opts {
    const char *model, *families, *save, *judge_dir;
    int samples, budget, max_tokens, slots, rewrite, copy;
    float temperature;
    uint64_t seed;
} opts;

typedef struct tally {
    long n, has_env, compile, check, gates, novel, exact, tokens;
    long first_failed[SPADE_GATE_COUNT];
} tally;

typedef struct env {
    char name[256], path[4096], family[32];
    char *src;
    size_t len;
    spade_env_info info;
    char *expect; /* --rewrite: the variant asked for */
    size_t expect_len;
} env;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t count_tokens(void *ctx, const char *text, size_t len) { return spade_tokenizer_count(ctx, text, len); }
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static double cosine(const char *a, size_t al, const char *b, size_t bl) {
    static double x[SPADE_VENDI_DIM], y[SPADE_VENDI_DIM];
    spade_vendi_embed(a, al, x, SPADE_VENDI_DIM);
    spade_vendi_embed(b, bl, y, SPADE_VENDI_DIM);
    double xy = 0, xx = 0, yy = 0;
    for (int i = 0; i < SPADE_VENDI_DIM; i++) xy += x[i] * y[i], xx += x[i] * x[i], yy += y[i] * y[i];
    return xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : 0;
}

/* The corpus the gates' novelty compares with (what spade check --gates uses). */
typedef struct refs {
    spade_corpus *c;
    double *emb;
    const char **names, **src;
    size_t *len;
    int n;
} refs;

static int refs_load(refs *r, char *err, size_t errlen) {
    /* the source tree's, as the grounding is: the binary may run from a copy */
    const char *dirs[2] = {SPADE_SRCDIR "/stdenv", SPADE_SRCDIR "/plugins"};
    if (spade_corpus_new(&r->c, dirs, 2, NULL, 1, NULL, err, errlen)) return -1;
    int nc = spade_corpus_count(r->c);
    r->emb = calloc((size_t)(nc + 1) * SPADE_VENDI_DIM, sizeof *r->emb);
    r->names = calloc((size_t)nc + 1, sizeof *r->names);
    r->src = calloc((size_t)nc + 1, sizeof *r->src);
    r->len = calloc((size_t)nc + 1, sizeof *r->len);
    if (!r->emb || !r->names || !r->src || !r->len) return snprintf(err, errlen, "out of memory"), -1;
    for (int i = 0; i < nc; i++) {
        const spade_corpus_item *it = spade_corpus_item_at(r->c, i);
        spade_vendi_embed(it->text, it->len, r->emb + (size_t)r->n * SPADE_VENDI_DIM, SPADE_VENDI_DIM);
        r->src[r->n] = it->text;
        r->len[r->n] = it->len;
        r->names[r->n++] = it->name;
    }
    return 0;
}

static void refs_free(refs *r) {
    free(r->emb);
    free(r->names);
    free(r->src);
    free(r->len);
    spade_corpus_free(r->c);
}

/* Judges one answer into t. */
static void judge(spade_sandbox *sb, const refs *rf, const opts *o, const env *e, const char *src, size_t len,
                  tally *t) {
    t->n++;
    t->has_env += memmem(src, len, "ENV(\"", 5) != NULL; /* the DSL's shape, compiling or not */
    spade_worker *w = NULL;
    spade_failure f;
    if (spade_worker_load(sb, e->name, src, len, &w, &f)) {
        t->first_failed[SPADE_GATE_COMPILE]++;
        return;
    }
    spade_worker_free(w);
    t->compile++;
    static spade_check_report rep;
    t->check += spade_check(sb, e->name, src, len, NULL, NULL, &rep) == 0;
    t->novel += cosine(src, len, e->src, e->len) < 0.95;
    t->exact += e->expect && len == e->expect_len && !memcmp(src, e->expect, len);
    spade_gate_opts g;
    spade_gate_opts_default(&g);
    g.stop_at_first = 1;
    g.dim = SPADE_VENDI_DIM;
    /* the rewrite's answer is the shown source changed: compared with the rest of the corpus only */
    uint64_t self = spade_source_fingerprint(e->src, e->len);
    static double emb[256 * SPADE_VENDI_DIM];
    static const char *nm[256], *rs[256];
    static size_t rl[256];
    int n = 0;
    for (int i = 0; i < rf->n && n < 256; i++) {
        if (o->rewrite && spade_source_fingerprint(rf->src[i], rf->len[i]) == self) continue;
        memcpy(emb + (size_t)n * SPADE_VENDI_DIM, rf->emb + (size_t)i * SPADE_VENDI_DIM,
               sizeof(double) * SPADE_VENDI_DIM);
        nm[n] = rf->names[i], rs[n] = rf->src[i], rl[n++] = rf->len[i];
    }
    g.refs = emb, g.ref_names = nm, g.ref_src = rs, g.ref_len = rl, g.n_refs = n;
    const char *shown[1] = {e->src}, *shown_names[1] = {e->name};
    size_t shown_len[1] = {e->len};
    if (!o->rewrite) g.shown = shown, g.shown_len = shown_len, g.shown_names = shown_names, g.n_shown = 1;
    static spade_gate_report gr;
    char err[1024];
    if (spade_gates_run(sb, e->name, src, len, &g, &gr, err, sizeof err) < 0) {
        fprintf(stderr, "%s: gates: %s\n", e->name, err);
        return;
    }
    if (gr.first_failed < 0)
        t->gates++;
    else
        t->first_failed[gr.first_failed]++;
}

static void add(tally *a, const tally *b) {
    a->n += b->n, a->has_env += b->has_env, a->compile += b->compile, a->check += b->check, a->gates += b->gates,
        a->novel += b->novel;
    a->exact += b->exact, a->tokens += b->tokens;
    for (int i = 0; i < SPADE_GATE_COUNT; i++) a->first_failed[i] += b->first_failed[i];
}

static void cell(long k, long n) {
    double lo, hi;
    spade_wilson(k, n, 1.96, &lo, &hi);
    printf(" %ld/%ld [%.3f, %.3f] |", k, n, lo, hi);
}

static void row(const char *name, const tally *t, int rewrite) {
    printf("| %s |", name);
    cell(t->has_env, t->n);
    cell(t->compile, t->n);
    cell(t->check, t->n);
    cell(t->gates, t->n);
    cell(rewrite ? t->exact : t->novel, t->n);
    printf(" %.0f |\n", t->n ? (double)t->tokens / t->n : 0.0);
}

/* The stdenv sources of the families, sorted, loaded (their info and, with
 * --rewrite, a checked variant and its change in words). */
static int load_envs(spade_sandbox *sb, const opts *o, env *es, char change[][1024], int *n_out) {
    char dir[2048], err[2048];
    snprintf(dir, sizeof dir, "%s/stdenv", SPADE_SRCDIR);
    DIR *d = opendir(dir);
    if (!d) return fprintf(stderr, "%s: cannot open\n", dir), -1;
    char *names[256];
    int nn = 0, n = 0;
    for (struct dirent *de; (de = readdir(d)) && nn < 256;) {
        size_t l = strlen(de->d_name);
        if (l > 2 && !strcmp(de->d_name + l - 2, ".c")) names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    for (int i = 0; i < nn && n < MAX_ENVS; i++) {
        env *e = &es[n];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%.200s", names[i]);
        snprintf(e->path, sizeof e->path, "%s/%.200s", dir, names[i]);
        spade_worker *w;
        spade_failure f;
        if (spade_read_source(e->path, &e->src, &e->len, err, sizeof err)) continue;
        if (spade_worker_load(sb, e->path, e->src, e->len, &w, &f)) {
            free(e->src);
            continue;
        }
        e->info = *spade_worker_info(w);
        spade_worker_free(w);
        snprintf(e->family, sizeof e->family, "%s", e->info.family);
        if (!spade_family_listed(o->families, e->family)) {
            free(e->src);
            continue;
        }
        change[n][0] = 0;
        for (int v = 0; o->rewrite && v < 8 && !e->expect; v++) { /* the variant must pass spade check */
            static spade_check_report rep;
            if (spade_variant_make_told(e->src, e->len, &e->info, spade_mix64(o->seed ^ (uint64_t)(v + 1) * 0x9E37u),
                                        &e->expect, &e->expect_len, change[n], 1024, err, sizeof err) == 0 &&
                spade_check(sb, e->path, e->expect, e->expect_len, NULL, NULL, &rep) != 0) {
                free(e->expect);
                e->expect = NULL;
            }
        }
        if (o->rewrite && !e->expect) {
            fprintf(stderr, "%s: no variant passes spade check; left out\n", e->name);
            free(e->src);
            continue;
        }
        n++;
    }
    for (int i = 0; i < nn; i++) free(names[i]);
    *n_out = n;
    return 0;
}

static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.samples = 16, .budget = 1536, .max_tokens = 768, .slots = 8, .temperature = 0.7f, .seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--rewrite"))
            o->rewrite = 1;
        else if (!strcmp(a, "--copy"))
            o->copy = 1;
        else if (v && !strcmp(a, "--families"))
            o->families = v, i++;
        else if (v && !strcmp(a, "--save"))
            o->save = v, i++;
        else if (v && !strcmp(a, "--judge"))
            o->judge_dir = v, i++;
        else if (v && !strcmp(a, "--samples"))
            o->samples = atoi(v), i++;
        else if (v && !strcmp(a, "--budget"))
            o->budget = atoi(v), i++;
        else if (v && !strcmp(a, "--max-tokens"))
            o->max_tokens = atoi(v), i++;
        else if (v && !strcmp(a, "--slots"))
            o->slots = atoi(v), i++;
        else if (v && !strcmp(a, "--temperature"))
            o->temperature = (float)atof(v), i++;
        else if (v && !strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10), i++;
        else if (!o->model && a[0] != '-')
            o->model = a;
        else
            return -1;
    }
    if ((!o->model && !o->copy && !o->judge_dir) || !o->families || o->samples < 1 || o->budget < 64 ||
        o->max_tokens < 1 || o->slots < 1 || !(o->temperature > 0))
        return -1;
    return 0;
}

static int load_policy(const opts *o, spade_policy **p, char *err, size_t errlen) {
    size_t n = strlen(o->model);
    if (spade_model_find(o->model) || (n > 5 && !strcmp(o->model + n - 5, ".gguf"))) {
        spade_model_opts mo = {.context = o->budget + o->max_tokens + 64};
        return spade_policy_from_model(p, o->model, &mo, err, errlen);
    }
    return spade_policy_load(p, o->model, NULL, err, errlen);
}

/* Samples K answers of every prompt, --slots at a time, and judges each. */
static int sample_all(spade_sandbox *sb, const refs *rf, const opts *o, spade_policy *p, env *es, int ne,
                      spade_transcript *prompts, tally *per, char *err, size_t errlen) {
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    int S = o->slots, T = o->max_tokens, ctx = spade_policy_config(p)->context, stops[2];
    spade_decoder *dec = NULL;
    if (spade_decoder_new(&dec, p, S, err, errlen) < 0) return -1;
    int *out = malloc(sizeof(int) * (size_t)S * T), slots[S], lens[S], counts[S], st[S], maxt[S], who[S];
    const int *toks[S];
    uint64_t seeds[S];
    size_t cap = (size_t)T * 64;
    char *text = malloc(cap + 1);
    long total = (long)ne * o->samples, done = 0;
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = o->temperature;
    so.max_tokens = T;
    so.n_stop = spade_tokenizer_turn_stops(tok, stops, 2), so.stop = stops;
    int rc = -1;
    if (!out || !text) goto done;
    while (done < total) {
        int n = 0;
        for (; n < S && done + n < total; n++) {
            int i = (int)((done + n) / o->samples);
            slots[n] = n, who[n] = i, toks[n] = prompts[i].tok, counts[n] = prompts[i].len;
            seeds[n] = spade_mix64(o->seed * 0x100000001B3ull ^ (uint64_t)(done + n));
            if (spade_decoder_reset(dec, n, err, errlen)) goto done;
        }
        double t0 = now_s();
        if (spade_decoder_append_shared(dec, slots, toks, counts, n, st, err, errlen) < 0) goto done;
        for (int k = 0; k < n; k++) {
            int room = ctx - spade_decoder_len(dec, k);
            maxt[k] = room < 1 ? 1 : room < T ? room : T;
        }
        if (spade_decoder_sample(dec, slots, n, &so, seeds, maxt, out, NULL, lens, st, err, errlen) < 0) goto done;
        long toks_n = 0;
        for (int k = 0; k < n; k++) {
            const int *t = out + (size_t)k * T;
            int len = lens[k], ended = len > 0 && (t[len - 1] == stops[0] || (so.n_stop > 1 && t[len - 1] == stops[1]));
            size_t got = 0, sl = 0;
            spade_tokenizer_decode(tok, t, (size_t)(ended ? len - 1 : len), 0, text, cap + 1, &got);
            char *src = spade_extract_source(text, got < cap ? got : cap, &sl);
            if (!src) goto done;
            tally *pt = &per[who[k]];
            pt->tokens += len;
            toks_n += len;
            judge(sb, rf, o, &es[who[k]], src, sl, pt);
            if (o->save) {
                char path[8192];
                snprintf(path, sizeof path, "%s/%.*s-%ld.txt", o->save, (int)strlen(es[who[k]].name) - 2,
                         es[who[k]].name, (done + k) % o->samples);
                FILE *f = fopen(path, "w");
                if (f) fwrite(text, 1, got < cap ? got : cap, f), fclose(f);
            }
            free(src);
        }
        done += n;
        fprintf(stderr, "%ld/%ld sampled (%ld tokens in %.0f s with the prompt, %.1f tokens/s)\n", done, total, toks_n,
                now_s() - t0, toks_n / (now_s() - t0));
    }
    rc = 0;
done:
    free(out);
    free(text);
    spade_decoder_free(dec);
    return rc;
}

int main(int argc, char **argv) {
    opts o;
    if (parse(argc, argv, &o)) {
        fprintf(stderr,
                "usage: %s MODEL|CKPT --families F,... [--samples K] [--temperature T] [--seed S]\n"
                "       [--budget B] [--max-tokens M] [--slots S] [--save DIR] [--judge DIR] [--rewrite] [--copy]\n",
                argv[0]);
        return 2;
    }
    char err[2048];
    spade_sandbox *sb;
    if (spade_sandbox_new(&sb, NULL, err, sizeof err)) return fprintf(stderr, "%s\n", err), 1;
    static env es[MAX_ENVS];
    static char change[MAX_ENVS][1024];
    static tally per[MAX_ENVS];
    refs rf = {0};
    int ne = 0, rc = 1;
    spade_policy *p = NULL;
    spade_transcript *prompts = NULL;
    if (load_envs(sb, &o, es, change, &ne) || refs_load(&rf, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    if (!ne) {
        fprintf(stderr, "no stdenv source of the families %s\n", o.families);
        goto done;
    }
    if (o.save) mkdir(o.save, 0755);
    double t0 = now_s();
    if (o.judge_dir) { /* answers a run saved (--save), judged again: a run stopped early still counts */
        for (int i = 0; i < ne; i++)
            for (int k = 0; k < o.samples; k++) {
                char path[8192], *text, *src;
                size_t tl, sl;
                snprintf(path, sizeof path, "%s/%.*s-%d.txt", o.judge_dir, (int)strlen(es[i].name) - 2, es[i].name, k);
                if (spade_read_source(path, &text, &tl, err, sizeof err)) continue;
                if ((src = spade_extract_source(text, tl, &sl))) judge(sb, &rf, &o, &es[i], src, sl, &per[i]);
                free(src);
                free(text);
            }
    } else if (o.copy) {
        for (int i = 0; i < ne; i++)
            judge(sb, &rf, &o, &es[i], o.rewrite ? es[i].expect : es[i].src, o.rewrite ? es[i].expect_len : es[i].len,
                  &per[i]);
    } else {
        if (load_policy(&o, &p, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", o.model, err);
            goto done;
        }
        spade_tokenizer *tok = spade_policy_tokenizer(p);
        prompts = calloc((size_t)ne, sizeof *prompts);
        for (int i = 0; prompts && i < ne; i++) {
            spade_prompt_opts po;
            spade_prompt_opts_default(&po);
            po.budget = o.budget;
            if ((po.chat = spade_tokenizer_is_chat(tok))) po.count = count_tokens, po.count_ctx = tok;
            char req[1400], *text = NULL;
            size_t tl;
            if (o.rewrite) spade_rewrite_request(change[i], req, sizeof req), po.request = req;
            if (spade_prompt_build(&po, es[i].family, es[i].name, es[i].src, es[i].len, NULL, 0, &text, &tl, err,
                                   sizeof err)) {
                fprintf(stderr, "%s: %s\n", es[i].name, err);
                goto done;
            }
            spade_transcript_init(&prompts[i]);
            spade_transcript_designer_open(&prompts[i], tok, text, tl);
            free(text);
        }
        fprintf(stderr, "%s: %d prompts of %s, %d samples each\n", o.model, ne, o.families, o.samples);
        if (!prompts || sample_all(sb, &rf, &o, p, es, ne, prompts, per, err, sizeof err)) {
            fprintf(stderr, "%s\n", prompts ? err : "out of memory");
            goto done;
        }
    }
    printf("| prompt (grounding) | family | has ENV(\" | compile | check | all gates | %s | tokens a sample |\n",
           o.rewrite ? "exact variant" : "novel vs prompt");
    printf("|---|---|---|---|---|---|---|---|\n");
    tally all = {0};
    for (int i = 0; i < ne; i++) {
        char label[400];
        snprintf(label, sizeof label, "%.200s | %.31s", es[i].name, es[i].family);
        row(label, &per[i], o.rewrite);
        add(&all, &per[i]);
    }
    row("all | -", &all, o.rewrite);
    printf("\n%s, %s task, families %s: N = %ld (%d prompts x %d), temperature %.2f, seed %llu, %.0f s\n",
           o.copy        ? "the grounding copied"
           : o.judge_dir ? o.judge_dir
                         : o.model,
           o.rewrite ? "rewrite" : "new-environment", o.families, all.n, ne, o.copy ? 1 : o.samples, o.temperature,
           (unsigned long long)o.seed, now_s() - t0);
    printf("first failed gate:");
    for (int g = 0; g < SPADE_GATE_COUNT; g++)
        if (all.first_failed[g]) printf(" %s %ld", spade_gate_name((spade_gate)g), all.first_failed[g]);
    printf("\n");
    rc = 0;
done:
    for (int i = 0; prompts && i < ne; i++) spade_transcript_free(&prompts[i]);
    free(prompts);
    for (int i = 0; i < ne; i++) free(es[i].src), free(es[i].expect);
    refs_free(&rf);
    spade_policy_free(p);
    spade_sandbox_free(sb);
    return rc;
}
