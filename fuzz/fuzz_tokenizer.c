/* fuzz_tokenizer.c — libFuzzer harness for the BPE tokenizer file
 * (spade_tokenizer_parse, core/policy/tokenizer.c; the same text a checkpoint
 * embeds). The harness rewrites the hash of every "end fnv1a HASH" line to
 * the true hash of the bytes before it, so mutations get past the checksum
 * to the merges behind it. A tokenizer that loads must then encode a text
 * the same way on its fast and its reference path, decode it back to the
 * same bytes, and survive a save/parse round trip unchanged.
 * What it is not: a test of the BPE trainer (tests/test_tokenizer.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "policy/policy.h"
#include "policy/tokenizer.h"

static const char sample[] = "int main(void) {\n  return 4821 + 1377; // carry_add\n}\nSTEP { say(\"hi\"); }\n";

static void fix_checksums(char *b, size_t n) {
    size_t pos = 0;
    while (pos < n) {
        char *nl = memchr(b + pos, '\n', n - pos);
        size_t ll = nl ? (size_t)(nl - (b + pos)) : n - pos;
        if (ll == 26 && !memcmp(b + pos, "end fnv1a ", 10)) {
            char hex[17];
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fuzz_fnv1a(FUZZ_FNV_INIT, b, pos));
            memcpy(b + pos + 10, hex, 16);
        }
        pos += ll + 1;
    }
}

static void check_codec(spade_tokenizer *t, const void *text, size_t n) {
    int *a = malloc((n ? n : 1) * sizeof *a), *r = malloc((n ? n : 1) * sizeof *r);
    char *back = malloc(n + 1);
    if (!a || !r || !back) abort();
    size_t na = spade_tokenizer_encode(t, text, n, a), nr = spade_tokenizer_encode_ref(t, text, n, r);
    if (na != nr || (na && memcmp(a, r, na * sizeof *a)) || spade_tokenizer_count(t, text, n) != na) abort();
    size_t got = 0;
    if (spade_tokenizer_decode(t, a, na, 0, back, n + 1, &got) < 0 || got != n || memcmp(back, text, n)) abort();
    free(a), free(r), free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    fix_checksums(b, size);
    spade_tokenizer *t = NULL;
    char err[512];
    int rc = spade_tokenizer_parse(&t, b, size, "fuzz", err, sizeof err);
    if (rc == 0) {
        int V = spade_tokenizer_vocab(t);
        if (V < SPADE_TOK_COUNT || V > SPADE_TOK_MAX_VOCAB) abort();
        for (int id = -1; id <= V; id++) {
            size_t len = 0;
            const unsigned char *piece = spade_tokenizer_piece(t, id, &len);
            if ((id < 0 || id >= V || (id >= 256 && id < SPADE_TOK_COUNT)) != !piece) abort();
        }
        check_codec(t, sample, sizeof sample - 1);
        check_codec(t, data, size);
        char *s = NULL;
        size_t sl = 0;
        spade_tokenizer *u = NULL;
        if (spade_tokenizer_serialize(t, &s, &sl, err, sizeof err) < 0) abort();
        if (spade_tokenizer_parse(&u, s, sl, "fuzz (saved)", err, sizeof err) < 0 || !spade_tokenizer_equal(t, u))
            abort();
        spade_tokenizer_free(u);
        free(s);
    } else if (t || !err[0]) {
        abort();
    }
    spade_tokenizer_free(t);
    free(b);
    return 0;
}
