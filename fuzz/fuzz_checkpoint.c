/* fuzz_checkpoint.c — libFuzzer harness for policy checkpoint files
 * (core/policy/checkpoint.c): the input is written to a file and read back by
 * each of the three readers (the config header, the tokenizer, the whole
 * policy on the CPU backend). The harness rewrites the last 8 bytes to the
 * true FNV-1a of the rest, so mutations get past the checksum to the
 * header's counts and the embedded tokenizer behind it.
 * What it is not: a test that saving and loading round-trips (tests/test_policy.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "policy/policy.h"
#include "policy/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    if (size >= 8) {
        uint64_t h = fuzz_fnv1a(FUZZ_FNV_INIT, b, size - 8);
        memcpy(b + size - 8, &h, 8);
    }
    const char *path = fuzz_file("fuzz.ckpt", b, size);
    free(b);
    char err[1024];
    spade_gpt_config cfg;
    int hdr = spade_policy_read_config(path, &cfg, err, sizeof err);
    if (hdr == 0 && (cfg.layers < 1 || cfg.width < 8 || cfg.context < 2 || cfg.vocab < SPADE_VOCAB)) abort();
    spade_tokenizer *t = NULL;
    int tr = spade_policy_read_tokenizer(path, &t, err, sizeof err);
    if (tr == 0) {
        if (hdr != 0 || spade_tokenizer_vocab(t) != cfg.vocab) abort(); /* a good file has a good header */
        spade_tokenizer_free(t);
    } else if (t) {
        abort();
    }
    spade_policy *p = NULL;
    int rc = spade_policy_load(&p, path, "cpu", err, sizeof err);
    if (rc == 0) {
        if (tr != 0 || !p) abort(); /* the whole file read, so its tokenizer read too */
        spade_policy_free(p);
    } else if (p || !err[0]) {
        abort();
    }
    return 0;
}
