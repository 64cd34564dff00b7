/* json.h — a small JSON reader (into a tree that lives in one arena) and a
 * JSON writer (into a growable byte buffer), for `spade serve`'s JSON-lines
 * protocol (docs/protocol.md).
 *
 * What it is: RFC 8259 JSON. The reader refuses anything that is not JSON
 * (trailing commas, single quotes, NaN, leading zeros, unescaped control
 * bytes, a lone surrogate escape, nesting deeper than SPADE_JSON_MAX_DEPTH)
 * with a message naming the byte offset; duplicate keys are kept and the
 * first wins. Strings are decoded to bytes (escapes to UTF-8, "\u0000"
 * included: every string carries its length). Numbers keep their text as well
 * as a double, so a 64-bit seed is read exactly. The writer escapes what JSON
 * requires and turns invalid UTF-8 (an environment may say any bytes) into
 * U+FFFD, so what it writes is always valid JSON in valid UTF-8.
 * What it is not: a streaming parser, a schema checker, or a pretty-printer;
 * not thread-safe per document (documents are independent).
 */
#ifndef SPADE_JSON_H
#define SPADE_JSON_H

#include <stddef.h>
#include <stdint.h>

#define SPADE_JSON_MAX_DEPTH 64

typedef enum spade_json_type {
    SPADE_JSON_NULL = 0,
    SPADE_JSON_BOOL,
    SPADE_JSON_NUMBER,
    SPADE_JSON_STRING,
    SPADE_JSON_ARRAY,
    SPADE_JSON_OBJECT,
} spade_json_type;

typedef struct spade_json spade_json;
typedef struct spade_json_member spade_json_member;

struct spade_json {
    spade_json_type type;
    int boolean; /* BOOL */
    double number; /* NUMBER */
    const char *str; /* STRING: decoded bytes, NUL-terminated; NUMBER: its text */
    size_t len; /* STRING / NUMBER: bytes of str; ARRAY / OBJECT: element count */
    spade_json *items; /* ARRAY */
    spade_json_member *members; /* OBJECT, in document order */
};

struct spade_json_member {
    const char *key; /* decoded, NUL-terminated */
    size_t key_len;
    spade_json value;
};

typedef struct spade_json_doc spade_json_doc;

/* Parses text[0..len) (one value, whitespace around it allowed). 0 with *out
 * set, or -1 with a message ("offset N: ...") and *out NULL. */
int spade_json_parse(const char *text, size_t len, spade_json_doc **out, char *err, size_t errlen);
void spade_json_doc_free(spade_json_doc *d);
const spade_json *spade_json_root(const spade_json_doc *d);

/* "null", "boolean", "number", "string", "array", "object". */
const char *spade_json_type_name(spade_json_type t);
/* The member's value, or NULL (v not an object, or no such key). */
const spade_json *spade_json_get(const spade_json *v, const char *key);
/* A whole number in [min, max] (written without fraction or exponent, or
 * with one whose value is whole): 0, or -1. */
int spade_json_int(const spade_json *v, long long min, long long max, long long *out);
/* A non-negative whole number up to 2^64 - 1, read from its text exactly. */
int spade_json_u64(const spade_json *v, uint64_t *out);

/* ---- the writer ---------------------------------------------------------- */
typedef struct spade_jbuf {
    char *p;
    size_t len, cap;
    int oom; /* an allocation failed: the buffer holds a prefix; check it once at the end */
} spade_jbuf;

void spade_jbuf_free(spade_jbuf *b);
void spade_jbuf_clear(spade_jbuf *b);
/* Raw bytes, as they are. */
void spade_jw_raw(spade_jbuf *b, const char *s, size_t len);
/* The writer puts commas itself: a value or key written right after another
 * value gets one. */
void spade_jw_obj(spade_jbuf *b); /* { */
void spade_jw_end_obj(spade_jbuf *b);
void spade_jw_arr(spade_jbuf *b); /* [ */
void spade_jw_end_arr(spade_jbuf *b);
void spade_jw_key(spade_jbuf *b, const char *key); /* "key": */
void spade_jw_str(spade_jbuf *b, const char *s, size_t len);
void spade_jw_cstr(spade_jbuf *b, const char *s);
void spade_jw_num(spade_jbuf *b, double v); /* shortest round-tripping; null when not finite */
void spade_jw_int(spade_jbuf *b, long long v);
void spade_jw_u64(spade_jbuf *b, uint64_t v);
void spade_jw_bool(spade_jbuf *b, int v);
void spade_jw_null(spade_jbuf *b);
/* Any parsed value, written back (numbers as their original text). */
void spade_jw_value(spade_jbuf *b, const spade_json *v);

#endif /* SPADE_JSON_H */
