/* template.c — designer templates (template.h): parsing, the kept text of a
 * hole, splicing, the fill embeddings (of the texts and of the games) and the
 * prompt.
 *
 * What it is not: the decoding of the holes (selfplay/template.c).
 */
#include "designer/template.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "registry.h" /* spade_read_source */
#include "spade/dsl.h" /* spade_parse_int: what a template's RESET reads a hole with */

struct spade_template {
    char *name;
    char *text;
    size_t len;
    int holes;
    size_t start[SPADE_TEMPLATE_MAX_HOLES + 1], end[SPADE_TEMPLATE_MAX_HOLES + 1]; /* the pieces */
    int line[SPADE_TEMPLATE_MAX_HOLES];
    char family[32];
};

static int line_at(const char *text, size_t at) {
    int l = 1;
    for (size_t i = 0; i < at; i++) l += text[i] == '\n';
    return l;
}

int spade_template_parse(spade_template **out, const char *name, const char *text, size_t len, char *err,
                         size_t errlen) {
    *out = NULL;
    if (!name) name = "template";
    const char *nul = memchr(text, 0, len);
    if (nul) {
        spade_errf(err, errlen, "%s:%d: a NUL byte: a template is text", name, line_at(text, (size_t)(nul - text)));
        return -1;
    }
    spade_template *t = calloc(1, sizeof *t);
    if (!t || !(t->text = malloc(len + 1)) || !(t->name = strdup(name))) {
        spade_template_free(t);
        spade_errf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    memcpy(t->text, text, len);
    t->text[len] = 0;
    t->len = len;
    size_t piece = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (text[i] != '@' || text[i + 1] != '@') continue;
        if (i + 2 < len && text[i + 2] == '@') {
            spade_errf(err, errlen, "%s:%d: \"@@@\": a hole is exactly two '@' (which two are meant?)", name,
                       line_at(text, i));
            spade_template_free(t);
            return -1;
        }
        if (t->holes == SPADE_TEMPLATE_MAX_HOLES) {
            spade_errf(err, errlen, "%s:%d: more than %d holes (@@)", name, line_at(text, i), SPADE_TEMPLATE_MAX_HOLES);
            spade_template_free(t);
            return -1;
        }
        t->start[t->holes] = piece;
        t->end[t->holes] = i;
        t->line[t->holes] = line_at(text, i);
        t->holes++;
        piece = i + 2;
        i++;
    }
    if (t->holes == 0) {
        spade_errf(err, errlen, "%s: no hole: a template marks what the designer fills with @@", name);
        spade_template_free(t);
        return -1;
    }
    t->start[t->holes] = piece;
    t->end[t->holes] = len;
    snprintf(t->family, sizeof t->family, "any");
    const char *f = strstr(t->text, ".family = \"");
    if (f) {
        f += strlen(".family = \"");
        size_t n = strcspn(f, "\"\n@");
        if (n > 0 && n < sizeof t->family && f[n] == '"') snprintf(t->family, sizeof t->family, "%.*s", (int)n, f);
    }
    *out = t;
    return 0;
}

int spade_template_load(spade_template **out, const char *path, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    if (spade_read_source(path, &text, &len, err, errlen) < 0) return -1;
    int rc = spade_template_parse(out, path, text, len, err, errlen);
    free(text);
    return rc;
}

void spade_template_free(spade_template *t) {
    if (!t) return;
    free(t->name);
    free(t->text);
    free(t);
}

const char *spade_template_name(const spade_template *t) { return t->name; }
const char *spade_template_family(const spade_template *t) { return t->family; }
int spade_template_holes(const spade_template *t) { return t->holes; }
int spade_template_hole_line(const spade_template *t, int k) { return k >= 0 && k < t->holes ? t->line[k] : 0; }

const char *spade_template_piece(const spade_template *t, int k, size_t *len) {
    if (k < 0 || k > t->holes) {
        *len = 0;
        return "";
    }
    *len = t->end[k] - t->start[k];
    return t->text + t->start[k];
}

size_t spade_template_hole_text(const char *text, size_t len) {
    size_t n = 0;
    while (n < len && text[n] != '\n' && text[n] != 0) n++;
    return n;
}

int spade_template_fill(const spade_template *t, const char *const *fills, const size_t *lens, char **out,
                        size_t *out_len) {
    size_t n = t->len;
    for (int k = 0; k < t->holes; k++) n += lens[k];
    char *s = malloc(n + 1);
    if (!s) return -1;
    size_t at = 0, pl;
    for (int k = 0; k <= t->holes; k++) {
        const char *p = spade_template_piece(t, k, &pl);
        memcpy(s + at, p, pl);
        at += pl;
        if (k < t->holes) {
            memcpy(s + at, fills[k], lens[k]);
            at += lens[k];
        }
    }
    s[at] = 0;
    *out = s;
    if (out_len) *out_len = at;
    return 0;
}

/* FNV-1a of text without blank space, seeded by the hole (and by tag, so a
 * number's feature never meets a text's). */
static uint64_t hole_hash(int k, uint64_t tag, const char *text, size_t len) {
    uint64_t h = (1469598103934665603ULL ^ (uint64_t)(k + 1) * 0x9e3779b97f4a7c15ULL) + tag;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue; /* "6,2" and "6, 2" are one filling */
        h = (h ^ c) * 1099511628211ULL;
    }
    return h;
}

static void unit(double *x, int d) {
    double norm = 0;
    for (int i = 0; i < d; i++) norm += x[i] * x[i];
    if (norm > 0)
        for (int i = 0; i < d; i++) x[i] /= sqrt(norm);
}

void spade_template_embed(const char *const *fills, const size_t *lens, int n, double *x, int d) {
    memset(x, 0, (size_t)d * sizeof *x);
    for (int k = 0; k < n; k++) x[hole_hash(k, 0, fills[k], lens[k]) % (uint64_t)d] += 1;
    unit(x, d);
}

void spade_template_embed_games(const char *const *fills, const size_t *lens, int n, double *x, int d) {
    memset(x, 0, (size_t)d * sizeof *x);
    for (int k = 0; k < n; k++) {
        char *z = malloc(lens[k] + 1); /* parse_int reads a NUL-terminated text */
        long v = SPADE_NO_INT;
        if (z) {
            memcpy(z, fills[k], lens[k]);
            z[lens[k]] = 0;
            v = spade_parse_int(z);
            free(z);
        }
        char num[32];
        int nl = snprintf(num, sizeof num, "%ld", v);
        uint64_t h = v == SPADE_NO_INT ? hole_hash(k, 0, fills[k], lens[k]) : hole_hash(k, 1, num, (size_t)nl);
        x[h % (uint64_t)d] += 1;
    }
    unit(x, d);
}

int spade_template_prompt(const spade_template *t, char **out, size_t *out_len) {
    char line[160];
    int n = snprintf(line, sizeof line, "Fill in the blanks of this environment (family %s).\n", t->family);
    *out = malloc((size_t)n + 1);
    if (!*out) return -1;
    memcpy(*out, line, (size_t)n + 1);
    if (out_len) *out_len = (size_t)n;
    return 0;
}
