/* gguf.h — reading and writing GGUF files (the llama.cpp / GGML model format), v2 and v3.
 *
 * What it is: a reader that treats a model file as hostile bytes. Opening walks
 * the whole header once and checks everything before anything is used: every
 * count is bounded by the bytes left in the file (and an absolute cap) before it
 * sizes an allocation, strings and arrays (nested ones included) lie inside the
 * file, keys and tensor names are unique, general.alignment is a power of two,
 * every tensor has 1..4 dimensions whose product does not overflow, a known
 * type, a first dimension that is a whole number of blocks, an aligned offset,
 * and bytes that lie inside the data section without overlapping another
 * tensor's. Every error names the field ("tensor 17 'blk.3.attn_q.weight':
 * offset 123 + 4096 bytes past the end of the file (99000)"). After a
 * successful open the accessors cannot read out of bounds.
 * Tensors are dequantized to float exactly as GGML defines each format (F32,
 * F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; checked bit for bit
 * against the gguf Python package in tests/test_gguf.c). The other GGML types
 * are sized (so such a file opens and lists) but not dequantized.
 * A writer makes GGUF v3 files with any metadata and F32, F16 or Q8_0 tensors
 * (quantized as GGML's reference quantizer does).
 *
 * What it is not: a model (architectures read this: the Llama code), a
 * tokenizer, or a big-endian reader (such a file is refused, saying so). The
 * file is mapped read-only and never copied; strings point into the mapping and
 * are not NUL-terminated (use the lengths, or spade_gguf_get_cstr).
 * Errors: 0 or -1, with the reason in err (spade_errf).
 */
#ifndef SPADE_POLICY_GGUF_H
#define SPADE_POLICY_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Metadata value types, numbered as in the file. */
enum {
    SPADE_GGUF_U8 = 0,
    SPADE_GGUF_I8 = 1,
    SPADE_GGUF_U16 = 2,
    SPADE_GGUF_I16 = 3,
    SPADE_GGUF_U32 = 4,
    SPADE_GGUF_I32 = 5,
    SPADE_GGUF_F32 = 6,
    SPADE_GGUF_BOOL = 7,
    SPADE_GGUF_STRING = 8,
    SPADE_GGUF_ARRAY = 9,
    SPADE_GGUF_U64 = 10,
    SPADE_GGUF_I64 = 11,
    SPADE_GGUF_F64 = 12,
    SPADE_GGUF_NVTYPES
};

/* Tensor types (GGML's numbers) this reader dequantizes; others are only sized. */
enum {
    SPADE_GGML_F32 = 0,
    SPADE_GGML_F16 = 1,
    SPADE_GGML_Q4_0 = 2,
    SPADE_GGML_Q4_1 = 3,
    SPADE_GGML_Q5_0 = 6,
    SPADE_GGML_Q5_1 = 7,
    SPADE_GGML_Q8_0 = 8,
    SPADE_GGML_Q4_K = 12,
    SPADE_GGML_Q5_K = 13,
    SPADE_GGML_Q6_K = 14,
    SPADE_GGML_BF16 = 30,
};

#define SPADE_GGUF_MAX_DIMS 4
#define SPADE_GGUF_MAX_NAME 63 /* bytes of a tensor name (GGML's limit, less its NUL) */
#define SPADE_GGUF_DEFAULT_ALIGNMENT 32
#define SPADE_GGUF_MAX_DEPTH 4 /* nesting of arrays of arrays */

typedef struct spade_gguf spade_gguf;
typedef struct spade_gguf_value spade_gguf_value; /* one metadata value (scalar, string or array) */

typedef struct spade_gguf_tensor {
    const char *name; /* NUL-terminated copy */
    int type; /* SPADE_GGML_* or another GGML type number */
    int n_dims; /* 1..4 */
    int64_t dims[SPADE_GGUF_MAX_DIMS]; /* dims[0] is the contiguous one (a row); unused ones are 1 */
    uint64_t n_elements;
    uint64_t offset; /* from the start of the file */
    uint64_t n_bytes;
    const void *data; /* inside the mapping */
} spade_gguf_tensor;

/* ---- opening ---- */

/* Maps path read-only and checks it (above). */
int spade_gguf_open(spade_gguf **out, const char *path, char *err, size_t errlen);
/* The same over len bytes in memory, which are not copied: they must outlive
 * the handle. name is used in messages (NULL: "<memory>"). */
int spade_gguf_open_memory(spade_gguf **out, const void *data, size_t len, const char *name, char *err, size_t errlen);
void spade_gguf_free(spade_gguf *g);

uint32_t spade_gguf_version(const spade_gguf *g);
uint64_t spade_gguf_alignment(const spade_gguf *g);
uint64_t spade_gguf_file_size(const spade_gguf *g);
uint64_t spade_gguf_data_offset(const spade_gguf *g); /* where the tensor data section starts */

/* ---- metadata ---- */

size_t spade_gguf_n_kv(const spade_gguf *g);
const char *spade_gguf_key(const spade_gguf *g, size_t i); /* NUL-terminated; NULL if i is out of range */
const spade_gguf_value *spade_gguf_kv_value(const spade_gguf *g, size_t i);
const spade_gguf_value *spade_gguf_get(const spade_gguf *g, const char *key); /* NULL: no such key */

int spade_gguf_value_type(const spade_gguf_value *v);
/* Scalars of any numeric type (bool reads as 0/1), converted: 0, or -1 when v is
 * not numeric or the value does not fit (a negative to an unsigned, etc.). */
int spade_gguf_value_i64(const spade_gguf_value *v, int64_t *out);
int spade_gguf_value_u64(const spade_gguf_value *v, uint64_t *out);
int spade_gguf_value_f64(const spade_gguf_value *v, double *out);
/* A string value: pointer into the file and byte length. -1 if not a string. */
int spade_gguf_value_str(const spade_gguf_value *v, const char **s, size_t *len);
/* Arrays: element type and count (0 and SPADE_GGUF_NVTYPES for a non-array). */
int spade_gguf_array_type(const spade_gguf_value *v);
uint64_t spade_gguf_array_len(const spade_gguf_value *v);
/* Element i of a numeric array, converted as the scalar getters do. */
int spade_gguf_array_i64(const spade_gguf_value *v, uint64_t i, int64_t *out);
int spade_gguf_array_f64(const spade_gguf_value *v, uint64_t i, double *out);
/* Element i of an array of strings. */
int spade_gguf_array_str(const spade_gguf_value *v, uint64_t i, const char **s, size_t *len);
/* Element i of an array of arrays (NULL otherwise). */
const spade_gguf_value *spade_gguf_array_sub(const spade_gguf_value *v, uint64_t i);

/* Typed getters by key. Each fails with a message naming the key when it is
 * missing, has another type, or (integers) does not fit; integer getters take
 * any integer type whose value fits, f32 takes f32 or f64. */
int spade_gguf_get_u32(const spade_gguf *g, const char *key, uint32_t *out, char *err, size_t errlen);
int spade_gguf_get_u64(const spade_gguf *g, const char *key, uint64_t *out, char *err, size_t errlen);
int spade_gguf_get_i64(const spade_gguf *g, const char *key, int64_t *out, char *err, size_t errlen);
int spade_gguf_get_f32(const spade_gguf *g, const char *key, float *out, char *err, size_t errlen);
int spade_gguf_get_bool(const spade_gguf *g, const char *key, int *out, char *err, size_t errlen);
int spade_gguf_get_str(const spade_gguf *g, const char *key, const char **s, size_t *len, char *err, size_t errlen);
/* The string copied into buf (cap bytes, NUL-terminated); fails if it holds a NUL or does not fit. */
int spade_gguf_get_cstr(const spade_gguf *g, const char *key, char *buf, size_t cap, char *err, size_t errlen);
/* An array with elements of type elem (SPADE_GGUF_NVTYPES: any) and its length. */
int spade_gguf_get_array(const spade_gguf *g, const char *key, int elem, const spade_gguf_value **v, uint64_t *n,
                         char *err, size_t errlen);
/* A numeric array copied into out[0..n), n being exactly its length (callers
 * learn it from spade_gguf_get_array and allocate by it: it is bounded by the file). */
int spade_gguf_get_arr_i32(const spade_gguf *g, const char *key, int32_t *out, uint64_t n, char *err, size_t errlen);
int spade_gguf_get_arr_f32(const spade_gguf *g, const char *key, float *out, uint64_t n, char *err, size_t errlen);

/* The value as text (JSON-like: strings quoted and escaped, arrays as [a, b, …]
 * with at most max_items elements shown per array); returns the length it would
 * have (snprintf's convention). Walks nested arrays. */
size_t spade_gguf_value_format(const spade_gguf_value *v, char *buf, size_t cap, size_t max_items);
const char *spade_gguf_vtype_name(int type); /* "u32", "string", ... or "?" */

/* ---- tensors ---- */

size_t spade_gguf_n_tensors(const spade_gguf *g);
const spade_gguf_tensor *spade_gguf_tensor_at(const spade_gguf *g, size_t i);
const spade_gguf_tensor *spade_gguf_find_tensor(const spade_gguf *g, const char *name); /* NULL: none */

/* The name of a GGML type ("Q4_K"), or NULL when this reader does not know it. */
const char *spade_ggml_type_name(int type);
/* Elements per block and bytes per block: 0, or -1 for an unknown type. */
int spade_ggml_type_size(int type, uint32_t *block_elems, uint32_t *block_bytes);
/* Whether spade_gguf_dequantize handles the type. */
int spade_ggml_can_dequantize(int type);

/* The whole tensor into out (n_out floats, at least t->n_elements). */
int spade_gguf_dequantize(const spade_gguf_tensor *t, float *out, uint64_t n_out, char *err, size_t errlen);
/* Rows row0 .. row0+n_rows-1 (a row is dims[0] elements; the tensor seen as
 * n_elements/dims[0] rows) into out (n_rows * dims[0] floats). */
int spade_gguf_dequantize_rows(const spade_gguf_tensor *t, uint64_t row0, uint64_t n_rows, float *out, char *err,
                               size_t errlen);
/* n elements (a whole number of blocks) of type from src (src_bytes long) into out. */
int spade_ggml_dequantize(int type, const void *src, size_t src_bytes, float *out, uint64_t n, char *err,
                          size_t errlen);

/* Half-precision conversions as GGML does them (round to nearest even). */
float spade_fp16_to_f32(uint16_t h);
uint16_t spade_f32_to_fp16(float f);
float spade_bf16_to_f32(uint16_t h);

/* ---- writing ---- */

typedef struct spade_gguf_writer spade_gguf_writer;

int spade_gguf_writer_new(spade_gguf_writer **out, char *err, size_t errlen);
void spade_gguf_writer_free(spade_gguf_writer *w);
/* Metadata, in the order added; a key set twice is an error at write time. */
int spade_gguf_writer_set_u32(spade_gguf_writer *w, const char *key, uint32_t v);
int spade_gguf_writer_set_i32(spade_gguf_writer *w, const char *key, int32_t v);
int spade_gguf_writer_set_u64(spade_gguf_writer *w, const char *key, uint64_t v);
int spade_gguf_writer_set_f32(spade_gguf_writer *w, const char *key, float v);
int spade_gguf_writer_set_bool(spade_gguf_writer *w, const char *key, int v);
int spade_gguf_writer_set_str(spade_gguf_writer *w, const char *key, const char *s);
/* A scalar of any type but string/array, from its bytes (little-endian, the type's size). */
int spade_gguf_writer_set_scalar(spade_gguf_writer *w, const char *key, int type, const void *bytes);
/* An array of n numeric elements of type elem (their bytes, packed). */
int spade_gguf_writer_set_array(spade_gguf_writer *w, const char *key, int elem, const void *elems, uint64_t n);
int spade_gguf_writer_set_arr_str(spade_gguf_writer *w, const char *key, const char *const *s, uint64_t n);
/* A value read from another file (any type, nested arrays and strings with
 * NUL bytes included), copied byte for byte: what an exporter uses to carry
 * a model's tokenizer.* keys over. The source file must stay open until
 * this returns (the bytes are copied now). */
int spade_gguf_writer_copy(spade_gguf_writer *w, const char *key, const spade_gguf_value *v);
/* A tensor of type SPADE_GGML_F32, F16 or Q8_0 (Q8_0: dims[0] a multiple of 32)
 * from n_elements floats, quantized at write time: data is not copied and must
 * stay valid until spade_gguf_writer_write returns. Tensors are laid out in the
 * order added. */
int spade_gguf_writer_add_tensor(spade_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *dims,
                                 const float *data, char *err, size_t errlen);
/* Writes the file (v3, general.alignment if set, else 32). */
int spade_gguf_writer_write(spade_gguf_writer *w, FILE *f, char *err, size_t errlen);
int spade_gguf_writer_write_path(spade_gguf_writer *w, const char *path, char *err, size_t errlen);
/* Rows of n floats quantized to Q8_0 / F16 as GGML's reference code does (n a
 * multiple of 32 for Q8_0); out holds n/32*34 or n*2 bytes. */
void spade_ggml_quantize_q8_0(const float *x, uint64_t n, void *out);
void spade_ggml_quantize_f16(const float *x, uint64_t n, void *out);

#endif /* SPADE_POLICY_GGUF_H */
