/* cmd_generate.c — `spade generate MODEL|CKPT`: continue a prompt with a policy.
 *
 * What it is: load a pretrained model (a known name or a .gguf path, through
 * core/policy/pretrained.h) or a spade checkpoint, encode the prompt with the
 * policy's own tokenizer (a GGUF model's BPE: BOS as the model says; --chat
 * wraps it as one ChatML user turn and opens the assistant's), then decode
 * through the decoding batch (one slot, one token per pass): greedy at
 * temperature 0, else a draw from softmax(logits / T) with the seed. stdout
 * holds the continuation's bytes only; --logprobs K prints instead one JSON
 * line per position, the K most likely next tokens with their log-softmax
 * (temperature 1). Timings and notes go to stderr.
 * What it is not: a chat loop or a server, and not the self-play sampler
 * (spade_policy_sample); it stops at the model's end-of-generation tokens
 * (a spade tokenizer's <|end|>), its --tokens, or the context.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "policy/bpe.h"
#include "policy/models.h"
#include "policy/policy.h"
#include "policy/pretrained.h"

#define CMD "generate"

void cli_usage_generate(FILE *out) {
    fprintf(out, "usage: spade generate MODEL|CKPT [--prompt TEXT | --prompt-file F] [--chat] [--tokens N]\n"
                 "                      [--temperature T] [--seed S] [--logprobs K] [--context N] [--backend B]\n"
                 "\n"
                 "Continues the prompt with a pretrained model (a known NAME or a PATH.gguf; weights\n"
                 "dequantized to F32) or a spade checkpoint. stdout holds the continuation only.\n"
                 "  --chat         the prompt is one user turn in ChatML; the reply is the assistant's\n"
                 "  --tokens N     at most N new tokens (64); stops earlier at an end-of-generation token\n"
                 "  --temperature  0 (default) is greedy; > 0 samples from softmax(logits / T)\n"
                 "  --seed S       the sampling stream (1)\n"
                 "  --logprobs K   instead of text, one JSON line per position (prompt, then generated):\n"
                 "                 {\"pos\":P,\"token\":ID,\"gen\":0|1,\"top\":[[ID,LOGP],...]}, the K most\n"
                 "                 likely tokens after position P at temperature 1\n"
                 "  --context N    positions the policy holds (a model: prompt + N, at least 256)\n"
                 "  --backend B    auto | cpu | cpu_ref | cuda\n");
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int is_model_spec(const char *s) {
    size_t n = strlen(s);
    return spade_model_find(s) || (n > 5 && !strcmp(s + n - 5, ".gguf"));
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    for (size_t k; b && (k = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (b) b[n] = 0;
    *len = n;
    return b;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The K largest of lp[0..V) into ids (descending; ties: the smaller id). */
static void top_k(const float *lp, int V, int K, int *ids) {
    int n = 0;
    for (int v = 0; v < V; v++) {
        if (n == K && lp[v] <= lp[ids[K - 1]]) continue;
        int j = n < K ? n++ : K - 1;
        while (j > 0 && lp[ids[j - 1]] < lp[v]) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = v;
    }
}

static void print_top(int pos, int token, int gen, const float *lp, int V, int K, int *ids) {
    top_k(lp, V, K, ids);
    printf("{\"pos\":%d,\"token\":%d,\"gen\":%d,\"top\":[", pos, token, gen);
    for (int i = 0; i < K; i++) printf("%s[%d,%.7g]", i ? "," : "", ids[i], (double)lp[ids[i]]);
    printf("]}\n");
}

/* What the command line asked for. */
typedef struct gen_args {
    const char *prompt, *prompt_file, *backend, *spec;
    int chat;
    long ntok, K, ctx;
    double temp;
    uint64_t seed;
} gen_args;

/* The options into a; -1 when parsing is done and the command goes on, else
 * the exit status (usage errors, --help). */
static int gen_parse(int argc, char **argv, gen_args *a) {
    static const struct option opts[] = {
        {"prompt", required_argument, 0, 'p'},
        {"prompt-file", required_argument, 0, 'f'},
        {"chat", no_argument, 0, 'c'},
        {"tokens", required_argument, 0, 'n'},
        {"temperature", required_argument, 0, 't'},
        {"seed", required_argument, 0, 's'},
        {"logprobs", required_argument, 0, 'l'},
        {"context", required_argument, 0, 'x'},
        {"backend", required_argument, 0, 'b'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    *a = (gen_args){.ntok = 64, .seed = 1};
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case 'p': a->prompt = optarg; break;
        case 'f': a->prompt_file = optarg; break;
        case 'c': a->chat = 1; break;
        case 'n':
            if (cli_parse_long(CMD, "--tokens", optarg, 1, 1 << 20, &a->ntok)) return CLI_USAGE;
            break;
        case 't': {
            char *e;
            a->temp = strtod(optarg, &e);
            if (e == optarg || *e || !(a->temp >= 0 && a->temp <= 100))
                return cli_err(CLI_USAGE, CMD, "--temperature '%s': expected a number in 0..100", optarg);
            break;
        }
        case 's':
            if (cli_parse_u64(CMD, "--seed", optarg, &a->seed)) return CLI_USAGE;
            break;
        case 'l':
            if (cli_parse_long(CMD, "--logprobs", optarg, 1, SPADE_POLICY_MAX_VOCAB, &a->K)) return CLI_USAGE;
            break;
        case 'x':
            if (cli_parse_long(CMD, "--context", optarg, 2, 65536, &a->ctx)) return CLI_USAGE;
            break;
        case 'b': a->backend = optarg; break;
        case 'h': cli_usage_generate(stdout); return CLI_OK;
        default: return cli_bad_option(CMD, argc, argv, optopt);
        }
    }
    if (optind + 1 != argc) return cli_err(CLI_USAGE, CMD, "expected one MODEL or CKPT (spade generate --help)");
    if (a->prompt && a->prompt_file) return cli_err(CLI_USAGE, CMD, "--prompt and --prompt-file exclude each other");
    a->spec = argv[optind];
    return -1;
}

/* A model by name or .gguf path (its context sized to this prompt and
 * continuation, not the model's 8192+), or a spade checkpoint. */
static int gen_load(const gen_args *a, size_t tlen, spade_policy **p, char *err, size_t errlen) {
    if (!is_model_spec(a->spec)) return spade_policy_load_weights(p, a->spec, a->backend, err, errlen);
    spade_model_opts mo = {.backend = a->backend, .context = (int)a->ctx};
    spade_gpt_config mc;
    if (!a->ctx && !spade_model_config(a->spec, &mo, &mc, err, errlen)) {
        long need = (long)tlen + a->ntok + 64; /* a token is at least one byte, plus chat markup */
        mo.context = (int)(need < 256 ? 256 : need < mc.context ? need : mc.context);
    }
    return spade_policy_from_model(p, a->spec, &mo, err, errlen);
}

/* The prompt's tokens into *toks (n of them): a model's BPE (BOS as the
 * model says; --chat as one ChatML user turn), or a spade tokenizer after
 * <|end|>. 0, or nonzero (err). */
static int gen_encode(const gen_args *a, spade_tokenizer *tk, const char *text, size_t tlen, int **toks, int *n,
                      char *err, size_t errlen) {
    const spade_bpe *bpe = spade_tokenizer_bpe(tk);
    int rc = 0;
    *toks = NULL;
    *n = 0;
    if (bpe) {
        spade_bpe_out o = {0};
        uint8_t *tr = NULL;
        if (a->chat) {
            spade_chat_msg m = {.role = "user", .content = text, .len = tlen};
            rc = spade_bpe_chat(bpe, &m, 1, 1, &o, &tr, err, errlen);
            free(tr);
        } else {
            rc = spade_bpe_encode(bpe, text, tlen, SPADE_BPE_ADD_SPECIAL, &o, err, errlen);
        }
        if (!rc && (*toks = malloc((o.n + 1) * sizeof **toks)))
            for (size_t i = 0; i < o.n; i++) (*toks)[(*n)++] = o.ids[i];
        spade_bpe_out_free(&o);
    } else {
        if (a->chat) rc = -1, snprintf(err, errlen, "--chat needs a pretrained model's tokenizer (ChatML)");
        if (!rc && (*toks = malloc((tlen + 1) * sizeof **toks))) {
            /* a spade policy's documents start after <|end|> (what pretrain puts between them) */
            (*toks)[(*n)++] = SPADE_TOK_END;
            *n += (int)spade_tokenizer_encode(tk, text, tlen, *toks + 1);
        }
    }
    if (!rc && !*toks) rc = -1, snprintf(err, errlen, "out of memory");
    return rc;
}

/* The next token from the log-softmax lp: greedy at temperature 0, else
 * softmax(lp / T) by inversion on the seeded stream. */
static int gen_pick(const float *lp, int V, double temp, uint64_t *rng) {
    int tok = 0;
    if (temp == 0) {
        for (int v = 1; v < V; v++)
            if (lp[v] > lp[tok]) tok = v;
        return tok;
    }
    double mx = -INFINITY, z = 0;
    for (int v = 0; v < V; v++) mx = lp[v] > mx ? lp[v] : mx;
    for (int v = 0; v < V; v++) z += exp((lp[v] - mx) / temp);
    double u = (double)(splitmix(rng) >> 11) * 0x1.0p-53 * z, c = 0;
    for (tok = 0; tok < V - 1; tok++)
        if ((c += exp((lp[tok] - mx) / temp)) > u) break;
    return tok;
}

/* The continuation's bytes so far, printed as whole UTF-8 sequences. */
typedef struct gen_out {
    char *p;
    size_t len, printed, cap;
} gen_out;

/* Appends a token's piece and prints what is whole; 0, or -1 out of memory. */
static int gen_emit(gen_out *o, const unsigned char *pc, size_t pl) {
    if (o->len + pl > o->cap) {
        o->cap = (o->len + pl) * 2 + 256;
        char *nb = realloc(o->p, o->cap);
        if (!nb) return -1;
        o->p = nb;
    }
    memcpy(o->p + o->len, pc, pl);
    o->len += pl;
    /* hold back a UTF-8 sequence the next token completes */
    size_t ok = spade_bpe_utf8_complete(o->p + o->printed, o->len - o->printed);
    fwrite(o->p + o->printed, 1, ok, stdout);
    fflush(stdout);
    o->printed += ok;
    return 0;
}

int cli_generate(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    gen_args a;
    int rc = gen_parse(argc, argv, &a);
    if (rc >= 0) return rc;
    long K = a.K;
    char *text = NULL;
    size_t tlen = 0;
    if (a.prompt_file) {
        if (!(text = read_all(a.prompt_file, &tlen))) return cli_err(CLI_FAIL, CMD, "%s: cannot read", a.prompt_file);
    } else {
        text = strdup(a.prompt ? a.prompt : "");
        tlen = strlen(text);
    }

    char err[1200];
    double t0 = now_s();
    spade_policy *p = NULL;
    rc = gen_load(&a, tlen, &p, err, sizeof err);
    if (rc) {
        free(text);
        return cli_err(CLI_FAIL, CMD, "%s", err);
    }
    double t_load = now_s() - t0;
    spade_tokenizer *tk = spade_policy_tokenizer(p);
    const spade_bpe *bpe = spade_tokenizer_bpe(tk);
    int V = spade_tokenizer_vocab(tk), context = spade_policy_config(p)->context;

    int *toks = NULL, n = 0;
    rc = gen_encode(&a, tk, text, tlen, &toks, &n, err, sizeof err);
    if (!rc && n == 0)
        rc = -1, snprintf(err, sizeof err, "the prompt is empty and the model adds no BOS: give --prompt");
    if (!rc && n >= context)
        rc = -1, snprintf(err, sizeof err, "the prompt is %d tokens; the context holds %d (--context)", n, context);
    spade_decoder *d = NULL;
    if (!rc) rc = spade_decoder_new(&d, p, 1, err, sizeof err);
    float *lp = rc ? NULL : malloc((size_t)V * sizeof *lp);
    int *ids = K ? malloc((size_t)K * sizeof *ids) : NULL;
    if (!rc && (!lp || (K && !ids))) rc = -1, snprintf(err, sizeof err, "out of memory");
    if (K > V) K = V;

    double t1 = now_s();
    if (!rc && K) { /* every prompt position's distribution: one token per pass */
        for (int i = 0; !rc && i < n; i++) {
            rc = spade_decoder_append(d, 0, toks + i, 1, err, sizeof err);
            if (!rc) rc = spade_decoder_next_logprobs(d, 0, lp, err, sizeof err);
            if (!rc) print_top(i, toks[i], 0, lp, V, (int)K, ids);
        }
    } else if (!rc) {
        rc = spade_decoder_append(d, 0, toks, n, err, sizeof err);
        if (!rc) rc = spade_decoder_next_logprobs(d, 0, lp, err, sizeof err);
    }
    double t_prompt = now_s() - t1, t2 = now_s();

    /* the continuation: until an end-of-generation token, --tokens or the context */
    gen_out out = {0};
    int gen = 0;
    uint64_t rng = a.seed ^ 0x5eedULL;
    while (!rc && gen < a.ntok && spade_decoder_len(d, 0) < context) {
        int tok = gen_pick(lp, V, a.temp, &rng);
        gen++;
        int stop = bpe ? spade_bpe_is_eog(bpe, tok) : tok == SPADE_TOK_END;
        if (!K && !stop) {
            size_t pl = 0;
            const unsigned char *pc = spade_tokenizer_piece(tk, tok, &pl);
            if (pc && pl && gen_emit(&out, pc, pl) < 0) {
                rc = -1, snprintf(err, sizeof err, "out of memory");
                break;
            }
        }
        if (stop) break;
        rc = spade_decoder_append(d, 0, &tok, 1, err, sizeof err);
        if (rc > 0) break; /* the context is full */
        if (!rc) rc = spade_decoder_next_logprobs(d, 0, lp, err, sizeof err);
        if (!rc && K) print_top(n + gen - 1, tok, 1, lp, V, (int)K, ids);
    }
    if (rc > 0) rc = 0;
    if (!K && out.printed < out.len) fwrite(out.p + out.printed, 1, out.len - out.printed, stdout);
    if (!K && !rc) fflush(stdout);
    double t_gen = now_s() - t2;
    if (!rc)
        fprintf(stderr,
                "spade generate: %s on %s: loaded in %.2f s; prompt %d tokens in %.2f s (%.1f tokens/s%s); "
                "%d tokens generated in %.2f s (%.1f tokens/s)\n",
                a.spec, spade_policy_backend_name(p), t_load, n, t_prompt, t_prompt > 0 ? n / t_prompt : 0,
                K ? ", one at a time" : "", gen, t_gen, t_gen > 0 ? gen / t_gen : 0);
    free(out.p);
    free(lp);
    free(ids);
    free(toks);
    free(text);
    spade_decoder_free(d);
    spade_policy_free(p);
    if (rc) return cli_err(CLI_FAIL, CMD, "%s", err);
    return CLI_OK;
}
