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

/* printf into a growing text: formats fmt and hands the result, whole, to
 * put(ctx, text, len). The one formatter behind the JIT's translation-unit
 * text (core/jit/jit.c, text_addf) and the tools' messages (core/tools,
 * sb_printf), which had each written their own with a 512-byte cut. */
typedef void (*spade_put_fn)(void *ctx, const char *s, size_t n);
void spade_vputf(spade_put_fn put, void *ctx, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#endif /* SPADE_ERRBUF_H */
