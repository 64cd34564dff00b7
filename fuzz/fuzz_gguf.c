/* fuzz_gguf.c — libFuzzer harness for the GGUF reader (core/policy/gguf.h).
 *
 * What it is: one input = one file's bytes, opened from memory; when it opens,
 * every metadata value is walked (typed getters, array elements, nested arrays,
 * the formatter) and every small tensor is dequantized whole and by rows. A
 * failed open must say why (an empty message traps). Seeds: fuzz/corpus/gguf/
 * (tests/data/make_gguf_fixtures.py writes them). tests/test_gguf.c also runs
 * this function over the seeds and over thousands of mutations of them, so the
 * harness is exercised by make check without a fuzzer.
 * What it is not: the fuzzing framework (fuzz/local.mk builds the harnesses).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const spade_gguf_value *v, int depth) {
    int64_t i64;
    uint64_t u64;
    double f;
    const char *s;
    size_t len;
    (void)spade_gguf_value_i64(v, &i64);
    (void)spade_gguf_value_u64(v, &u64);
    (void)spade_gguf_value_f64(v, &f);
    if (spade_gguf_value_str(v, &s, &len) == 0 && len && (s[0] == 0x7f || s[len - 1] == 0x7f))
        f = 0; /* touches the first and last byte */
    uint64_t n = spade_gguf_array_len(v);
    for (uint64_t i = 0; i < n && i < 64; i++) {
        (void)spade_gguf_array_i64(v, i, &i64);
        (void)spade_gguf_array_f64(v, i, &f);
        if (spade_gguf_array_str(v, i, &s, &len) == 0 && len && s[len - 1] == 0x7f) f = 0;
        const spade_gguf_value *sub = spade_gguf_array_sub(v, i);
        if (sub) {
            if (depth > SPADE_GGUF_MAX_DEPTH) abort(); /* deeper than the reader allows */
            walk(sub, depth + 1);
        }
    }
    (void)spade_gguf_array_i64(v, n, &i64); /* one past the end: must fail, not read */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    spade_gguf *g;
    char err[1024] = "";
    if (spade_gguf_open_memory(&g, data, size, "fuzz", err, sizeof err) < 0) {
        if (!err[0]) abort(); /* every refusal says why */
        return 0;
    }
    char buf[512];
    for (size_t i = 0; i < spade_gguf_n_kv(g); i++) {
        const char *key = spade_gguf_key(g, i);
        const spade_gguf_value *v = spade_gguf_kv_value(g, i);
        if (spade_gguf_get(g, key) != v) abort(); /* lookup finds what the walk finds */
        walk(v, 0);
        (void)spade_gguf_value_format(v, buf, sizeof buf, 16);
        uint32_t u32;
        float f32;
        int b;
        const char *s;
        size_t len;
        uint64_t n = 0;
        (void)spade_gguf_get_u32(g, key, &u32, err, sizeof err);
        (void)spade_gguf_get_f32(g, key, &f32, err, sizeof err);
        (void)spade_gguf_get_bool(g, key, &b, err, sizeof err);
        (void)spade_gguf_get_str(g, key, &s, &len, err, sizeof err);
        (void)spade_gguf_get_cstr(g, key, buf, sizeof buf, err, sizeof err);
        if (spade_gguf_get_array(g, key, SPADE_GGUF_NVTYPES, NULL, &n, err, sizeof err) == 0 && n <= 4096) {
            int32_t *i32 = malloc((n ? n : 1) * sizeof *i32);
            float *fl = malloc((n ? n : 1) * sizeof *fl);
            if (i32 && fl) {
                (void)spade_gguf_get_arr_i32(g, key, i32, n, err, sizeof err);
                (void)spade_gguf_get_arr_f32(g, key, fl, n, err, sizeof err);
            }
            free(i32);
            free(fl);
        }
    }
    for (size_t i = 0; i < spade_gguf_n_tensors(g); i++) {
        const spade_gguf_tensor *t = spade_gguf_tensor_at(g, i);
        if (spade_gguf_find_tensor(g, t->name) != t) abort();
        if (t->n_elements > (1u << 16) || !spade_ggml_can_dequantize(t->type)) continue;
        float *out = malloc(t->n_elements * sizeof *out);
        if (!out) continue;
        (void)spade_gguf_dequantize(t, out, t->n_elements, err, sizeof err);
        uint64_t rows = t->n_elements / (uint64_t)t->dims[0];
        (void)spade_gguf_dequantize_rows(t, rows - 1, 1, out, err, sizeof err);
        (void)spade_gguf_dequantize_rows(t, rows, 1, out, err, sizeof err); /* past the end: refused */
        free(out);
    }
    spade_gguf_free(g);
    return 0;
}
