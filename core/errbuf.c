/* errbuf.c — spade_errf: the library's error-buffer formatter (errbuf.h).
 * Not a logger: it only writes the caller's buffer. */
#include "errbuf.h"

#include <stdio.h>

void spade_verrf(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (!err || !errlen)
        return;
    vsnprintf(err, errlen, fmt, ap);
}

void spade_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    spade_verrf(err, errlen, fmt, ap);
    va_end(ap);
}
