/* TEMPORARY until the bpe branch lands: a byte tokenizer for every policy. */
#include <stddef.h>
#include "policy/policy.h"
spade_tokenizer *spade_policy_tokenizer(spade_policy *p);
__attribute__((weak)) spade_tokenizer *spade_policy_tokenizer(spade_policy *p) {
    static spade_tokenizer *t;
    (void)p;
    if (!t) spade_tokenizer_new_bytes(&t, NULL, 0);
    return t;
}
