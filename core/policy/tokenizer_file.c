/* tokenizer_file.c — the tokenizer's text file format (tokenizer.h): serialise,
 * parse (untrusted bytes: every line, count and merge checked, errors name
 * the line), save atomically and load.
 * What it is not: encoding (tokenizer.c) or the trainer (tokenizer_train.c).
 */
#include "policy/tokenizer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errbuf.h"
#include "policy/backend.h"
#include "policy/tokenizer_internal.h"

/* ================================================================ file */

#define FILE_MAGIC "spade-tokenizer"
#define FILE_VERSION 1
#define SPLIT_NAME "code-1"

static uint64_t fnv1a(const void *data, size_t n) {
    const unsigned char *b = data;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

typedef struct {
    char *b;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *s, const char *p, size_t n) {
    if (s->oom) return;
    if (s->n + n + 1 > s->cap) {
        size_t nc = s->cap ? s->cap : 4096;
        while (s->n + n + 1 > nc) nc *= 2;
        char *nb = realloc(s->b, nc);
        if (!nb) {
            s->oom = 1;
            return;
        }
        s->b = nb;
        s->cap = nc;
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
    s->b[s->n] = 0;
}

static void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) sb_put(s, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

int spade_tokenizer_serialize(const spade_tokenizer *t, char **buf, size_t *len, char *err, size_t errlen) {
    if (t->gg) return gguf_tok_serialize(t, buf, len, err, errlen);
    sbuf s = {0};
    sb_printf(&s, "%s %d\nsplit %s\nmerges %d\n", FILE_MAGIC, FILE_VERSION, SPLIT_NAME, t->nmerges);
    for (int i = 0; i < t->nmerges; i++) {
        sb_printf(&s, "%d %d # \"", t->merges[i][0], t->merges[i][1]);
        int id = SPADE_TOK_COUNT + i;
        for (uint32_t j = t->off[id]; j < t->off[id + 1]; j++) {
            unsigned char c = t->pieces[j];
            if (c == '"' || c == '\\')
                sb_printf(&s, "\\%c", c);
            else if (c == '\n')
                sb_put(&s, "\\n", 2);
            else if (c == '\t')
                sb_put(&s, "\\t", 2);
            else if (c == '\r')
                sb_put(&s, "\\r", 2);
            else if (c >= 0x20 && c < 0x7f)
                sb_put(&s, (const char *)&c, 1);
            else
                sb_printf(&s, "\\x%02x", c);
        }
        sb_put(&s, "\"\n", 2);
    }
    if (!s.oom) sb_printf(&s, "end fnv1a %016llx\n", (unsigned long long)fnv1a(s.b, s.n));
    if (s.oom) {
        free(s.b);
        spade_errf(err, errlen, "tokenizer: out of memory writing %d merges", t->nmerges);
        return SPADE_POLICY_ENOMEM;
    }
    *buf = s.b;
    *len = s.n;
    return 0;
}

/* Parses "A B" (then optional spaces and a '#' comment) at the start of line. */
static int parse_merge_line(const char *line, int *a, int *b) {
    const char *p = line;
    long v[2];
    for (int k = 0; k < 2; k++) {
        if (k && *p++ != ' ') return -1;
        if (*p < '0' || *p > '9') return -1;
        char *end;
        errno = 0;
        v[k] = strtol(p, &end, 10);
        if (errno || end - p > 6) return -1;
        p = end;
    }
    while (*p == ' ') p++;
    if (*p && *p != '#') return -1;
    *a = (int)v[0];
    *b = (int)v[1];
    return 0;
}

/* A spade tokenizer file being parsed, one line at a time: the merges it
 * promises (line 3) and has given, into t. */
typedef struct tok_parse {
    const char *buf, *name;
    int lineno, nm, got;
    spade_tokenizer *t;
    char *err;
    size_t errlen;
} tok_parse;

/* Lines 1 to 3: the magic and version, the split rule, 'merges M' (which
 * makes t). 0, or the error. */
static int tok_header_line(tok_parse *P, const char *line) {
    const char *name = P->name;
    if (P->lineno == 1) {
        int ver;
        char tail;
        if (strncmp(line, FILE_MAGIC " ", sizeof FILE_MAGIC)) {
            spade_errf(P->err, P->errlen, "%s: not a spade tokenizer file (it does not start with \"%s\")", name,
                       FILE_MAGIC);
            return SPADE_POLICY_EFORMAT;
        }
        if (sscanf(line + sizeof FILE_MAGIC, "%d%c", &ver, &tail) != 1 || ver != FILE_VERSION) {
            spade_errf(P->err, P->errlen, "%s: line 1: format version '%s', this build reads version %d", name,
                       line + sizeof FILE_MAGIC, FILE_VERSION);
            return SPADE_POLICY_EFORMAT;
        }
    } else if (P->lineno == 2) {
        if (strcmp(line, "split " SPLIT_NAME)) {
            spade_errf(P->err, P->errlen,
                       "%s: line 2: expected 'split %s' (the only pre-split rule this build has), got '%.80s'", name,
                       SPLIT_NAME, line);
            return SPADE_POLICY_EFORMAT;
        }
    } else {
        char *e;
        errno = 0;
        long m = strncmp(line, "merges ", 7) ? -1 : strtol(line + 7, &e, 10);
        if (m < 0 || errno || *e || line[7] < '0' || line[7] > '9' || m > MAX_MERGES) {
            spade_errf(P->err, P->errlen, "%s: line 3: expected 'merges M' with M in [0, %d], got '%.80s'", name,
                       MAX_MERGES, line);
            return SPADE_POLICY_EFORMAT;
        }
        P->nm = (int)m;
        if (!(P->t = spade_tok_alloc(P->nm))) {
            spade_errf(P->err, P->errlen, "%s: out of memory for %d merges", name, P->nm);
            return SPADE_POLICY_ENOMEM;
        }
    }
    return 0;
}

/* One of the nm merge lines, "A B". 0, or the error. */
static int tok_merge_line(tok_parse *P, const char *line) {
    int a, b;
    char why[200];
    if (!strncmp(line, "end ", 4)) {
        spade_errf(P->err, P->errlen, "%s: line %d: truncated: 'end' after %d of the %d merges", P->name, P->lineno,
                   P->got, P->nm);
        return SPADE_POLICY_EFORMAT;
    }
    if (parse_merge_line(line, &a, &b)) {
        spade_errf(P->err, P->errlen, "%s: line %d: merge %d: expected two token ids 'A B', got '%.80s'", P->name,
                   P->lineno, P->got, line);
        return SPADE_POLICY_EFORMAT;
    }
    if (spade_tok_add_merge(P->t, a, b, why, sizeof why)) {
        spade_errf(P->err, P->errlen, "%s: line %d: merge %d: %s", P->name, P->lineno, P->got, why);
        return SPADE_POLICY_EFORMAT;
    }
    P->got++;
    return 0;
}

/* The 'end fnv1a HASH' line, which starts at offset start: the hash of
 * everything before it. 1 (the end), or the error. */
static int tok_end_line(tok_parse *P, const char *line, size_t start) {
    unsigned long long want;
    char *e;
    if (strncmp(line, "end fnv1a ", 10) || strlen(line + 10) != 16 ||
        (errno = 0, want = strtoull(line + 10, &e, 16), errno || *e)) {
        spade_errf(P->err, P->errlen, "%s: line %d: expected 'end fnv1a HASH' after the %d merges, got '%.80s'",
                   P->name, P->lineno, P->nm, line);
        return SPADE_POLICY_EFORMAT;
    }
    uint64_t h = fnv1a(P->buf, start);
    if (h != want) {
        spade_errf(P->err, P->errlen,
                   "%s: checksum mismatch (the end line says %016llx, the contents hash to %016llx): "
                   "the file is corrupt or was edited",
                   P->name, want, (unsigned long long)h);
        return SPADE_POLICY_EFORMAT;
    }
    return 1;
}

/* Every line up to the 'end' line: its end's offset (> 0), or 0 when the
 * buffer ends first, or the error (< 0). */
static long tok_lines(tok_parse *P, size_t len) {
    char line[1024];
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(P->buf + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (P->buf + pos)) : len - pos;
        P->lineno++;
        if (!nl) {
            spade_errf(P->err, P->errlen, "%s: line %d: truncated: the file ends inside a line (no newline)", P->name,
                       P->lineno);
            return SPADE_POLICY_EFORMAT;
        }
        if (ll >= sizeof line || memchr(P->buf + pos, 0, ll)) {
            spade_errf(P->err, P->errlen, "%s: line %d: %s", P->name, P->lineno,
                       ll >= sizeof line ? "line too long: not a spade tokenizer file, or corrupt"
                                         : "NUL byte in the line: the file is corrupt");
            return SPADE_POLICY_EFORMAT;
        }
        memcpy(line, P->buf + pos, ll);
        line[ll] = 0;
        size_t start = pos;
        pos += ll + 1;
        int rc = P->lineno <= 3   ? tok_header_line(P, line)
                 : P->got < P->nm ? tok_merge_line(P, line)
                                  : tok_end_line(P, line, start);
        if (rc < 0) return rc;
        if (rc == 1) return (long)pos;
    }
    return 0;
}

int spade_tokenizer_parse(spade_tokenizer **out, const char *buf, size_t len, const char *name, char *err,
                          size_t errlen) {
    *out = NULL;
    if (gguf_tok_is_serialized(buf, len)) return gguf_tok_parse(out, buf, len, name, err, errlen);
    tok_parse P = {.buf = buf, .name = name, .nm = -1, .err = err, .errlen = errlen};
    long end_at = tok_lines(&P, len);
    if (end_at < 0) {
        spade_tokenizer_free(P.t);
        return (int)end_at;
    }
    if (!end_at) {
        if (P.lineno < 3)
            spade_errf(err, errlen, "%s: truncated: %s", name,
                       P.lineno == 0 ? "the file is empty" : "it ends before the 'merges M' line");
        else
            spade_errf(err, errlen, "%s: truncated: it ends after %d of the %d merges, with no 'end' line", name, P.got,
                       P.nm);
    } else if ((size_t)end_at < len) {
        spade_errf(err, errlen, "%s: line %d: trailing data after the 'end' line", name, P.lineno + 1);
    } else {
        *out = P.t;
        return 0;
    }
    spade_tokenizer_free(P.t);
    return SPADE_POLICY_EFORMAT;
}

int spade_tokenizer_save(const spade_tokenizer *t, const char *path, char *err, size_t errlen) {
    char *buf;
    size_t len;
    int rc = spade_tokenizer_serialize(t, &buf, &len, err, errlen);
    if (rc) return rc;
    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        free(buf);
        spade_errf(err, errlen, "%s: out of memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    rc = fd < 0 ? -1 : 0;
    for (size_t o = 0; !rc && o < len;) {
        ssize_t w = write(fd, buf + o, len - o);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            rc = -1;
        else
            o += (size_t)w;
    }
    if (!rc && fsync(fd)) rc = -1;
    int saved = errno;
    if (fd >= 0 && close(fd) && !rc) {
        rc = -1;
        saved = errno;
    }
    if (!rc && rename(tmp, path)) {
        rc = -1;
        saved = errno;
    }
    if (rc) {
        spade_errf(err, errlen, "%s: cannot write the tokenizer: %s", path, strerror(saved));
        unlink(tmp);
        rc = SPADE_POLICY_EIO;
    }
    free(tmp);
    free(buf);
    return rc;
}

int spade_tokenizer_load(spade_tokenizer **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        spade_errf(err, errlen, "%s: %s", path, strerror(errno));
        return SPADE_POLICY_EIO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
        spade_errf(err, errlen, "%s: not a regular file", path);
        fclose(f);
        return SPADE_POLICY_EIO;
    }
    /* the largest valid file: MAX_MERGES lines of two ids and a 64-byte piece escaped */
    if (st.st_size > (off_t)MAX_MERGES * 300 + 4096) {
        spade_errf(err, errlen, "%s: %lld bytes: too large for a spade tokenizer file", path, (long long)st.st_size);
        fclose(f);
        return SPADE_POLICY_EFORMAT;
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        spade_errf(err, errlen, "%s: out of memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    size_t got = fread(buf, 1, n, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr || got != n) {
        free(buf);
        spade_errf(err, errlen, "%s: read error or the file changed while reading", path);
        return SPADE_POLICY_EIO;
    }
    int rc = spade_tokenizer_parse(out, buf, n, path, err, errlen);
    free(buf);
    return rc;
}
