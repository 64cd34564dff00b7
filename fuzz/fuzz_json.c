/* fuzz_json.c — libFuzzer harness for core/json.c, the reader and writer of
 * `spade serve`'s JSON lines: any bytes are parsed; whatever parses is walked
 * through every accessor, written back, and must parse again to the same
 * text (the writer promises valid JSON for anything the reader accepts).
 * What it is not: a test of the protocol's requests (fuzz_serve.c does those).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static void walk(const spade_json *v, int depth) {
    long long ll;
    uint64_t u;
    (void)spade_json_type_name(v->type);
    (void)spade_json_int(v, -(1LL << 53), 1LL << 53, &ll);
    (void)spade_json_u64(v, &u);
    if (v->type == SPADE_JSON_ARRAY)
        for (size_t i = 0; i < v->len; i++) walk(&v->items[i], depth + 1);
    if (v->type == SPADE_JSON_OBJECT)
        for (size_t i = 0; i < v->len; i++) {
            /* a key holding a NUL cannot be asked for by a C string; every other one is found */
            if (strlen(v->members[i].key) == v->members[i].key_len && !spade_json_get(v, v->members[i].key)) abort();
            walk(&v->members[i].value, depth + 1);
        }
    if (depth > SPADE_JSON_MAX_DEPTH + 1) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    spade_json_doc *doc = NULL;
    char err[256];
    if (spade_json_parse((const char *)data, size, &doc, err, sizeof err) < 0) {
        if (doc || !err[0]) abort(); /* an error has a message and no document */
        return 0;
    }
    const spade_json *root = spade_json_root(doc);
    walk(root, 0);
    spade_jbuf a = {0}, b = {0};
    spade_jw_value(&a, root);
    if (a.oom) abort();
    spade_json_doc *again = NULL;
    if (spade_json_parse(a.p, a.len, &again, err, sizeof err) < 0) abort(); /* the writer wrote bad JSON */
    spade_jw_value(&b, spade_json_root(again));
    if (b.len != a.len || memcmp(a.p, b.p, a.len)) abort(); /* written twice, two texts */
    spade_json_doc_free(again);
    spade_json_doc_free(doc);
    spade_jbuf_free(&a);
    spade_jbuf_free(&b);
    return 0;
}
