/* test_gguf.c — the GGUF reader, dequantizer and writer (core/policy/gguf.h), and SHA-256 (core/sha256.h).
 *
 * What it checks: dequantization of every supported type bit for bit against
 * the gguf Python package (tests/data/gguf_quants.gguf, written by
 * tests/data/make_gguf_fixtures.py: raw blocks and gguf-py's floats for them),
 * the writer's F16/Q8_0 bytes against gguf-py's quantizers, every metadata type
 * read back from a file gguf-py wrote, our writer read back by our reader,
 * each class of hostile file refused with an error naming the field (bytes
 * built by hand below), every truncation of a valid file refused, the fuzz
 * harness (fuzz/fuzz_gguf.c) over its seeds and thousands of mutations of
 * them, SHA-256 against the FIPS 180-2 vectors, and, when they have been
 * fetched, the real SmolLM2 and Qwen2.5-Coder files (skipped with a message otherwise).
 * What it is not: a test of the model code that reads these tensors.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/gguf.h"
#include "policy/models.h"
#include "sha256.h"
#include "testutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char err[1024];

static spade_gguf *open_fixture(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/gguf_quants.gguf", tu_srcdir());
    spade_gguf *g = NULL;
    ck_assert_msg(spade_gguf_open(&g, path, err, sizeof err) == 0, "%s", err);
    return g;
}

/* ---- dequantization against gguf-py ---- */

START_TEST(dequantize_matches_gguf_py) {
    spade_gguf *g = open_fixture();
    static const int types[] = {SPADE_GGML_F32,  SPADE_GGML_F16,  SPADE_GGML_BF16, SPADE_GGML_Q8_0,
                                SPADE_GGML_Q4_0, SPADE_GGML_Q4_1, SPADE_GGML_Q5_0, SPADE_GGML_Q5_1,
                                SPADE_GGML_Q4_K, SPADE_GGML_Q5_K, SPADE_GGML_Q6_K};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        char qn[64], wn[64];
        snprintf(qn, sizeof qn, "q.%s", spade_ggml_type_name(types[k]));
        snprintf(wn, sizeof wn, "want.%s", spade_ggml_type_name(types[k]));
        const spade_gguf_tensor *q = spade_gguf_find_tensor(g, qn), *w = spade_gguf_find_tensor(g, wn);
        ck_assert_msg(q && w, "%s or %s missing from the fixture", qn, wn);
        ck_assert_int_eq(q->type, types[k]);
        ck_assert_int_eq(w->type, SPADE_GGML_F32);
        ck_assert_uint_eq(q->n_elements, w->n_elements);
        ck_assert_int_eq(q->dims[0], 512);
        ck_assert_int_eq(q->dims[1], 2);
        float *got = malloc(q->n_elements * sizeof *got), *want = malloc(q->n_elements * sizeof *want);
        ck_assert_msg(spade_gguf_dequantize(q, got, q->n_elements, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(spade_gguf_dequantize(w, want, w->n_elements, err, sizeof err) == 0, "%s", err);
        int nonzero = 0;
        for (uint64_t i = 0; i < q->n_elements; i++) {
            ck_assert_msg(!memcmp(&got[i], &want[i], 4), "%s element %llu: %.9g, gguf-py says %.9g", qn,
                          (unsigned long long)i, got[i], want[i]);
            nonzero += got[i] != 0;
        }
        ck_assert_int_gt(nonzero, 100); /* the fixture is not trivially zero */
        /* row 1 alone is the second half of the whole */
        float row[512];
        ck_assert_msg(spade_gguf_dequantize_rows(q, 1, 1, row, err, sizeof err) == 0, "%s", err);
        ck_assert(!memcmp(row, got + 512, sizeof row));
        ck_assert_int_eq(spade_gguf_dequantize_rows(q, 1, 2, row, err, sizeof err), -1);
        ck_assert_ptr_nonnull(strstr(err, "rows 1..3 asked, it has 2"));
        ck_assert_int_eq(spade_gguf_dequantize(q, got, q->n_elements - 1, err, sizeof err), -1);
        free(got);
        free(want);
    }
    spade_gguf_free(g);
}
END_TEST

START_TEST(writer_quantizes_as_gguf_py) {
    spade_gguf *g = open_fixture();
    const spade_gguf_tensor *src = spade_gguf_find_tensor(g, "src"), *q8 = spade_gguf_find_tensor(g, "pyq.Q8_0"),
                            *f16 = spade_gguf_find_tensor(g, "pyq.F16");
    ck_assert(src && q8 && f16);
    ck_assert_int_eq(q8->type, SPADE_GGML_Q8_0);
    ck_assert_int_eq(f16->type, SPADE_GGML_F16);
    float x[256];
    ck_assert_uint_eq(src->n_elements, 256);
    ck_assert_int_eq(spade_gguf_dequantize(src, x, 256, err, sizeof err), 0);
    uint8_t mine[256 * 2];
    spade_ggml_quantize_q8_0(x, 256, mine);
    ck_assert_uint_eq(q8->n_bytes, 8 * 34);
    ck_assert_msg(!memcmp(mine, q8->data, q8->n_bytes), "Q8_0 bytes differ from gguf-py's");
    spade_ggml_quantize_f16(x, 256, mine);
    ck_assert_msg(!memcmp(mine, f16->data, 512), "F16 bytes differ from numpy's");
    spade_gguf_free(g);
}
END_TEST

START_TEST(fp16_round_trips) {
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaNs: payloads are not promised */
        float f = spade_fp16_to_f32((uint16_t)h);
        ck_assert_msg(spade_f32_to_fp16(f) == h, "half 0x%04x -> %g -> 0x%04x", h, f, spade_f32_to_fp16(f));
    }
    ck_assert_uint_eq(spade_f32_to_fp16(65520.0f), 0x7c00); /* rounds up to inf */
    ck_assert_uint_eq(spade_f32_to_fp16(65519.0f), 0x7bff);
    ck_assert_uint_eq(spade_f32_to_fp16(1e-8f), 0);
    ck_assert(isnan(spade_fp16_to_f32(spade_f32_to_fp16(NAN))));
    ck_assert_float_eq(spade_bf16_to_f32(0x3f80), 1.0f);
}
END_TEST

/* ---- metadata written by gguf-py ---- */

START_TEST(metadata_of_every_type) {
    spade_gguf *g = open_fixture();
    ck_assert_uint_eq(spade_gguf_version(g), 3);
    ck_assert_uint_eq(spade_gguf_alignment(g), 64);
    uint32_t u32;
    uint64_t u64;
    int64_t i64;
    float f;
    int b;
    ck_assert_int_eq(spade_gguf_get_u32(g, "t.u8", &u32, err, sizeof err), 0);
    ck_assert_uint_eq(u32, 200);
    ck_assert_int_eq(spade_gguf_get_i64(g, "t.i8", &i64, err, sizeof err), 0);
    ck_assert_int_eq(i64, -100);
    ck_assert_int_eq(spade_gguf_get_u32(g, "t.u16", &u32, err, sizeof err), 0);
    ck_assert_uint_eq(u32, 60000);
    ck_assert_int_eq(spade_gguf_get_i64(g, "t.i16", &i64, err, sizeof err), 0);
    ck_assert_int_eq(i64, -30000);
    ck_assert_int_eq(spade_gguf_get_u32(g, "t.u32", &u32, err, sizeof err), 0);
    ck_assert_uint_eq(u32, 4000000000u);
    ck_assert_int_eq(spade_gguf_get_i64(g, "t.i32", &i64, err, sizeof err), 0);
    ck_assert_int_eq(i64, -2000000000);
    ck_assert_int_eq(spade_gguf_get_f32(g, "t.f32", &f, err, sizeof err), 0);
    ck_assert_float_eq(f, 0.5f);
    ck_assert_int_eq(spade_gguf_get_bool(g, "t.bool", &b, err, sizeof err), 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(spade_gguf_get_u64(g, "t.u64", &u64, err, sizeof err), 0);
    ck_assert_uint_eq(u64, (1ull << 40) + 3);
    ck_assert_int_eq(spade_gguf_get_i64(g, "t.i64", &i64, err, sizeof err), 0);
    ck_assert_int_eq(i64, -(1ll << 40));
    ck_assert_int_eq(spade_gguf_get_f32(g, "t.f64", &f, err, sizeof err), 0);
    ck_assert_float_eq(f, 3.25f);
    char s[64];
    ck_assert_int_eq(spade_gguf_get_cstr(g, "t.str", s, sizeof s, err, sizeof err), 0);
    ck_assert_str_eq(s, "h\xc3\xa9llo \"world\"\n");
    ck_assert_int_eq(spade_gguf_get_cstr(g, "general.architecture", s, sizeof s, err, sizeof err), 0);
    ck_assert_str_eq(s, "spade-test");

    /* errors name the key and say what is wrong */
    ck_assert_int_eq(spade_gguf_get_u32(g, "t.i8", &u32, err, sizeof err), -1);
    ck_assert_str_eq(err, "key 't.i8' = -100 does not fit in u32");
    ck_assert_int_eq(spade_gguf_get_u32(g, "t.u64", &u32, err, sizeof err), -1);
    ck_assert_str_eq(err, "key 't.u64' = 1099511627779 does not fit in u32");
    ck_assert_int_eq(spade_gguf_get_u32(g, "t.str", &u32, err, sizeof err), -1);
    ck_assert_str_eq(err, "key 't.str' has type string, not an integer");
    ck_assert_int_eq(spade_gguf_get_f32(g, "llama.nothing", &f, err, sizeof err), -1);
    ck_assert_str_eq(err, "key 'llama.nothing' is missing");
    ck_assert_int_eq(spade_gguf_get_cstr(g, "t.str", s, 4, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "too long"));

    const spade_gguf_value *v;
    uint64_t n;
    ck_assert_int_eq(spade_gguf_get_array(g, "t.arr_str", SPADE_GGUF_STRING, &v, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 4);
    const char *p;
    size_t len;
    ck_assert_int_eq(spade_gguf_array_str(v, 1, &p, &len), 0);
    ck_assert(len == 2 && !memcmp(p, "bc", 2));
    ck_assert_int_eq(spade_gguf_array_str(v, 2, &p, &len), 0);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(spade_gguf_array_str(v, 4, &p, &len), -1);
    ck_assert_int_eq(spade_gguf_get_array(g, "t.arr_str", SPADE_GGUF_I32, &v, &n, err, sizeof err), -1);
    ck_assert_str_eq(err, "key 't.arr_str' is an array of string, not of i32");
    int32_t i3[3];
    ck_assert_int_eq(spade_gguf_get_arr_i32(g, "t.arr_i32", i3, 3, err, sizeof err), 0);
    ck_assert(i3[0] == 1 && i3[1] == -2 && i3[2] == 3);
    ck_assert_int_eq(spade_gguf_get_arr_i32(g, "t.arr_i32", i3, 2, err, sizeof err), -1);
    ck_assert_str_eq(err, "key 't.arr_i32' has 3 elements, 2 expected");
    float f2[2];
    ck_assert_int_eq(spade_gguf_get_arr_f32(g, "t.arr_f32", f2, 2, err, sizeof err), 0);
    ck_assert(f2[0] == 0.25f && f2[1] == -1.5f);
    ck_assert_int_eq(spade_gguf_get_arr_f32(g, "t.arr_i32", f2, 3, err, sizeof err), -1);

    /* nested arrays, through the accessors and the formatter */
    v = spade_gguf_get(g, "t.nested");
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(spade_gguf_array_type(v), SPADE_GGUF_ARRAY);
    ck_assert_uint_eq(spade_gguf_array_len(v), 2);
    ck_assert_uint_eq(spade_gguf_array_len(spade_gguf_array_sub(v, 0)), 2);
    ck_assert_int_eq(spade_gguf_array_i64(spade_gguf_array_sub(v, 1), 0, &i64), 0);
    ck_assert_int_eq(i64, 3);
    ck_assert_ptr_null(spade_gguf_array_sub(v, 2));
    char buf[256];
    spade_gguf_value_format(v, buf, sizeof buf, 16);
    ck_assert_str_eq(buf, "[[1, 2], [3]]");
    spade_gguf_value_format(spade_gguf_get(g, "t.nested2"), buf, sizeof buf, 16);
    ck_assert_str_eq(buf, "[[[\"x\"]], [[\"y\", \"z\"]]]");
    spade_gguf_value_format(spade_gguf_get(g, "t.str"), buf, sizeof buf, 16);
    ck_assert_str_eq(buf, "\"h\xc3\xa9llo \\\"world\\\"\\n\"");
    spade_gguf_value_format(spade_gguf_get(g, "t.arr_str"), buf, sizeof buf, 2);
    ck_assert_str_eq(buf, "[\"a\", \"bc\", ... (4 in all)]");
    ck_assert_uint_eq(spade_gguf_value_format(spade_gguf_get(g, "t.i64"), buf, 4, 2), 14); /* truncated, length told */
    ck_assert_str_eq(buf, "-10");
    spade_gguf_value_format(spade_gguf_get(g, "t.f64"), buf, sizeof buf, 2);
    ck_assert_str_eq(buf, "3.25");
    spade_gguf_free(g);
}
END_TEST

/* ---- our writer, read back ---- */

START_TEST(writer_round_trips) {
    spade_gguf_writer *w;
    ck_assert_int_eq(spade_gguf_writer_new(&w, err, sizeof err), 0);
    float a[64 * 3], c[5] = {1, -2, 0.5f, 1e-3f, 7};
    for (int i = 0; i < 64 * 3; i++) a[i] = sinf((float)i) * 3;
    const char *toks[] = {"<s>", "hello", " world"};
    int32_t types[] = {3, 1, 1};
    ck_assert_int_eq(spade_gguf_writer_set_str(w, "general.architecture", "llama"), 0);
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.block_count", 2), 0);
    ck_assert_int_eq(spade_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f), 0);
    ck_assert_int_eq(spade_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1), 0);
    ck_assert_int_eq(spade_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3), 0);
    ck_assert_int_eq(spade_gguf_writer_set_array(w, "tokenizer.ggml.token_type", SPADE_GGUF_I32, types, 3), 0);
    int64_t d2[2] = {64, 3}, d1[1] = {5};
    ck_assert_int_eq(spade_gguf_writer_add_tensor(w, "a.q8", SPADE_GGML_Q8_0, 2, d2, a, err, sizeof err), 0);
    ck_assert_int_eq(spade_gguf_writer_add_tensor(w, "a.f16", SPADE_GGML_F16, 2, d2, a, err, sizeof err), 0);
    ck_assert_int_eq(spade_gguf_writer_add_tensor(w, "c", SPADE_GGML_F32, 1, d1, c, err, sizeof err), 0);
    ck_assert_int_eq(spade_gguf_writer_add_tensor(w, "bad", SPADE_GGML_Q8_0, 1, d1, c, err, sizeof err), -1);
    ck_assert_int_eq(spade_gguf_writer_add_tensor(w, "bad", SPADE_GGML_Q4_K, 1, d1, c, err, sizeof err), -1);
    char dir[4096], path[4200];
    tu_mkdtemp(dir, sizeof dir, "gguf");
    snprintf(path, sizeof path, "%s/w.gguf", dir);
    ck_assert_msg(spade_gguf_writer_write_path(w, path, err, sizeof err) == 0, "%s", err);
    spade_gguf *g;
    ck_assert_msg(spade_gguf_open(&g, path, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(spade_gguf_n_kv(g), 6);
    ck_assert_uint_eq(spade_gguf_n_tensors(g), 3);
    uint32_t u;
    ck_assert_int_eq(spade_gguf_get_u32(g, "llama.block_count", &u, err, sizeof err), 0);
    ck_assert_uint_eq(u, 2);
    char txt[64];
    spade_gguf_value_format(spade_gguf_get(g, "llama.rope.freq_base"), txt, sizeof txt, 4);
    ck_assert_str_eq(txt, "10000"); /* an integral float as an integer, not 1e+04 */
    int32_t tt[3];
    ck_assert_int_eq(spade_gguf_get_arr_i32(g, "tokenizer.ggml.token_type", tt, 3, err, sizeof err), 0);
    ck_assert_int_eq(tt[0], 3);
    const spade_gguf_tensor *q = spade_gguf_tensor_at(g, 0), *h = spade_gguf_tensor_at(g, 1),
                            *t = spade_gguf_find_tensor(g, "c");
    ck_assert_str_eq(q->name, "a.q8");
    ck_assert_int_eq(q->dims[1], 3);
    ck_assert_uint_eq(q->n_bytes, 6 * 34);
    ck_assert_uint_eq(t->offset % 32, 0);
    float back[64 * 3], c2[5];
    ck_assert_int_eq(spade_gguf_dequantize(q, back, 64 * 3, err, sizeof err), 0);
    for (int i = 0; i < 64 * 3; i++)
        ck_assert_msg(fabsf(back[i] - a[i]) <= 3.0f / 127 * 0.5f + 3.0f / 1024, "Q8_0 element %d: %g for %g", i,
                      back[i], a[i]);
    ck_assert_int_eq(spade_gguf_dequantize(h, back, 64 * 3, err, sizeof err), 0);
    for (int i = 0; i < 64 * 3; i++) ck_assert(fabsf(back[i] - a[i]) <= fabsf(a[i]) / 1024);
    ck_assert_int_eq(spade_gguf_dequantize(t, c2, 5, err, sizeof err), 0);
    ck_assert(!memcmp(c, c2, sizeof c));
    spade_gguf_free(g);

    /* a key or tensor set twice is refused at write time */
    ck_assert_int_eq(spade_gguf_writer_set_u32(w, "llama.block_count", 3), 0);
    FILE *f = tmpfile();
    ck_assert_int_eq(spade_gguf_writer_write(w, f, err, sizeof err), -1);
    ck_assert_str_eq(err, "key 'llama.block_count' is set twice");
    fclose(f);
    spade_gguf_writer_free(w);
    ck_assert_int_eq(tu_rm_rf(dir), 0);
}
END_TEST

/* ---- hostile files, built byte by byte ---- */

typedef struct bb {
    uint8_t p[8192];
    size_t n;
} bb;

static void b_put(bb *b, const void *p, size_t n) {
    ck_assert(b->n + n <= sizeof b->p);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void b_u32(bb *b, uint32_t v) { b_put(b, &v, 4); }
static void b_u64(bb *b, uint64_t v) { b_put(b, &v, 8); }
static void b_str(bb *b, const char *s) {
    b_u64(b, strlen(s));
    b_put(b, s, strlen(s));
}
static void b_zeros(bb *b, size_t n) {
    static const uint8_t z[256];
    b_put(b, z, n);
}
static void b_hdr(bb *b, uint32_t version, uint64_t n_t, uint64_t n_kv) {
    b->n = 0;
    b_put(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_t);
    b_u64(b, n_kv);
}
static void b_kv_u32(bb *b, const char *key, uint32_t v) {
    b_str(b, key);
    b_u32(b, SPADE_GGUF_U32);
    b_u32(b, v);
}
static void b_tensor(bb *b, const char *name, uint32_t nd, const uint64_t *dims, uint32_t type, uint64_t off) {
    b_str(b, name);
    b_u32(b, nd);
    for (uint32_t i = 0; i < nd; i++) b_u64(b, dims[i]);
    b_u32(b, type);
    b_u64(b, off);
}
static void b_data(bb *b, size_t n) {
    while (b->n % 32) b->p[b->n++] = 0;
    ck_assert(b->n + n <= sizeof b->p);
    for (size_t i = 0; i < n; i++) b->p[b->n++] = (uint8_t)(i * 7);
}

/* The file must be refused with an error containing want. */
static void refused(const bb *b, const char *want, int line) {
    spade_gguf *g = NULL;
    err[0] = 0;
    int rc = spade_gguf_open_memory(&g, b->p, b->n, "bad.gguf", err, sizeof err);
    ck_assert_msg(rc == -1 && !g, "line %d: a hostile file was accepted (wanted '%s')", line, want);
    ck_assert_msg(strstr(err, want) && !strncmp(err, "bad.gguf: ", 10), "line %d: error '%s' does not say '%s'", line,
                  err, want);
}
#define REFUSED(b, want) refused((b), (want), __LINE__)

START_TEST(hostile_headers) {
    bb b;
    b_hdr(&b, 3, 0, 0);
    spade_gguf *g;
    ck_assert_int_eq(spade_gguf_open_memory(&g, b.p, b.n, "ok.gguf", err, sizeof err), 0); /* empty is valid */
    spade_gguf_free(g);
    b_hdr(&b, 2, 0, 0);
    ck_assert_int_eq(spade_gguf_open_memory(&g, b.p, b.n, "ok.gguf", err, sizeof err), 0); /* v2 too */
    spade_gguf_free(g);
    b.p[0] = 'X';
    REFUSED(&b, "not a GGUF file");
    b_hdr(&b, 1, 0, 0);
    REFUSED(&b, "GGUF version 1");
    b_hdr(&b, 99, 0, 0);
    REFUSED(&b, "GGUF version 99 (versions 2 and 3 are read)");
    b_hdr(&b, 0x03000000u, 0, 0);
    REFUSED(&b, "big-endian");
    b_hdr(&b, 3, 0, 0);
    b.n = 10;
    REFUSED(&b, "header: tensor count at byte 8: the file ends there (truncated: 8 bytes needed, 2 left)");
    b.n = 2;
    REFUSED(&b, "header: magic at byte 0: the file ends there");
    b_hdr(&b, 3, 0, 1ull << 60);
    REFUSED(&b, "header: 1152921504606846976 metadata keys is absurd");
    b_hdr(&b, 3, 1ull << 62, 0);
    REFUSED(&b, "header: 4611686018427387904 tensors is absurd");
}
END_TEST

START_TEST(hostile_metadata) {
    bb b;
    b_hdr(&b, 3, 0, 1);
    b_u64(&b, 1ull << 40);
    b_put(&b, "k", 1);
    b_zeros(&b, 32); /* enough left for one key-value: the count passes, the length does not */
    REFUSED(&b, "key 0: a string of 1099511627776 bytes at byte 32 runs past the end of the file");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "");
    b_u32(&b, SPADE_GGUF_U8);
    b_put(&b, "\1", 1);
    b_zeros(&b, 8);
    REFUSED(&b, "key 0: an empty key");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "a.key");
    b_u32(&b, 13);
    b_u32(&b, 0);
    REFUSED(&b, "key 0 'a.key': unknown value type 13");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "a.bool");
    b_u32(&b, SPADE_GGUF_BOOL);
    b_put(&b, "\2", 1);
    REFUSED(&b, "key 0 'a.bool': a bool of value 2");
    /* an array whose count would need more bytes than the file has: refused before allocating */
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "tokenizer.ggml.tokens");
    b_u32(&b, SPADE_GGUF_ARRAY);
    b_u32(&b, SPADE_GGUF_STRING);
    b_u64(&b, 1ull << 50);
    b_str(&b, "a");
    REFUSED(&b, "key 0 'tokenizer.ggml.tokens': an array of 1125899906842624 string needs at least");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "x");
    b_u32(&b, SPADE_GGUF_ARRAY);
    b_u32(&b, SPADE_GGUF_U64);
    b_u64(&b, UINT64_MAX / 4);
    REFUSED(&b, "key 0 'x': an array of 4611686018427387903 u64 needs at least 18446744073709551615 bytes");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "x");
    b_u32(&b, SPADE_GGUF_ARRAY);
    b_u32(&b, 77);
    b_u64(&b, 0);
    REFUSED(&b, "key 0 'x': array of unknown value type 77");
    /* a string inside an array that runs off the end names its index */
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "x");
    b_u32(&b, SPADE_GGUF_ARRAY);
    b_u32(&b, SPADE_GGUF_STRING);
    b_u64(&b, 2);
    b_str(&b, "ab");
    b_u64(&b, 3);
    b_put(&b, "ab", 2);
    REFUSED(&b, "key 0 'x'[1]: a string of 3 bytes");
    /* arrays nested five deep */
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "deep");
    b_u32(&b, SPADE_GGUF_ARRAY);
    for (int i = 0; i < 5; i++) {
        b_u32(&b, SPADE_GGUF_ARRAY);
        b_u64(&b, 1);
    }
    b_u32(&b, SPADE_GGUF_U8);
    b_u64(&b, 0);
    REFUSED(&b, "key 0 'deep'[0][0][0][0]: arrays nested more than 4 deep");
    /* a key twice */
    b_hdr(&b, 3, 0, 3);
    b_kv_u32(&b, "a", 1);
    b_kv_u32(&b, "b", 1);
    b_kv_u32(&b, "a", 2);
    REFUSED(&b, "key 2 'a': a duplicate of key 0");
    /* alignment */
    b_hdr(&b, 3, 0, 1);
    b_kv_u32(&b, "general.alignment", 48);
    REFUSED(&b, "key 'general.alignment': 48 is not a power of two");
    b_hdr(&b, 3, 0, 1);
    b_kv_u32(&b, "general.alignment", 0);
    REFUSED(&b, "key 'general.alignment': 0 is not a power of two");
    b_hdr(&b, 3, 0, 1);
    b_str(&b, "general.alignment");
    b_u32(&b, SPADE_GGUF_STRING);
    b_str(&b, "32");
    REFUSED(&b, "key 'general.alignment': has type string, not u32");
}
END_TEST

START_TEST(hostile_tensors) {
    bb b;
    uint64_t d2[2] = {32, 2}, d5[5] = {1, 1, 1, 1, 1};
    /* a valid one first: two Q8_0 rows and an F32 vector */
    b_hdr(&b, 3, 2, 0);
    b_tensor(&b, "blk.0.w", 2, d2, SPADE_GGML_Q8_0, 0);
    b_tensor(&b, "v", 1, d2, SPADE_GGML_F32, 96);
    b_data(&b, 96 + 128);
    spade_gguf *g;
    ck_assert_msg(spade_gguf_open_memory(&g, b.p, b.n, "ok.gguf", err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(spade_gguf_tensor_at(g, 0)->n_bytes, 68);
    spade_gguf_free(g);
    /* each fault */
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 5, d5, SPADE_GGML_F32, 0);
    REFUSED(&b, "tensor 0 't': n_dims 5 (1 to 4 allowed)");
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 0, d5, SPADE_GGML_F32, 0);
    b_zeros(&b, 32);
    REFUSED(&b, "tensor 0 't': n_dims 0");
    uint64_t big[3] = {1ull << 31, 1ull << 31, 4};
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 3, big, SPADE_GGML_F32, 0);
    REFUSED(&b, "tensor 0 't': the dimensions' product overflows (dimension 2 = 4)");
    uint64_t zero[2] = {4, 0};
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 2, zero, SPADE_GGML_F32, 0);
    REFUSED(&b, "tensor 0 't': dimension 1 is 0");
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 2, d2, 99, 0);
    REFUSED(&b, "tensor 0 't': type 99 is not a GGML tensor type this reader knows");
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 2, d2, 4, 0); /* a number GGML retired (Q4_2) */
    REFUSED(&b, "type 4 is not");
    uint64_t odd[1] = {48};
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 1, odd, SPADE_GGML_Q4_K, 0);
    REFUSED(&b, "tensor 0 't': dimension 0 (48) is not a multiple of Q4_K's block of 256");
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 2, d2, SPADE_GGML_F32, 16);
    b_data(&b, 512);
    REFUSED(&b, "tensor 0 't': offset 16 is not a multiple of the alignment 32");
    b_hdr(&b, 3, 2, 0);
    b_tensor(&b, "blk.0.w", 2, d2, SPADE_GGML_Q8_0, 0);
    b_tensor(&b, "blk.3.attn_q.weight", 2, d2, SPADE_GGML_F32, 96);
    b_data(&b, 200);
    REFUSED(&b, "tensor 1 'blk.3.attn_q.weight': offset 96 + 256 bytes past the end of the file (360 bytes; the "
                "data starts at byte 160)");
    b_hdr(&b, 3, 2, 0);
    b_tensor(&b, "a", 2, d2, SPADE_GGML_Q8_0, 0);
    b_tensor(&b, "b", 2, d2, SPADE_GGML_F32, 64);
    b_data(&b, 512);
    REFUSED(&b, "tensor 1 'b': bytes 64..320 overlap tensor 0 'a' (bytes 0..68)");
    b_hdr(&b, 3, 2, 0);
    b_tensor(&b, "a", 2, d2, SPADE_GGML_F32, 0);
    b_tensor(&b, "a", 2, d2, SPADE_GGML_F32, 256);
    b_data(&b, 512);
    REFUSED(&b, "tensor 1 'a': a duplicate of tensor 0's name");
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "a.name.longer.than.sixty.three.bytes.is.more.than.ggml.can.hold.x", 2, d2, SPADE_GGML_F32, 0);
    REFUSED(&b, "a name of 65 bytes (at most 63)");
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 2, d2, SPADE_GGML_F32, 0);
    REFUSED(&b, "the tensor data should start at byte 96 (aligned to 32), past the end of the file (65)");
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "t", 2, d2, SPADE_GGML_F32, 1ull << 63);
    b_data(&b, 8);
    REFUSED(&b, "tensor 0 't': offset 9223372036854775808 + 256 bytes past the end");
    /* a type that is sized but not dequantized opens, lists, and says so when asked for floats */
    uint64_t k[1] = {256};
    b_hdr(&b, 3, 1, 0);
    b_tensor(&b, "q2", 1, k, 10, 0);
    b_data(&b, 84);
    ck_assert_msg(spade_gguf_open_memory(&g, b.p, b.n, "q2.gguf", err, sizeof err) == 0, "%s", err);
    float out[256];
    ck_assert_int_eq(spade_gguf_dequantize(spade_gguf_tensor_at(g, 0), out, 256, err, sizeof err), -1);
    ck_assert_str_eq(err, "tensor 'q2': cannot dequantize tensor type Q2_K (10)");
    spade_gguf_free(g);
}
END_TEST

START_TEST(every_truncation_is_refused) {
    spade_gguf *g = open_fixture();
    uint64_t size = spade_gguf_file_size(g), data = spade_gguf_data_offset(g);
    spade_gguf_free(g);
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/gguf_quants.gguf", tu_srcdir());
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    uint8_t *buf = malloc(size);
    ck_assert_uint_eq(fread(buf, 1, size, f), size);
    fclose(f);
    /* every cut through the header, then a cut in the data every few bytes: refused, never accepted */
    for (uint64_t n = 0; n < size; n += n < data + 64 ? 1 : 61) {
        err[0] = 0;
        uint8_t *copy = malloc(n ? n : 1); /* a buffer of exactly n bytes, so that a read past it is caught by ASan */
        memcpy(copy, buf, n);
        ck_assert_msg(spade_gguf_open_memory(&g, copy, n, "cut.gguf", err, sizeof err) == -1,
                      "cut at %llu of %llu accepted", (unsigned long long)n, (unsigned long long)size);
        ck_assert(err[0]);
        free(copy);
    }
    free(buf);
}
END_TEST

/* ---- the fuzz harness, over its seeds and mutations of them ---- */

/* Every test starts its draws from this state (rng_reset, a checked fixture), as in Check's fork
 * mode, also with CK_FORK=no where the tests share one process. */
#define RNG_SEED 0x9e3779b97f4a7c15ull
static uint64_t rng_state = RNG_SEED;
static void rng_reset(void) { rng_state = RNG_SEED; }
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

START_TEST(fuzz_harness_on_mutations) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/gguf", tu_srcdir());
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "%s missing", dir);
    struct dirent *e;
    int seeds = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        uint8_t seed[1 << 16];
        size_t n = fread(seed, 1, sizeof seed, f);
        fclose(f);
        spade_gguf *g;
        ck_assert_msg(spade_gguf_open_memory(&g, seed, n, e->d_name, err, sizeof err) == 0, "seed %s: %s", e->d_name,
                      err);
        spade_gguf_free(g);
        seeds++;
        LLVMFuzzerTestOneInput(seed, n);
        /* mutations: byte flips, small-integer and all-ones stores (lengths and counts), cuts */
        for (int m = 0; m < 3000; m++) {
            size_t len = n;
            uint8_t *x = malloc(n);
            memcpy(x, seed, n);
            int k = 1 + (int)(rnd() % 4);
            for (int j = 0; j < k; j++) {
                size_t at = rnd() % n;
                switch (rnd() % 4) {
                case 0: x[at] ^= (uint8_t)(1 << rnd() % 8); break;
                case 1: x[at] = (uint8_t)rnd(); break;
                case 2: memset(x + at, 0xff, n - at < 8 ? n - at : 8); break;
                default: len = at; break;
                }
            }
            LLVMFuzzerTestOneInput(x, len);
            free(x);
        }
    }
    closedir(d);
    ck_assert_int_ge(seeds, 3);
}
END_TEST

/* ---- SHA-256 ---- */

START_TEST(sha256_vectors) {
    char hex[65];
    spade_sha256_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    spade_sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    spade_sha256_hex(two, strlen(two), hex);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* a million 'a', fed in uneven pieces (the buffering across updates) */
    static char a[1000000];
    memset(a, 'a', sizeof a);
    spade_sha256 s;
    uint8_t dg[32];
    spade_sha256_init(&s);
    for (size_t off = 0, step = 1; off < sizeof a; off += step, step = step * 3 % 1000 + 1)
        spade_sha256_update(&s, a + off, off + step > sizeof a ? sizeof a - off : step);
    spade_sha256_final(&s, dg);
    spade_sha256_tohex(dg, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    uint64_t size;
    ck_assert_int_eq(spade_sha256_file("/nonexistent/x", hex, &size, err, sizeof err), -1);
    ck_assert_str_eq(err, "/nonexistent/x: No such file or directory");
    /* what is not a file is refused, not read: /dev/zero never ends, a FIFO without a writer never opens */
    ck_assert_int_eq(spade_sha256_file("/dev/zero", hex, &size, err, sizeof err), -1);
    ck_assert_str_eq(err, "/dev/zero: not a regular file");
    char dir[256], fifo[300];
    tu_mkdtemp(dir, sizeof dir, "sha");
    snprintf(fifo, sizeof fifo, "%s/sha.fifo", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(spade_sha256_file(fifo, hex, &size, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "sha.fifo: not a regular file"));
    tu_rm_rf(dir);
}
END_TEST

/* ---- the known models ---- */

START_TEST(known_models_and_bootstrap_agree) {
    const spade_known_model *m = spade_model_find("smollm2-135m-instruct");
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(spade_model_find("qwen2.5-coder-0.5b-instruct"));
    ck_assert_ptr_null(spade_model_find("gpt-5"));
    size_t n;
    const spade_known_model *k = spade_known_models(&n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(strlen(k[i].sha256), 64);
        ck_assert_uint_eq(strspn(k[i].sha256, "0123456789abcdef"), 64);
        ck_assert(k[i].n_parts >= 1 && k[i].n_parts <= SPADE_MODEL_MAX_PARTS);
    }
    /* ./bootstrap fetches the small model with its own copy of the pin: the same one */
    char path[4096];
    snprintf(path, sizeof path, "%s/bootstrap", tu_srcdir());
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    ck_assert_msg(strstr(text, m->sha256), "bootstrap does not pin %s", m->sha256);
    ck_assert(strstr(text, m->parts[0].pip_spec) && strstr(text, m->parts[0].member));
    /* the directory: $SPADE_MODELS, else ~/.cache/spade/models */
    setenv("SPADE_MODELS", "/x/models", 1);
    ck_assert_int_eq(spade_model_path("smollm2-135m-instruct", path, sizeof path, err, sizeof err), 0);
    ck_assert_str_eq(path, "/x/models/smollm2-135m-instruct.gguf");
    ck_assert_int_eq(spade_model_resolve("smollm2-135m-instruct", path, sizeof path, err, sizeof err), -1);
    ck_assert_str_eq(err, "model 'smollm2-135m-instruct' is not fetched (no /x/models/smollm2-135m-instruct.gguf): "
                          "run spade model fetch smollm2-135m-instruct");
    unsetenv("SPADE_MODELS");
    const char *home = getenv("HOME");
    char want[4096];
    snprintf(want, sizeof want, "%s/.cache/spade/models", home ? home : "");
    if (home && *home) {
        ck_assert_int_eq(spade_models_dir(path, sizeof path, err, sizeof err), 0);
        ck_assert_str_eq(path, want);
    }
}
END_TEST

/* ---- the real model, when it has been fetched ---- */

START_TEST(real_smollm2_when_present) {
    char path[4096];
    if (spade_model_path("smollm2-135m-instruct", path, sizeof path, err, sizeof err) < 0 || access(path, R_OK) != 0) {
        printf("test_gguf: SKIP real-model test: smollm2-135m-instruct not fetched (spade model fetch "
               "smollm2-135m-instruct)\n");
        return;
    }
    spade_gguf *g;
    ck_assert_msg(spade_gguf_open(&g, path, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(spade_gguf_file_size(g), 98362432ull);
    char s[64];
    uint32_t u;
    ck_assert_int_eq(spade_gguf_get_cstr(g, "general.architecture", s, sizeof s, err, sizeof err), 0);
    ck_assert_str_eq(s, "llama");
    ck_assert_int_eq(spade_gguf_get_u32(g, "llama.block_count", &u, err, sizeof err), 0);
    ck_assert_uint_eq(u, 30);
    ck_assert_int_eq(spade_gguf_get_u32(g, "llama.embedding_length", &u, err, sizeof err), 0);
    ck_assert_uint_eq(u, 576);
    uint64_t n;
    ck_assert_int_eq(spade_gguf_get_array(g, "tokenizer.ggml.tokens", SPADE_GGUF_STRING, NULL, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 49152);
    /* every tensor dequantizes, to finite floats */
    size_t cap = 0;
    float *buf = NULL;
    for (size_t i = 0; i < spade_gguf_n_tensors(g); i++) {
        const spade_gguf_tensor *t = spade_gguf_tensor_at(g, i);
        if (t->n_elements > cap) {
            cap = t->n_elements;
            buf = realloc(buf, cap * sizeof *buf);
        }
        ck_assert_msg(spade_gguf_dequantize(t, buf, cap, err, sizeof err) == 0, "%s", err);
        for (uint64_t j = 0; j < t->n_elements; j += 997)
            ck_assert_msg(isfinite(buf[j]), "%s[%llu] = %g", t->name, (unsigned long long)j, buf[j]);
    }
    free(buf);
    spade_gguf_free(g);
}
END_TEST

/* The Qwen file holds the K-quants and Q5_0: the first and last row of each tensor. */
START_TEST(real_qwen_when_present) {
    char path[4096];
    if (spade_model_path("qwen2.5-coder-0.5b-instruct", path, sizeof path, err, sizeof err) < 0 ||
        access(path, R_OK) != 0) {
        printf("test_gguf: SKIP real-model test: qwen2.5-coder-0.5b-instruct not fetched (spade model fetch "
               "qwen2.5-coder-0.5b-instruct)\n");
        return;
    }
    spade_gguf *g;
    ck_assert_msg(spade_gguf_open(&g, path, err, sizeof err) == 0, "%s", err);
    char s[64];
    uint32_t u;
    ck_assert_int_eq(spade_gguf_get_cstr(g, "general.architecture", s, sizeof s, err, sizeof err), 0);
    ck_assert_str_eq(s, "qwen2");
    ck_assert_int_eq(spade_gguf_get_u32(g, "qwen2.block_count", &u, err, sizeof err), 0);
    ck_assert_uint_eq(u, 24);
    ck_assert_int_eq(spade_gguf_get_cstr(g, "tokenizer.ggml.pre", s, sizeof s, err, sizeof err), 0);
    ck_assert_str_eq(s, "qwen2");
    int seen[64] = {0};
    float *row = malloc(151936 * sizeof *row);
    for (size_t i = 0; i < spade_gguf_n_tensors(g); i++) {
        const spade_gguf_tensor *t = spade_gguf_tensor_at(g, i);
        uint64_t rows = t->n_elements / (uint64_t)t->dims[0];
        ck_assert_int_le(t->dims[0], 151936);
        seen[t->type & 63] = 1;
        for (uint64_t r = 0; r<rows; r += rows> 1 ? rows - 1 : 1) {
            ck_assert_msg(spade_gguf_dequantize_rows(t, r, 1, row, err, sizeof err) == 0, "%s", err);
            for (int64_t j = 0; j < t->dims[0]; j++)
                ck_assert_msg(isfinite(row[j]), "%s row %llu [%lld] = %g", t->name, (unsigned long long)r, (long long)j,
                              row[j]);
        }
    }
    ck_assert(seen[SPADE_GGML_Q4_K] && seen[SPADE_GGML_Q5_0] && seen[SPADE_GGML_Q6_K] && seen[SPADE_GGML_Q8_0]);
    free(row);
    spade_gguf_free(g);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gguf");
    TCase *c = tcase_create("gguf");
    tcase_add_checked_fixture(c, rng_reset, NULL);
    tcase_set_timeout(c, 300); /* the mutation walk and the real model take seconds, more on a loaded machine */
    tcase_add_test(c, dequantize_matches_gguf_py);
    tcase_add_test(c, writer_quantizes_as_gguf_py);
    tcase_add_test(c, fp16_round_trips);
    tcase_add_test(c, metadata_of_every_type);
    tcase_add_test(c, writer_round_trips);
    tcase_add_test(c, hostile_headers);
    tcase_add_test(c, hostile_metadata);
    tcase_add_test(c, hostile_tensors);
    tcase_add_test(c, every_truncation_is_refused);
    tcase_add_test(c, fuzz_harness_on_mutations);
    tcase_add_test(c, sha256_vectors);
    tcase_add_test(c, known_models_and_bootstrap_agree);
    tcase_add_test(c, real_smollm2_when_present);
    tcase_add_test(c, real_qwen_when_present);
    suite_add_tcase(s, c);
    return tu_run(s);
}
