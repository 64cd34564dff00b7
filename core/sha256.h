/* sha256.h — SHA-256 (FIPS 180-4), our own small implementation.
 *
 * What it is: the digest `spade model fetch` pins downloaded model files with,
 * streaming (init, update any number of times, final) so a 500 MB file is
 * hashed without holding it. What it is not: constant-time or a general crypto
 * library (no HMAC, no other hashes); a Debian library was not worth a new
 * dependency for one function checked against the NIST vectors in tests/test_gguf.c.
 */
#ifndef SPADE_SHA256_H
#define SPADE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct spade_sha256 {
    uint32_t h[8];
    uint64_t nbytes;
    uint8_t buf[64];
    size_t nbuf;
} spade_sha256;

void spade_sha256_init(spade_sha256 *s);
void spade_sha256_update(spade_sha256 *s, const void *data, size_t n);
void spade_sha256_final(spade_sha256 *s, uint8_t digest[32]);
/* The digest of n bytes as 64 lowercase hex digits and a NUL. */
void spade_sha256_hex(const void *data, size_t n, char hex[65]);
void spade_sha256_tohex(const uint8_t digest[32], char hex[65]);
/* The digest of a whole file, streamed; 0, or -1 with the reason (naming the file) in err. */
int spade_sha256_file(const char *path, char hex[65], uint64_t *size, char *err, size_t errlen);

#endif /* SPADE_SHA256_H */
