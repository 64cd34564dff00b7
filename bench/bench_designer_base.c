/* bench_designer_base.c — how often a (base) policy, given designer prompts,
 * writes a source that compiles and passes spade check.
 *
 * For each stdenv source (sorted; --envs N takes the first N), the prompt is
 * designer/prompt.h's with that source as the grounding excerpt, within
 * --budget tokens of the policy's tokenizer (default: half its context); the
 * policy samples --samples K completions of <|designer|> PROMPT <|source|>
 * (up to the rest of the context, stopping at <|end|>), and each is loaded in
 * the sandbox (compiles and validates) and, when it loads, checked with
 * spade_check. As a reference on the same prompts: the grounding excerpt
 * exactly as the prompt holds it (a model that copied perfectly would score
 * that; a cut excerpt ends with "..." and does not compile).
 *   bench/bench_designer_base CKPT [--samples K] [--budget T] [--envs N]
 *                             [--temperature X] [--seed S]
 * BENCH_SHOW=1 prints each prompt's first sample; BENCH_SAVE=DIR writes every
 * sample that compiles to DIR/NAME-K.c.
 * What it is not: a test (nothing is asserted), nor the designer's reward.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/transcript.h"
#include "check.h"
#include "designer/prompt.h"
#include "policy/policy.h"
#include "registry.h"
#include "sandbox/sandbox.h"

static size_t count_tokens(void *ctx, const char *text, size_t len) { return spade_tokenizer_count(ctx, text, len); }

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* 0 loads, 1 loads and passes spade check; -1 does not load. */
static int judge(spade_sandbox *sb, const char *name, const char *src, size_t len) {
    spade_worker *w = NULL;
    spade_failure f;
    if (spade_worker_load(sb, name, src, len, &w, &f)) return -1;
    spade_worker_free(w);
    static spade_check_report rep;
    return spade_check(sb, name, src, len, NULL, NULL, &rep) == 0;
}

int main(int argc, char **argv) {
    const char *ckpt = NULL;
    int samples = 4, budget = 0, envs = 1000;
    float temperature = 0.8f;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
            budget = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--envs") && i + 1 < argc)
            envs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--temperature") && i + 1 < argc)
            temperature = (float)atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!ckpt && argv[i][0] != '-')
            ckpt = argv[i];
        else {
            fprintf(stderr, "usage: %s CKPT [--samples K] [--budget T] [--envs N] [--temperature X] [--seed S]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!ckpt || samples < 1) {
        fprintf(stderr, "usage: %s CKPT [--samples K] [--budget T] [--envs N] [--temperature X] [--seed S]\n", argv[0]);
        return 2;
    }
    char err[2048];
    spade_sandbox *sb;
    if (spade_sandbox_new(&sb, NULL, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    spade_policy *p;
    if (spade_policy_load(&p, ckpt, NULL, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    int context = spade_policy_config(p)->context;
    if (!budget) budget = context / 2;

    char dir[2048];
    snprintf(dir, sizeof dir, "%s/stdenv", SPADE_SRCDIR);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: cannot open\n", dir);
        return 1;
    }
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 2 && !strcmp(e->d_name + l - 2, ".c")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int n_all = n;
    if (envs < n) n = envs;

    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = budget;
    po.count = count_tokens;
    po.count_ctx = tok;
    int *out = malloc(sizeof(int) * (size_t)samples * (size_t)context), *lens = malloc(sizeof(int) * (size_t)samples);
    char *text = malloc((size_t)context * SPADE_BPE_MAX_CHUNK + 64);
    long total = 0, has_env = 0, loaded = 0, passed = 0, ref_loaded = 0, ref_passed = 0, out_tokens = 0;
    printf("| environment | prompt tokens | samples | has ENV( | compile | pass check | excerpt copy compiles "
           "|\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        char path[4096], *src, *prompt;
        size_t len, plen;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (spade_read_source(path, &src, &len, err, sizeof err)) continue;
        spade_worker *w;
        spade_failure f;
        char family[32] = "";
        if (!spade_worker_load(sb, path, src, len, &w, &f)) {
            snprintf(family, sizeof family, "%s", spade_worker_info(w)->family);
            spade_worker_free(w);
        }
        if (spade_prompt_build(&po, family, names[i], src, len, NULL, 0, &prompt, &plen, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", names[i], err);
            free(src);
            continue;
        }
        /* the excerpt as the prompt holds it: after its name line, up to "Source:" */
        const char *ex = strstr(prompt, names[i]);
        ex = ex ? strchr(ex, '\n') : NULL;
        const char *ex_end = strstr(prompt, "Source:\n");
        int ref = -1;
        if (ex && ex_end && ex_end > ex) ref = judge(sb, names[i], ex + 1, (size_t)(ex_end - ex - 1));
        ref_loaded += ref >= 0;
        ref_passed += ref == 1;

        spade_transcript t;
        spade_transcript_init(&t);
        spade_transcript_designer_open(&t, tok, prompt, plen);
        spade_sample_opts so;
        spade_sample_opts_default(&so);
        so.temperature = temperature;
        so.max_tokens = context - t.len;
        so.seed = seed + (unsigned long long)i * 1000;
        int ok_load = 0, ok_pass = 0, ok_env = 0;
        if (so.max_tokens < 16) {
            fprintf(stderr, "%s: the prompt (%d tokens) leaves no room in the context (%d)\n", names[i], t.len,
                    context);
        } else if (spade_policy_sample(p, t.tok, t.len, samples, &so, out, NULL, lens, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", names[i], err);
        } else {
            for (int g = 0; g < samples; g++) {
                int *c = out + (size_t)g * so.max_tokens, cl = lens[g];
                out_tokens += cl;
                if (cl && c[cl - 1] == SPADE_TOK_END) cl--;
                size_t tl = 0;
                spade_tokenizer_decode(tok, c, (size_t)cl, 0, text, (size_t)context * SPADE_BPE_MAX_CHUNK + 64, &tl);
                ok_env += strstr(text, "ENV(\"") != NULL;
                int j = judge(sb, names[i], text, tl);
                ok_load += j >= 0;
                ok_pass += j == 1;
                if (getenv("BENCH_SHOW") && g == 0) printf("--- %s sample 0 ---\n%s\n---\n", names[i], text);
                /* BENCH_SAVE=DIR keeps each sample that compiles, for spade check --gates by hand */
                if (getenv("BENCH_SAVE") && j >= 0) {
                    char sp[4096];
                    snprintf(sp, sizeof sp, "%s/%.*s-%d.c", getenv("BENCH_SAVE"), (int)strlen(names[i]) - 2, names[i],
                             g);
                    FILE *sf = fopen(sp, "w");
                    if (sf) {
                        fwrite(text, 1, tl, sf);
                        fclose(sf);
                    } else
                        fprintf(stderr, "%s: cannot write\n", sp);
                }
            }
        }
        total += samples;
        loaded += ok_load;
        has_env += ok_env;
        passed += ok_pass;
        printf("| %s | %d | %d | %d | %d | %d | %s |\n", names[i], t.len, samples, ok_env, ok_load, ok_pass,
               ref < 0 ? "no"
               : ref   ? "yes (passes)"
                       : "yes");
        fflush(stdout);
        spade_transcript_free(&t);
        free(prompt);
        free(src);
    }
    printf("\n%ld samples from %d prompts (budget %d tokens, context %d, temperature %.2f, %.0f tokens a sample): "
           "%ld hold ENV(\", %ld compile (%.3f), %ld pass spade check (%.3f); the excerpt copied: %ld of %d compile, "
           "%ld pass\n",
           total, n, budget, context, temperature, total ? (double)out_tokens / total : 0.0, has_env, loaded,
           total ? (double)loaded / total : 0.0, passed, total ? (double)passed / total : 0.0, ref_loaded, n,
           ref_passed);
    for (int i = 0; i < n_all; i++) free(names[i]);
    free(out);
    free(lens);
    free(text);
    spade_policy_free(p);
    spade_sandbox_free(sb);
    return 0;
}
