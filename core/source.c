/* source.c — the normalised form of environment source (source.h).
 *
 * What it is not: a tokenizer for the policy (core/policy/tokenizer.h).
 */
#include "source.h"

#include <stdlib.h>

static int blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

size_t spade_source_normalise(const char *src, size_t len, char *out, size_t cap) {
    size_t o = 0;
#define PUT(ch)                                                                                                        \
    do {                                                                                                               \
        if (o + 1 < cap) out[o] = (ch);                                                                                \
        o++;                                                                                                           \
    } while (0)
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '/' && i + 1 < len && src[i + 1] == '*') { /* block comment */
            i += 2;
            while (i + 1 < len && !(src[i] == '*' && src[i + 1] == '/')) i++;
            i++;
        } else if (c == '/' && i + 1 < len && src[i + 1] == '/') { /* line comment */
            while (i < len && src[i] != '\n') i++;
        } else if (c == '"' || c == '\'') { /* a literal, kept as it is */
            PUT(c);
            for (i++; i < len && src[i] != c; i++) {
                if (src[i] == '\\' && i + 1 < len) PUT(src[i++]);
                PUT(src[i]);
            }
            if (i < len) PUT(c);
        } else if (!blank(c)) {
            PUT(c);
        }
    }
#undef PUT
    if (cap) out[o < cap ? o : cap - 1] = 0;
    return o < cap ? o : cap - 1;
}

uint64_t spade_source_fingerprint(const char *src, size_t len) {
    char *buf = malloc(len + 1);
    uint64_t h = 1469598103934665603ULL;
    if (!buf) return 0; /* out of memory: 0 is never an FNV-1a result of a short text in practice */
    size_t n = spade_source_normalise(src, len, buf, len + 1);
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
    free(buf);
    return h;
}
