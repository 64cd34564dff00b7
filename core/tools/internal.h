/* internal.h — what the parts of core/tools share and nobody else sees: the
 * bounded output buffer, the byte classes of the scan, the limits, and the two
 * signature helpers the dispatcher uses.
 * What it is not: API (core/tools/tools.h is); not installed.
 */
#ifndef SPADE_TOOLS_INTERNAL_H
#define SPADE_TOOLS_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "tools/tools.h"

#define TOOLS_MAX_DEPTH 64                         /* nesting of JSON values */
#define TOOLS_MAX_STORED (SPADE_TOOL_MAX_ARGS + 1) /* enough to say "got 9" */
#define TOOLS_NAME_MAX 64                          /* bytes of a tool name, NUL included */
#define TOOLS_ERR_MAX 256

/* Byte classes for the scan over agent text, which is mostly prose: one load
 * decides whether a byte can start anything (table in tools.c). */
enum { CL_IDENT = 1, CL_START = 2, CL_OPEN = 4 /* '<' or '{' */ };
extern const unsigned char spade_tools_class[256];
#define CLASS spade_tools_class

static inline int is_ident_start(unsigned char c)
{
    return (CLASS[c] & CL_START) != 0;
}
static inline int is_ident_char(unsigned char c)
{
    return (CLASS[c] & CL_IDENT) != 0;
}
static inline int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
static inline int span_is(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    return n == m && memcmp(s, lit, m) == 0;
}

/* Bounded output: len counts what would have been written (like snprintf),
 * the buffer always ends in NUL when cap > 0. */
typedef struct sbuf {
    char *buf;
    size_t cap, len;
} sbuf;

static inline void sb_init(sbuf *b, char *buf, size_t cap)
{
    b->buf = buf;
    b->cap = buf ? cap : 0;
    b->len = 0;
    if (b->cap)
        b->buf[0] = '\0';
}
static inline void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->cap && b->len + 1 < b->cap) {
        size_t room = b->cap - 1 - b->len;
        memcpy(b->buf + b->len, s, n < room ? n : room);
        b->buf[b->len + (n < room ? n : room)] = '\0';
    }
    b->len += n;
}
static inline void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}
void spade_tools_sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define sb_printf spade_tools_sb_printf

/* signature.c: a parsed signature holds only what the dispatcher can call;
 * "name: type, ..." of its arguments. */
int spade_tools_sig_is_sane(const spade_tool_sig *sig);
void spade_tools_sb_arglist(sbuf *b, const spade_tool_sig *sig);

#endif /* SPADE_TOOLS_INTERNAL_H */
