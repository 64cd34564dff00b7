/* variants.c — mechanical rewrites of environment sources (variants.h).
 *
 * What it is not: a C parser. It edits three shapes the DSL writes on lines
 * of their own (ENV("name", PARAM(type, name, def, and "static T name(") and
 * leaves everything else as it was; spade check decides whether the result
 * still works.
 */
#include "variants.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

static uint64_t next(uint64_t *s) {
    uint64_t x = (*s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static int ident(int c) { return isalnum(c) || c == '_'; }

/* Renames whole-word `from` to `to` in s, outside string/char literals and comments. */
static int rename_ident(sbuf *out, const char *s, size_t len, const char *from, const char *to) {
    size_t fl = strlen(from), tl = strlen(to);
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '"' || c == '\'') { /* a literal, escapes included */
            size_t j = i + 1;
            while (j < len && s[j] != c) j += s[j] == '\\' ? 2 : 1;
            j = j < len ? j + 1 : len;
            put(out, s + i, j - i);
            i = j;
        } else if (c == '/' && i + 1 < len && (s[i + 1] == '/' || s[i + 1] == '*')) {
            const char *end = s[i + 1] == '/' ? memchr(s + i, '\n', len - i) : NULL;
            size_t j = len;
            if (s[i + 1] == '/')
                j = end ? (size_t)(end - s) : len;
            else
                for (size_t k = i + 2; k + 1 < len; k++)
                    if (s[k] == '*' && s[k + 1] == '/') {
                        j = k + 2;
                        break;
                    }
            put(out, s + i, j - i);
            i = j;
        } else if (ident((unsigned char)c) && (i == 0 || !ident((unsigned char)s[i - 1]))) {
            size_t j = i;
            while (j < len && ident((unsigned char)s[j])) j++;
            if (j - i == fl && !memcmp(s + i, from, fl))
                put(out, to, tl);
            else
                put(out, s + i, j - i);
            i = j;
        } else {
            put(out, s + i, 1);
            i++;
        }
    }
    return out->oom ? -1 : 0;
}

static const char *const SUFFIX[] = {"alt", "mini", "plus", "two", "lite", "redux", "mix", "ex", "neo", "duo"};

/* Appends one sentence of the change to what (cap bytes; NULL: none kept). */
static void tell(char *what, size_t cap, const char *fmt, ...) {
    if (!what || !cap) return;
    size_t n = strlen(what);
    va_list ap;
    va_start(ap, fmt);
    if (n + 1 < cap) vsnprintf(what + n, cap - n, fmt, ap);
    va_end(ap);
}

int spade_variant_make(const char *src, size_t len, const spade_env_info *info, uint64_t seed, char **out,
                       size_t *out_len, char *err, size_t errlen) {
    return spade_variant_make_told(src, len, info, seed, out, out_len, NULL, 0, err, errlen);
}

int spade_variant_make_told(const char *src, size_t len, const spade_env_info *info, uint64_t seed, char **out,
                            size_t *out_len, char *what, size_t what_cap, char *err, size_t errlen) {
    *out = NULL;
    if (what && what_cap) what[0] = 0;
    uint64_t rng = seed;
    sbuf b = {0};
    const char *env = strstr(src, "ENV(\"");
    if (!env || (size_t)(env - src) >= len) return spade_errf(err, errlen, "no ENV(\"name\" in the source"), -1;
    int changed_param = 0, force = (int)(next(&rng) % (uint64_t)(info->n_params ? info->n_params : 1));
    /* line by line: the ENV name and the PARAM defaults */
    for (const char *p = src, *end = src + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        if (p == env || (n > 5 && !memcmp(p, "ENV(\"", 5))) {
            const char *q = memchr(p + 5, '"', n - 5);
            if (!q) {
                put(&b, p, n);
            } else {
                char name[96];
                const char *suf = SUFFIX[next(&rng) % (sizeof SUFFIX / sizeof *SUFFIX)];
                snprintf(name, sizeof name, "%.*s_%s", (int)(q - p - 5), p + 5, suf);
                if (strlen(name) > 60) snprintf(name, sizeof name, "v_%s", suf);
                put(&b, "ENV(\"", 5);
                put(&b, name, strlen(name));
                tell(what, what_cap, "Name it %s.", name);
                put(&b, q, (size_t)(p + n - q));
            }
        } else if (n > 6 && !memcmp(p, "PARAM(", 6)) {
            /* PARAM(type, name, def, min, max...: replace the third field */
            const char *c1 = memchr(p, ',', n), *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(p + n - c1 - 1)) : NULL;
            const char *c3 = c2 ? memchr(c2 + 1, ',', (size_t)(p + n - c2 - 1)) : NULL;
            const spade_param_info *pi = NULL;
            char pname[40] = "";
            if (c1 && c2) {
                const char *s = c1 + 1;
                while (*s == ' ') s++;
                snprintf(pname, sizeof pname, "%.*s", (int)(c2 - s), s);
            }
            for (int i = 0; i < info->n_params; i++)
                if (!strcmp(info->params[i].name, pname)) pi = &info->params[i];
            int idx = pi ? (int)(pi - info->params) : -1;
            if (!c3 || !pi || pi->max <= pi->min || !(idx == force || next(&rng) % 2)) {
                put(&b, p, n);
            } else {
                double v;
                char num[64];
                if (pi->type == 1) { /* SPADE_PARAM_INT */
                    uint64_t span = (uint64_t)(pi->max - pi->min + 1);
                    v = pi->min + (double)(next(&rng) % span);
                    if (v == pi->def) v = v + 1 <= pi->max ? v + 1 : pi->min;
                    snprintf(num, sizeof num, "%lld", (long long)v);
                } else {
                    v = pi->min + (pi->max - pi->min) * (double)(next(&rng) % 11) / 10.0;
                    snprintf(num, sizeof num, "%.2f", v);
                }
                changed_param |= v != pi->def;
                tell(what, what_cap, " Make %s %s by default.", pi->name, num);
                put(&b, p, (size_t)(c2 + 1 - p));
                put(&b, " ", 1);
                put(&b, num, strlen(num));
                put(&b, c3, (size_t)(p + n - c3));
            }
        } else {
            put(&b, p, n);
        }
        p += n;
    }
    (void)changed_param;
    /* renamed static helpers */
    char names[32][64];
    int nn = 0;
    for (const char *p = b.p; !b.oom && p && (p = strstr(p, "\nstatic ")) && nn < 32; p++) {
        const char *paren = strchr(p + 8, '('), *nl = strchr(p + 1, '\n');
        const char *eq = strchr(p + 8, '=');
        if (!paren || (nl && nl < paren) || (eq && eq < paren)) continue;
        const char *e = paren;
        while (e > p && e[-1] == ' ') e--;
        const char *s = e;
        while (s > p && ident((unsigned char)s[-1])) s--;
        if (e - s > 0 && e - s < 48 && strncmp(s, "main", 4))
            snprintf(names[nn++], sizeof names[0], "%.*s", (int)(e - s), s);
    }
    for (int i = 0; i < nn && !b.oom; i++) {
        if (next(&rng) % 2) continue;
        char to[96];
        snprintf(to, sizeof to, "%.60s_%s", names[i], SUFFIX[next(&rng) % (sizeof SUFFIX / sizeof *SUFFIX)]);
        sbuf o = {0};
        rename_ident(&o, b.p, b.n, names[i], to);
        tell(what, what_cap, " Rename the helper %s to %s.", names[i], to);
        if (o.oom) {
            free(o.p);
            b.oom = 1;
            break;
        }
        free(b.p);
        b = o;
    }
    if (b.oom) {
        free(b.p);
        return spade_errf(err, errlen, "out of memory"), -1;
    }
    *out = b.p;
    *out_len = b.n;
    return 0;
}
