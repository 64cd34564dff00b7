/* json.c — the JSON reader and writer of json.h.
 *
 * What it is: a recursive-descent reader whose tree (nodes, decoded strings)
 * lives in one arena freed with the document, and an append-only writer.
 * Arrays and objects are gathered in a temporary vector and copied into the
 * arena once their length is known, so the tree is plain arrays.
 * What it is not: fast for huge documents (the server's lines are capped), nor
 * lenient: a request that is not JSON is refused, not guessed at.
 */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

/* ---- arena ----------------------------------------------------------------- */
typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(max_align_t) unsigned char data[];
} chunk;

struct spade_json_doc {
    chunk *chunks;
    spade_json root;
};

static void *arena_alloc(spade_json_doc *d, size_t n) {
    n = (n + 15) & ~(size_t)15;
    chunk *c = d->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 32768 ? n : 32768;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = d->chunks;
        d->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

void spade_json_doc_free(spade_json_doc *d) {
    if (!d) return;
    chunk *c = d->chunks;
    while (c) {
        chunk *n = c->next;
        free(c);
        c = n;
    }
    free(d);
}

const spade_json *spade_json_root(const spade_json_doc *d) { return d ? &d->root : NULL; }

/* ---- reader ------------------------------------------------------------------ */
typedef struct reader {
    const unsigned char *s;
    size_t pos, len;
    spade_json_doc *doc;
    char *err;
    size_t errlen;
    int failed;
} reader;

static int fail(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(reader *r, const char *fmt, ...) {
    if (r->failed) return -1;
    r->failed = 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    spade_errf(r->err, r->errlen, "offset %zu: %s", r->pos, msg);
    return -1;
}

static void skip_ws(reader *r) {
    while (r->pos < r->len) {
        unsigned char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        r->pos++;
    }
}

static int hex4(reader *r, unsigned *out) {
    if (r->len - r->pos < 4) return fail(r, "\\u needs four hex digits");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = r->s[r->pos + (size_t)i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(r, "\\u needs four hex digits");
    }
    r->pos += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(unsigned char *d, unsigned cp) {
    if (cp < 0x80) {
        d[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (unsigned char)(0xC0 | (cp >> 6));
        d[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (unsigned char)(0xE0 | (cp >> 12));
        d[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (unsigned char)(0xF0 | (cp >> 18));
    d[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote. The decoded string is never longer than its source
 * (an escape of 2..12 bytes decodes to 1..4), so one allocation of the
 * source's length suffices; the source is scanned once to find the end. */
static int read_string(reader *r, const char **out, size_t *out_len) {
    size_t start = ++r->pos, end = start;
    while (end < r->len && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
    if (end >= r->len) return fail(r, "unterminated string");
    unsigned char *d = arena_alloc(r->doc, end - start + 1);
    if (!d) return fail(r, "out of memory");
    size_t n = 0;
    while (r->pos < end) {
        unsigned char c = r->s[r->pos];
        if (c < 0x20) return fail(r, "control byte 0x%02x in a string (escape it)", c);
        if (c != '\\') {
            d[n++] = c;
            r->pos++;
            continue;
        }
        r->pos++;
        unsigned char e = r->s[r->pos++];
        switch (e) {
        case '"': d[n++] = '"'; break;
        case '\\': d[n++] = '\\'; break;
        case '/': d[n++] = '/'; break;
        case 'b': d[n++] = '\b'; break;
        case 'f': d[n++] = '\f'; break;
        case 'n': d[n++] = '\n'; break;
        case 'r': d[n++] = '\r'; break;
        case 't': d[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(r, &cp) < 0) return -1;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(r, "lone low surrogate \\u%04x", cp);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (r->pos + 2 > end || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u')
                    return fail(r, "high surrogate \\u%04x without its low half", cp);
                r->pos += 2;
                if (hex4(r, &lo) < 0) return -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return fail(r, "high surrogate \\u%04x without its low half", cp);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += put_utf8(d + n, cp);
            break;
        }
        default: r->pos--; return fail(r, "unknown escape '\\%c'", e >= 0x20 && e < 0x7f ? e : '?');
        }
    }
    r->pos = end + 1;
    d[n] = 0;
    *out = (const char *)d;
    *out_len = n;
    return 0;
}

static int read_number(reader *r, spade_json *v) {
    size_t start = r->pos;
    const unsigned char *s = r->s;
    size_t p = r->pos;
    if (p < r->len && s[p] == '-') p++;
    if (p >= r->len || s[p] < '0' || s[p] > '9') return fail(r, "not a value");
    if (s[p] == '0') {
        p++;
        if (p < r->len && s[p] >= '0' && s[p] <= '9') return fail(r, "number with a leading zero");
    } else {
        while (p < r->len && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < r->len && s[p] == '.') {
        p++;
        if (p >= r->len || s[p] < '0' || s[p] > '9') return fail(r, "digits must follow the decimal point");
        while (p < r->len && s[p] >= '0' && s[p] <= '9') p++;
    }
    if (p < r->len && (s[p] == 'e' || s[p] == 'E')) {
        p++;
        if (p < r->len && (s[p] == '+' || s[p] == '-')) p++;
        if (p >= r->len || s[p] < '0' || s[p] > '9') return fail(r, "digits must follow the exponent");
        while (p < r->len && s[p] >= '0' && s[p] <= '9') p++;
    }
    size_t n = p - start;
    char *t = arena_alloc(r->doc, n + 1);
    if (!t) return fail(r, "out of memory");
    memcpy(t, s + start, n);
    t[n] = 0;
    v->type = SPADE_JSON_NUMBER;
    size_t digits = n - (t[0] == '-');
    if (digits <= 15 && !strpbrk(t, ".eE")) {
        /* an integer of at most 15 digits is exact in a double: no strtod (ids, seeds, counts) */
        long long x = 0;
        for (const char *q = t + (t[0] == '-'); *q; q++) x = x * 10 + (*q - '0');
        v->number = t[0] == '-' ? (x ? -(double)x : -0.0) : (double)x;
    } else {
        v->number = strtod(t, NULL); /* the grammar above is a subset of strtod's; overflow gives +-inf */
    }
    v->str = t;
    v->len = n;
    r->pos = p;
    return 0;
}

static int literal(reader *r, const char *word) {
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->s + r->pos, word, n)) return fail(r, "not a value");
    r->pos += n;
    return 0;
}

static int read_value(reader *r, spade_json *v, int depth);

/* A temporary vector of values or members, copied into the arena at the end. */
typedef struct vec {
    void *p;
    size_t n, cap, size;
} vec;

static void *vec_push(vec *x) {
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        void *p = realloc(x->p, cap * x->size);
        if (!p) return NULL;
        x->p = p;
        x->cap = cap;
    }
    return (char *)x->p + x->n++ * x->size;
}

static void *vec_finish(reader *r, vec *x) {
    void *d = NULL;
    if (x->n) {
        d = arena_alloc(r->doc, x->n * x->size);
        if (d) memcpy(d, x->p, x->n * x->size);
    }
    free(x->p);
    x->p = NULL;
    return d;
}

/* After an item of an array or object: 1 when a ',' says another follows,
 * 0 when `close` ends the list (both consumed), -1 with the error otherwise. */
static int list_next(reader *r, char close, const char *what) {
    skip_ws(r);
    if (r->pos < r->len && r->s[r->pos] == ',') {
        r->pos++;
        return 1;
    }
    if (r->pos < r->len && r->s[r->pos] == close) {
        r->pos++;
        return 0;
    }
    return fail(r, "expected ',' or '%c' in %s", close, what);
}

static int read_array(reader *r, spade_json *v, int depth) {
    r->pos++;
    vec x = {.p = NULL, .size = sizeof(spade_json)};
    skip_ws(r);
    if (r->pos < r->len && r->s[r->pos] == ']') {
        r->pos++;
    } else {
        for (;;) {
            spade_json *it = vec_push(&x);
            if (!it) {
                free(x.p);
                return fail(r, "out of memory");
            }
            int more = read_value(r, it, depth + 1) < 0 ? -1 : list_next(r, ']', "an array");
            if (more < 0) {
                free(x.p);
                return -1;
            }
            if (!more) break;
        }
    }
    v->type = SPADE_JSON_ARRAY;
    v->len = x.n;
    v->items = vec_finish(r, &x);
    if (v->len && !v->items) return fail(r, "out of memory");
    return 0;
}

static int read_object(reader *r, spade_json *v, int depth) {
    r->pos++;
    vec x = {.p = NULL, .size = sizeof(spade_json_member)};
    skip_ws(r);
    if (r->pos < r->len && r->s[r->pos] == '}') {
        r->pos++;
    } else {
        for (;;) {
            skip_ws(r);
            if (r->pos >= r->len || r->s[r->pos] != '"') {
                free(x.p);
                return fail(r, "expected a string key in an object");
            }
            spade_json_member *m = vec_push(&x);
            if (!m) {
                free(x.p);
                return fail(r, "out of memory");
            }
            if (read_string(r, &m->key, &m->key_len) < 0) {
                free(x.p);
                return -1;
            }
            skip_ws(r);
            if (r->pos >= r->len || r->s[r->pos] != ':') {
                free(x.p);
                return fail(r, "expected ':' after a key");
            }
            r->pos++;
            int more = read_value(r, &m->value, depth + 1) < 0 ? -1 : list_next(r, '}', "an object");
            if (more < 0) {
                free(x.p);
                return -1;
            }
            if (!more) break;
        }
    }
    v->type = SPADE_JSON_OBJECT;
    v->len = x.n;
    v->members = vec_finish(r, &x);
    if (v->len && !v->members) return fail(r, "out of memory");
    return 0;
}

static int read_value(reader *r, spade_json *v, int depth) {
    memset(v, 0, sizeof *v);
    if (depth >= SPADE_JSON_MAX_DEPTH) return fail(r, "nested deeper than %d", SPADE_JSON_MAX_DEPTH);
    skip_ws(r);
    if (r->pos >= r->len) return fail(r, "unexpected end of input");
    switch (r->s[r->pos]) {
    case '{': return read_object(r, v, depth);
    case '[': return read_array(r, v, depth);
    case '"': v->type = SPADE_JSON_STRING; return read_string(r, &v->str, &v->len);
    case 't':
        v->type = SPADE_JSON_BOOL;
        v->boolean = 1;
        return literal(r, "true");
    case 'f': v->type = SPADE_JSON_BOOL; return literal(r, "false");
    case 'n': v->type = SPADE_JSON_NULL; return literal(r, "null");
    default: return read_number(r, v);
    }
}

int spade_json_parse(const char *text, size_t len, spade_json_doc **out, char *err, size_t errlen) {
    *out = NULL;
    spade_json_doc *d = calloc(1, sizeof *d);
    if (!d) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    reader r = {.s = (const unsigned char *)text, .len = len, .doc = d, .err = err, .errlen = errlen};
    if (!text) {
        spade_json_doc_free(d);
        spade_errf(err, errlen, "offset 0: no input");
        return -1;
    }
    if (read_value(&r, &d->root, 0) < 0) {
        spade_json_doc_free(d);
        return -1;
    }
    skip_ws(&r);
    if (r.pos != r.len) {
        fail(&r, "text after the value");
        spade_json_doc_free(d);
        return -1;
    }
    *out = d;
    return 0;
}

const char *spade_json_type_name(spade_json_type t) {
    static const char *const names[] = {"null", "boolean", "number", "string", "array", "object"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

const spade_json *spade_json_get(const spade_json *v, const char *key) {
    if (!v || v->type != SPADE_JSON_OBJECT) return NULL;
    size_t kl = strlen(key);
    for (size_t i = 0; i < v->len; i++)
        if (v->members[i].key_len == kl && !memcmp(v->members[i].key, key, kl)) return &v->members[i].value;
    return NULL;
}

int spade_json_int(const spade_json *v, long long min, long long max, long long *out) {
    if (!v || v->type != SPADE_JSON_NUMBER) return -1;
    double d = v->number;
    if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max) return -1;
    /* exactly, when it is written as an integer (doubles lose digits past 2^53) */
    if (v->len - (v->str[0] == '-') <= 15 && !strpbrk(v->str, ".eE")) { /* 15 digits: the double is exact */
        *out = (long long)d;
        return 0;
    }
    if (!strpbrk(v->str, ".eE")) {
        errno = 0;
        long long x = strtoll(v->str, NULL, 10);
        if (errno || x < min || x > max) return -1;
        *out = x;
        return 0;
    }
    *out = (long long)d;
    return 0;
}

int spade_json_u64(const spade_json *v, uint64_t *out) {
    if (!v || v->type != SPADE_JSON_NUMBER || v->str[0] == '-') return -1;
    if (strpbrk(v->str, ".eE")) {
        double d = v->number;
        if (!isfinite(d) || d != floor(d) || d < 0 || d >= 18446744073709551616.0) return -1;
        *out = (uint64_t)d;
        return 0;
    }
    errno = 0;
    unsigned long long x = strtoull(v->str, NULL, 10);
    if (errno) return -1;
    *out = (uint64_t)x;
    return 0;
}

/* ---- writer ------------------------------------------------------------------ */
void spade_jbuf_free(spade_jbuf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

void spade_jbuf_clear(spade_jbuf *b) {
    b->len = 0;
    b->oom = 0;
}

static int reserve(spade_jbuf *b, size_t more) {
    if (b->oom) return -1;
    if (b->cap - b->len > more) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= more) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void spade_jw_raw(spade_jbuf *b, const char *s, size_t len) {
    if (reserve(b, len) < 0) return;
    memcpy(b->p + b->len, s, len);
    b->len += len;
    b->p[b->len] = 0;
}

/* A value or key after a complete value needs a comma: the byte before is then
 * none of '{', '[', ':', nor the newline that ends a line of JSON lines (nor the
 * start of the buffer). */
static void sep(spade_jbuf *b) {
    if (!b->len) return;
    char c = b->p[b->len - 1];
    if (c != '{' && c != '[' && c != ':' && c != '\n') spade_jw_raw(b, ",", 1);
}

void spade_jw_obj(spade_jbuf *b) { sep(b), spade_jw_raw(b, "{", 1); }
void spade_jw_end_obj(spade_jbuf *b) { spade_jw_raw(b, "}", 1); }
void spade_jw_arr(spade_jbuf *b) { sep(b), spade_jw_raw(b, "[", 1); }
void spade_jw_end_arr(spade_jbuf *b) { spade_jw_raw(b, "]", 1); }

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 4, cp = c & 0x07;
    else
        return 0;
    if (n < need) return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((need == 3 && cp < 0x800) || (need == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need;
}

void spade_jw_str(spade_jbuf *b, const char *s, size_t len) {
    sep(b);
    /* worst case: every byte becomes \u00XX (6) or U+FFFD (3) */
    if (len > (SIZE_MAX - 8) / 6 || reserve(b, len * 6 + 2) < 0) {
        b->oom = 1;
        return;
    }
    char *d = b->p + b->len;
    *d++ = '"';
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            /* a run of bytes that need nothing: copied at once (most of an observation) */
            size_t j = i + 1;
            while (j < len && u[j] >= 0x20 && u[j] < 0x80 && u[j] != '"' && u[j] != '\\') j++;
            memcpy(d, u + i, j - i);
            d += j - i;
            i = j;
            continue;
        }
        if (c >= 0x80) {
            size_t k = utf8_len(u + i, len - i);
            if (k) {
                memcpy(d, u + i, k);
                d += k;
                i += k;
            } else {
                memcpy(d, "\xEF\xBF\xBD", 3);
                d += 3;
                i++;
            }
            continue;
        }
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\n': *d++ = 'n'; break;
        case '\t': *d++ = 't'; break;
        case '\r': *d++ = 'r'; break;
        default: d += sprintf(d, "u%04x", c); break;
        }
        i++;
    }
    *d++ = '"';
    b->len = (size_t)(d - b->p);
    b->p[b->len] = 0;
}

void spade_jw_cstr(spade_jbuf *b, const char *s) { spade_jw_str(b, s ? s : "", s ? strlen(s) : 0); }

void spade_jw_key(spade_jbuf *b, const char *key) {
    spade_jw_cstr(b, key);
    spade_jw_raw(b, ":", 1);
}

void spade_jw_num(spade_jbuf *b, double v) {
    sep(b);
    if (!isfinite(v)) {
        spade_jw_raw(b, "null", 4);
        return;
    }
    char t[40];
    int n = 0;
    /* whole numbers (most rewards and returns) as integers: exact, and far cheaper than %g */
    if (v > -1e15 && v < 1e15 && v == (double)(long long)v && !(v == 0 && signbit(v))) {
        long long x = (long long)v;
        char *e = t + sizeof t, *q = e;
        unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
        do *--q = (char)('0' + u % 10);
        while (u /= 10);
        if (x < 0) *--q = '-';
        spade_jw_raw(b, q, (size_t)(e - q));
        return;
    }
    /* the shortest of %.15g..%.17g that reads back as the same double */
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(t, sizeof t, "%.*g", prec, v);
        if (strtod(t, NULL) == v) break;
    }
    spade_jw_raw(b, t, (size_t)n);
}

void spade_jw_int(spade_jbuf *b, long long v) {
    sep(b);
    char t[32];
    int n = snprintf(t, sizeof t, "%lld", v);
    spade_jw_raw(b, t, (size_t)n);
}

void spade_jw_u64(spade_jbuf *b, uint64_t v) {
    sep(b);
    char t[32];
    int n = snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    spade_jw_raw(b, t, (size_t)n);
}

void spade_jw_bool(spade_jbuf *b, int v) {
    sep(b);
    spade_jw_raw(b, v ? "true" : "false", v ? 4 : 5);
}

void spade_jw_null(spade_jbuf *b) {
    sep(b);
    spade_jw_raw(b, "null", 4);
}

void spade_jw_value(spade_jbuf *b, const spade_json *v) {
    switch (v->type) {
    case SPADE_JSON_NULL: spade_jw_null(b); break;
    case SPADE_JSON_BOOL: spade_jw_bool(b, v->boolean); break;
    case SPADE_JSON_NUMBER: sep(b), spade_jw_raw(b, v->str, v->len); break;
    case SPADE_JSON_STRING: spade_jw_str(b, v->str, v->len); break;
    case SPADE_JSON_ARRAY:
        spade_jw_arr(b);
        for (size_t i = 0; i < v->len; i++) spade_jw_value(b, &v->items[i]);
        spade_jw_end_arr(b);
        break;
    case SPADE_JSON_OBJECT:
        spade_jw_obj(b);
        for (size_t i = 0; i < v->len; i++) {
            spade_jw_str(b, v->members[i].key, v->members[i].key_len);
            spade_jw_raw(b, ":", 1);
            spade_jw_value(b, &v->members[i].value);
        }
        spade_jw_end_obj(b);
        break;
    }
}
