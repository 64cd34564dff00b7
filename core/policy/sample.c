/* sample.c — G completions of one prompt: the sampling options and
 * spade_policy_sample, a use of the decoding batch.
 *
 * What it is: checks the options, prefills the prompt once into slot 0 of the
 * policy's own decoder, copies it to G slots and samples them together
 * (completion g draws from the stream (seed, g)).
 * What it is not: the decoding itself (decode.c: passes, the draw, the
 * context rule); episodes with several turns use a spade_decoder directly.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "policy/gpt_internal.h"

void spade_sample_opts_default(spade_sample_opts *o) {
    static const int end_tok[1] = {SPADE_TOK_END};
    memset(o, 0, sizeof *o);
    o->temperature = 1.0f;
    o->top_p = 1.0f;
    o->max_tokens = 256;
    o->stop = end_tok;
    o->n_stop = 1;
    o->seed = 0;
}

int gpt_check_sample_opts(const spade_sample_opts *o, const char *who, char *err, size_t errlen) {
    /* Written so that NaN fails too: a NaN or negative temperature used to
     * mean greedy and a NaN top_p "off", silently. */
    if (!(o->temperature >= 0.0f && isfinite(o->temperature))) {
        spade_errf(err, errlen, "%s: temperature = %g: expected a finite value >= 0 (0 = greedy)", who, o->temperature);
        return SPADE_POLICY_EINVAL;
    }
    if (!(o->top_p > 0.0f && o->top_p <= 1.0f)) {
        spade_errf(err, errlen, "%s: top_p = %g: expected 0 < top_p <= 1 (1 = off)", who, o->top_p);
        return SPADE_POLICY_EINVAL;
    }
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop)) {
        spade_errf(err, errlen, "%s: %d stop tokens but stop = %p", who, o->n_stop, (const void *)o->stop);
        return SPADE_POLICY_EINVAL;
    }
    return 0;
}

int spade_policy_sample(spade_policy *p, const int *prompt, int plen, int G, const spade_sample_opts *o,
                        int *out_tokens, float *out_logprobs, int *out_len, char *err, size_t errlen) {
    spade_sample_opts def;
    if (!o) {
        spade_sample_opts_default(&def);
        o = &def;
    }
    if (G < 1 || plen < 1 || plen >= p->maxT || o->max_tokens < 1) {
        spade_errf(err, errlen,
                   "sample: need G >= 1, 1 <= prompt length < context (%d), max_tokens >= 1 "
                   "(got G %d, prompt %d, max_tokens %d)",
                   p->maxT, G, plen, o->max_tokens);
        return SPADE_POLICY_EINVAL;
    }
    int rc = gpt_check_sample_opts(o, "sample", err, errlen);
    if (rc) return rc;
    for (int i = 0; i < plen; i++)
        if (prompt[i] < 0 || prompt[i] >= p->V) {
            spade_errf(err, errlen, "sample: prompt token %d at %d outside the vocabulary", prompt[i], i);
            return SPADE_POLICY_EINVAL;
        }
    /* The policy's own decoding batch, grown to G slots; the prompt is run
     * once (in slot 0) and copied to the others. The full-recompute
     * reference only records it: the decoder recomputes from the tokens. */
    if (p->dec && spade_decoder_slots(p->dec) < G) {
        spade_decoder_free(p->dec);
        p->dec = NULL;
    }
    if (!p->dec && (rc = spade_decoder_new(&p->dec, p, G, err, errlen))) return rc;
    spade_decoder *d = p->dec;
    int *slots = malloc((size_t)G * sizeof(int));
    if (!slots) {
        spade_errf(err, errlen, "out of host memory");
        return SPADE_POLICY_ENOMEM;
    }
    for (int g = 0; g < G; g++) {
        slots[g] = g;
        spade_decoder_reset(d, g, err, errlen);
    }
    rc = o->no_kv_cache ? gpt_decoder_push(d, 0, prompt, plen, err, errlen)
                        : spade_decoder_append(d, 0, prompt, plen, err, errlen);
    for (int g = 1; g < G && !rc; g++) rc = spade_decoder_copy(d, g, 0, err, errlen);
    if (!rc)
        rc = gpt_decoder_sample(d, slots, G, o, NULL, NULL, out_tokens, out_logprobs, out_len, NULL, "sample",
                                "completion", err, errlen);
    free(slots);
    return rc;
}
