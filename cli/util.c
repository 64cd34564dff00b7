/* util.c — helpers the spade subcommands share (see cli.h). Not library code:
 * these print. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy/models.h"
#include "policy/pretrained.h"

int cli_err(int code, const char *cmd, const char *fmt, ...) {
    fprintf(stderr, "spade%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < min || v > max) {
        cli_err(CLI_USAGE, cmd, "%s: '%s' is not an integer in [%ld, %ld]", flag, text, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_u64(const char *cmd, const char *flag, const char *text, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (!*text || *end || errno || text[0] == '-') {
        cli_err(CLI_USAGE, cmd, "%s: '%s' is not a non-negative integer", flag, text);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int cli_bad_option(const char *cmd, int argc, char **argv, int optopt_) {
    const char *arg = optind - 1 < argc && optind > 0 ? argv[optind - 1] : "?";
    if (optopt_ && strncmp(arg, "--", 2))
        cli_err(CLI_USAGE, cmd, "option '-%c' is unknown or needs a value", optopt_);
    else
        cli_err(CLI_USAGE, cmd, "option '%s' is unknown or needs a value", arg);
    fprintf(stderr, "Try 'spade %s --help'.\n", cmd);
    return CLI_USAGE;
}

int cli_load_spec(const char *cmd, const char *spec, char *path, size_t pathcap, char *params, size_t paramscap,
                  char **src, size_t *len) {
    char err[2048];
    spade_registry *r = NULL;
    if (spade_registry_new(&r, NULL, 0, err, sizeof err) < 0) return cli_err(CLI_FAIL, cmd, "%s", err);
    int rc = spade_registry_resolve(r, spec, path, pathcap, params, paramscap, err, sizeof err);
    spade_registry_free(r);
    if (rc < 0) return cli_err(CLI_FAIL, cmd, "%s", err);
    if (spade_read_source(path, src, len, err, sizeof err) < 0) return cli_err(CLI_FAIL, cmd, "%s", err);
    return CLI_OK;
}

void cli_print_failure(const char *cmd, const char *what, const spade_failure *f) {
    if (f->signal)
        cli_err(CLI_FAIL, cmd, "%s%s%s (signal %d): %s", what ? what : "", what ? ": " : "",
                spade_outcome_name(f->outcome), f->signal, f->message);
    else
        cli_err(CLI_FAIL, cmd, "%s%s%s: %s", what ? what : "", what ? ": " : "", spade_outcome_name(f->outcome),
                f->message);
}

const char *cli_num(double v, char *buf, size_t cap) {
    if (v == (double)(long long)v && v > -1e15 && v < 1e15)
        snprintf(buf, cap, "%lld", (long long)v);
    else
        snprintf(buf, cap, "%g", v);
    return buf;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_json_string(FILE *out, const char *s, size_t len) {
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            /* bytes >= 0x80 pass through: they are the environment's text, and
             * escaping them one by one would break valid UTF-8 */
            if (c < 0x20)
                fprintf(out, "\\u%04x", c);
            else
                fputc(c, out);
        }
    }
    fputc('"', out);
}

char *cli_read_stream(FILE *f, size_t *len, int *read_error) {
    size_t cap = 1 << 16, n = 0, k;
    char *b = malloc(cap + 1);
    while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *nb = realloc(b, cap * 2 + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    *read_error = ferror(f) != 0;
    if (!b || *read_error) {
        free(b);
        return NULL;
    }
    b[n] = 0;
    *len = n;
    return b;
}

int cli_mkdir_p(const char *dir) {
    char p[SPADE_PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *q = p + 1; *q; q++)
        if (*q == '/') {
            *q = 0;
            if (mkdir(p, 0755) < 0 && errno != EEXIST) return -1;
            *q = '/';
        }
    return mkdir(p, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static const char *self_name = "spade";

void cli_set_self(const char *argv0) {
    /* run by a path: say that path (./spade, build/spade); found on PATH: its name */
    if (argv0 && strchr(argv0, '/')) self_name = argv0;
}

const char *cli_self(void) { return self_name; }

void cli_path_clean(char *path) {
    if (!path || !*path) return;
    int abs = path[0] == '/';
    char *seg[512];
    int n = 0, up = 0; /* up: leading ".." segments kept (nothing to cancel) */
    char *save = NULL, *copy = strdup(path);
    if (!copy) return;
    for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, ".")) continue;
        if (!strcmp(t, "..")) {
            if (n > up)
                n--;
            else if (!abs && n < 512)
                seg[n++] = t, up++;
            continue;
        }
        if (n < 512)
            seg[n++] = t;
        else { /* deeper than anyone types: leave it as it was */
            free(copy);
            return;
        }
    }
    size_t at = 0, cap = strlen(path) + 1;
    if (abs) path[at++] = '/';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(seg[i]);
        if (i) path[at++] = '/';
        memmove(path + at, seg[i], l);
        at += l;
    }
    if (at == 0) path[at++] = '.';
    path[at < cap ? at : cap - 1] = 0;
    free(copy);
}

/* ---- the shared token of `spade serve` and its clients ---------------------------- */

/* The token is one line of CLI_TOKEN_MIN..CLI_TOKEN_MAX bytes, no NUL; from is how an error names where it came from.
 */
static int token_ok(const char *cmd, const char *from, const char *t, size_t n) {
    if (n < CLI_TOKEN_MIN || n > CLI_TOKEN_MAX)
        return cli_err(-1, cmd,
                       "%s: the token is %zu bytes; it must be %d..%d (e.g. `head -c 32 /dev/urandom | "
                       "base64`)",
                       from, n, CLI_TOKEN_MIN, CLI_TOKEN_MAX);
    if (memchr(t, 0, n) || memchr(t, '\n', n))
        return cli_err(-1, cmd, "%s: the token holds a NUL byte or a newline", from);
    return 0;
}

/* Reads the token of --token-file: the file's first line (a final newline, and a \r before it, dropped). */
static int read_token_file(const char *cmd, const char *path, char *buf, size_t cap, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_err(-1, cmd, "--token-file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & 077))
        fprintf(stderr, "spade %s: warning: --token-file %s: other users may read it (mode %03o; chmod 600 %s)\n", cmd,
                path, (unsigned)(st.st_mode & 0777), path);
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            return cli_err(-1, cmd, "--token-file %s: %s", path, strerror(e));
        }
        if (k == 0 || (n += (size_t)k) == cap) break;
    }
    close(fd);
    char *nl = memchr(buf, '\n', n);
    if (nl) n = (size_t)(nl - buf);
    if (n && buf[n - 1] == '\r') n--;
    char from[SPADE_PATH_MAX + 32];
    snprintf(from, sizeof from, "--token-file %s", path);
    if (token_ok(cmd, from, buf, n) < 0) return -1;
    *len = n;
    return 0;
}

int cli_read_token(const char *cmd, const char *file, const char *env, char *buf, size_t cap, size_t *len) {
    if (file && env) return cli_err(-1, cmd, "--token-file or --token-env, not both");
    if (file) return read_token_file(cmd, file, buf, cap - 1, len) < 0 ? -1 : (buf[*len] = 0, 0);
    const char *v = getenv(env);
    char from[300];
    snprintf(from, sizeof from, "--token-env %.256s", env);
    if (!v || !*v) return cli_err(-1, cmd, "%s: the variable is unset or empty", from);
    size_t n = strlen(v);
    if (token_ok(cmd, from, v, n) < 0 || n >= cap) return -1;
    memcpy(buf, v, n + 1);
    *len = n;
    return 0;
}

int cli_load_policy(const char *spec, int context, spade_policy **out, char *err, size_t errlen) {
    size_t n = strlen(spec);
    *out = NULL;
    if (!spade_model_find(spec) && !(n > 5 && !strcmp(spec + n - 5, ".gguf")))
        return spade_policy_load_weights(out, spec, NULL, err, errlen) ? -1 : 0;
    spade_model_opts mo = {.context = context};
    spade_gpt_config mc;
    if (!context && !spade_model_config(spec, &mo, &mc, err, errlen))
        mo.context = mc.context < 2048 ? mc.context : 2048;
    return spade_policy_from_model(out, spec, &mo, err, errlen) ? -1 : 0;
}
