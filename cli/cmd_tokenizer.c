/* cmd_tokenizer.c — `spade tokenizer train|stats|encode|decode`: trains a
 * byte-level BPE on a corpus and inspects what a tokenizer does to text.
 *
 * What it is: the command around core/policy/tokenizer.h. A tokenizer is named
 * by a tokenizer file (what `train` writes) or a policy checkpoint (which
 * stores its tokenizer), or with --model by a pretrained model's own BPE
 * (core/policy/bpe.h; a vocabulary fixture until the GGUF reader is wired).
 * Directories are read recursively, sorted, skipping dot files, so a run is
 * reproducible.
 * What it is not: the tokenizer (core/policy/tokenizer.c) or pretraining,
 * which can train one itself (cli/cmd_pretrain.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "policy/bpe.h"
#include "policy/policy.h"

#define CMD "tokenizer"

void cli_usage_tokenizer(FILE *out) {
    fprintf(out, "usage: spade tokenizer train DIR... [--vocab N] -o FILE\n"
                 "       spade tokenizer stats TOKENIZER PATH...\n"
                 "       spade tokenizer encode TOKENIZER [INPUT] [--pieces]\n"
                 "       spade tokenizer decode TOKENIZER [INPUT] [--no-special]\n"
                 "       spade tokenizer encode --model MODEL [INPUT] [--special] [--pieces]\n"
                 "       spade tokenizer decode --model MODEL [INPUT] [--no-special]\n"
                 "\n"
                 "train   learns a byte-level BPE from every file under the DIRs (files are taken\n"
                 "        as they are; directories recursively, sorted, dot files skipped) and\n"
                 "        writes it to FILE. --vocab N: 263..65536 tokens (default 4096; fewer when\n"
                 "        no pair of tokens occurs twice any more). Same inputs, same file.\n"
                 "stats   encodes every file under the PATHs and prints 'PATH bytes B tokens T\n"
                 "        ratio R' for each, then on the last line the total 'bytes B tokens T\n"
                 "        ratio R' (R = B/T).\n"
                 "encode  reads INPUT (a file; default or '-': standard input) and prints its token\n"
                 "        ids in decimal on one line, separated by spaces. --pieces: one token per\n"
                 "        line instead, 'ID \"bytes\"' with the bytes C-escaped.\n"
                 "decode  reads token ids (decimal, separated by whitespace) from INPUT and writes\n"
                 "        the bytes they stand for; special tokens as <|name|>, or dropped with\n"
                 "        --no-special. `encode T F | decode T` gives F back, byte for byte.\n"
                 "\n"
                 "--model MODEL: a pretrained model's own tokenizer (byte-level BPE as llama.cpp\n"
                 "        reads it from a GGUF file) instead; MODEL is a vocabulary fixture written by\n"
                 "        tools/bpe_reference.py. encode adds no special tokens and reads special\n"
                 "        tokens' names as plain text unless --special (then <|im_start|> and the\n"
                 "        like in the input are those tokens, and BOS/EOS are added as the model says).\n"
                 "TOKENIZER is a file written by train, or a policy checkpoint (its tokenizer).\n"
                 "Exit status: 0 ok, 1 failure (a bad file: the message names it), 2 usage error.\n");
}

/* ---------------------------------------------------------------- files */

typedef struct {
    char **v;
    size_t n;
} pathlist;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_path(pathlist *l, const char *p) {
    char **nv = realloc(l->v, (l->n + 1) * sizeof *nv);
    if (!nv) return -1;
    l->v = nv;
    if (!(l->v[l->n] = strdup(p))) return -1;
    l->n++;
    return 0;
}

/* Appends path (a file) or every regular file below it (a directory). */
static int collect(pathlist *l, const char *path, int depth) {
    struct stat st;
    if (stat(path, &st)) return cli_err(CLI_FAIL, CMD, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        if (!S_ISREG(st.st_mode)) return depth ? 0 : cli_err(CLI_FAIL, CMD, "%s: not a regular file", path);
        return add_path(l, path) ? cli_err(CLI_FAIL, CMD, "out of memory") : 0;
    }
    if (depth > 32) return 0;
    DIR *d = opendir(path);
    if (!d) return cli_err(CLI_FAIL, CMD, "%s: %s", path, strerror(errno));
    pathlist names = {0};
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d)))
        if (e->d_name[0] != '.' && add_path(&names, e->d_name)) rc = cli_err(CLI_FAIL, CMD, "out of memory");
    closedir(d);
    if (names.n) qsort(names.v, names.n, sizeof *names.v, cmp_str);
    for (size_t i = 0; i < names.n && !rc; i++) {
        size_t len = strlen(path) + strlen(names.v[i]) + 2;
        char *p = malloc(len);
        if (!p) {
            rc = cli_err(CLI_FAIL, CMD, "out of memory");
            break;
        }
        snprintf(p, len, "%s/%s", path, names.v[i]);
        rc = collect(l, p, depth + 1);
        free(p);
    }
    for (size_t i = 0; i < names.n; i++) free(names.v[i]);
    free(names.v);
    return rc;
}

static void free_paths(pathlist *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

/* Reads a whole file (or standard input for NULL / "-"). */
static char *read_input(const char *path, size_t *len) {
    FILE *f = (!path || !strcmp(path, "-")) ? stdin : fopen(path, "rb");
    if (!f) {
        cli_err(CLI_FAIL, CMD, "%s: %s", path, strerror(errno));
        return NULL;
    }
    int bad;
    char *b = cli_read_stream(f, len, &bad);
    if (f != stdin) fclose(f);
    if (!b)
        cli_err(CLI_FAIL, CMD, "%s: %s", path && strcmp(path, "-") ? path : "standard input",
                bad ? "read error" : "out of memory");
    return b;
}

/* A tokenizer file, or the tokenizer inside a policy checkpoint. */
static spade_tokenizer *open_tokenizer(const char *path) {
    char err[1024], magic[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_err(CLI_FAIL, CMD, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    spade_tokenizer *t;
    int rc = got == 8 && !memcmp(magic, "SPADEGPT", 8) ? spade_policy_read_tokenizer(path, &t, err, sizeof err)
                                                       : spade_tokenizer_load(&t, path, err, sizeof err);
    if (rc) {
        cli_err(CLI_FAIL, CMD, "%s", err);
        return NULL;
    }
    return t;
}

/* A pretrained model's tokenizer: a vocabulary fixture for now (the GGUF
 * reader, core/policy/gguf.c, will make a .gguf path work here). */
static spade_bpe *open_model(const char *path) {
    char err[1024];
    spade_bpe *b;
    size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".gguf")) {
        cli_err(CLI_FAIL, CMD,
                "%s: reading a GGUF file is not wired here yet; dump its vocabulary with tools/bpe_reference.py "
                "MODEL.gguf --vocab FILE and pass FILE",
                path);
        return NULL;
    }
    if (spade_bpe_load(&b, path, err, sizeof err)) {
        cli_err(CLI_FAIL, CMD, "%s", err);
        return NULL;
    }
    return b;
}

static void put_escaped(const unsigned char *p, size_t n);

static int model_encode(const char *model, const char *input, int special, int pieces) {
    spade_bpe *b = open_model(model);
    if (!b) return CLI_FAIL;
    size_t len;
    char *text = read_input(input, &len), err[512];
    spade_bpe_out o = {0};
    int rc = CLI_OK;
    if (!text)
        rc = CLI_FAIL;
    else if (spade_bpe_encode(b, text, len, special ? SPADE_BPE_ADD_SPECIAL | SPADE_BPE_PARSE_SPECIAL : 0, &o, err,
                              sizeof err))
        rc = cli_err(CLI_FAIL, CMD, "%s", err);
    for (size_t i = 0; !rc && i < o.n; i++) {
        if (pieces) {
            size_t pl;
            const char *p = spade_bpe_piece(b, o.ids[i], 1, &pl);
            printf("%d ", (int)o.ids[i]);
            put_escaped((const unsigned char *)p, pl);
            putchar('\n');
        } else {
            printf(i ? " %d" : "%d", (int)o.ids[i]);
        }
    }
    if (!rc && !pieces) putchar('\n');
    spade_bpe_out_free(&o);
    free(text);
    spade_bpe_free(b);
    if (!rc && fflush(stdout)) rc = cli_err(CLI_FAIL, CMD, "writing standard output: %s", strerror(errno));
    return rc;
}

/* The next token id of the space-separated list at *p (text ends at end), checked against [0, V):
 * 1 with *id and *p past it, 0 at the list's end, -1 (said, naming the input and the token's
 * place) on anything else. */
static int next_id(char **p, const char *end, int V, const char *name, size_t idx, long *id) {
    char *q = *p;
    while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r') q++;
    if (q >= end) return 0;
    char *after;
    errno = 0;
    *id = strtol(q, &after, 10);
    if (after == q || errno || (*after && *after != ' ' && *after != '\n' && *after != '\t' && *after != '\r') ||
        *id < 0 || *id >= V) {
        int w = 0;
        while (q[w] && q[w] != ' ' && q[w] != '\n' && q[w] != '\t' && w < 20) w++;
        cli_err(CLI_FAIL, CMD, "%s: token %zu is '%.*s': expected a token id in [0, %d)", name, idx, w, q, V);
        return -1;
    }
    *p = after;
    return 1;
}

static int model_decode(const char *model, const char *input, int special) {
    spade_bpe *b = open_model(model);
    if (!b) return CLI_FAIL;
    size_t len;
    char *text = read_input(input, &len);
    if (!text) {
        spade_bpe_free(b);
        return CLI_FAIL;
    }
    const char *name = input && strcmp(input, "-") ? input : "standard input";
    int V = spade_bpe_vocab(b), rc = 0;
    size_t idx = 0;
    long id;
    for (char *p = text; !rc; idx++) {
        int got = next_id(&p, text + len, V, name, idx, &id);
        if (got <= 0) {
            rc = got < 0 ? CLI_FAIL : 0;
            break;
        }
        size_t pl;
        const char *piece = spade_bpe_piece(b, (int)id, special, &pl);
        fwrite(piece, 1, pl, stdout);
    }
    free(text);
    spade_bpe_free(b);
    if (!rc && fflush(stdout)) rc = cli_err(CLI_FAIL, CMD, "writing standard output: %s", strerror(errno));
    return rc;
}

/* ---------------------------------------------------------------- subcommands */

static int cmd_train(int argc, char **argv) {
    long vocab = 4096;
    const char *out = NULL;
    pathlist in = {0};
    int rc = 0;
    for (int i = 0; i < argc && !rc; i++) {
        int is_vocab = !strcmp(argv[i], "--vocab"), is_out = !strcmp(argv[i], "-o") || !strcmp(argv[i], "--output");
        if (is_vocab || is_out) {
            if (i + 1 >= argc) {
                rc = cli_err(CLI_USAGE, CMD, "%s needs a value", argv[i]);
                break;
            }
            if (is_out)
                out = argv[++i];
            else if (cli_parse_long(CMD, "--vocab", argv[++i], SPADE_VOCAB, SPADE_TOK_MAX_VOCAB, &vocab))
                rc = CLI_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            rc = cli_err(CLI_USAGE, CMD, "train: unknown option '%s' (spade tokenizer --help)", argv[i]);
        } else {
            rc = collect(&in, argv[i], 0);
        }
    }
    if (!rc && (!out || !in.n))
        rc = cli_err(CLI_USAGE, CMD, "train needs %s (spade tokenizer train DIR... [--vocab N] -o FILE)",
                     out ? "files to learn from" : "-o FILE");
    char err[512];
    spade_bpe_trainer *tr = NULL;
    if (!rc && spade_bpe_trainer_new(&tr, err, sizeof err)) rc = cli_err(CLI_FAIL, CMD, "%s", err);
    double t0 = cli_now();
    for (size_t i = 0; i < in.n && !rc; i++) {
        size_t len;
        char *b = read_input(in.v[i], &len);
        if (!b) {
            rc = CLI_FAIL;
            break;
        }
        if (spade_bpe_trainer_add(tr, b, len, err, sizeof err)) rc = cli_err(CLI_FAIL, CMD, "%s", err);
        free(b);
    }
    spade_tokenizer *t = NULL;
    if (!rc && spade_bpe_trainer_finish(tr, (int)vocab, &t, err, sizeof err)) rc = cli_err(CLI_FAIL, CMD, "%s", err);
    if (!rc && spade_tokenizer_save(t, out, err, sizeof err)) rc = cli_err(CLI_FAIL, CMD, "%s", err);
    if (!rc) {
        size_t bytes, uniq;
        spade_bpe_trainer_counts(tr, &bytes, &uniq);
        printf("trained %d tokens (%d merges) on %zu files, %zu bytes, %zu distinct chunks, in %.2f s; wrote %s\n",
               spade_tokenizer_vocab(t), spade_tokenizer_num_merges(t), in.n, bytes, uniq, cli_now() - t0, out);
        if (spade_tokenizer_vocab(t) < vocab)
            printf("(asked for %ld: no pair of tokens occurs twice in the corpus any more)\n", vocab);
    }
    spade_tokenizer_free(t);
    spade_bpe_trainer_free(tr);
    free_paths(&in);
    return rc;
}

static int cmd_stats(int argc, char **argv) {
    if (argc < 2)
        return cli_err(CLI_USAGE, CMD, "stats needs a tokenizer and files (spade tokenizer stats FILE PATH...)");
    pathlist in = {0};
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) rc = collect(&in, argv[i], 0);
    spade_tokenizer *t = rc ? NULL : open_tokenizer(argv[0]);
    if (!rc && !t) rc = CLI_FAIL;
    unsigned long long B = 0, T = 0;
    for (size_t i = 0; i < in.n && !rc; i++) {
        size_t len;
        char *b = read_input(in.v[i], &len);
        int *toks = b ? malloc((len ? len : 1) * sizeof *toks) : NULL;
        if (!toks) {
            free(b);
            rc = b ? cli_err(CLI_FAIL, CMD, "out of memory") : CLI_FAIL;
            break;
        }
        size_t k = spade_tokenizer_encode(t, b, len, toks);
        printf("%s bytes %zu tokens %zu ratio %.3f\n", in.v[i], len, k, k ? (double)len / k : 0.0);
        B += len;
        T += k;
        free(toks);
        free(b);
    }
    if (!rc) printf("bytes %llu tokens %llu ratio %.3f\n", B, T, T ? (double)B / T : 0.0);
    spade_tokenizer_free(t);
    free_paths(&in);
    return rc;
}

static void put_escaped(const unsigned char *p, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c == '\r')
            fputs("\\r", stdout);
        else if (c >= 0x20 && c < 0x7f)
            putchar(c);
        else
            printf("\\x%02x", c);
    }
    putchar('"');
}

static int cmd_encode(int argc, char **argv) {
    const char *tokf = NULL, *input = NULL, *model = NULL;
    int pieces = 0, special = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--pieces"))
            pieces = 1;
        else if (!strcmp(argv[i], "--special"))
            special = 1;
        else if (!strcmp(argv[i], "--model")) {
            if (i + 1 >= argc) return cli_err(CLI_USAGE, CMD, "--model needs a value");
            model = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1])
            return cli_err(CLI_USAGE, CMD, "encode: unknown option '%s'", argv[i]);
        else if (!tokf)
            tokf = argv[i];
        else if (!input)
            input = argv[i];
        else
            return cli_err(CLI_USAGE, CMD, "encode takes one input (got '%s' too)", argv[i]);
    }
    if (model) {
        if (tokf && input) return cli_err(CLI_USAGE, CMD, "encode takes one input (got '%s' too)", input);
        return model_encode(model, tokf, special, pieces);
    }
    if (special) return cli_err(CLI_USAGE, CMD, "encode: --special goes with --model");
    if (!tokf) return cli_err(CLI_USAGE, CMD, "encode needs a tokenizer (spade tokenizer encode FILE [INPUT])");
    spade_tokenizer *t = open_tokenizer(tokf);
    if (!t) return CLI_FAIL;
    size_t len;
    char *b = read_input(input, &len);
    int *toks = b ? malloc((len ? len : 1) * sizeof *toks) : NULL;
    if (!toks) {
        free(b);
        spade_tokenizer_free(t);
        return b ? cli_err(CLI_FAIL, CMD, "out of memory") : CLI_FAIL;
    }
    size_t k = spade_tokenizer_encode(t, b, len, toks);
    for (size_t i = 0; i < k; i++) {
        if (pieces) {
            size_t pl;
            const unsigned char *p = spade_tokenizer_piece(t, toks[i], &pl);
            printf("%d ", toks[i]);
            put_escaped(p, pl);
            putchar('\n');
        } else {
            printf(i ? " %d" : "%d", toks[i]);
        }
    }
    if (!pieces) putchar('\n');
    free(toks);
    free(b);
    spade_tokenizer_free(t);
    return fflush(stdout) ? cli_err(CLI_FAIL, CMD, "writing standard output: %s", strerror(errno)) : CLI_OK;
}

static int cmd_decode(int argc, char **argv) {
    const char *tokf = NULL, *input = NULL, *model = NULL;
    int special = 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--no-special"))
            special = 0;
        else if (!strcmp(argv[i], "--model")) {
            if (i + 1 >= argc) return cli_err(CLI_USAGE, CMD, "--model needs a value");
            model = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1])
            return cli_err(CLI_USAGE, CMD, "decode: unknown option '%s'", argv[i]);
        else if (!tokf)
            tokf = argv[i];
        else if (!input)
            input = argv[i];
        else
            return cli_err(CLI_USAGE, CMD, "decode takes one input (got '%s' too)", argv[i]);
    }
    if (model) {
        if (tokf && input) return cli_err(CLI_USAGE, CMD, "decode takes one input (got '%s' too)", input);
        return model_decode(model, tokf, special);
    }
    if (!tokf) return cli_err(CLI_USAGE, CMD, "decode needs a tokenizer (spade tokenizer decode FILE [INPUT])");
    spade_tokenizer *t = open_tokenizer(tokf);
    if (!t) return CLI_FAIL;
    size_t len;
    char *b = read_input(input, &len);
    if (!b) {
        spade_tokenizer_free(t);
        return CLI_FAIL;
    }
    const char *name = input && strcmp(input, "-") ? input : "standard input";
    int V = spade_tokenizer_vocab(t), rc = 0;
    size_t idx = 0;
    long id;
    for (char *p = b; !rc; idx++) {
        int got = next_id(&p, b + len, V, name, idx, &id);
        if (got <= 0) {
            rc = got < 0 ? CLI_FAIL : 0;
            break;
        }
        int tk = (int)id;
        char buf[80];
        size_t ol;
        spade_tokenizer_decode(t, &tk, 1, special, buf, sizeof buf, &ol);
        fwrite(buf, 1, ol, stdout);
    }
    free(b);
    spade_tokenizer_free(t);
    if (!rc && fflush(stdout)) rc = cli_err(CLI_FAIL, CMD, "writing standard output: %s", strerror(errno));
    return rc;
}

int cli_tokenizer(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    if (argc < 2) {
        cli_usage_tokenizer(stderr);
        return CLI_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
        cli_usage_tokenizer(stdout);
        return CLI_OK;
    }
    if (!strcmp(sub, "train")) return cmd_train(argc - 2, argv + 2);
    if (!strcmp(sub, "stats")) return cmd_stats(argc - 2, argv + 2);
    if (!strcmp(sub, "encode")) return cmd_encode(argc - 2, argv + 2);
    if (!strcmp(sub, "decode")) return cmd_decode(argc - 2, argv + 2);
    return cli_err(CLI_USAGE, CMD, "unknown subcommand '%s' (train, stats, encode, decode)", sub);
}
