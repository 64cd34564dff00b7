/* cmd_pretrain.c — `spade pretrain CONFIG`: trains the policy to predict the
 * next byte of a directory of text files (e.g. stdenv/), so self-play starts
 * from a model that can write C at all.
 *
 * What it is: the command. It reads an .ini with [policy] (spade_gpt_config
 * keys) and [pretrain] sections, loads every corpus file (.c, .h, .md, .txt,
 * and .transcript: spade demos' files, whose "<|name|>" markers are read as
 * special tokens, cli/transcript_text.h) under the data directory (sorted, so
 * runs are reproducible; a relative data path is taken from the config file's
 * directory), encodes it with the policy's tokenizer (bytes; or BPE from policy.tokenizer_file, or trained here on the
 * data and kept in OUT/tokenizer.txt and in the checkpoint), samples random windows,
 * trains with AdamW (linear warm-up, cosine decay to 10%), shows a progress bar
 * on a TTY, appends one JSON object per step to a JSONL log, prints samples,
 * and checkpoints atomically; started again with the same output directory it
 * resumes from the last checkpoint (the batches of step s depend only on the
 * seed and s, so a resumed run sees the data an uninterrupted one would have).
 * SIGINT/SIGTERM finish the current step, checkpoint, and exit 1.
 * What it is not: library code (it prints and owns the process), nor the run
 * config layer of self-play (it parses its own file with inih for now).
 */
#include "cmd_pretrain.h"

#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "policy/policy.h"
#include "policy/pretrained.h"
#include "rng.h"
#include "transcript_text.h"

typedef struct pt_config {
    spade_gpt_config gpt;
    char data[1024];
    char out[1024];
    char log[1024]; /* default OUT/pretrain.jsonl */
    long steps; /* total optimizer steps (the run ends at this step) */
    int batch; /* sequences per step */
    int seq; /* tokens per sequence (default: policy.context) */
    float lr, min_lr_frac, weight_decay, grad_clip;
    long warmup;
    long checkpoint_every, sample_every;
    int sample_tokens;
    float sample_temperature;
    int tokenizer_vocab; /* BPE vocabulary when one is trained on the data */
    uint64_t seed;
    char model[1024]; /* [policy] model: a pretrained model (a known name or a .gguf) to start from */
    int answers; /* [pretrain] loss = answers: the loss on what a role wrote only, windows from a transcript's start */
    /* parse state */
    const char *file;
    int bad_line;
    char msg[512];
} pt_config;

static void pt_defaults(pt_config *c) {
    memset(c, 0, sizeof *c);
    spade_gpt_config_default(&c->gpt);
    snprintf(c->out, sizeof c->out, "pretrain-out");
    c->steps = 1000;
    c->batch = 8;
    c->lr = 3e-4f;
    c->min_lr_frac = 0.1f;
    c->weight_decay = 0.1f;
    c->grad_clip = 1.0f;
    c->warmup = 50;
    c->checkpoint_every = 200;
    c->sample_every = 200;
    c->sample_tokens = 200;
    c->sample_temperature = 0.8f;
    c->tokenizer_vocab = 4096;
    c->seed = 1;
}

static int num(const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) return -1;
    *out = x;
    return 0;
}

/* inih handler: returns 0 on an error (inih then reports the line). */
static int on_key(void *user, const char *section, const char *name, const char *value) {
    pt_config *c = user;
    char e[400];
    if (c->msg[0]) return 1; /* keep the first error only */
    if (!strcmp(section, "policy") && !strcmp(name, "model")) {
        if (!*value || strlen(value) >= sizeof c->model) {
            snprintf(c->msg, sizeof c->msg, "[policy] model = '%s': expected a model name or a .gguf path", value);
            return 0;
        }
        snprintf(c->model, sizeof c->model, "%s", value);
        return 1;
    }
    if (!strcmp(section, "policy")) {
        int rc = spade_gpt_config_set(&c->gpt, name, value, e, sizeof e);
        if (rc) {
            snprintf(c->msg, sizeof c->msg, "[policy] %s", e);
            return 0;
        }
        return 1;
    }
    if (strcmp(section, "pretrain")) {
        snprintf(c->msg, sizeof c->msg, "unknown section [%s] (expected [policy] or [pretrain])", section);
        return 0;
    }
    double x;
#define STR(k, f)                                                                                                      \
    if (!strcmp(name, k)) {                                                                                            \
        if (!*value || strlen(value) >= sizeof c->f) goto bad;                                                         \
        snprintf(c->f, sizeof c->f, "%s", value);                                                                      \
        return 1;                                                                                                      \
    }
#define NUM(k, f, lo, hi, T)                                                                                           \
    if (!strcmp(name, k)) {                                                                                            \
        if (num(value, lo, hi, &x)) {                                                                                  \
            snprintf(c->msg, sizeof c->msg, "[pretrain] %s = '%s': expected a number in [%g, %g]", name, value,        \
                     (double)(lo), (double)(hi));                                                                      \
            return 0;                                                                                                  \
        }                                                                                                              \
        c->f = (T)x;                                                                                                   \
        return 1;                                                                                                      \
    }
    /* Integer keys: "batch = 2.5" is a mistake, not 2 (1e4 is fine). */
#define INT(k, f, lo, hi, T)                                                                                           \
    if (!strcmp(name, k)) {                                                                                            \
        if (num(value, lo, hi, &x) || x != floor(x)) {                                                                 \
            snprintf(c->msg, sizeof c->msg, "[pretrain] %s = '%s': expected an integer in [%g, %g]", name, value,      \
                     (double)(lo), (double)(hi));                                                                      \
            return 0;                                                                                                  \
        }                                                                                                              \
        c->f = (T)x;                                                                                                   \
        return 1;                                                                                                      \
    }
    STR("data", data)
    STR("out", out)
    STR("log", log)
    INT("steps", steps, 1, 1e12, long)
    INT("batch", batch, 1, 1e6, int)
    INT("seq", seq, 2, 65536, int)
    NUM("lr", lr, 0, 10, float)
    NUM("min_lr_frac", min_lr_frac, 0, 1, float)
    NUM("weight_decay", weight_decay, 0, 10, float)
    NUM("grad_clip", grad_clip, 0, 1e9, float)
    INT("warmup", warmup, 0, 1e12, long)
    INT("checkpoint_every", checkpoint_every, 0, 1e12, long)
    INT("sample_every", sample_every, 0, 1e12, long)
    INT("sample_tokens", sample_tokens, 1, 65536, int)
    NUM("sample_temperature", sample_temperature, 0, 100, float)
    INT("tokenizer_vocab", tokenizer_vocab, SPADE_VOCAB, SPADE_TOK_MAX_VOCAB, int)
    if (!strcmp(name, "loss")) {
        if (strcmp(value, "all") && strcmp(value, "answers")) {
            snprintf(c->msg, sizeof c->msg, "[pretrain] loss = '%s': expected all or answers", value);
            return 0;
        }
        c->answers = !strcmp(value, "answers");
        return 1;
    }
    if (!strcmp(name, "seed")) {
        /* every u64 exactly: through a double, seeds past 2^53 would round */
        char *end;
        errno = 0;
        unsigned long long sd = strtoull(value, &end, 0);
        if (errno || end == value || *end || strchr(value, '-')) {
            snprintf(c->msg, sizeof c->msg, "[pretrain] seed = '%s': expected an integer in [0, 2^64)", value);
            return 0;
        }
        c->seed = sd;
        return 1;
    }
    snprintf(c->msg, sizeof c->msg,
             "unknown key '%s' in [pretrain] (keys: data, out, log, steps, batch, seq, lr, min_lr_frac, "
             "weight_decay, grad_clip, warmup, checkpoint_every, sample_every, sample_tokens, "
             "sample_temperature, tokenizer_vocab, loss, seed)",
             name);
    return 0;
bad:
    snprintf(c->msg, sizeof c->msg, "[pretrain] %s = '%s': expected a non-empty path under %zu bytes", name, value,
             sizeof c->data);
    return 0;
#undef STR
#undef NUM
#undef INT
}

static int load_config(const char *path, pt_config *c) {
    pt_defaults(c);
    c->file = path;
    /* A config that cannot be read is a failure (1), as for any missing file;
     * a directory opens for reading and would parse as an empty config. */
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "spade pretrain: %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "spade pretrain: %s: is a directory, not a config file\n", path);
        return 1;
    }
    int line = ini_parse(path, on_key, c);
    if (line == -1) {
        fprintf(stderr, "spade pretrain: %s: %s\n", path, strerror(errno ? errno : ENOENT));
        return 1;
    }
    if (line != 0 || c->msg[0]) {
        if (line > 0)
            fprintf(stderr, "spade pretrain: %s:%d: %s\n", path, line, c->msg[0] ? c->msg : "syntax error");
        else
            fprintf(stderr, "spade pretrain: %s: %s\n", path, c->msg[0] ? c->msg : "cannot parse");
        return 2;
    }
    char e[400];
    if (spade_gpt_config_validate(&c->gpt, e, sizeof e)) {
        fprintf(stderr, "spade pretrain: %s: %s\n", path, e);
        return 2;
    }
    if (!c->data[0]) {
        fprintf(stderr, "spade pretrain: %s: [pretrain] data = DIR is required\n", path);
        return 2;
    }
    /* data is part of the config, so a relative path means the config's
     * directory, whatever directory spade runs in (an installed config names
     * the installed stdenv as ../stdenv). out and log are where the run
     * writes, and stay relative to the working directory. */
    if (c->data[0] != '/') {
        const char *slash = strrchr(path, '/');
        if (slash) {
            char joined[sizeof c->data];
            int n = snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - path), path, c->data);
            if (n < 0 || (size_t)n >= sizeof joined) {
                fprintf(stderr, "spade pretrain: %s: [pretrain] data: path too long\n", path);
                return 2;
            }
            memcpy(c->data, joined, (size_t)n + 1);
        }
    }
    if (!c->seq) c->seq = c->gpt.context;
    if (c->seq > c->gpt.context) {
        fprintf(stderr, "spade pretrain: %s: [pretrain] seq = %d exceeds policy.context = %d\n", path, c->seq,
                c->gpt.context);
        return 2;
    }
    if (!c->log[0]) snprintf(c->log, sizeof c->log, "%.1000s/pretrain.jsonl", c->out);
    return 0;
}

/* ---------------------------------------------------------------- data */

typedef struct {
    int *tok;
    size_t n, cap;
    int files;
    /* loss = answers: ans[i] = 1 where token i is what a role wrote (a
     * transcript's answers: the actions, the source, each with its end of
     * turn), and the transcripts' first tokens, where windows start */
    unsigned char *ans;
    size_t *starts;
    size_t n_starts, cap_starts;
} corpus;

/* The files as read, before a tokenizer is chosen (one may be trained on them). */
typedef struct {
    char **b;
    size_t *len;
    unsigned char *transcript; /* 1: a rendered transcript file (NAME.transcript, cli/transcript_text.h) */
    int n, cap;
    size_t bytes;
} docs;

static void free_docs(docs *d) {
    for (int i = 0; i < d->n; i++) free(d->b[i]);
    free(d->b);
    free(d->len);
    free(d->transcript);
}

/* Read a whole file into d; -1 on failure (printed). */
static int add_doc(docs *d, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "spade pretrain: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t n = 0;
    int bad;
    char *b = cli_read_stream(f, &n, &bad);
    fclose(f);
    if (d->n == d->cap) {
        int nc = d->cap ? d->cap * 2 : 64;
        char **nb = realloc(d->b, (size_t)nc * sizeof *nb);
        size_t *nl = nb ? realloc(d->len, (size_t)nc * sizeof *nl) : NULL;
        unsigned char *nt = nl ? realloc(d->transcript, (size_t)nc) : NULL;
        if (nb) d->b = nb;
        if (nl) d->len = nl;
        if (nt) d->transcript = nt;
        if (!nb || !nl || !nt) {
            free(b);
            b = NULL;
        } else {
            d->cap = nc;
        }
    }
    if (!b || bad) {
        free(b);
        fprintf(stderr, "spade pretrain: %s: %s\n", path, bad ? "read error" : "out of memory");
        return -1;
    }
    size_t pl = strlen(path);
    d->transcript[d->n] = pl > 11 && !strcmp(path + pl - 11, ".transcript");
    d->b[d->n] = b;
    d->len[d->n++] = n;
    d->bytes += n;
    return 0;
}

static int push(corpus *cp, int t) {
    if (cp->n == cp->cap) {
        size_t nc = cp->cap ? cp->cap * 2 : 1 << 16;
        int *nt = realloc(cp->tok, nc * sizeof(int));
        if (!nt) return -1;
        cp->tok = nt;
        cp->cap = nc;
    }
    cp->tok[cp->n++] = t;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The kinds of file a corpus is made of: source and prose. Build files
 * (local.mk), configs and binaries under the same tree are not text the policy
 * should learn to write. */
static int corpus_file(const char *name) {
    static const char *const kinds[] = {".c", ".h", ".md", ".txt", ".transcript"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        size_t k = strlen(kinds[i]);
        if (n > k && !strcmp(name + n - k, kinds[i])) return 1;
    }
    return 0;
}

/* Reads every corpus file under dir (sorted, recursive, skipping dot files). */
static int load_dir(const char *dir, docs *cp, int depth) {
    if (depth > 16) return 0;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "spade pretrain: data directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char **nn2 = realloc(names, (nn + 1) * sizeof *names);
        if (!nn2) break;
        names = nn2;
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, cmp_str);
    int rc = 0;
    for (size_t i = 0; i < nn && !rc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            rc = load_dir(path, cp, depth + 1);
        } else if (S_ISREG(st.st_mode) && corpus_file(names[i])) {
            rc = add_doc(cp, path);
        }
    }
    for (size_t i = 0; i < nn; i++) free(names[i]);
    free(names);
    return rc;
}

/* Marks the answers of a transcript file's tokens (cp->tok[from..]) and
 * records where each transcript starts (cli/transcript_text.h). */
static int mark_answers(spade_tokenizer *t, corpus *cp, size_t from) {
    unsigned char *na = realloc(cp->ans, cp->cap), *st = malloc(cp->n - from + 1);
    if (na) cp->ans = na;
    if (!na || !st) {
        free(st);
        return -1;
    }
    spade_transcript_text_answers(t, cp->tok + from, cp->n - from, cp->ans + from, st);
    for (size_t i = 0; i < cp->n - from; i++) {
        if (!st[i]) continue;
        if (cp->n_starts == cp->cap_starts) {
            size_t nc = cp->cap_starts ? cp->cap_starts * 2 : 1024;
            size_t *n2 = realloc(cp->starts, nc * sizeof *n2);
            if (!n2) {
                free(st);
                return -1;
            }
            cp->starts = n2, cp->cap_starts = nc;
        }
        cp->starts[cp->n_starts++] = from + i;
    }
    free(st);
    return 0;
}

/* The token stream: each file encoded by t, followed by <|end|>; a
 * .transcript file with its <|name|> markers as special tokens and no <|end|>
 * added (each of its transcripts ends with one). */
static int encode_docs(const docs *d, spade_tokenizer *t, int answers, corpus *cp) {
    size_t maxlen = 1;
    for (int i = 0; i < d->n; i++)
        if (d->len[i] > maxlen) maxlen = d->len[i];
    int *buf = malloc(maxlen * sizeof *buf);
    if (!buf) return -1;
    int rc = 0;
    for (int i = 0; i < d->n && !rc; i++) {
        size_t k = d->transcript[i] ? spade_transcript_text_encode(t, d->b[i], d->len[i], buf)
                                    : spade_tokenizer_encode(t, d->b[i], d->len[i], buf);
        size_t from = cp->n;
        for (size_t j = 0; j < k && !rc; j++) rc = push(cp, buf[j]);
        int end = spade_tokenizer_special(t, SPADE_TOK_END); /* <|end|>, or a pretrained model's EOS */
        if (!rc && end >= 0 && (!d->transcript[i] || !k || buf[k - 1] != end)) rc = push(cp, end);
        if (!rc && answers) { /* other files train nothing under loss = answers */
            unsigned char *na = realloc(cp->ans, cp->cap);
            if (!na) rc = -1;
            cp->ans = na ? na : cp->ans;
            if (!rc) memset(cp->ans + from, 0, cp->n - from);
            if (!rc && d->transcript[i]) rc = mark_answers(t, cp, from);
        }
        cp->files++;
    }
    free(buf);
    return rc;
}

/* Feeds the text runs of a transcript to the BPE trainer (markers are special tokens, never merged). */
typedef struct {
    spade_bpe_trainer *tr;
    char *err;
    size_t errlen;
    int rc;
} bpe_add;
static void bpe_add_text(void *ctx, const char *p, size_t n) {
    bpe_add *a = ctx;
    if (!a->rc) a->rc = spade_bpe_trainer_add(a->tr, p, n, a->err, a->errlen);
}
static void bpe_skip_special(void *ctx, int tok) {
    (void)ctx;
    (void)tok;
}

/* ---------------------------------------------------------------- helpers */

static volatile sig_atomic_t stop_requested;
static void on_signal(int s) {
    (void)s;
    stop_requested = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float lr_at(const pt_config *c, long step) {
    if (c->warmup > 0 && step <= c->warmup) return c->lr * (float)step / (float)c->warmup;
    double span = (double)(c->steps - c->warmup), t = span > 0 ? (step - c->warmup) / span : 1.0;
    if (t > 1) t = 1;
    double f = c->min_lr_frac + (1 - c->min_lr_frac) * 0.5 * (1 + cos(M_PI * t));
    return (float)(c->lr * f);
}

static void json_str(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch == '\t')
            fputs("\\t", f);
        else if (ch < 0x20 || ch >= 0x7f)
            fprintf(f, "\\u%04x", ch); /* bytes as code points: lossless */
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void progress(long step, long total, float loss, double tok_s, double eta) {
    int w = 30, fill = total > 0 ? (int)(w * (double)step / total) : w;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\r[%s] %ld/%ld loss %.4f %.0f tok/s eta %.0fs   ", bar, step, total, loss, tok_s, eta);
    fflush(stderr);
}

static void usage(FILE *f) {
    fprintf(f, "usage: spade pretrain CONFIG\n\n"
               "Trains the policy to predict the next token of every .c, .h, .md, .txt and .transcript file under\n"
               "[pretrain] data (a relative path is from the config file's directory).\n"
               "CONFIG is an .ini file:\n"
               "  [policy]   layers, heads, width, context, backend (auto|cpu|cuda|cpu_ref), seed,\n"
               "             tokenizer (bytes|bpe), tokenizer_file; or model = NAME|PATH.gguf (a pretrained\n"
               "             model to fine-tune, with its own shape and tokenizer; context and backend apply)\n"
               "  [pretrain] data (required), out, log, steps, batch, seq, lr, min_lr_frac,\n"
               "             weight_decay, grad_clip, warmup, checkpoint_every, sample_every,\n"
               "             sample_tokens, sample_temperature, tokenizer_vocab, loss (all|answers), seed\n"
               "loss = answers trains only what a role wrote in the *.transcript files (the agent's actions,\n"
               "the designer's source, each with its end of turn; docs/train.md), each window starting at a\n"
               "transcript's start; other files are then context only.\n"
               "With tokenizer = bpe and no tokenizer_file, a BPE of tokenizer_vocab tokens (4096)\n"
               "is trained on the data first and written to OUT/tokenizer.txt; the checkpoint\n"
               "stores the tokenizer either way. Files named *.transcript (spade demos) are read\n"
               "with their <|name|> markers as the special tokens they spell.\n"
               "Writes OUT/policy.ckpt (atomically) every checkpoint_every steps and at the end,\n"
               "and one JSON object per step to the log (default OUT/pretrain.jsonl).\n"
               "Run it again with the same OUT to resume from the checkpoint.\n"
               "Exit status: 0 done, 1 failed or interrupted (after checkpointing), 2 usage error.\n");
}

/* ---------------------------------------------------------------- command */

/* The policy to train: the checkpoint in [pretrain] out when there is one (it must be of the
 * config's shape and tokenizer), else a new one, with a tokenizer learnt from the documents when
 * the config asks for BPE without naming a file. 0, or 1 with the message in err. */
static int open_policy(const pt_config *c, const char *config_path, const docs *dd, const char *ckpt,
                       spade_policy **out, char *err, size_t errlen) {
    spade_policy *p = NULL;
    int rc;
    if (c->model[0]) { /* a pretrained model: its own shape and tokenizer; resumed from its checkpoint */
        (void)dd;
        spade_model_opts mo = {.backend = c->gpt.backend, .context = c->gpt.context};
        rc = access(ckpt, F_OK) == 0 ? spade_policy_load(&p, ckpt, c->gpt.backend, err, errlen)
                                     : spade_policy_from_model(&p, c->model, &mo, err, errlen);
        if (!rc && spade_policy_config(p)->context < (c->seq ? c->seq : c->gpt.context)) {
            snprintf(err, errlen, "[pretrain] seq = %d exceeds the context of %s (%d)", c->seq, ckpt,
                     spade_policy_config(p)->context);
            rc = 1;
        }
        if (rc)
            spade_policy_free(p);
        else
            *out = p;
        return rc ? 1 : 0;
    }
    if (access(ckpt, F_OK) == 0) {
        spade_gpt_config fc;
        if (spade_policy_read_config(ckpt, &fc, err, errlen)) {
            char why[1024];
            snprintf(why, sizeof why, "%.1000s", err);
            snprintf(err, errlen, "cannot resume: %s", why);
            return 1;
        }
        if (fc.layers != c->gpt.layers || fc.heads != c->gpt.heads || fc.width != c->gpt.width ||
            fc.context != c->gpt.context || strcmp(fc.tokenizer, c->gpt.tokenizer) ||
            !spade_gpt_config_same_arch(&fc, &c->gpt)) {
            snprintf(err, errlen,
                     "cannot resume: %s has arch %s layers %d heads %d width %d context %d tokenizer %s, "
                     "%s asks for %s %d %d %d %d %s (use another [pretrain] out)",
                     ckpt, fc.arch, fc.layers, fc.heads, fc.width, fc.context, fc.tokenizer, config_path,
                     c->gpt.arch[0] ? c->gpt.arch : "gpt", c->gpt.layers, c->gpt.heads, c->gpt.width, c->gpt.context,
                     c->gpt.tokenizer);
            return 1;
        }
        rc = spade_policy_load(&p, ckpt, c->gpt.backend, err, errlen);
        /* a tokenizer file named in the config must be the one the run started with */
        spade_tokenizer *ft = NULL;
        if (!rc && !strcmp(c->gpt.tokenizer, "bpe") && c->gpt.tokenizer_file[0]) {
            char e[1000];
            if (spade_tokenizer_load(&ft, c->gpt.tokenizer_file, e, sizeof e)) {
                snprintf(err, errlen, "policy.tokenizer_file: %s", e);
                rc = 1;
            } else if (!spade_tokenizer_equal(ft, spade_policy_tokenizer(p))) {
                snprintf(err, errlen,
                         "cannot resume: the tokenizer in %s is not the one in %s "
                         "(policy.tokenizer_file); use another [pretrain] out",
                         ckpt, c->gpt.tokenizer_file);
                rc = 1;
            }
            spade_tokenizer_free(ft);
        }
    } else if (!strcmp(c->gpt.tokenizer, "bpe") && !c->gpt.tokenizer_file[0]) {
        /* no tokenizer given: learn one from the data, and keep it beside the checkpoint */
        spade_bpe_trainer *tr = NULL;
        spade_tokenizer *t = NULL;
        char tokpath[1100];
        snprintf(tokpath, sizeof tokpath, "%s/tokenizer.txt", c->out);
        double t0 = now_s();
        rc = spade_bpe_trainer_new(&tr, err, errlen);
        for (int i = 0; i < dd->n && !rc; i++) {
            if (dd->transcript[i]) {
                bpe_add a = {tr, err, errlen, 0};
                spade_transcript_text_walk(dd->b[i], dd->len[i], bpe_add_text, bpe_skip_special, &a);
                rc = a.rc;
            } else {
                rc = spade_bpe_trainer_add(tr, dd->b[i], dd->len[i], err, errlen);
            }
        }
        if (!rc) rc = spade_bpe_trainer_finish(tr, c->tokenizer_vocab, &t, err, errlen);
        if (!rc) rc = spade_tokenizer_save(t, tokpath, err, errlen);
        if (!rc) {
            fprintf(stderr, "spade pretrain: trained a tokenizer of %d tokens on %d files in %.2f s; wrote %s\n",
                    spade_tokenizer_vocab(t), dd->n, now_s() - t0, tokpath);
            rc = spade_policy_new_with_tokenizer(&p, &c->gpt, t, err, errlen);
        }
        spade_tokenizer_free(t);
        spade_bpe_trainer_free(tr);
    } else {
        rc = spade_policy_new(&p, &c->gpt, err, errlen);
    }
    if (rc) {
        spade_policy_free(p);
        return 1;
    }
    *out = p;
    return 0;
}

/* A sample of the policy so far, from a document start (so samples show style, not memory), on
 * stdout and in the log. 0, or 1 with the message in err. */
static int sample_and_log(spade_policy *p, const pt_config *c, long step, int *stok, char *text, size_t textcap,
                          FILE *log, char *err, size_t errlen) {
    int prompt[1] = {spade_tokenizer_special(spade_policy_tokenizer(p), SPADE_TOK_END)}, len = 0;
    spade_sample_opts so;
    spade_sample_opts_default(&so);
    so.temperature = c->sample_temperature;
    so.max_tokens = c->sample_tokens < c->gpt.context - 1 ? c->sample_tokens : c->gpt.context - 1;
    so.seed = (uint64_t)step;
    if (spade_policy_sample(p, prompt, 1, 1, &so, stok, NULL, &len, err, errlen)) return 1;
    size_t tl = 0;
    spade_tokenizer_decode(spade_policy_tokenizer(p), stok, (size_t)len, 1, text, textcap, &tl);
    printf("--- sample at step %ld ---\n%s\n---\n", step, text);
    fflush(stdout);
    fprintf(log, "{\"event\":\"sample\",\"step\":%ld,\"text\":", step);
    json_str(log, text, strlen(text));
    fputs("}\n", log);
    fflush(log);
    return 0;
}

/* One AdamW step on the batch of step s, which depends only on (seed, s): resuming replays
 * nothing and skips nothing. 0, or -1 with the message in err. */
static int train_step(spade_policy *p, const pt_config *c, const corpus *cp, long step, int *tok, int *tg, float *mask,
                      spade_adamw_opts *o, float *loss, float *gnorm, char *err, size_t errlen) {
    int B = c->batch, T = c->seq;
    double msum = 0;
    for (int b = 0; b < B; b++) {
        uint64_t r = spade_mix64(c->seed * 0x100000001B3ull ^ spade_mix64((uint64_t)step * 1000003u + b));
        size_t off = r % (cp->n - T);
        if (c->answers) { /* a transcript from its start (the last ones shifted back to fit) */
            off = cp->starts[r % cp->n_starts];
            if (off + T + 1 > cp->n) off = cp->n - T - 1;
            for (int t = 0; t < T; t++) msum += mask[(size_t)b * T + t] = cp->ans[off + t + 1];
        }
        memcpy(tok + (size_t)b * T, cp->tok + off, (size_t)T * sizeof(int));
        memcpy(tg + (size_t)b * T, cp->tok + off + 1, (size_t)T * sizeof(int));
        /* loss = answers: a prompt position (mask 0) weighs nothing in the loss, so it
         * needs no target either, and then the head does not run there (gpt.c) */
        if (c->answers)
            for (int t = 0; t < T; t++)
                if (mask[(size_t)b * T + t] == 0.0f) tg[(size_t)b * T + t] = -1;
    }
    if (c->answers && msum == 0) {
        snprintf(err, errlen,
                 "no answer token in the step's windows: [pretrain] seq = %d is shorter than the prompts "
                 "(loss = answers trains what follows them)",
                 T);
        return -1;
    }
    o->lr = lr_at(c, step);
    if (spade_policy_forward(p, tok, tg, c->answers ? mask : NULL, B, T, loss, NULL, err, errlen) ||
        spade_policy_backward(p, 1.0f, err, errlen) || spade_policy_step(p, o, gnorm, err, errlen))
        return -1;
    return 0;
}

/* What one pretraining run holds; pretrain_close frees it. */
typedef struct pretrain_run {
    pt_config c;
    corpus cp;
    spade_policy *p;
    FILE *log;
    char ckpt[1100];
    size_t data_bytes;
    long start; /* the policy's steps when this run began (a resumed one's are the checkpoint's) */
} pretrain_run;

static void pretrain_close(pretrain_run *r) {
    if (r->log) fclose(r->log);
    free(r->cp.tok);
    free(r->cp.ans);
    free(r->cp.starts);
    spade_policy_free(r->p);
}

/* The data read and encoded, the policy opened or resumed from OUT/policy.ckpt, the log opened:
 * 0, or 1 having said why. */
static int pretrain_open(pretrain_run *r, const char *cfg_path) {
    pt_config *c = &r->c;
    corpus *cp = &r->cp;
    docs dd = {0};
    char err[2400];
    int rc = 1;
    if (load_dir(c->data, &dd, 0)) goto out;
    if (cli_mkdir_p(c->out)) {
        fprintf(stderr, "spade pretrain: cannot create %s: %s\n", c->out, strerror(errno));
        goto out;
    }
    snprintf(r->ckpt, sizeof r->ckpt, "%s/policy.ckpt", c->out);
    if (open_policy(c, cfg_path, &dd, r->ckpt, &r->p, err, sizeof err)) {
        fprintf(stderr, "spade pretrain: %s\n", err);
        goto out;
    }
    if (encode_docs(&dd, spade_policy_tokenizer(r->p), c->answers, cp)) {
        fprintf(stderr, "spade pretrain: out of memory encoding %s\n", c->data);
        goto out;
    }
    if (c->answers && !cp->n_starts) {
        fprintf(stderr, "spade pretrain: [pretrain] loss = answers, but %s holds no transcript (*.transcript)\n",
                c->data);
        goto out;
    }
    r->data_bytes = dd.bytes;
    if (cp->n < (size_t)c->seq + 1) {
        fprintf(stderr, "spade pretrain: %s holds %zu tokens in %d files; need at least seq + 1 = %d\n", c->data, cp->n,
                cp->files, c->seq + 1);
        goto out;
    }
    r->start = spade_policy_steps(r->p);
    if (!(r->log = fopen(c->log, "a"))) {
        fprintf(stderr, "spade pretrain: log %s: %s\n", c->log, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    free_docs(&dd);
    return rc;
}

/* The run's first lines: what trains on what, on stderr and as the log's start event. */
static void pretrain_announce(pretrain_run *r) {
    const pt_config *c = &r->c;
    const corpus *cp = &r->cp;
    spade_policy *p = r->p;
    spade_tokenizer *tkz = spade_policy_tokenizer(p);
    fprintf(stderr,
            "spade pretrain: %zu parameters on %s; %zu tokens (%s, %d) from %zu bytes in %d files in %s; "
            "%s at step %ld of %ld\n",
            spade_policy_num_params(p), spade_policy_backend_note(p), cp->n, spade_tokenizer_kind(tkz),
            spade_tokenizer_vocab(tkz), r->data_bytes, cp->files, c->data, r->start ? "resuming" : "starting", r->start,
            c->steps);
    fprintf(r->log, "{\"event\":\"start\",\"step\":%ld,\"steps\":%ld,\"params\":%zu,\"backend\":", r->start, c->steps,
            spade_policy_num_params(p));
    json_str(r->log, spade_policy_backend_name(p), strlen(spade_policy_backend_name(p)));
    size_t n_ans = 0;
    for (size_t i = 0; c->answers && i < cp->n; i++) n_ans += cp->ans[i];
    if (c->answers)
        fprintf(stderr, "spade pretrain: loss = answers: %zu of the tokens are answers, in %zu transcripts\n", n_ans,
                cp->n_starts);
    fprintf(r->log, ",\"tokens\":%zu,\"bytes\":%zu,\"files\":%d,\"tokenizer\":\"%s\",\"vocab\":%d", cp->n,
            r->data_bytes, cp->files, spade_tokenizer_kind(tkz), spade_tokenizer_vocab(tkz));
    if (c->answers) fprintf(r->log, ",\"answer_tokens\":%zu,\"transcripts\":%zu", n_ans, cp->n_starts);
    fputs("}\n", r->log);
    fflush(r->log);
}

/* The buffers of the step loop. */
typedef struct pretrain_bufs {
    int *tok, *tg; /* (B, T) */
    float *mask; /* (B, T) */
    int *stok; /* (sample_tokens) */
    char *text;
    size_t textcap;
} pretrain_bufs;

/* After step `step`: its log line, the progress line, a sample and a checkpoint when due.
 * 0, or 1 having said why. */
static int pretrain_after_step(pretrain_run *r, pretrain_bufs *bf, long step, long done_steps, float loss, float gnorm,
                               float lr, double t0, double *last_draw, int tty) {
    const pt_config *c = &r->c;
    char err[2400];
    double el = now_s() - t0, tok_s = done_steps * (double)c->batch * c->seq / el;
    fprintf(r->log,
            "{\"event\":\"step\",\"step\":%ld,\"loss\":%.6f,\"lr\":%.6g,\"grad_norm\":%.6g,"
            "\"tokens_per_s\":%.1f,\"elapsed_s\":%.3f}\n",
            step, loss, lr, gnorm, tok_s, el);
    fflush(r->log);
    if (tty && (now_s() - *last_draw > 0.1 || step == c->steps)) {
        progress(step, c->steps, loss, tok_s, (c->steps - step) * el / done_steps);
        *last_draw = now_s();
    } else if (!tty && (step % 50 == 0 || step == c->steps)) {
        fprintf(stderr, "step %ld/%ld loss %.4f %.0f tok/s\n", step, c->steps, loss, tok_s);
    }
    if (c->sample_every > 0 && (step % c->sample_every == 0 || step == c->steps)) {
        if (tty) fputc('\n', stderr);
        if (sample_and_log(r->p, c, step, bf->stok, bf->text, bf->textcap, r->log, err, sizeof err)) {
            fprintf(stderr, "spade pretrain: sampling at step %ld: %s\n", step, err);
            return 1;
        }
    }
    if ((c->checkpoint_every > 0 && step % c->checkpoint_every == 0) || step == c->steps) {
        if (spade_policy_save(r->p, r->ckpt, err, sizeof err)) {
            fprintf(stderr, "%sspade pretrain: %s\n", tty ? "\n" : "", err);
            return 1;
        }
        fprintf(r->log, "{\"event\":\"checkpoint\",\"step\":%ld,\"path\":", step);
        json_str(r->log, r->ckpt, strlen(r->ckpt));
        fputs("}\n", r->log);
        fflush(r->log);
    }
    return 0;
}

/* The steps from r->start to [pretrain] steps, stopping at SIGINT/SIGTERM with a checkpoint:
 * 0 done, 1 failed or interrupted (having said which). */
static int pretrain_loop(pretrain_run *r) {
    const pt_config *c = &r->c;
    char err[2400];
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    stop_requested = 0;

    int B = c->batch, T = c->seq, tty = isatty(2), rc = 0;
    /* a token decodes to at most SPADE_BPE_MAX_CHUNK bytes, a special one to "<|observation|>" */
    pretrain_bufs bf = {.tok = malloc((size_t)B * T * sizeof(int)),
                        .tg = malloc((size_t)B * T * sizeof(int)),
                        .mask = malloc((size_t)B * T * sizeof(float)),
                        .stok = malloc((size_t)c->sample_tokens * sizeof(int)),
                        .textcap = (size_t)c->sample_tokens * SPADE_BPE_MAX_CHUNK + 64};
    bf.text = malloc(bf.textcap);
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    o.weight_decay = c->weight_decay;
    o.grad_clip = c->grad_clip;
    double t0 = now_s(), last_draw = 0;
    long done_steps = 0, step = r->start;
    if (!bf.tok || !bf.tg || !bf.stok || !bf.text || !bf.mask) {
        fprintf(stderr, "spade pretrain: out of memory\n");
        rc = 1;
    }
    while (!rc && step < c->steps && !stop_requested) {
        step++;
        float loss, gnorm;
        if (train_step(r->p, c, &r->cp, step, bf.tok, bf.tg, bf.mask, &o, &loss, &gnorm, err, sizeof err)) {
            fprintf(stderr, "%sspade pretrain: step %ld: %s\n", tty ? "\n" : "", step, err);
            rc = 1;
            break;
        }
        done_steps++;
        rc = pretrain_after_step(r, &bf, step, done_steps, loss, gnorm, o.lr, t0, &last_draw, tty);
    }
    if (tty) fputc('\n', stderr);
    if (stop_requested && !rc) {
        /* interrupted: keep the work done so far */
        if (spade_policy_save(r->p, r->ckpt, err, sizeof err))
            fprintf(stderr, "spade pretrain: %s\n", err);
        else
            fprintf(stderr, "spade pretrain: interrupted at step %ld; checkpoint %s written\n", step, r->ckpt);
        fprintf(r->log, "{\"event\":\"interrupted\",\"step\":%ld}\n", step);
        rc = 1;
    } else if (!rc) {
        fprintf(stderr, "spade pretrain: done: step %ld, checkpoint %s, log %s\n", step, r->ckpt, c->log);
        fprintf(r->log, "{\"event\":\"done\",\"step\":%ld}\n", step);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(bf.tok);
    free(bf.tg);
    free(bf.mask);
    free(bf.stok);
    free(bf.text);
    return rc;
}

int spade_cmd_pretrain(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 2) {
        usage(stderr);
        return 2;
    }
    pretrain_run r = {0};
    int rc = load_config(argv[1], &r.c);
    if (rc) return rc;
    rc = pretrain_open(&r, argv[1]);
    if (!rc) {
        pretrain_announce(&r);
        rc = pretrain_loop(&r);
    }
    pretrain_close(&r);
    return rc;
}
