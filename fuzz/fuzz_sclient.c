/* fuzz_sclient.c — libFuzzer harness for the readers of core/serve_client.c,
 * the C client of `spade serve` (what `spade run --servers` reads off the
 * network): the first byte says how many batch items the request had (0..63),
 * the rest is one reply line; it goes through the reply reader and, when it is
 * an ok reply, the batch reader (on the reply and its "reset" member) and the
 * info reader. Each either succeeds with values in their bounds or fails with
 * a message; it never reads past what it was given.
 * What it is not: a test of the socket, the hello or the episode loop
 * (tests/test_servers.sh plays episodes through real servers).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int n = data[0] % 64;
    spade_json_doc *doc = NULL;
    char err[1024] = "";
    int rc = spade_sclient_parse_reply((const char *)data + 1, size - 1, &doc, err, sizeof err);
    if (rc != SPADE_SCLIENT_OK) {
        if (doc || !err[0]) abort(); /* a refusal or a bad reply has a message and no document */
        return 0;
    }
    const spade_json *root = spade_json_root(doc);
    spade_sclient_item items[64];
    for (int k = 0; k < 2; k++) {
        const spade_json *obj = k ? spade_json_get(root, "reset") : root;
        err[0] = 0;
        if (spade_sclient_parse_batch(obj, n, items, err, sizeof err) < 0) {
            if (!err[0]) abort();
            continue;
        }
        for (int j = 0; j < n; j++) {
            const spade_sclient_item *it = &items[j];
            if (!it->obs || it->obs_len > SPADE_OBS_MAX * 3u) abort();
            if (it->failed && (it->failure.outcome <= SPADE_OUT_OK || it->failure.outcome >= SPADE_OUT_COUNT_)) abort();
            if (it->failed && strnlen(it->failure.message, sizeof it->failure.message) == sizeof it->failure.message)
                abort();
        }
    }
    spade_env_info info;
    err[0] = 0;
    if (spade_sclient_parse_info(spade_json_get(root, "info"), &info, err, sizeof err) == 0) {
        if (info.max_steps < 1 || info.max_steps > SPADE_MAX_STEPS_LIMIT) abort();
        if (info.n_params > SPADE_INFO_MAX_PARAMS || info.n_tools > SPADE_INFO_MAX_TOOLS) abort();
        if (strnlen(info.name, sizeof info.name) == sizeof info.name) abort();
    } else if (!err[0]) {
        abort();
    }
    spade_json_doc_free(doc);
    return 0;
}
