/* tokenizer.c — bytes plus special tokens (see tokenizer.h). Not a BPE. */
#include "policy/tokenizer.h"

#include <string.h>

#include "policy/backend.h"

static const char *const special_names[SPADE_TOK_COUNT - 256] = {
    "end", "designer", "agent", "observation", "action", "hint", "source",
};

size_t spade_tok_encode(const void *bytes, size_t n, int *out) {
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) out[i] = b[i];
    return n;
}

const char *spade_tok_name(int tok) {
    if (tok < 256 || tok >= SPADE_TOK_COUNT) return NULL;
    return special_names[tok - 256];
}

int spade_tok_lookup(const char *name) {
    size_t n = strlen(name);
    if (n >= 4 && !strncmp(name, "<|", 2) && !strcmp(name + n - 2, "|>")) {
        name += 2;
        n -= 4;
    }
    for (int i = 0; i < SPADE_TOK_COUNT - 256; i++)
        if (strlen(special_names[i]) == n && !strncmp(special_names[i], name, n)) return 256 + i;
    return -1;
}

int spade_tok_decode(const int *toks, size_t n, int render_special, char *out, size_t outcap,
                     size_t *outlen) {
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int t = toks[i];
        if (t < 0 || t >= SPADE_TOK_COUNT) {
            if (outcap) out[len < outcap ? len : outcap - 1] = 0;
            if (outlen) *outlen = len;
            return SPADE_POLICY_EINVAL;
        }
        if (t < 256) {
            if (len + 1 < outcap) out[len] = (char)t;
            len++;
        } else if (render_special) {
            const char *nm = special_names[t - 256];
            size_t k = strlen(nm);
            const char *parts[3] = {"<|", nm, "|>"};
            size_t lens[3] = {2, k, 2};
            for (int p = 0; p < 3; p++)
                for (size_t j = 0; j < lens[p]; j++, len++)
                    if (len + 1 < outcap) out[len] = parts[p][j];
        }
    }
    if (outcap) out[len < outcap ? len : outcap - 1] = 0;
    if (outlen) *outlen = len;
    return 0;
}
