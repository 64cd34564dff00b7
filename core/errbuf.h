/* errbuf.h — filling a caller's error buffer (char *err, size_t errlen).
 *
 * What it is: the one printf-into-(err, errlen) helper that every part of the
 * library uses to report why a call failed, so that a NULL or zero-sized
 * buffer (the caller does not want the message) is handled in one place.
 * What it is not: public API (not installed), nor a logger: nothing is printed.
 */
#ifndef SPADE_ERRBUF_H
#define SPADE_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>

/* Formats into err (truncated to errlen, always NUL-terminated); does nothing
 * when err is NULL or errlen is 0. */
void spade_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void spade_verrf(char *err, size_t errlen, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#endif /* SPADE_ERRBUF_H */
