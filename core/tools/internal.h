/* internal.h — what the parts of core/tools share and nobody else sees: the
 * bounded output buffer, the byte classes of the scan, the limits, and the two
 * signature helpers the dispatcher uses.
 * What it is not: API (core/tools/tools.h is); not installed.
 */
#ifndef SPADE_TOOLS_INTERNAL_H
#define SPADE_TOOLS_INTERNAL_H

#include <ffi.h>
#include <stddef.h>
#include <string.h>

#include "tools/tools.h"

/* The parts' shared names stay inside libspade.so (libspade.map exports spade_*). */
#pragma GCC visibility push(hidden)

#define TOOLS_MAX_DEPTH 64 /* nesting of JSON values */
#define TOOLS_MAX_STORED (SPADE_TOOL_MAX_ARGS + 1) /* enough to say "got 9" */
#define TOOLS_NAME_MAX 64 /* bytes of a tool name, NUL included */
#define TOOLS_ERR_MAX 256

/* Byte classes for the scan over agent text, which is mostly prose: one load
 * decides whether a byte can start anything (table in tools.c). */
enum { CL_IDENT = 1, CL_START = 2, CL_OPEN = 4 /* '<' or '{' */ };
extern const unsigned char spade_tools_class[256];
#define CLASS spade_tools_class

static inline int is_ident_start(unsigned char c) { return (CLASS[c] & CL_START) != 0; }
static inline int is_ident_char(unsigned char c) { return (CLASS[c] & CL_IDENT) != 0; }
static inline int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
static inline int span_is(const char *s, size_t n, const char *lit) {
    size_t m = strlen(lit);
    return n == m && memcmp(s, lit, m) == 0;
}

/* Bounded output: len counts what would have been written (like snprintf),
 * the buffer always ends in NUL when cap > 0. */
typedef struct sbuf {
    char *buf;
    size_t cap, len;
} sbuf;

static inline void sb_init(sbuf *b, char *buf, size_t cap) {
    b->buf = buf;
    b->cap = buf ? cap : 0;
    b->len = 0;
    if (b->cap) b->buf[0] = '\0';
}
static inline void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->cap && b->len + 1 < b->cap) {
        size_t room = b->cap - 1 - b->len;
        memcpy(b->buf + b->len, s, n < room ? n : room);
        b->buf[b->len + (n < room ? n : room)] = '\0';
    }
    b->len += n;
}
static inline void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
void spade_tools_sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define sb_printf spade_tools_sb_printf

/* signature.c: a parsed signature holds only what the dispatcher can call;
 * "name: type, ..." of its arguments. */
int spade_tools_sig_is_sane(const spade_tool_sig *sig);
void spade_tools_sb_arglist(sbuf *b, const spade_tool_sig *sig);

/* tools.c: agent text quoted back in a message, at most max bytes, escaped. */
void spade_tools_sb_quoted(sbuf *b, const char *s, size_t n, size_t max);

/* ------------------------------------------------------------------------ */
/* call.c: the parsed call                                                    */

typedef struct chunk {
    struct chunk *next;
    char data[];
} chunk;

#define ARENA_CHUNK (32 * 1024)

/* Bump allocation: first from inline_buf, then from heap chunks of at least
 * ARENA_CHUNK bytes, so an object with many keys costs few mallocs. */
typedef struct arena {
    char *cur; /* next free byte */
    size_t left; /* bytes free at cur */
    chunk *chunks;
    char inline_buf[2048];
} arena;
void spade_tools_arena_init(arena *a);
void spade_tools_arena_reset(arena *a); /* frees the chunks, back to the inline buffer */

typedef enum vkind { V_NONE = 0, V_INT, V_DOUBLE, V_BOOL, V_STRING, V_NULL, V_ARRAY, V_OBJECT } vkind;

typedef struct value {
    vkind kind;
    int out_of_long; /* V_INT beyond [LONG_MIN, LONG_MAX] */
    int too_large; /* V_STRING longer than its limit (s holds the first part) */
    long i;
    int b;
    const char *src; /* number text, for strtod and messages */
    size_t srclen;
    const char *s; /* decoded, NUL-terminated (V_STRING) */
    size_t slen;
} value;

typedef struct kwarg {
    value key;
    value v;
} kwarg;

typedef struct call {
    value name;
    int npos, nkw, nextra; /* stored positional, stored keyword, and any beyond storage */
    value pos[TOOLS_MAX_STORED];
    kwarg kw[TOOLS_MAX_STORED];
    char err[TOOLS_ERR_MAX]; /* why the attempt is malformed */
} call;

typedef struct toolset {
    int n;
    const spade_tool_def *defs;
    const spade_tool_sig *sigs;
    ffi_cif *cifs; /* prepared per tool, or NULL: prepare at call time */
} toolset;

enum { CAND_NONE = 0, CAND_CALL = 1, CAND_MALFORMED = 2 };

/* Finds the last call attempt in text[0..len): CAND_CALL or CAND_MALFORMED (the
 * message in calls[*best_idx].err), CAND_NONE when there is none. calls[2] and
 * ars[2] alternate, so the best one so far survives the next attempt. */
int spade_tools_find_last_call(const toolset *T, const char *text, size_t len, call *calls, arena *ars, int *best_idx);

/* ------------------------------------------------------------------------ */
/* bind.c: arguments to C values                                              */

typedef union slot {
    int i;
    long l;
    double d;
    unsigned char b;
    const char *s;
} slot;

/* Binds the call's arguments to the signature: 0, or -1 with the message in e. */
int spade_tools_bind_args(const char *tool, const spade_tool_sig *sig, const call *c, slot *slots, sbuf *e);

#pragma GCC visibility pop

#endif /* SPADE_TOOLS_INTERNAL_H */
