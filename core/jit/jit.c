/* jit.c — compiles one environment's C source in memory with libtcc.
 *
 * What it is: the implementation of jit.h. It builds one translation unit out
 * of the user's source (DSL includes replaced by the embedded headers, `#line`
 * directives so tcc's messages name the user's file and lines), compiles it
 * with `-nostdinc -nostdlib` and only the allowlisted symbols of dsl/runtime.h,
 * relocates it into memory this module maps itself (so that a code image too
 * large for the address-space limit is a clean out-of-memory, not libtcc's
 * exit()), and classifies every failure.
 * What it is not: a sandbox (see jit.h) and not a validator of the
 * environment (core/host.c does that once the symbols resolve).
 */
#include "jit/jit.h"

#include <libtcc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "errbuf.h"
#include "runtime.h"

struct spade_jit {
    TCCState *tcc;
    void *image; /* our own mapping of the relocated code (two-argument tcc_relocate) */
    size_t image_size;
};

/* ---- growable text --------------------------------------------------------- */
typedef struct text {
    char *p;
    size_t len, cap;
    int failed; /* an allocation failed; the text is unusable */
} text;

static void text_add(text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1) cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void text_put(void *t, const char *s, size_t n) { text_add(t, s, n); }

static void text_addf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_addf(text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    spade_vputf(text_put, t, fmt, ap);
    va_end(ap);
}

/* ---- the translation unit -------------------------------------------------- */

/* The filename as it may appear inside a #line directive and in messages: no
 * quote, backslash or control character can break out of the string literal. */
static void safe_filename(const char *in, char *out, size_t cap) {
    size_t n = 0;
    if (in)
        for (; in[n] && n + 1 < cap; n++) {
            unsigned char c = (unsigned char)in[n];
            int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                     c == '_' || c == '-' || c == '/' || c == '+';
            out[n] = ok ? (char)c : '_';
        }
    out[n] = '\0';
    if (n == 0) snprintf(out, cap, "env.c");
}

enum { INC_NONE = 0, INC_ENV = 1, INC_DSL = 2 };

static const char *skip_blank(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v')) p++;
    return p;
}

static int starts_with(const char *p, const char *end, const char *word) {
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* Is the physical line [p, end) an #include of the DSL or ABI header, with
 * nothing after it but blanks or a comment? */
static int dsl_include(const char *p, const char *end) {
    static const struct {
        const char *spelling;
        int which;
    } forms[] = {{"<spade/dsl.h>", INC_DSL},
                 {"\"spade/dsl.h\"", INC_DSL},
                 {"<spade/env.h>", INC_ENV},
                 {"\"spade/env.h\"", INC_ENV}};
    p = skip_blank(p, end);
    if (p == end || *p != '#') return INC_NONE;
    p = skip_blank(p + 1, end);
    if (!starts_with(p, end, "include")) return INC_NONE;
    p = skip_blank(p + strlen("include"), end);
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (!starts_with(p, end, forms[i].spelling)) continue;
        const char *rest = skip_blank(p + strlen(forms[i].spelling), end);
        if (rest == end || starts_with(rest, end, "//") || starts_with(rest, end, "/*")) return forms[i].which;
    }
    return INC_NONE;
}

/* The unit tcc compiles: the user's lines, DSL includes replaced by the
 * embedded headers, each followed by #line so numbering stays the user's. */
static int build_unit(const char *fname, const char *src, size_t len, text *t) {
    text_addf(t, "#line 1 \"%s\"\n", fname);
    const char *p = src, *end = src + len;
    long line = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        int which = dsl_include(p, eol);
        if (which == INC_NONE) {
            text_add(t, p, (size_t)(eol - p));
            text_add(t, "\n", 1);
        } else {
            text_add(t, "#line 1 \"spade/env.h\"\n", strlen("#line 1 \"spade/env.h\"\n"));
            text_add(t, spade_jit_env_h, spade_jit_env_h_len);
            if (which == INC_DSL) {
                text_add(t, "#line 1 \"spade/dsl.h\"\n", strlen("#line 1 \"spade/dsl.h\"\n"));
                text_add(t, spade_jit_dsl_h, spade_jit_dsl_h_len);
            }
            text_addf(t, "#line %ld \"%s\"\n", line + 1, fname);
        }
        line++;
        p = nl ? nl + 1 : end;
    }
    return t->failed ? -1 : 0;
}

/* ---- tcc's messages -------------------------------------------------------- */
typedef struct messages {
    char first[1024]; /* the first error, newlines folded */
    int errors;
    int out_of_memory; /* some error said "memory full" */
    const char *fname; /* the user's file as tcc names it */
} messages;

static void on_tcc_message(void *opaque, const char *msg) {
    messages *m = opaque;
    const char *e = strstr(msg, "error: ");
    const char *w = strstr(msg, "warning: ");
    if (!e || (w && w < e)) return; /* warnings do not fail a compile */
    /* libtcc says "memory full" for two different things: an allocation that
     * failed ("(malloc)", "(realloc)", or no qualifier), which is the worker's
     * address-space limit, and a fixed-size table of its own overflowing
     * ("(ifdef)": #if nested past 64, "(vstack)": an expression nested past
     * its value stack, "(symbols)"), which is the source's fault: a compile
     * error like any other. */
    const char *full = strstr(msg, "memory full");
    if (full && (strncmp(full + 11, " (", 2) != 0 || strncmp(full + 11, " (malloc)", 9) == 0 ||
                 strncmp(full + 11, " (realloc)", 10) == 0))
        m->out_of_memory = 1;
    if (m->errors++ == 0) {
        /* "In file included from f.c:1:\nf.c:1: error: ..." -> the last line,
         * unless it points into the embedded header, whose line means nothing
         * to the user without the include chain. */
        const char *last = strrchr(msg, '\n');
        if (last && strncmp(last + 1, m->fname, strlen(m->fname)) == 0) msg = last + 1;
        size_t n = 0;
        for (; msg[n] && n + 1 < sizeof m->first; n++) m->first[n] = msg[n] == '\n' ? ' ' : msg[n];
        m->first[n] = '\0';
    }
}

/* The user's line in a tcc message: the last "fname:N:" in it (an error inside
 * the embedded header is reported by tcc as included from the user's line). */
static int line_in_message(const char *msg, const char *fname) {
    size_t fl = strlen(fname);
    int line = 0;
    for (const char *p = strstr(msg, fname); p; p = strstr(p + 1, fname)) {
        const char *q = p + fl;
        if (*q != ':' || q[1] < '0' || q[1] > '9') continue;
        long v = strtol(q + 1, (char **)&q, 10);
        if (*q == ':' && v > 0 && v < 1000000000) line = (int)v;
    }
    return line;
}

static int is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* First line of the user's source where identifier `name` appears as a whole
 * word (the use behind an undefined-symbol error), else 0. */
static int line_of_identifier(const char *src, size_t len, const char *name) {
    size_t n = strlen(name);
    if (n == 0) return 0;
    int line = 1;
    for (size_t i = 0; i + n <= len; i++) {
        if (src[i] == '\n') {
            line++;
            continue;
        }
        if (memcmp(src + i, name, n) == 0 && (i == 0 || !is_ident_char(src[i - 1])) &&
            (i + n == len || !is_ident_char(src[i + n])))
            return line;
    }
    return 0;
}

/* Appends to err the user's source around `line`: up to two lines before it
 * and the line itself, as "  NN | text". libtcc reports some syntax errors on
 * the line of the token after the mistake (`int x = 1 +;` followed by a blank
 * line is reported one or two lines late), so the lines before it are where
 * the eye should go. Bytes outside printable ASCII are shown as '?', and each
 * line is cut at 100 columns: the source is untrusted. */
static void append_excerpt(char *err, size_t errlen, const char *src, size_t len, int line) {
    if (line <= 0 || !err || !errlen) return;
    int first = line > 2 ? line - 2 : 1, cur = 1;
    size_t i = 0, used = strlen(err);
    while (i < len && cur < first)
        if (src[i++] == '\n') cur++;
    for (; i < len && cur <= line; cur++) {
        char text[104];
        size_t n = 0;
        for (; i < len && src[i] != '\n'; i++)
            if (n < 100) text[n++] = (src[i] >= 0x20 && src[i] < 0x7f) || src[i] == '\t' ? src[i] : '?';
        text[n] = '\0';
        i++; /* the newline */
        if (used + 1 >= errlen) return;
        int w = snprintf(err + used, errlen - used, "\n  %5d | %s%s", cur, text, n == 100 ? "..." : "");
        if (w < 0) return;
        used += (size_t)w < errlen - used ? (size_t)w : errlen - used - 1;
    }
}

/* ---- compile ---------------------------------------------------------------- */
/* tcc takes a C string: a NUL inside would silently cut the source. 0, or -1
 * with *line the NUL's line. */
static int jit_check_nul(const char *fname, const char *source, size_t len, int *line, char *err, size_t errlen) {
    const char *nul = len ? memchr(source, '\0', len) : NULL;
    if (!nul) return 0;
    int l = 1;
    for (const char *p = source; p < nul; p++) l += *p == '\n';
    *line = l;
    spade_errf(err, errlen, "%s:%d: error: source contains a NUL byte (offset %zu)", fname, l, (size_t)(nul - source));
    return -1;
}

/* A compiler for j with the DSL's symbols, its messages going to msgs: 0, or -1 (out of memory). */
static int jit_start(spade_jit *j, messages *msgs) {
    TCCState *s = tcc_new();
    if (!s) return -1;
    j->tcc = s;
    tcc_set_error_func(s, msgs, on_tcc_message);
    /* Options before the output type: tcc adds its system include paths there
     * unless -nostdinc is already set. */
    tcc_set_options(s, "-nostdinc -nostdlib");
    tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
    tcc_define_symbol(s, "SPADE_JIT", "1");
    for (size_t i = 0; i < spade_dsl_nsymbols; i++)
        tcc_add_symbol(s, spade_dsl_symbols[i].name, spade_dsl_symbols[i].addr);
    return 0;
}

/* The compiled unit placed in memory: tcc's status (< 0: failed); *no_image
 * is set (and said in err) when there is no memory for the image. */
static int jit_relocate(spade_jit *j, const messages *msgs, int *no_image, const char *fname, char *err,
                        size_t errlen) {
    *no_image = 0;
#ifdef SPADE_TCC_RELOCATE_TWO_ARGS
    /* Size first, then our own mapping: with TCC_RELOCATE_AUTO, libtcc's own
     * allocation failure ends in exit(), which no caller can classify. */
    int size = tcc_relocate(j->tcc, NULL);
    if (size <= 0 || msgs->errors) return -1;
    void *img = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (img == MAP_FAILED) {
        spade_errf(err, errlen, "%s: out of memory: the compiled image needs %d bytes", fname, size);
        *no_image = 1;
        return -1;
    }
    j->image = img;
    j->image_size = (size_t)size;
    return tcc_relocate(j->tcc, img);
#else
    (void)msgs, (void)fname, (void)err, (void)errlen;
    return tcc_relocate(j->tcc);
#endif
}

/* A failed relocation said: out of memory, an undefined symbol (named, with
 * the line that uses it), or another link error. */
static void jit_link_error(const messages *msgs, const char *fname, const char *source, size_t len, int *line,
                           spade_jit_status *kind, char *err, size_t errlen) {
    if (msgs->out_of_memory) {
        *kind = SPADE_JIT_OUT_OF_MEMORY;
        spade_errf(err, errlen, "%s: %s", fname, msgs->first);
        return;
    }
    *kind = SPADE_JIT_LINK_ERROR;
    const char *u = strstr(msgs->first, "undefined symbol '");
    if (!u) {
        spade_errf(err, errlen, "%s: link error: %s", fname, msgs->errors ? msgs->first : "relocation failed");
        return;
    }
    char sym[128];
    u += strlen("undefined symbol '");
    size_t n = 0;
    while (u[n] && u[n] != '\'' && n + 1 < sizeof sym) {
        sym[n] = u[n];
        n++;
    }
    sym[n] = '\0';
    *line = line_of_identifier(source, len, sym);
    char more[48] = "";
    if (msgs->errors > 1) snprintf(more, sizeof more, " (and %d more)", msgs->errors - 1);
    spade_errf(err, errlen, "%s:%d: error: undefined symbol '%s': not a helper of <spade/dsl.h>%s", fname, *line, sym,
               more);
    append_excerpt(err, errlen, source, len, *line);
}

int spade_jit_compile(const char *filename, const char *source, size_t len, spade_jit **out, char *err, size_t errlen,
                      int *line, spade_jit_status *kind) {
    char fname[160];
    int dummy_line;
    spade_jit_status dummy_kind;
    if (!line) line = &dummy_line;
    if (!kind) kind = &dummy_kind;
    *line = 0;
    *kind = SPADE_JIT_COMPILE_ERROR;
    if (out) *out = NULL;
    if (err && errlen) err[0] = '\0';
    safe_filename(filename, fname, sizeof fname);
    if (!out || (!source && len)) {
        spade_errf(err, errlen, "%s: no source given", fname);
        return -1;
    }
    if (jit_check_nul(fname, source, len, line, err, errlen)) return -1;
    text unit = {0};
    if (build_unit(fname, source ? source : "", len, &unit) < 0) {
        free(unit.p);
        *kind = SPADE_JIT_OUT_OF_MEMORY;
        spade_errf(err, errlen, "%s: out of memory preparing the source", fname);
        return -1;
    }
    spade_jit *j = calloc(1, sizeof *j);
    messages msgs = {.first = {0}, .fname = fname};
    if (!j || jit_start(j, &msgs)) {
        free(unit.p);
        free(j);
        *kind = SPADE_JIT_OUT_OF_MEMORY;
        spade_errf(err, errlen, "%s: out of memory starting the compiler", fname);
        return -1;
    }
    int rc = tcc_compile_string(j->tcc, unit.p);
    free(unit.p);
    if (rc < 0 || msgs.errors) {
        *kind = msgs.out_of_memory ? SPADE_JIT_OUT_OF_MEMORY : SPADE_JIT_COMPILE_ERROR;
        *line = line_in_message(msgs.first, fname);
        spade_errf(err, errlen, "%s", msgs.errors ? msgs.first : "compile failed (tcc gave no message)");
        append_excerpt(err, errlen, source, len, *line);
        spade_jit_free(j);
        return -1;
    }
    int no_image;
    rc = jit_relocate(j, &msgs, &no_image, fname, err, errlen);
    if (no_image)
        *kind = SPADE_JIT_OUT_OF_MEMORY;
    else if (rc < 0 || msgs.errors)
        jit_link_error(&msgs, fname, source, len, line, kind, err, errlen);
    if (rc < 0 || msgs.errors) {
        spade_jit_free(j);
        return -1;
    }
    *out = j;
    *kind = SPADE_JIT_OK;
    return 0;
}

void *spade_jit_symbol(void *jit, const char *name) {
    spade_jit *j = jit;
    if (!j || !j->tcc || !name) return NULL;
    return tcc_get_symbol(j->tcc, name);
}

size_t spade_jit_image_size(const spade_jit *jit) { return jit ? jit->image_size : 0; }

void spade_jit_free(spade_jit *jit) {
    if (!jit) return;
    if (jit->tcc) tcc_delete(jit->tcc);
    if (jit->image) munmap(jit->image, jit->image_size);
    free(jit);
}
