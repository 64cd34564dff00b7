/* remote_designer.c — the served designer's turns, batch and record
 * (remote_designer.h).
 *
 * What it is not: a retry loop (core/remote.c bounds the tries and their
 * waits) or a cache across runs: a reply is read back only for the same
 * iteration, slot and request digest.
 */
#include "designer/remote_designer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "sha256.h"

static const char CARD[] = "You are the designer of a self-play framework: you write new text environments as C "
                           "programs. Answer with the program's source in one fenced ```c block.";

int spade_designer_chat_turns(const char *prompt, size_t len, spade_remote_msg out[SPADE_DESIGNER_TURNS_MAX]) {
    out[0] = (spade_remote_msg){.role = "system", .text = CARD, .len = sizeof CARD - 1};
    out[1] = (spade_remote_msg){.role = "user", .text = prompt, .len = len};
    return 2;
}

void spade_designer_remote_writer(const spade_remote *r, char *out, size_t cap) {
    static const char tail[] = "/v1/chat/completions";
    const char *ep = spade_remote_endpoint(r);
    size_t el = strlen(ep), tl = sizeof tail - 1;
    if (el >= tl && !strcmp(ep + el - tl, tail)) el -= tl;
    snprintf(out, cap, "remote:%.*s#%s", (int)el, ep, spade_remote_model(r));
}

/* What a reply depends on, as 64 hex digits: the model, the turns, the
 * seed and the sampling. */
static void request_digest(const spade_remote *r, const spade_remote_msg *m, int nm, uint64_t seed,
                           const spade_designer_remote_opts *o, char hex[65]) {
    spade_sha256 s;
    uint8_t d[32];
    char num[96];
    spade_sha256_init(&s);
    const char *model = spade_remote_model(r);
    spade_sha256_update(&s, model, strlen(model) + 1);
    for (int i = 0; i < nm; i++) {
        spade_sha256_update(&s, m[i].role, strlen(m[i].role) + 1);
        int k = snprintf(num, sizeof num, "%zu:", m[i].len);
        spade_sha256_update(&s, num, (size_t)k);
        spade_sha256_update(&s, m[i].text, m[i].len);
    }
    int k = snprintf(num, sizeof num, "seed %llu max_tokens %d temperature %.9g", (unsigned long long)seed,
                     o->max_tokens, (double)o->temperature);
    spade_sha256_update(&s, num, (size_t)k);
    spade_sha256_final(&s, d);
    spade_sha256_tohex(d, hex);
}

int spade_designer_remote_write(spade_remote *r, spade_archive *a, int it, int n, const char *const *prompts,
                                const size_t *lens, const uint64_t *seeds, const spade_designer_remote_opts *o,
                                char **texts, size_t *text_lens, int *asked, int *recorded, char *err, size_t errlen) {
    int rc = -1, m = 0;
    *asked = *recorded = 0;
    if (n <= 0) return 0;
    size_t N = (size_t)n;
    for (int i = 0; i < n; i++) texts[i] = NULL, text_lens[i] = 0;
    spade_remote_msg(*msgs)[SPADE_DESIGNER_TURNS_MAX] = calloc(N, sizeof *msgs);
    spade_remote_req *reqs = calloc(N, sizeof *reqs);
    spade_remote_reply *replies = calloc(N, sizeof *replies);
    char(*digest)[65] = calloc(N, sizeof *digest);
    int *slot = calloc(N, sizeof *slot);
    if (!msgs || !reqs || !replies || !digest || !slot) {
        spade_errf(err, errlen, "remote designer: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int nm = spade_designer_chat_turns(prompts[i], lens[i], msgs[i]);
        request_digest(r, msgs[i], nm, seeds[i], o, digest[i]);
        int g = a ? spade_archive_get_reply(a, it, i, digest[i], &texts[i], &text_lens[i], err, errlen) : 1;
        if (g < 0) goto done;
        if (g == 0) {
            (*recorded)++;
            continue;
        }
        reqs[m] = (spade_remote_req){.msgs = msgs[i], .n_msgs = nm, .seed = seeds[i], .max_tokens = o->max_tokens};
        slot[m++] = i;
    }
    if (m > 0 && spade_remote_chat(r, m, reqs, replies, err, errlen) < 0) goto done;
    *asked = m;
    for (int j = 0; j < m; j++) { /* the texts taken over, so done frees them once */
        texts[slot[j]] = replies[j].text, text_lens[slot[j]] = replies[j].len;
        replies[j].text = NULL;
    }
    /* each recorded (committed alone) before any is used: a kill from here on resumes onto them */
    for (int j = 0; a && j < m; j++) {
        int i = slot[j];
        if (spade_archive_put_reply(a, it, i, digest[i], spade_remote_endpoint(r), spade_remote_model(r), texts[i],
                                    text_lens[i], err, errlen) < 0)
            goto done;
    }
    rc = 0;
done:
    if (rc < 0)
        for (int i = 0; i < n; i++) free(texts[i]), texts[i] = NULL, text_lens[i] = 0;
    for (int j = 0; replies && j < m; j++) free(replies[j].text);
    free(msgs);
    free(reqs);
    free(replies);
    free(digest);
    free(slot);
    return rc;
}
