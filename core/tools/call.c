/* call.c — tool calls: finding the call in an agent's free text and parsing
 * it (a JSON object, name(args), or either inside <tool_call>).
 *
 * What it is: a bounded, allocation-light parser over untrusted text (the agent
 * writes it). Every read is checked against the end of the
 * text, recursion is capped at TOOLS_MAX_DEPTH, and decoded strings are capped
 * at SPADE_TOOL_ARG_MAX, so no input can crash it or make it read out of
 * bounds. What it is not: the type checker (bind.c) or the dispatcher
 * (tools.c), nor a general JSON library: it reads only
 * what a tool call needs, and leniently (single quotes, True/False, trailing
 * commas), because agents are language models, not serializers.
 *
 * How a call is found (docs/tools.md is the user's version):
 *   - `<tool_call> ... </tool_call>`: whatever is inside is a call attempt;
 *   - `{ ... }` with a top-level "name" key: a JSON call;
 *   - `word(` where word is a declared tool and not the tail of a longer word.
 * The text is scanned left to right, each candidate is parsed to its end and
 * scanning resumes after it, so a call quoted inside another call's string is
 * not a call; the last candidate wins (agents think aloud, then act).
 * What the parts share is in internal.h.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/internal.h"

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int hex_val(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void spade_tools_arena_init(arena *a) {
    a->cur = a->inline_buf;
    a->left = sizeof a->inline_buf;
    a->chunks = NULL;
}

void spade_tools_arena_reset(arena *a) {
    while (a->chunks) {
        chunk *c = a->chunks;
        a->chunks = c->next;
        free(c);
    }
    spade_tools_arena_init(a);
}

static char *arena_alloc(arena *a, size_t n) {
    if (n > a->left) {
        size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        if (size > SIZE_MAX - sizeof(chunk)) return NULL;
        chunk *c = malloc(sizeof(chunk) + size);
        if (!c) return NULL;
        c->next = a->chunks;
        a->chunks = c;
        a->cur = c->data;
        a->left = size;
    }
    char *p = a->cur;
    a->cur += n;
    a->left -= n;
    return p;
}

/* ------------------------------------------------------------------------ */
/* values and the lexer                                                       */

typedef struct parser {
    const char *p, *end;
    arena *ar;
    char *err; /* TOOLS_ERR_MAX bytes; first failure wins */
} parser;

static int fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *ps, const char *fmt, ...) {
    if (!ps->err[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err, TOOLS_ERR_MAX, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && is_space((unsigned char)*ps->p)) ps->p++;
}

/* "found 'x'" for messages about the next byte. */
static const char *found_here(const parser *ps, char *buf, size_t cap) {
    if (ps->p >= ps->end) return "the end of the text";
    unsigned char c = (unsigned char)*ps->p;
    if (c >= 0x20 && c < 0x7f && c != '\'')
        snprintf(buf, cap, "'%c'", c);
    else
        snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static int read_hex4(const char *p, const char *end, unsigned *out) {
    if (end - p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_val((unsigned char)p[i]);
        if (h < 0) return -1;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 0;
}

static size_t utf8_put(char *d, unsigned cp) {
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A "double" or 'single' quoted string at ps->p. Decodes at most `limit`
 * bytes; past that the value is marked too_large and the rest skipped, so the
 * caller can name the argument in its message. */
static int lex_string(parser *ps, value *v, size_t limit) {
    const char q = *ps->p;
    const char *s = ps->p + 1, *e = s;
    while (e < ps->end && *e != q) {
        if (*e == '\\') e++;
        if (e < ps->end) e++;
    }
    if (e >= ps->end) {
        ps->p = ps->end;
        return fail(ps, "unterminated string");
    }
    size_t span = (size_t)(e - s);
    size_t room = span < limit ? span : limit;
    char *d = arena_alloc(ps->ar, room + 1);
    if (!d) return fail(ps, "out of memory");
    memset(v, 0, sizeof *v);
    v->kind = V_STRING;
    size_t n = 0;
    const char *r = s;
    while (r < e) {
        char tmp[8];
        size_t k = 1;
        unsigned char c = (unsigned char)*r;
        if (c != '\\') {
            if (c == 0) {
                ps->p = r;
                return fail(ps, "NUL byte in a string");
            }
            if (n + 1 > limit) {
                v->too_large = 1;
                break;
            }
            d[n++] = (char)c;
            r++;
            continue;
        } else {
            /* e is an unescaped quote, so a backslash before it has a successor < e */
            unsigned char x = (unsigned char)r[1];
            r += 2;
            switch (x) {
            case '"': tmp[0] = '"'; break;
            case '\'': tmp[0] = '\''; break;
            case '\\': tmp[0] = '\\'; break;
            case '/': tmp[0] = '/'; break;
            case 'n': tmp[0] = '\n'; break;
            case 't': tmp[0] = '\t'; break;
            case 'r': tmp[0] = '\r'; break;
            case 'b': tmp[0] = '\b'; break;
            case 'f': tmp[0] = '\f'; break;
            case 'x': {
                int h1 = r < e ? hex_val((unsigned char)r[0]) : -1;
                if (h1 < 0) {
                    ps->p = r;
                    return fail(ps, "invalid escape \\x without hex digits");
                }
                unsigned val = (unsigned)h1;
                r++;
                int h2 = r < e ? hex_val((unsigned char)r[0]) : -1;
                if (h2 >= 0) {
                    val = val * 16 + (unsigned)h2;
                    r++;
                }
                if (val == 0) {
                    ps->p = r;
                    return fail(ps, "NUL byte in a string (\\x00)");
                }
                tmp[0] = (char)val;
                break;
            }
            case 'u': {
                unsigned cp;
                if (read_hex4(r, e, &cp) < 0) {
                    ps->p = r;
                    return fail(ps, "invalid escape \\u: needs 4 hex digits");
                }
                r += 4;
                if (cp >= 0xdc00 && cp <= 0xdfff) {
                    ps->p = r;
                    return fail(ps, "unpaired surrogate \\u%04X", cp);
                }
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned lo;
                    if (e - r < 6 || r[0] != '\\' || r[1] != 'u' || read_hex4(r + 2, e, &lo) < 0 || lo < 0xdc00 ||
                        lo > 0xdfff) {
                        ps->p = r;
                        return fail(ps, "unpaired surrogate \\u%04X", cp);
                    }
                    r += 6;
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (cp == 0) {
                    ps->p = r;
                    return fail(ps, "NUL byte in a string (\\u0000)");
                }
                k = utf8_put(tmp, cp);
                break;
            }
            case '0': ps->p = r; return fail(ps, "NUL byte in a string (\\0)");
            default:
                ps->p = r;
                if (x >= 0x20 && x < 0x7f) return fail(ps, "invalid escape '\\%c' in a string", x);
                return fail(ps, "invalid escape (backslash before byte 0x%02x) in a string", x);
            }
        }
        if (n + k > limit) {
            v->too_large = 1;
            break;
        }
        memcpy(d + n, tmp, k);
        n += k;
    }
    d[n] = '\0';
    v->s = d;
    v->slen = n;
    ps->p = e + 1;
    return 0;
}

static int lex_number(parser *ps, value *v) {
    const char *s = ps->p, *r = s, *end = ps->end;
    int neg = 0, is_double = 0, ovf = 0;
    uint64_t u = 0;
    if (r < end && (*r == '-' || *r == '+')) {
        neg = *r == '-';
        r++;
    }
    if (end - r >= 2 && r[0] == '0' && (r[1] == 'x' || r[1] == 'X')) {
        r += 2;
        const char *h = r;
        while (r < end && hex_val((unsigned char)*r) >= 0) {
            if (u > (UINT64_MAX >> 4))
                ovf = 1;
            else
                u = u * 16 + (unsigned)hex_val((unsigned char)*r);
            r++;
        }
        if (r == h) {
            ps->p = s;
            return fail(ps, "invalid number '%.*s'", (int)(r - s), s);
        }
    } else {
        size_t ds = 0, fs = 0;
        while (r < end && is_digit((unsigned char)*r)) {
            unsigned d = (unsigned)(*r - '0');
            if (u > (UINT64_MAX - d) / 10)
                ovf = 1;
            else
                u = u * 10 + d;
            r++;
            ds++;
        }
        if (r < end && *r == '.') {
            is_double = 1;
            r++;
            while (r < end && is_digit((unsigned char)*r)) {
                r++;
                fs++;
            }
        }
        if (ds + fs == 0) {
            ps->p = s;
            return fail(ps, "invalid number '%.*s'", (int)(r - s < 1 ? 1 : r - s), s);
        }
        if (r < end && (*r == 'e' || *r == 'E')) {
            const char *x = r + 1;
            if (x < end && (*x == '+' || *x == '-')) x++;
            if (x < end && is_digit((unsigned char)*x)) {
                while (x < end && is_digit((unsigned char)*x)) x++;
                r = x;
                is_double = 1;
            }
        }
    }
    if (r < end && (is_ident_char((unsigned char)*r) || *r == '.')) {
        const char *t = r;
        while (t < end && t - s < 40 && (is_ident_char((unsigned char)*t) || *t == '.')) t++;
        ps->p = r;
        return fail(ps, "invalid number '%.*s'", (int)(t - s), s);
    }
    memset(v, 0, sizeof *v);
    v->src = s;
    v->srclen = (size_t)(r - s);
    if (is_double) {
        v->kind = V_DOUBLE;
    } else {
        v->kind = V_INT;
        if (ovf || u > (uint64_t)LONG_MAX + (neg ? 1u : 0u))
            v->out_of_long = 1;
        else if (neg)
            v->i = u == (uint64_t)LONG_MAX + 1u ? LONG_MIN : -(long)u;
        else
            v->i = (long)u;
    }
    ps->p = r;
    return 0;
}

static int skip_container(parser *ps, int depth);

/* One value at ps->p (after blanks). Arrays and objects are only checked and
 * skipped: no tool takes them, the caller only names their kind. */
static int parse_value(parser *ps, value *v, int depth, size_t strlimit) {
    char fb[24];
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (a value was expected)");
    unsigned char c = (unsigned char)*ps->p;
    if (c == '"' || c == '\'') return lex_string(ps, v, strlimit);
    if (c == '{' || c == '[') {
        memset(v, 0, sizeof *v);
        v->kind = c == '{' ? V_OBJECT : V_ARRAY;
        return skip_container(ps, depth + 1);
    }
    if (is_digit(c) || c == '-' || c == '+' || c == '.') return lex_number(ps, v);
    if (is_ident_start(c)) {
        const char *s = ps->p;
        while (ps->p < ps->end && is_ident_char((unsigned char)*ps->p)) ps->p++;
        size_t n = (size_t)(ps->p - s);
        memset(v, 0, sizeof *v);
        if (span_is(s, n, "true") || span_is(s, n, "True")) {
            v->kind = V_BOOL;
            v->b = 1;
        } else if (span_is(s, n, "false") || span_is(s, n, "False")) {
            v->kind = V_BOOL;
        } else if (span_is(s, n, "null") || span_is(s, n, "None") || span_is(s, n, "NULL")) {
            v->kind = V_NULL;
        } else {
            ps->p = s;
            return fail(ps, "expected a value (number, \"string\", true or false), found '%.*s'",
                        (int)(n > 40 ? 40 : n), s);
        }
        return 0;
    }
    return fail(ps, "expected a value, found %s", found_here(ps, fb, sizeof fb));
}

static int skip_container(parser *ps, int depth) {
    char fb[24];
    if (depth > TOOLS_MAX_DEPTH) return fail(ps, "nesting deeper than %d levels", TOOLS_MAX_DEPTH);
    const char close = *ps->p == '{' ? '}' : ']';
    ps->p++;
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing '%c')", close);
        if (*ps->p == close) {
            ps->p++;
            return 0;
        }
        value tmp;
        if (close == '}') {
            if (*ps->p != '"' && *ps->p != '\'')
                return fail(ps, "expected a \"key\" in an object, found %s", found_here(ps, fb, sizeof fb));
            if (lex_string(ps, &tmp, SPADE_TOOL_ARG_MAX) < 0) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return fail(ps, "expected ':' after a key, found %s", found_here(ps, fb, sizeof fb));
            ps->p++;
        }
        if (parse_value(ps, &tmp, depth, SPADE_TOOL_ARG_MAX) < 0) return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) continue;
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing '%c')", close);
        return fail(ps, "expected ',' or '%c', found %s", close, found_here(ps, fb, sizeof fb));
    }
}

static void call_init(call *c) {
    memset(&c->name, 0, sizeof c->name);
    c->npos = c->nkw = c->nextra = 0;
    c->err[0] = '\0';
}

static int add_positional(parser *ps, call *c, int depth) {
    value v;
    if (parse_value(ps, &v, depth, SPADE_TOOL_ARG_MAX) < 0) return -1;
    if (c->npos < TOOLS_MAX_STORED)
        c->pos[c->npos++] = v;
    else
        c->nextra++;
    return 0;
}

static int add_keyword(call *c, const value *key, const value *v) {
    if (c->nkw < TOOLS_MAX_STORED) {
        c->kw[c->nkw].key = *key;
        c->kw[c->nkw].v = *v;
        c->nkw++;
    } else {
        c->nextra++;
    }
    return 0;
}

/* {"amount": 5, "to": "bob"} at ps->p */
static int parse_args_object(parser *ps, call *c, int depth) {
    char fb[24];
    if (depth > TOOLS_MAX_DEPTH) return fail(ps, "nesting deeper than %d levels", TOOLS_MAX_DEPTH);
    ps->p++;
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing '}' after the arguments)");
        if (*ps->p == '}') {
            ps->p++;
            return 0;
        }
        if (*ps->p != '"' && *ps->p != '\'')
            return fail(ps, "expected an argument name in quotes, found %s", found_here(ps, fb, sizeof fb));
        value key, v;
        if (lex_string(ps, &key, TOOLS_NAME_MAX) < 0) return -1;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return fail(ps, "expected ':' after an argument name, found %s", found_here(ps, fb, sizeof fb));
        ps->p++;
        if (parse_value(ps, &v, depth, SPADE_TOOL_ARG_MAX) < 0) return -1;
        add_keyword(c, &key, &v);
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') continue;
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing '}' after the arguments)");
        return fail(ps, "expected ',' or '}' in the arguments, found %s", found_here(ps, fb, sizeof fb));
    }
}

/* [5, "bob"] at ps->p: positional arguments */
static int parse_args_array(parser *ps, call *c, int depth) {
    char fb[24];
    if (depth > TOOLS_MAX_DEPTH) return fail(ps, "nesting deeper than %d levels", TOOLS_MAX_DEPTH);
    ps->p++;
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing ']' after the arguments)");
        if (*ps->p == ']') {
            ps->p++;
            return 0;
        }
        if (add_positional(ps, c, depth) < 0) return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ']') continue;
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing ']' after the arguments)");
        return fail(ps, "expected ',' or ']' in the arguments, found %s", found_here(ps, fb, sizeof fb));
    }
}

static int is_args_key(const value *k) {
    return span_is(k->s, k->slen, "arguments") || span_is(k->s, k->slen, "parameters") ||
           span_is(k->s, k->slen, "input") || span_is(k->s, k->slen, "args");
}

/* The JSON form at ps->p ('{'). Returns 0 with *has_name telling whether it is
 * a call; -1 when malformed (*has_name says whether a top-level "name" key was
 * seen first, i.e. whether the malformed object was a call attempt). */
static int parse_json_call(parser *ps, call *c, int *has_name) {
    char fb[24];
    int has_args = 0;
    *has_name = 0;
    ps->p++;
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing '}')");
        if (*ps->p == '}') {
            ps->p++;
            return 0;
        }
        if (*ps->p != '"' && *ps->p != '\'')
            return fail(ps, "expected a \"key\" in an object, found %s", found_here(ps, fb, sizeof fb));
        value key;
        if (lex_string(ps, &key, SPADE_TOOL_ARG_MAX) < 0) return -1;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':')
            return fail(ps, "expected ':' after a key, found %s", found_here(ps, fb, sizeof fb));
        ps->p++;
        if (span_is(key.s, key.slen, "name")) {
            if (*has_name) return fail(ps, "\"name\" given twice");
            *has_name = 1;
            if (parse_value(ps, &c->name, 1, SPADE_TOOL_ARG_MAX) < 0) return -1;
            if (c->name.kind != V_STRING) return fail(ps, "\"name\" must be a string");
        } else if (is_args_key(&key)) {
            if (has_args) return fail(ps, "the arguments are given twice");
            has_args = 1;
            skip_ws(ps);
            if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (arguments expected)");
            if (*ps->p == '{') {
                if (parse_args_object(ps, c, 2) < 0) return -1;
            } else if (*ps->p == '[') {
                if (parse_args_array(ps, c, 2) < 0) return -1;
            } else if (*ps->p == '"' || *ps->p == '\'') {
                /* "arguments": "{\"amount\": 5}", as some APIs emit */
                value enc;
                if (lex_string(ps, &enc, SIZE_MAX) < 0) return -1;
                parser sub = {enc.s, enc.s + enc.slen, ps->ar, ps->err};
                skip_ws(&sub);
                if (sub.p < sub.end) {
                    if (*sub.p != '{') return fail(ps, "the arguments string must hold a JSON object");
                    if (parse_args_object(&sub, c, 2) < 0) {
                        char inner[TOOLS_ERR_MAX];
                        snprintf(inner, sizeof inner, "in the arguments string: %s", ps->err);
                        memcpy(ps->err, inner, sizeof inner);
                        return -1;
                    }
                    skip_ws(&sub);
                    if (sub.p < sub.end) return fail(ps, "in the arguments string: text after the object");
                }
            } else {
                value v;
                if (parse_value(ps, &v, 1, SPADE_TOOL_ARG_MAX) < 0) return -1;
                if (v.kind != V_NULL) return fail(ps, "the arguments must be an object");
            }
        } else {
            value v;
            if (parse_value(ps, &v, 1, SPADE_TOOL_ARG_MAX) < 0) return -1;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == '}') continue;
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing '}')");
        return fail(ps, "expected ',' or '}', found %s", found_here(ps, fb, sizeof fb));
    }
}

/* name(arg, ..., key=value, ...) at ps->p (an identifier). */
static int parse_c_call(parser *ps, call *c) {
    char fb[24];
    const char *s = ps->p;
    while (ps->p < ps->end && is_ident_char((unsigned char)*ps->p)) ps->p++;
    memset(&c->name, 0, sizeof c->name);
    c->name.kind = V_STRING;
    c->name.s = s;
    c->name.slen = (size_t)(ps->p - s);
    if (c->name.slen >= TOOLS_NAME_MAX) c->name.too_large = 1;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '(')
        return fail(ps, "expected '(' after the tool name, found %s", found_here(ps, fb, sizeof fb));
    ps->p++;
    int nargs = 0;
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing ')')");
        if (*ps->p == ')') {
            ps->p++;
            return 0;
        }
        nargs++;
        /* key=value or key: value */
        const char *t = ps->p;
        int keyword = 0;
        if (is_ident_start((unsigned char)*t)) {
            while (t < ps->end && is_ident_char((unsigned char)*t)) t++;
            const char *k_end = t;
            while (t < ps->end && is_space((unsigned char)*t)) t++;
            if (t < ps->end && ((*t == '=' && (t + 1 >= ps->end || t[1] != '=')) || *t == ':')) {
                keyword = 1;
                value key, v;
                memset(&key, 0, sizeof key);
                key.kind = V_STRING;
                key.s = ps->p;
                key.slen = (size_t)(k_end - ps->p);
                if (key.slen >= TOOLS_NAME_MAX) key.too_large = 1;
                ps->p = t + 1;
                if (parse_value(ps, &v, 1, SPADE_TOOL_ARG_MAX) < 0) return -1;
                add_keyword(c, &key, &v);
            }
        }
        if (!keyword) {
            if (c->nkw) return fail(ps, "argument %d: a positional argument after a named one", nargs);
            if (add_positional(ps, c, 1) < 0) return -1;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == ')') continue;
        if (ps->p >= ps->end) return fail(ps, "unexpected end of the text (missing ')')");
        return fail(ps, "expected ',' or ')' after argument %d, found %s", nargs, found_here(ps, fb, sizeof fb));
    }
}

/* ------------------------------------------------------------------------ */
/* finding the call                                                           */

static int tool_lookup(const toolset *T, const char *s, size_t n) {
    for (int i = 0; i < T->n; i++) {
        const char *nm = T->defs[i].name;
        if (nm && nm[0] == s[0] && strncmp(nm, s, n) == 0 && nm[n] == '\0') return i;
    }
    return -1;
}

static const char TAG_OPEN[] = "<tool_call>";
static const char TAG_CLOSE[] = "</tool_call>";

static const char *find_bytes(const char *h, const char *end, const char *needle, size_t nn) {
    if ((size_t)(end - h) < nn) return NULL;
    const char *last = end - nn;
    for (const char *p = h; p <= last; p++) {
        p = memchr(p, needle[0], (size_t)(last - p) + 1);
        if (!p) return NULL;
        if (memcmp(p, needle, nn) == 0) return p;
    }
    return NULL;
}

/* Inside <tool_call>: a JSON object or name(args), whatever the name. */
static int parse_tagged(parser *ps, call *c) {
    skip_ws(ps);
    if (ps->end - ps->p >= 3 && memcmp(ps->p, "```", 3) == 0) { /* a fenced block: skip the fence line */
        while (ps->p < ps->end && *ps->p != '\n') ps->p++;
        skip_ws(ps);
    }
    if (ps->p < ps->end && *ps->p == '{') {
        int has_name;
        if (parse_json_call(ps, c, &has_name) < 0) return CAND_MALFORMED;
        if (!has_name) {
            fail(ps, "the JSON object in <tool_call> has no \"name\"");
            return CAND_MALFORMED;
        }
        return CAND_CALL;
    }
    if (ps->p < ps->end && is_ident_start((unsigned char)*ps->p)) {
        if (parse_c_call(ps, c) < 0) return CAND_MALFORMED;
        return CAND_CALL;
    }
    fail(ps, "expected name(arguments) or a JSON object inside <tool_call>");
    return CAND_MALFORMED;
}

/* Finds the last call attempt in text[0..len) and leaves it in *best
 * (CAND_CALL or CAND_MALFORMED with best->err); CAND_NONE when there is none. */
int spade_tools_find_last_call(const toolset *T, const char *text, size_t len, call *calls, arena *ars, int *best_idx) {
    int best = -1, best_kind = CAND_NONE;
    const char *end = text + len, *p = text;
    /* Inside a JSON object that is not a call, only nested objects are looked
     * at (OpenAI's {"function": {"name": ...}}), not words in its strings. */
    const char *json_only_end = text;
    while (p < end) {
        unsigned char ch = (unsigned char)*p;
        if (CLASS[ch] == 0 || (p < json_only_end && ch != '{')) {
            p++;
            continue;
        }
        if ((CLASS[ch] & CL_IDENT) &&
            !((CLASS[ch] & CL_START) && (p == text || !is_ident_char((unsigned char)p[-1])))) {
            p++; /* inside a word or a number */
            continue;
        }
        int cur = best == 0 ? 1 : 0;
        call *c = &calls[cur];
        arena *ar = &ars[cur];
        int kind = CAND_NONE;
        const char *resume = p + 1;
        if (ch == '<' && (size_t)(end - p) >= sizeof TAG_OPEN - 1 && memcmp(p, TAG_OPEN, sizeof TAG_OPEN - 1) == 0) {
            const char *body = p + sizeof TAG_OPEN - 1;
            const char *close = find_bytes(body, end, TAG_CLOSE, sizeof TAG_CLOSE - 1);
            const char *body_end = close ? close : end;
            spade_tools_arena_reset(ar);
            call_init(c);
            parser ps = {body, body_end, ar, c->err};
            kind = parse_tagged(&ps, c);
            resume = close ? close + sizeof TAG_CLOSE - 1 : end;
        } else if (ch == '{') {
            spade_tools_arena_reset(ar);
            call_init(c);
            parser ps = {p, end, ar, c->err};
            int has_name;
            if (parse_json_call(&ps, c, &has_name) == 0) {
                if (has_name) {
                    kind = CAND_CALL;
                    resume = ps.p;
                } else if (ps.p > json_only_end) {
                    json_only_end = ps.p;
                }
            } else if (has_name) {
                /* resume where it broke, so a quoted call inside it is not taken */
                kind = CAND_MALFORMED;
                resume = ps.p > p ? ps.p : p + 1;
            }
        } else if (is_ident_start(ch)) {
            const char *w = p;
            while (w < end && is_ident_char((unsigned char)*w)) w++;
            resume = w;
            if (w < end && *w == '(' && tool_lookup(T, p, (size_t)(w - p)) >= 0) {
                spade_tools_arena_reset(ar);
                call_init(c);
                parser ps = {p, end, ar, c->err};
                kind = parse_c_call(&ps, c) == 0 ? CAND_CALL : CAND_MALFORMED;
                resume = ps.p > w ? ps.p : w + 1;
            }
        }
        if (kind != CAND_NONE) {
            best = cur;
            best_kind = kind;
        }
        p = resume;
    }
    *best_idx = best;
    return best_kind;
}
