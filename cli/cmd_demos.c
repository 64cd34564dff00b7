/* cmd_demos.c — `spade demos SPEC... --episodes N --out DIR`: demonstrations
 * for pretraining. SOLVE plays each environment on seeds S, S+1, ... through
 * the episode layer, and every episode it wins is written as the agent
 * transcript the policy would have read and written in its place (the same
 * agent/transcript.h calls as the policy agent), rendered with the special
 * tokens spelled out, to DIR/NAME.transcript; with --designer K, K
 * mechanically varied copies of each source that pass spade check
 * (designer/variants.h) as designer transcripts to DIR/NAME.designer.transcript.
 * spade pretrain reads *.transcript files back into the same tokens
 * (cli/transcript_text.h). With --model MODEL the transcripts are laid out as
 * that pretrained model reads them: its chat template (ChatML, its tokens).
 * --pairs and --rewrite K write the designer's warm-start demonstrations
 * (docs/train.md): each source as the grounding of the loop's request,
 * answered by every other source of its family, or by a checked variant with
 * the change stated in the request; --hold-out leaves whole families out.
 * Every environment named, and every variant, is asked of the held-out
 * guard (core/heldout.h) first: a held-out file or a copy of one is refused
 * before anything is written.
 * What it is not: a trainer, nor an evaluation: episodes SOLVE does not win
 * are counted and left out.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/transcript.h"
#include "agents.h"
#include "check.h"
#include "cli.h"
#include "designer/prompt.h"
#include "designer/variants.h"
#include "episodes.h"
#include "heldout.h"
#include "rng.h"

#define DEMO_MAX_SPECS 256
#define DEMO_RANDOM_SETTINGS 5 /* random mixes of the params, after defaults, min and max */

void cli_usage_demos(FILE *out) {
    fprintf(out,
            "usage: spade demos SPEC... --episodes N --out DIR [--params-sweep] [--hint] [--seed S]\n"
            "                   [--designer K] [--rewrite K] [--pairs] [--hold-out FAMILY,...]\n"
            "                   [--prompt-budget B] [--model MODEL]\n"
            "\n"
            "Plays SOLVE on N seeds (S, S+1, ...) of each environment and writes every episode it\n"
            "wins as an agent transcript (agent/transcript.h), special tokens spelled out, to\n"
            "DIR/NAME.transcript; spade pretrain reads .transcript files as tokens. With\n"
            "--params-sweep the episodes cycle through parameter settings: the spec's (or the\n"
            "defaults), every param at its min, at its max, and %d random mixes in range (params\n"
            "the spec names stay fixed). --hint appends the hint to the first observation of every\n"
            "second episode (the hint arm). --designer K also writes K varied copies of each\n"
            "source (other param defaults, name, renamed helpers), each passing spade check, as\n"
            "designer transcripts (prompt: designer/prompt.h with the source as grounding\n"
            "excerpt, B bytes at most) to DIR/NAME.designer.transcript. --model MODEL lays every\n"
            "transcript out in the chat template of a pretrained model (a known name or a .gguf:\n"
            "ChatML with its system lines, docs/transcripts.md); B then counts its tokens.\n"
            "--pairs writes the designer's warm-start demonstrations (docs/train.md): the loop's\n"
            "request grounded on each source, answered by every other source of its family (the\n"
            "ENV's .family), to DIR/NAME.pairs.transcript. --rewrite K writes K checked variants as\n"
            "the rewrite task (the request states the change) to DIR/NAME.rewrite.transcript.\n"
            "--hold-out drops every environment of the families named from every file.\n"
            "A held-out file (core/heldout.h: in a HELDOUT directory, or a copy of one) is refused.\n"
            "\n"
            "  -n, --episodes N      per environment (default 16; 0: only the --designer variants)\n"
            "  -o, --out DIR         output directory (created)\n"
            "  -p, --params-sweep    vary the params across episodes\n"
            "  -H, --hint            the hint arm on every second episode\n"
            "      --seed S          first seed (default 0)\n"
            "  -d, --designer K      varied copies per source (default 0)\n"
            "      --rewrite K       varied copies per source as rewrite demonstrations (default 0)\n"
            "      --pairs           the other sources of the family as answers\n"
            "      --hold-out F,...  families left out\n"
            "      --prompt-budget B designer prompt bytes (default 1024; with --model, tokens, 2048)\n"
            "  -m, --model MODEL     the chat template and tokens of a pretrained model\n"
            "  -h, --help            this help\n",
            DEMO_RANDOM_SETTINGS);
}

/* ---------------------------------------------------------------- params */

/* 1 when "k=v,..." names param. */
static int names_param(const char *params, const char *name) {
    size_t n = strlen(name);
    for (const char *p = params; p && *p;) {
        if (!strncmp(p, name, n) && p[n] == '=') return 1;
        p = strchr(p, ',');
        if (p) p++;
    }
    return 0;
}

/* Setting k of an environment: 0 the spec's params, 1 min, 2 max, then random. */
static void setting(const spade_env_info *in, const char *fixed, int k, uint64_t seed, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "%s", fixed);
    uint64_t r = spade_mix64(seed ^ (uint64_t)k * 0x51ED27u);
    for (int i = 0; k > 0 && i < in->n_params && n < cap; i++) {
        const spade_param_info *p = &in->params[i];
        if (names_param(fixed, p->name)) continue;
        double v;
        r = spade_mix64(r);
        if (k == 1)
            v = p->min;
        else if (k == 2)
            v = p->max;
        else if (p->type == SPADE_PARAM_INT)
            v = p->min + (double)(r % (uint64_t)(p->max - p->min + 1));
        else
            v = p->min + (p->max - p->min) * (double)(r >> 11) / 9007199254740992.0;
        char num[64];
        n += (size_t)snprintf(buf + n, cap - n, "%s%s=%s", n ? "," : "", p->name,
                              p->type == SPADE_PARAM_INT ? cli_num(v, num, sizeof num)
                                                         : (snprintf(num, sizeof num, "%.17g", v), num));
    }
}

/* ---------------------------------------------------------------- the recording agent */

/* SOLVE, with every episode's transcript laid out as the policy agent lays
 * out its own (agent/policy_agent.c): the first observation without the
 * "Hint: " the episode layer appended, the hint after its token. */
typedef struct rec {
    spade_agent *inner;
    spade_tokenizer *tok;
    const spade_ep_request *reqs;
    spade_transcript *tr; /* [episodes] */
    char **text; /* [episodes] the render of a won episode, else NULL */
    size_t *text_len;
} rec;

static int rec_begin(void *ctx, const spade_ep_view *v, void **state, char *err, size_t errlen) {
    rec *r = ctx;
    return r->inner->begin ? r->inner->begin(r->inner->ctx, v, state, err, errlen) : 0;
}

static int rec_act(void *ctx, int n, const spade_ep_view *views, spade_ep_act *acts, char *err, size_t errlen) {
    rec *r = ctx;
    int rc = r->inner->act(r->inner->ctx, n, views, acts, err, errlen);
    if (rc) return rc;
    for (int i = 0; i < n; i++) {
        const spade_ep_view *v = &views[i];
        spade_transcript *t = &r->tr[v->episode];
        if (v->step == 0) {
            int hint = r->reqs[v->episode].hint;
            spade_transcript_agent_open(t, r->tok, v->obs, hint ? spade_ep_obs_len_without_hint(v) : v->obs_len,
                                        hint ? v->hint : NULL, hint ? v->hint_len : 0);
        } else {
            spade_transcript_agent_turn(t, r->tok, v->obs, v->obs_len);
        }
        if (!acts[i].stop) spade_transcript_agent_action(t, r->tok, acts[i].text, acts[i].len);
        if (t->oom) {
            snprintf(err, errlen, "out of memory for a transcript");
            return -1;
        }
    }
    return 0;
}

static void rec_end(void *ctx, const spade_ep_view *v, void *state, const spade_ep_outcome *o) {
    rec *r = ctx;
    if (r->inner->end) r->inner->end(r->inner->ctx, v, state, o);
    spade_transcript *t = &r->tr[o->episode];
    if (o->success && o->end == SPADE_EP_TERMINATED && t->len &&
        spade_transcript_render(t, r->tok, &r->text[o->episode], &r->text_len[o->episode]) < 0)
        r->text[o->episode] = NULL;
    spade_transcript_free(t);
}

/* ---------------------------------------------------------------- output */

static int write_file(const char *path, char **texts, const size_t *lens, long n, size_t *bytes) {
    FILE *f = fopen(path, "w");
    if (!f) return cli_err(CLI_FAIL, "demos", "%s: %s", path, strerror(errno));
    *bytes = 0;
    for (long i = 0; i < n; i++) {
        if (!texts[i]) continue;
        fwrite(texts[i], 1, lens[i], f);
        fputc('\n', f); /* a separator: spade pretrain skips it (transcript_text.h) */
        *bytes += lens[i] + 1;
    }
    if (fclose(f)) return cli_err(CLI_FAIL, "demos", "%s: write error", path);
    return CLI_OK;
}

static int play_env(spade_sandbox *sb, spade_tokenizer *tok, const char *path, const char *src, size_t len,
                    const char *fixed, const spade_env_info *info, long episodes, int sweep, int hint, uint64_t seed,
                    const char *out_path) {
    int n_set = sweep ? 3 + DEMO_RANDOM_SETTINGS : 1;
    static char params[3 + DEMO_RANDOM_SETTINGS][SPADE_SPEC_PARAMS_MAX];
    spade_ep_spec specs[3 + DEMO_RANDOM_SETTINGS];
    for (int k = 0; k < n_set; k++) {
        setting(info, fixed, k, seed, params[k], sizeof params[k]);
        specs[k] = (spade_ep_spec){.filename = path,
                                   .source = src,
                                   .len = len,
                                   .params = params[k][0] ? params[k] : NULL,
                                   .expected = (episodes + n_set - 1) / n_set};
    }
    spade_ep_request *reqs = calloc((size_t)episodes, sizeof *reqs);
    spade_ep_outcome *outs = calloc((size_t)episodes, sizeof *outs);
    rec r = {.inner = spade_agent_solve(),
             .tok = tok,
             .reqs = reqs,
             .tr = calloc((size_t)episodes, sizeof(spade_transcript)),
             .text = calloc((size_t)episodes, sizeof(char *)),
             .text_len = calloc((size_t)episodes, sizeof(size_t))};
    int rc = CLI_FAIL;
    if (!reqs || !outs || !r.inner || !r.tr || !r.text || !r.text_len) {
        cli_err(CLI_FAIL, "demos", "out of memory");
        goto done;
    }
    for (long e = 0; e < episodes; e++)
        reqs[e] = (spade_ep_request){.spec = (int)(e % n_set), .seed = seed + (uint64_t)e, .hint = hint && (e & 1)};
    spade_agent a = {.name = "demos",
                     .wants = r.inner->wants | SPADE_AGENT_WANTS_HINT,
                     .ctx = &r,
                     .begin = rec_begin,
                     .act = rec_act,
                     .end = rec_end};
    char err[2048];
    if (spade_episodes_play(sb, specs, n_set, reqs, episodes, &a, NULL, outs, err, sizeof err) < 0) {
        cli_err(CLI_FAIL, "demos", "%s: %s", path, err);
        goto done;
    }
    long won = 0, failed = 0;
    for (long e = 0; e < episodes; e++) {
        won += r.text[e] != NULL;
        failed += outs[e].end == SPADE_EP_FAILED;
    }
    for (long e = 0; e < episodes && failed == episodes; e++)
        if (outs[e].end == SPADE_EP_FAILED) {
            cli_print_failure("demos", path, &outs[e].failure); /* e.g. a param out of range: nothing to write */
            goto done;
        }
    size_t bytes;
    if (write_file(out_path, r.text, r.text_len, episodes, &bytes)) goto done;
    printf("%s: %ld episodes over %d setting%s, %ld won by SOLVE and written (%zu bytes), %ld failed\n", out_path,
           episodes, n_set, n_set > 1 ? "s" : "", won, bytes, failed);
    rc = CLI_OK;
done:
    for (long e = 0; r.text && e < episodes; e++) free(r.text[e]);
    for (long e = 0; r.tr && e < episodes; e++) spade_transcript_free(&r.tr[e]);
    free(r.tr);
    free(r.text);
    free(r.text_len);
    spade_agent_free(r.inner);
    free(reqs);
    free(outs);
    return rc;
}

static size_t count_tokens(void *ctx, const char *text, size_t len) { return spade_tokenizer_count(ctx, text, len); }

/* The designer's prompt grounded on src (the loop's request, or with
 * request the rewrite task's), as its transcript's opening in t. */
static int designer_prompt(spade_tokenizer *tok, const char *path, const char *src, size_t len, const char *family,
                           int budget, const char *request, spade_transcript *t) {
    char err[2048], *prompt = NULL;
    size_t plen;
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = budget;
    po.request = request;
    if ((po.chat = spade_tokenizer_is_chat(tok))) po.count = count_tokens, po.count_ctx = tok;
    const char *base = strrchr(path, '/');
    if (spade_prompt_build(&po, family, base ? base + 1 : path, src, len, NULL, 0, &prompt, &plen, err, sizeof err) < 0)
        return cli_err(CLI_FAIL, "demos", "%s: %s", path, err);
    spade_transcript_init(t);
    spade_transcript_designer_open(t, tok, prompt, plen);
    free(prompt);
    return CLI_OK;
}

/* K varied copies of src that pass spade check, as designer transcripts;
 * rewrite: as the rewrite task, the request stating the change. */
static int write_variants(spade_sandbox *sb, spade_tokenizer *tok, const spade_heldout_guard *guard, const char *path,
                          const char *src, size_t len, const spade_env_info *info, int k, int budget, int rewrite,
                          uint64_t seed, const char *out_path) {
    char err[2048], what[1024], req[1400];
    char **texts = calloc((size_t)k, sizeof *texts);
    size_t *lens = calloc((size_t)k, sizeof *lens);
    int rc = CLI_FAIL, made = 0, tried = 0, rejected = 0;
    if (!texts || !lens) {
        cli_err(CLI_FAIL, "demos", "out of memory");
        goto done;
    }
    spade_check_opts co;
    spade_check_opts_default(&co);
    static spade_check_report rep;
    for (uint64_t v = 0; made < k && tried < 4 * k; v++, tried++) {
        char *var = NULL;
        size_t vlen;
        if (spade_variant_make_told(src, len, info, spade_mix64(seed ^ (v + 1) * 0x2545F4914F6CDD1Dull), &var, &vlen,
                                    what, sizeof what, err, sizeof err) < 0) {
            rejected++;
            continue;
        }
        if (spade_heldout_guard_refuses(guard, NULL, var, vlen, err, sizeof err) ||
            spade_check(sb, path, var, vlen, NULL, &co, &rep) != 0) { /* a variant that is a held-out file: never */
            rejected++;
            free(var);
            continue;
        }
        spade_transcript t;
        spade_rewrite_request(what, req, sizeof req);
        if (designer_prompt(tok, path, src, len, info->family, budget, rewrite ? req : NULL, &t)) {
            free(var);
            goto done;
        }
        spade_transcript_designer_source(&t, tok, var, vlen);
        if (spade_transcript_render(&t, tok, &texts[made], &lens[made]) == 0) made++;
        spade_transcript_free(&t);
        free(var);
    }
    size_t bytes;
    if (write_file(out_path, texts, lens, made, &bytes)) goto done;
    printf("%s: %d varied sources passing spade check written%s (%zu bytes), %d rejected\n", out_path, made,
           rewrite ? " as rewrites" : "", bytes, rejected);
    rc = CLI_OK;
done:
    for (int i = 0; texts && i < made; i++) free(texts[i]);
    free(texts);
    free(lens);
    return rc;
}

/* ---------------------------------------------------------------- pairs */

/* One environment of the command line, loaded. */
typedef struct demo_env {
    char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX], name[80];
    char *src;
    size_t len;
    spade_env_info info;
} demo_env;

/* 1 when the comma-separated list names word. */
/* The designer's new-environment demonstrations grounded on es[i]: the
 * loop's request with es[i] as the excerpt, answered by every other source
 * of its family (another file, whatever its name). */
static int write_pairs(spade_tokenizer *tok, const demo_env *es, int n, int i, int budget, const char *out_path) {
    char **texts = calloc((size_t)n, sizeof *texts);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    int made = 0, rc = CLI_FAIL;
    if (!texts || !lens) {
        cli_err(CLI_FAIL, "demos", "out of memory");
        goto done;
    }
    for (int j = 0; j < n; j++) {
        if (j == i || strcmp(es[j].info.family, es[i].info.family) || !strcmp(es[j].path, es[i].path)) continue;
        spade_transcript t;
        if (designer_prompt(tok, es[i].path, es[i].src, es[i].len, es[i].info.family, budget, NULL, &t)) goto done;
        spade_transcript_designer_source(&t, tok, es[j].src, es[j].len);
        if (spade_transcript_render(&t, tok, &texts[made], &lens[made]) == 0) made++;
        spade_transcript_free(&t);
    }
    size_t bytes;
    if (write_file(out_path, texts, lens, made, &bytes)) goto done;
    printf("%s: %d other sources of the family %s written as answers (%zu bytes)\n", out_path, made, es[i].info.family,
           bytes);
    rc = CLI_OK;
done:
    for (int k = 0; texts && k < made; k++) free(texts[k]);
    free(texts);
    free(lens);
    return rc;
}

/* Loads spec into e (its source, info and checked params); a held-out file,
 * or a copy of one anywhere, is refused before it is compiled. */
static int load_env(spade_sandbox *sb, const spade_heldout_guard *guard, const char *spec, demo_env *e) {
    if (cli_load_spec("demos", spec, e->path, sizeof e->path, e->params, sizeof e->params, &e->src, &e->len))
        return CLI_FAIL;
    char why[SPADE_PATH_MAX + 256];
    if (spade_heldout_guard_refuses(guard, e->path, e->src, e->len, why, sizeof why))
        return cli_err(CLI_FAIL, "demos",
                       "%s: held-out environments are never written as training data (every held-out figure would "
                       "be contaminated); to train on it on purpose, copy it out of the suite and set SPADE_HELDOUT "
                       "to a suite directory (one holding a %s marker file) that does not hold it",
                       why, SPADE_HELDOUT_MARKER);
    spade_worker *w = NULL;
    spade_failure f;
    if (spade_worker_load(sb, e->path, e->src, e->len, &w, &f)) {
        cli_print_failure("demos", e->path, &f);
        return CLI_FAIL;
    }
    e->info = *spade_worker_info(w);
    spade_worker_free(w);
    if (!e->info.has_solve)
        return cli_err(CLI_FAIL, "demos", "%s: the environment has no SOLVE to demonstrate", e->path);
    for (const char *p = e->params; *p;) { /* every param the spec names is one of the environment's */
        size_t k = strcspn(p, "=,");
        int found = 0;
        for (int j = 0; j < e->info.n_params; j++)
            found |= strlen(e->info.params[j].name) == k && !strncmp(e->info.params[j].name, p, k);
        if (!found) return cli_err(CLI_FAIL, "demos", "%s: unknown param '%.*s'", spec, (int)k, p);
        p += strcspn(p, ",");
        if (*p) p++;
    }
    return CLI_OK;
}

/* ---------------------------------------------------------------- command */

typedef struct demo_opts {
    long episodes, designer, rewrite, budget;
    int sweep, hint, pairs;
    uint64_t seed;
    const char *out, *model, *hold_out;
} demo_opts;

static int parse_opts(int argc, char **argv, demo_opts *o) {
    static const struct option longopts[] = {{"episodes", required_argument, 0, 'n'},
                                             {"out", required_argument, 0, 'o'},
                                             {"params-sweep", no_argument, 0, 'p'},
                                             {"hint", no_argument, 0, 'H'},
                                             {"seed", required_argument, 0, 'S'},
                                             {"designer", required_argument, 0, 'd'},
                                             {"rewrite", required_argument, 0, 'R'},
                                             {"pairs", no_argument, 0, 'P'},
                                             {"hold-out", required_argument, 0, 'X'},
                                             {"prompt-budget", required_argument, 0, 'B'},
                                             {"model", required_argument, 0, 'm'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    *o = (demo_opts){.episodes = 16};
    long v;
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "n:o:pHd:m:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            if (cli_parse_long("demos", "--episodes", optarg, 0, 1000000, &o->episodes) < 0) return CLI_USAGE;
            break;
        case 'o': o->out = optarg; break;
        case 'p': o->sweep = 1; break;
        case 'H': o->hint = 1; break;
        case 'S':
            if (cli_parse_u64("demos", "--seed", optarg, &o->seed) < 0) return CLI_USAGE;
            break;
        case 'd':
            if (cli_parse_long("demos", "--designer", optarg, 0, 1000, &o->designer) < 0) return CLI_USAGE;
            break;
        case 'R':
            if (cli_parse_long("demos", "--rewrite", optarg, 0, 1000, &o->rewrite) < 0) return CLI_USAGE;
            break;
        case 'P': o->pairs = 1; break;
        case 'X': o->hold_out = optarg; break;
        case 'B':
            if (cli_parse_long("demos", "--prompt-budget", optarg, 256, 1 << 20, &v) < 0) return CLI_USAGE;
            o->budget = v;
            break;
        case 'm': o->model = optarg; break;
        case 'h': cli_usage_demos(stdout); return -1;
        default: return cli_bad_option("demos", argc, argv, optopt);
        }
    }
    if (optind >= argc) return cli_err(CLI_USAGE, "demos", "name at least one environment (spade demos --help)");
    if (!o->out) return cli_err(CLI_USAGE, "demos", "--out DIR is required");
    if (!o->episodes && !o->designer && !o->rewrite && !o->pairs)
        return cli_err(CLI_USAGE, "demos", "--episodes 0 writes nothing without --designer K, --rewrite K or --pairs");
    if (argc - optind > DEMO_MAX_SPECS) return cli_err(CLI_USAGE, "demos", "at most %d environments", DEMO_MAX_SPECS);
    return CLI_OK;
}

/* Everything asked of one environment, into files named after it. */
static int write_env(spade_sandbox *sb, spade_tokenizer *tok, const spade_heldout_guard *guard, const demo_opts *o,
                     const demo_env *es, int n, int i) {
    const demo_env *e = &es[i];
    char file[SPADE_PATH_MAX + 100];
    int rc = CLI_OK;
    snprintf(file, sizeof file, "%s/%s.transcript", o->out, e->name);
    if (o->episodes > 0)
        rc = play_env(sb, tok, e->path, e->src, e->len, e->params, &e->info, o->episodes, o->sweep, o->hint, o->seed,
                      file);
    if (rc == CLI_OK && o->designer > 0) {
        snprintf(file, sizeof file, "%s/%s.designer.transcript", o->out, e->name);
        rc = write_variants(sb, tok, guard, e->path, e->src, e->len, &e->info, (int)o->designer, (int)o->budget, 0,
                            o->seed, file);
    }
    if (rc == CLI_OK && o->rewrite > 0) {
        snprintf(file, sizeof file, "%s/%s.rewrite.transcript", o->out, e->name);
        rc = write_variants(sb, tok, guard, e->path, e->src, e->len, &e->info, (int)o->rewrite, (int)o->budget, 1,
                            o->seed ^ 0x5EED, file);
    }
    if (rc == CLI_OK && o->pairs) {
        snprintf(file, sizeof file, "%s/%s.pairs.transcript", o->out, e->name);
        rc = write_pairs(tok, es, n, i, (int)o->budget, file);
    }
    return rc;
}

int cli_demos(spade_sandbox *sb, int argc, char **argv) {
    demo_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc) return rc < 0 ? CLI_OK : rc;
    char err[2048];
    spade_heldout_guard *guard = NULL; /* a suite that cannot be found is an error, not an open door */
    if (spade_heldout_guard_new(&guard, NULL, err, sizeof err) < 0)
        return cli_err(CLI_FAIL, "demos", "the held-out guard: %s", err);
    spade_tokenizer *tok = NULL; /* the render spells every token out, so bytes lose nothing */
    if (o.model ? spade_tokenizer_from_model(&tok, o.model, err, sizeof err)
                : spade_tokenizer_new_bytes(&tok, err, sizeof err)) {
        spade_heldout_guard_free(guard);
        return cli_err(CLI_FAIL, "demos", "%s", err);
    }
    if (!o.budget) o.budget = o.model ? 2048 : 1024;
    static demo_env es[DEMO_MAX_SPECS];
    int n = 0, held = 0;
    for (int i = optind; i < argc && rc == CLI_OK; i++) {
        demo_env *e = &es[n];
        memset(e, 0, sizeof *e);
        if ((rc = load_env(sb, guard, argv[i], e))) {
            free(e->src);
            break;
        }
        if (o.hold_out && spade_family_listed(o.hold_out, e->info.family)) { /* whole families left out of every file */
            printf("held out: %s (family %s)\n", e->info.name, e->info.family);
            free(e->src);
            held++;
            continue;
        }
        /* names already written, so two specs of one environment do not overwrite each other */
        char base[sizeof e->info.name];
        memcpy(base, e->info.name, sizeof base);
        snprintf(e->name, sizeof e->name, "%s", base);
        for (int dup = 2, j = 0; j < n; j++)
            if (!strcmp(es[j].name, e->name)) snprintf(e->name, sizeof e->name, "%s-%d", base, dup++), j = -1;
        n++;
    }
    if (rc == CLI_OK && !n) rc = cli_err(CLI_FAIL, "demos", "every environment named is held out (%d)", held);
    /* every input loaded and guarded: only now is anything made under --out */
    if (rc == CLI_OK && mkdir(o.out, 0755) && errno != EEXIST)
        rc = cli_err(CLI_FAIL, "demos", "cannot create %s: %s", o.out, strerror(errno));
    for (int i = 0; i < n && rc == CLI_OK; i++) rc = write_env(sb, tok, guard, &o, es, n, i);
    for (int i = 0; i < n; i++) free(es[i].src);
    spade_tokenizer_free(tok);
    spade_heldout_guard_free(guard);
    return rc;
}
