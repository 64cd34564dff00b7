/* errbuf.c — spade_errf: the library's error-buffer formatter (errbuf.h).
 * Not a logger: it only writes the caller's buffer. */
#include "errbuf.h"

#include <stdio.h>
#include <stdlib.h>

void spade_vputf(spade_put_fn put, void *ctx, const char *fmt, va_list ap) {
    char small[512];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= 0 && (size_t)n < sizeof small) {
        put(ctx, small, (size_t)n);
    } else if (n >= 0) {
        /* Longer than the stack buffer: format again into one that fits. */
        char *big = malloc((size_t)n + 1);
        if (big && vsnprintf(big, (size_t)n + 1, fmt, again) == n) put(ctx, big, (size_t)n);
        free(big);
    }
    va_end(again);
}

void spade_verrf(char *err, size_t errlen, const char *fmt, va_list ap) {
    if (!err || !errlen) return;
    vsnprintf(err, errlen, fmt, ap);
}

void spade_errf(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    spade_verrf(err, errlen, fmt, ap);
    va_end(ap);
}
