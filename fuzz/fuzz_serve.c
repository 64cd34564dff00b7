/* fuzz_serve.c — libFuzzer harness for the request handling of `spade serve`
 * (cli/serve_proto.c): the input is split into lines and each is handed to
 * one connection in turn, as a client would send them; every response must
 * be exactly one line of valid JSON.
 * What it is not: a test of environments behind the protocol. The connection
 * has no sandbox and may make no environment (max_envs = 0), and the
 * requests that would load or compile one (info, check, list) are left out,
 * so what is fuzzed is the request parsing, the field checks and the
 * error responses of every op, not the JIT.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "serve.h"

/* The ops that reach the sandbox, the registry or the compiler with a NULL sandbox. */
static int skipped(const char *line, size_t len) {
    spade_json_doc *doc = NULL;
    char err[64];
    if (spade_json_parse(line, len, &doc, err, sizeof err) < 0) return 0;
    const spade_json *op = spade_json_get(spade_json_root(doc), "op");
    int skip = op && op->type == SPADE_JSON_STRING &&
               (!strcmp(op->str, "info") || !strcmp(op->str, "check") || !strcmp(op->str, "list"));
    spade_json_doc_free(doc);
    return skip;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    serve_limits lim;
    serve_limits_default(&lim);
    lim.max_envs = 0;
    serve_conn *c = serve_conn_new(NULL, &lim);
    if (!c) return 0;
    spade_jbuf out = {0};
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (!skipped(p, n)) {
            spade_jbuf_clear(&out);
            serve_handle_line(c, p, n, &out);
            /* one line, newline-terminated, that is JSON */
            if (out.oom || !out.len || out.p[out.len - 1] != '\n' || memchr(out.p, '\n', out.len - 1)) abort();
            spade_json_doc *doc = NULL;
            char err[256];
            if (spade_json_parse(out.p, out.len - 1, &doc, err, sizeof err) < 0) abort();
            if (spade_json_root(doc)->type != SPADE_JSON_OBJECT) abort();
            spade_json_doc_free(doc);
        }
        p += n + 1;
    }
    spade_jbuf_free(&out);
    if (serve_conn_num_envs(c) != 0) abort();
    serve_conn_free(c);
    return 0;
}
