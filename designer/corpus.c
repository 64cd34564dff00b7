/* corpus.c — reading the grounding corpus (corpus.h): a recursive sorted
 * walk, the held-out guard on every file, one item per document or JSONL line.
 *
 * What it is not: a JSON reader (core/json.h is the one in the tree).
 */
#include "corpus.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errbuf.h"
#include "json.h"
#include "registry.h"
#include "rng.h"

struct spade_corpus {
    spade_corpus_item *item;
    char **owned; /* names and texts, freed with the corpus */
    int n, cap, n_owned, cap_owned;
};

/* ---- JSON: one object per line, read with core/json.h ---- */

int spade_json_string_field(const char *line, size_t len, const char *field, char **out, size_t *out_len, char *err,
                            size_t errlen) {
    spade_json_doc *d;
    char msg[256];
    *out = NULL;
    if (spade_json_parse(line, len, &d, msg, sizeof msg) < 0) {
        spade_errf(err, errlen, "not a JSON object (%s)", msg);
        return -1;
    }
    const spade_json *root = spade_json_root(d);
    int rc = 1;
    if (root->type != SPADE_JSON_OBJECT) {
        spade_errf(err, errlen, "not a JSON object (a %s)", spade_json_type_name(root->type));
        rc = -1;
    } else {
        const spade_json *v = spade_json_get(root, field);
        if (v && v->type == SPADE_JSON_STRING) {
            if (!(*out = malloc(v->len + 1))) {
                spade_errf(err, errlen, "out of memory");
                rc = -1;
            } else {
                memcpy(*out, v->str, v->len + 1);
                if (out_len) *out_len = v->len;
                rc = 0;
            }
        }
    }
    spade_json_doc_free(d);
    return rc;
}

/* ---- items ---- */

static char *own(spade_corpus *c, char *s) {
    if (!s) return NULL;
    if (c->n_owned == c->cap_owned) {
        int cap = c->cap_owned ? 2 * c->cap_owned : 64;
        char **np = realloc(c->owned, (size_t)cap * sizeof *np);
        if (!np) return free(s), NULL;
        c->owned = np;
        c->cap_owned = cap;
    }
    return c->owned[c->n_owned++] = s;
}

static int add_item(spade_corpus *c, char *name, char *text, size_t len) {
    if (!own(c, name) || !own(c, text)) return -1;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        spade_corpus_item *ni = realloc(c->item, (size_t)cap * sizeof *ni);
        if (!ni) return -1;
        c->item = ni;
        c->cap = cap;
    }
    spade_corpus_item *it = &c->item[c->n++];
    memset(it, 0, sizeof *it);
    it->name = name;
    it->text = text;
    it->len = len;
    const char *f = strstr(text, ".family = \"");
    if (f && strlen(name) > 2 && !strcmp(name + strlen(name) - 2, ".c")) {
        f += 11;
        size_t k = strcspn(f, "\"\n");
        if (k < sizeof it->family) memcpy(it->family, f, k), it->family[k] = 0;
    }
    return 0;
}

static int has_ext(const char *name, const char *ext) {
    size_t n = strlen(name), e = strlen(ext);
    return n > e && !strcmp(name + n - e, ext);
}

static int add_file(spade_corpus *c, const char *path, const spade_heldout_guard *g, int *refused, char *err,
                    size_t errlen) {
    int jsonl = has_ext(path, ".jsonl");
    if (!jsonl && !has_ext(path, ".c") && !has_ext(path, ".md") && !has_ext(path, ".txt")) return 0;
    char *src = NULL;
    size_t len = 0;
    if (spade_read_source(path, &src, &len, err, errlen) < 0) return -1;
    char why[1024];
    if (g && spade_heldout_guard_refuses(g, path, src, len, why, sizeof why)) {
        (*refused)++;
        free(src);
        return 0;
    }
    if (!jsonl) return add_item(c, strdup(path), src, len) < 0 ? (spade_errf(err, errlen, "out of memory"), -1) : 0;
    int line = 0, rc = 0;
    for (const char *p = src; p < src + len && rc == 0; line++) {
        const char *nl = memchr(p, '\n', (size_t)(src + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(src + len - p);
        int blank = 1;
        for (size_t k = 0; k < n; k++) blank &= p[k] == ' ' || p[k] == '\t' || p[k] == '\r';
        if (!blank) {
            char *text = NULL, msg[256];
            size_t tlen = 0;
            int got = spade_json_string_field(p, n, "text", &text, &tlen, msg, sizeof msg);
            if (got < 0) {
                spade_errf(err, errlen, "%s:%d: %s", path, line + 1, msg);
                rc = -1;
            } else if (got == 1) {
                spade_errf(err, errlen, "%s:%d: no string field \"text\"", path, line + 1);
                rc = -1;
            } else if (g && spade_heldout_guard_refuses(g, NULL, text, tlen, why, sizeof why)) {
                (*refused)++;
                free(text);
            } else {
                size_t nn = strlen(path) + 16;
                char *name = malloc(nn);
                if (name) snprintf(name, nn, "%s:%d", path, line + 1);
                if (!name || add_item(c, name, text, tlen) < 0) {
                    spade_errf(err, errlen, "out of memory");
                    rc = -1;
                }
            }
        }
        p += n + 1;
    }
    free(src);
    return rc;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int add_path(spade_corpus *c, const char *path, const spade_heldout_guard *g, int *refused, int depth, char *err,
                    size_t errlen) {
    struct stat st;
    if (stat(path, &st) < 0) {
        spade_errf(err, errlen, "corpus: %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return add_file(c, path, g, refused, err, errlen);
    if (depth > 16) return 0;
    DIR *d = opendir(path);
    if (!d) {
        spade_errf(err, errlen, "corpus: %s: %s", path, strerror(errno));
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.') continue; /* hidden files, . and .. */
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t need = strlen(path) + strlen(de->d_name) + 2;
        if (!(names[n] = malloc(need))) {
            rc = -1;
            break;
        }
        snprintf(names[n++], need, "%s/%s", path, de->d_name);
    }
    closedir(d);
    if (rc < 0) spade_errf(err, errlen, "corpus: out of memory listing %s", path);
    if (rc == 0) qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n && rc == 0; i++) rc = add_path(c, names[i], g, refused, depth + 1, err, errlen);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int spade_corpus_new(spade_corpus **out, const char *const *paths, int n, const spade_heldout_guard *guard,
                     int allow_unguarded, int *n_refused, char *err, size_t errlen) {
    *out = NULL;
    if (!guard && !allow_unguarded) {
        spade_errf(err, errlen, "corpus: no held-out guard (the held-out suite must never reach the designer)");
        return -1;
    }
    spade_corpus *c = calloc(1, sizeof *c);
    int refused = 0;
    if (!c) {
        spade_errf(err, errlen, "corpus: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (add_path(c, paths[i], guard, &refused, 0, err, errlen) < 0) {
            spade_corpus_free(c);
            return -1;
        }
    if (n_refused) *n_refused = refused;
    if (c->n == 0) {
        spade_errf(err, errlen, "corpus: no .c, .md, .txt or .jsonl item in the %d path%s given%s", n,
                   n == 1 ? "" : "s", refused ? " (every file found is held out)" : "");
        spade_corpus_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void spade_corpus_free(spade_corpus *c) {
    if (!c) return;
    for (int i = 0; i < c->n_owned; i++) free(c->owned[i]);
    free(c->owned);
    free(c->item);
    free(c);
}

int spade_corpus_count(const spade_corpus *c) { return c->n; }
const spade_corpus_item *spade_corpus_item_at(const spade_corpus *c, int i) {
    return i >= 0 && i < c->n ? &c->item[i] : NULL;
}
int spade_corpus_draw(const spade_corpus *c, uint64_t *rng) { return (int)(spade_splitmix64(rng) % (uint64_t)c->n); }
