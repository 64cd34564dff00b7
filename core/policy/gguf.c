/* gguf.c — the GGUF reader, dequantizer and writer (gguf.h).
 *
 * The reader is a single pass over the header with a cursor that refuses to
 * step past the end; every count is compared with the bytes left before it
 * sizes an allocation (an element of a string array takes at least 8 bytes, a
 * nested array 12), so the memory a file can make this code allocate is a
 * small multiple of the file's own size. Values are not copied: a value
 * records where its bytes are, and the accessors read them from the mapping
 * (already checked to lie inside it). Not a place for model semantics: which
 * keys and tensors an architecture needs is the model code's business.
 */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errbuf.h"

#define MAX_KV (1u << 20) /* no real file has a million keys; more is an attack or garbage */
#define MAX_TENSORS (1u << 20)
#define MAX_KEY 65535

struct spade_gguf_value {
    const uint8_t *b; /* the file's first byte: offsets below are from it */
    uint8_t type, elem;
    uint64_t n; /* strings: bytes; arrays: elements */
    uint64_t off; /* scalars, strings: their bytes; arrays: the first element */
    uint64_t *str_off; /* arrays of strings: where each string's bytes start */
    struct spade_gguf_value *sub; /* arrays of arrays */
};

typedef struct ent {
    const char *s;
    uint64_t off;
    size_t i;
} ent;

typedef struct kv {
    char *key;
    spade_gguf_value v;
} kv;

struct spade_gguf {
    const uint8_t *p;
    uint64_t size;
    void *map; /* non-NULL when we mapped the file */
    uint32_t version;
    uint64_t alignment, data_off;
    kv *kvs;
    size_t n_kv;
    ent *kv_sorted; /* the keys, sorted, for lookup */
    spade_gguf_tensor *tensors;
    size_t n_tensors;
    ent *t_sorted; /* the tensor names, sorted */
    char *names; /* the tensor names, NUL-terminated, back to back */
};

/* ---- type tables ---- */

static const uint8_t vsize[SPADE_GGUF_NVTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const vname[SPADE_GGUF_NVTYPES] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                      "bool", "string", "array", "u64", "i64", "f64"};

const char *spade_gguf_vtype_name(int type) { return type >= 0 && type < SPADE_GGUF_NVTYPES ? vname[type] : "?"; }

typedef struct ttype {
    const char *name;
    uint16_t blck, bytes;
} ttype;

/* Block sizes of every GGML type, so that files with types we cannot
 * dequantize still open, list and have their offsets checked. */
static const ttype ttypes[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},         [2] = {"Q4_0", 32, 18},      [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},      [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 32, 40},
    [10] = {"Q2_K", 256, 84},    [11] = {"Q3_K", 256, 110},   [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},   [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},   [20] = {"IQ4_NL", 32, 18},   [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},   [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},         [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},        [28] = {"F64", 1, 8},        [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},   [35] = {"TQ2_0", 256, 66},   [39] = {"MXFP4", 32, 17},
};
#define N_TTYPES (int)(sizeof ttypes / sizeof *ttypes)

const char *spade_ggml_type_name(int type) { return type >= 0 && type < N_TTYPES ? ttypes[type].name : NULL; }

int spade_ggml_type_size(int type, uint32_t *block_elems, uint32_t *block_bytes) {
    if (!spade_ggml_type_name(type)) return -1;
    if (block_elems) *block_elems = ttypes[type].blck;
    if (block_bytes) *block_bytes = ttypes[type].bytes;
    return 0;
}

int spade_ggml_can_dequantize(int type) {
    switch (type) {
    case SPADE_GGML_F32:
    case SPADE_GGML_F16:
    case SPADE_GGML_BF16:
    case SPADE_GGML_Q8_0:
    case SPADE_GGML_Q4_0:
    case SPADE_GGML_Q4_1:
    case SPADE_GGML_Q5_0:
    case SPADE_GGML_Q5_1:
    case SPADE_GGML_Q4_K:
    case SPADE_GGML_Q5_K:
    case SPADE_GGML_Q6_K: return 1;
    default: return 0;
    }
}

/* ---- little-endian loads (the file's byte order, whatever the host's alignment) ---- */

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

static float ldf32(const uint8_t *p) {
    uint32_t u = ld32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- half precision ---- */

float spade_fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000 | man << 13; /* inf, nan (payload kept) */
    } else if (exp) {
        u = sign | (exp + 112) << 23 | man << 13;
    } else if (!man) {
        u = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        u = sign | (uint32_t)(112 - e) << 23 | (man & 0x3ff) << 13;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t spade_f32_to_fp16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, man = u & 0x7fffff;
    if (exp == 0xff) /* inf stays inf; nan stays a quiet nan */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign; /* below half the smallest subnormal: zero */
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = (uint32_t)e << 10 | man >> 13, rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++; /* a carry into the exponent is right: it rounds up to the next binade or inf */
    return (uint16_t)(sign | half);
}

float spade_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- dequantization: one block of each type (layouts as GGML defines them) ---- */

static void dq_q4_0(const uint8_t *b, float *y) {
    float d = spade_fp16_to_f32(ld16(b));
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b[2 + j] & 0xf) - 8);
        y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
    }
}

static void dq_q4_1(const uint8_t *b, float *y) {
    float d = spade_fp16_to_f32(ld16(b)), m = spade_fp16_to_f32(ld16(b + 2));
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)(b[4 + j] & 0xf) + m;
        y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
    }
}

static void dq_q5_0(const uint8_t *b, float *y) {
    float d = spade_fp16_to_f32(ld16(b));
    uint32_t qh = ld32(b + 2);
    for (int j = 0; j < 16; j++) {
        int lo = (b[6 + j] & 0xf) | ((qh >> j) & 1) << 4, hi = (b[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
        y[j] = d * (float)(lo - 16);
        y[j + 16] = d * (float)(hi - 16);
    }
}

static void dq_q5_1(const uint8_t *b, float *y) {
    float d = spade_fp16_to_f32(ld16(b)), m = spade_fp16_to_f32(ld16(b + 2));
    uint32_t qh = ld32(b + 4);
    for (int j = 0; j < 16; j++) {
        int lo = (b[8 + j] & 0xf) | ((qh >> j) & 1) << 4, hi = (b[8 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
        y[j] = d * (float)lo + m;
        y[j + 16] = d * (float)hi + m;
    }
}

static void dq_q8_0(const uint8_t *b, float *y) {
    float d = spade_fp16_to_f32(ld16(b));
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* The 6-bit scales and mins of Q4_K/Q5_K's eight sub-blocks, packed in 12 bytes:
 * bytes 0-3 hold scales 0-3 (low 6 bits) and the top 2 bits of scales 4-7,
 * bytes 4-7 the same for the mins, bytes 8-11 the low 4 bits of scale and min 4-7. */
static void k_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static void dq_q4_k(const uint8_t *b, float *y) {
    float d = spade_fp16_to_f32(ld16(b)), dmin = spade_fp16_to_f32(ld16(b + 2));
    const uint8_t *sc = b + 4, *q = b + 16;
    for (int g = 0; g < 4; g++) {
        for (int h = 0; h < 2; h++) {
            int s, m;
            k_scale_min(sc, 2 * g + h, &s, &m);
            float d1 = d * (float)s, m1 = dmin * (float)m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)((q[32 * g + l] >> (4 * h)) & 0xf) - m1;
        }
    }
}

static void dq_q5_k(const uint8_t *b, float *y) {
    float d = spade_fp16_to_f32(ld16(b)), dmin = spade_fp16_to_f32(ld16(b + 2));
    const uint8_t *sc = b + 4, *qh = b + 16, *q = b + 48;
    for (int g = 0; g < 4; g++) {
        for (int h = 0; h < 2; h++) {
            int s, m, sub = 2 * g + h;
            k_scale_min(sc, sub, &s, &m);
            float d1 = d * (float)s, m1 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                *y++ = d1 * (float)(((q[32 * g + l] >> (4 * h)) & 0xf) | ((qh[l] >> sub) & 1) << 4) - m1;
        }
    }
}

static void dq_q6_k(const uint8_t *b, float *y) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = spade_fp16_to_f32(ld16(b + 208));
    for (int i = 0; i < 256; i++) {
        int h = i / 128, r = i % 128;
        int lo = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0xf;
        int hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
        y[i] = d * (float)sc[i / 16] * (float)((lo | hi << 4) - 32);
    }
}

int spade_ggml_dequantize(int type, const void *src, size_t src_bytes, float *out, uint64_t n, char *err,
                          size_t errlen) {
    uint32_t blck, bytes;
    if (spade_ggml_type_size(type, &blck, &bytes) < 0 || !spade_ggml_can_dequantize(type)) {
        const char *nm = spade_ggml_type_name(type);
        spade_errf(err, errlen, "cannot dequantize tensor type %s (%d)", nm ? nm : "unknown", type);
        return -1;
    }
    if (n % blck || n / blck > src_bytes / bytes) {
        spade_errf(err, errlen, "%llu %s elements: not a whole number of %u-element blocks within %zu bytes",
                   (unsigned long long)n, ttypes[type].name, blck, src_bytes);
        return -1;
    }
    const uint8_t *b = src;
    uint64_t nb = n / blck;
    switch (type) {
    case SPADE_GGML_F32:
        for (uint64_t i = 0; i < n; i++) out[i] = ldf32(b + 4 * i);
        break;
    case SPADE_GGML_F16:
        for (uint64_t i = 0; i < n; i++) out[i] = spade_fp16_to_f32(ld16(b + 2 * i));
        break;
    case SPADE_GGML_BF16:
        for (uint64_t i = 0; i < n; i++) out[i] = spade_bf16_to_f32(ld16(b + 2 * i));
        break;
    default: {
        void (*fn)(const uint8_t *, float *) = type == SPADE_GGML_Q4_0   ? dq_q4_0
                                               : type == SPADE_GGML_Q4_1 ? dq_q4_1
                                               : type == SPADE_GGML_Q5_0 ? dq_q5_0
                                               : type == SPADE_GGML_Q5_1 ? dq_q5_1
                                               : type == SPADE_GGML_Q8_0 ? dq_q8_0
                                               : type == SPADE_GGML_Q4_K ? dq_q4_k
                                               : type == SPADE_GGML_Q5_K ? dq_q5_k
                                                                         : dq_q6_k;
        for (uint64_t i = 0; i < nb; i++) fn(b + i * bytes, out + i * blck);
    }
    }
    return 0;
}

int spade_gguf_dequantize(const spade_gguf_tensor *t, float *out, uint64_t n_out, char *err, size_t errlen) {
    if (n_out < t->n_elements) {
        spade_errf(err, errlen, "tensor '%s': %llu elements do not fit in %llu floats", t->name,
                   (unsigned long long)t->n_elements, (unsigned long long)n_out);
        return -1;
    }
    char e[256];
    if (spade_ggml_dequantize(t->type, t->data, t->n_bytes, out, t->n_elements, e, sizeof e) < 0) {
        spade_errf(err, errlen, "tensor '%s': %s", t->name, e);
        return -1;
    }
    return 0;
}

int spade_gguf_dequantize_rows(const spade_gguf_tensor *t, uint64_t row0, uint64_t n_rows, float *out, char *err,
                               size_t errlen) {
    uint64_t row = (uint64_t)t->dims[0], rows = t->n_elements / row, row_bytes = t->n_bytes / rows;
    if (row0 > rows || n_rows > rows - row0) {
        spade_errf(err, errlen, "tensor '%s': rows %llu..%llu asked, it has %llu", t->name, (unsigned long long)row0,
                   (unsigned long long)(row0 + n_rows), (unsigned long long)rows);
        return -1;
    }
    char e[256];
    if (spade_ggml_dequantize(t->type, (const uint8_t *)t->data + row0 * row_bytes, n_rows * row_bytes, out,
                              n_rows * row, e, sizeof e) < 0) {
        spade_errf(err, errlen, "tensor '%s': %s", t->name, e);
        return -1;
    }
    return 0;
}

/* ---- the cursor ---- */

typedef struct rd {
    const uint8_t *p;
    uint64_t size, pos;
    const char *name;
    char *err;
    size_t errlen;
} rd;

static int fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(rd *r, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    spade_errf(r->err, r->errlen, "%s: %s", r->name, msg);
    return -1;
}

static uint64_t left(const rd *r) { return r->size - r->pos; }

static int need(rd *r, uint64_t n, const char *what) {
    if (n <= left(r)) return 0;
    return fail(r, "%s at byte %llu: the file ends there (truncated: %llu bytes needed, %llu left)", what,
                (unsigned long long)r->pos, (unsigned long long)n, (unsigned long long)left(r));
}

static int rd_u32(rd *r, uint32_t *v, const char *what) {
    if (need(r, 4, what) < 0) return -1;
    *v = ld32(r->p + r->pos);
    r->pos += 4;
    return 0;
}

static int rd_u64(rd *r, uint64_t *v, const char *what) {
    if (need(r, 8, what) < 0) return -1;
    *v = ld64(r->p + r->pos);
    r->pos += 8;
    return 0;
}

/* A string's length and bytes: *off, *len. */
static int rd_str(rd *r, uint64_t *off, uint64_t *len, const char *what) {
    char w[320];
    snprintf(w, sizeof w, "%s: length", what);
    if (rd_u64(r, len, w) < 0) return -1;
    if (*len > left(r))
        return fail(r, "%s: a string of %llu bytes at byte %llu runs past the end of the file (%llu bytes left)", what,
                    (unsigned long long)*len, (unsigned long long)r->pos, (unsigned long long)left(r));
    *off = r->pos;
    r->pos += *len;
    return 0;
}

static void value_free(spade_gguf_value *v) {
    if (v->sub)
        for (uint64_t i = 0; i < v->n; i++) value_free(&v->sub[i]);
    free(v->sub);
    free(v->str_off);
    v->sub = NULL;
    v->str_off = NULL;
}

static int parse_value(rd *r, spade_gguf_value *v, uint32_t type, int depth, const char *what) {
    *v = (spade_gguf_value){.b = r->p, .type = (uint8_t)type};
    if (type >= SPADE_GGUF_NVTYPES) return fail(r, "%s: unknown value type %u", what, type);
    if (type == SPADE_GGUF_STRING) return rd_str(r, &v->off, &v->n, what);
    if (type != SPADE_GGUF_ARRAY) {
        if (need(r, vsize[type], what) < 0) return -1;
        if (type == SPADE_GGUF_BOOL && r->p[r->pos] > 1)
            return fail(r, "%s: a bool of value %u (not 0 or 1)", what, r->p[r->pos]);
        v->off = r->pos;
        r->pos += vsize[type];
        return 0;
    }
    char w[320];
    uint32_t elem;
    snprintf(w, sizeof w, "%s: array element type", what);
    if (rd_u32(r, &elem, w) < 0) return -1;
    if (elem >= SPADE_GGUF_NVTYPES) return fail(r, "%s: array of unknown value type %u", what, elem);
    if (elem == SPADE_GGUF_ARRAY && depth >= SPADE_GGUF_MAX_DEPTH)
        return fail(r, "%s: arrays nested more than %d deep", what, SPADE_GGUF_MAX_DEPTH);
    v->elem = (uint8_t)elem;
    snprintf(w, sizeof w, "%s: array length", what);
    if (rd_u64(r, &v->n, w) < 0) return -1;
    v->off = r->pos;
    /* The cap before any allocation: each element takes at least min bytes. */
    uint64_t min = elem == SPADE_GGUF_STRING ? 8 : elem == SPADE_GGUF_ARRAY ? 12 : vsize[elem];
    if (v->n > left(r) / min) {
        uint64_t n = v->n;
        v->n = 0;
        return fail(r, "%s: an array of %llu %s needs at least %llu bytes, %llu are left in the file", what,
                    (unsigned long long)n, vname[elem],
                    n > UINT64_MAX / min ? UINT64_MAX : (unsigned long long)(n * min), (unsigned long long)left(r));
    }
    if (elem != SPADE_GGUF_STRING && elem != SPADE_GGUF_ARRAY) {
        if (elem == SPADE_GGUF_BOOL)
            for (uint64_t i = 0; i < v->n; i++)
                if (r->p[r->pos + i] > 1)
                    return fail(r, "%s[%llu]: a bool of value %u (not 0 or 1)", what, (unsigned long long)i,
                                r->p[r->pos + i]);
        r->pos += v->n * min;
        return 0;
    }
    uint64_t n = v->n;
    if (elem == SPADE_GGUF_STRING) {
        if (n && !(v->str_off = malloc(n * sizeof *v->str_off)))
            return fail(r, "%s: out of memory for %llu strings", what, (unsigned long long)n);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t len;
            snprintf(w, sizeof w, "%s[%llu]", what, (unsigned long long)i);
            if (rd_str(r, &v->str_off[i], &len, w) < 0) return -1;
        }
        return 0;
    }
    v->n = 0; /* counts the parsed sub-arrays, so that value_free frees only those */
    if (n && !(v->sub = calloc(n, sizeof *v->sub)))
        return fail(r, "%s: out of memory for %llu arrays", what, (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        snprintf(w, sizeof w, "%s[%llu]", what, (unsigned long long)i);
        v->n = i + 1;
        if (parse_value(r, &v->sub[i], SPADE_GGUF_ARRAY, depth + 1, w) < 0) return -1;
    }
    return 0;
}

/* A printable excerpt of a name for messages (at most 80 bytes, control bytes as '?'). */
static void excerpt(const uint8_t *s, uint64_t len, char out[96]) {
    size_t n = len > 80 ? 80 : (size_t)len, k = 0;
    for (size_t i = 0; i < n; i++) out[k++] = s[i] < 0x20 || s[i] == 0x7f ? '?' : (char)s[i];
    if (len > 80) out[k++] = '.', out[k++] = '.', out[k++] = '.';
    out[k] = 0;
}

/* Sorting entries carry what they are sorted by: qsort has no context argument
 * in C11, and a static one would race between threads opening files. */
static int cmp_ent_s(const void *a, const void *b) { return strcmp(((const ent *)a)->s, ((const ent *)b)->s); }
static int cmp_ent_off(const void *a, const void *b) {
    uint64_t x = ((const ent *)a)->off, y = ((const ent *)b)->off;
    return x < y ? -1 : x > y;
}

void spade_gguf_free(spade_gguf *g) {
    if (!g) return;
    for (size_t i = 0; i < g->n_kv; i++) {
        free(g->kvs[i].key);
        value_free(&g->kvs[i].v);
    }
    free(g->kvs);
    free(g->kv_sorted);
    free(g->tensors);
    free(g->t_sorted);
    free(g->names);
    if (g->map) munmap(g->map, (size_t)g->size);
    free(g);
}

static int parse_kvs(spade_gguf *g, rd *r, uint64_t n_kv) {
    /* the smallest key-value: an 8-byte length, a 1-byte key, a type, a 1-byte value */
    if (n_kv > MAX_KV || n_kv > left(r) / 14)
        return fail(r, "header: %llu metadata keys is absurd for a file with %llu bytes left (at most %llu fit)",
                    (unsigned long long)n_kv, (unsigned long long)left(r),
                    (unsigned long long)(left(r) / 14 < MAX_KV ? left(r) / 14 : MAX_KV));
    if (n_kv && !(g->kvs = calloc((size_t)n_kv, sizeof *g->kvs)))
        return fail(r, "out of memory for %llu keys", (unsigned long long)n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        char w[320], ex[96];
        uint64_t off, len;
        uint32_t type;
        snprintf(w, sizeof w, "key %llu", (unsigned long long)i);
        if (rd_str(r, &off, &len, w) < 0) return -1;
        excerpt(r->p + off, len, ex);
        if (!len) return fail(r, "key %llu: an empty key", (unsigned long long)i);
        if (len > MAX_KEY)
            return fail(r, "key %llu '%s': %llu bytes long (at most %d)", (unsigned long long)i, ex,
                        (unsigned long long)len, MAX_KEY);
        if (memchr(r->p + off, 0, (size_t)len))
            return fail(r, "key %llu '%s': holds a NUL byte", (unsigned long long)i, ex);
        kv *k = &g->kvs[i];
        if (!(k->key = malloc((size_t)len + 1))) return fail(r, "out of memory");
        memcpy(k->key, r->p + off, (size_t)len);
        k->key[len] = 0;
        g->n_kv = (size_t)i + 1;
        snprintf(w, sizeof w, "key %llu '%s': value type", (unsigned long long)i, ex);
        if (rd_u32(r, &type, w) < 0) return -1;
        snprintf(w, sizeof w, "key %llu '%s'", (unsigned long long)i, ex);
        if (parse_value(r, &k->v, type, 0, w) < 0) return -1;
    }
    if (g->n_kv && !(g->kv_sorted = malloc(g->n_kv * sizeof *g->kv_sorted))) return fail(r, "out of memory");
    for (size_t i = 0; i < g->n_kv; i++) g->kv_sorted[i] = (ent){.s = g->kvs[i].key, .i = i};
    if (g->n_kv) /* qsort's pointer must not be NULL, even for no elements */
        qsort(g->kv_sorted, g->n_kv, sizeof *g->kv_sorted, cmp_ent_s);
    for (size_t i = 1; i < g->n_kv; i++) {
        size_t a = g->kv_sorted[i - 1].i, b = g->kv_sorted[i].i;
        if (!strcmp(g->kvs[a].key, g->kvs[b].key)) {
            char ex[96];
            excerpt((const uint8_t *)g->kvs[a].key, strlen(g->kvs[a].key), ex);
            return fail(r, "key %zu '%s': a duplicate of key %zu", a > b ? a : b, ex, a < b ? a : b);
        }
    }
    return 0;
}

static int parse_tensors(spade_gguf *g, rd *r, uint64_t n_t) {
    /* the smallest tensor info: name length 8 + 1, n_dims 4, one dim 8, type 4, offset 8 */
    if (n_t > MAX_TENSORS || n_t > left(r) / 33)
        return fail(r, "header: %llu tensors is absurd for a file with %llu bytes left (at most %llu fit)",
                    (unsigned long long)n_t, (unsigned long long)left(r),
                    (unsigned long long)(left(r) / 33 < MAX_TENSORS ? left(r) / 33 : MAX_TENSORS));
    if (n_t && (!(g->tensors = calloc((size_t)n_t, sizeof *g->tensors)) ||
                !(g->names = malloc((size_t)n_t * (SPADE_GGUF_MAX_NAME + 1))) ||
                !(g->t_sorted = malloc((size_t)n_t * sizeof *g->t_sorted))))
        return fail(r, "out of memory for %llu tensors", (unsigned long long)n_t);
    for (uint64_t i = 0; i < n_t; i++) {
        char w[320], ex[96];
        unsigned long long ii = (unsigned long long)i;
        uint64_t off, len;
        spade_gguf_tensor *t = &g->tensors[i];
        snprintf(w, sizeof w, "tensor %llu: name", ii);
        if (rd_str(r, &off, &len, w) < 0) return -1;
        excerpt(r->p + off, len, ex);
        if (!len) return fail(r, "tensor %llu: an empty name", ii);
        if (len > SPADE_GGUF_MAX_NAME)
            return fail(r, "tensor %llu '%s': a name of %llu bytes (at most %d)", ii, ex, (unsigned long long)len,
                        SPADE_GGUF_MAX_NAME);
        if (memchr(r->p + off, 0, (size_t)len)) return fail(r, "tensor %llu '%s': the name holds a NUL byte", ii, ex);
        char *name = g->names + i * (SPADE_GGUF_MAX_NAME + 1);
        memcpy(name, r->p + off, (size_t)len);
        name[len] = 0;
        t->name = name;
        g->n_tensors = (size_t)i + 1;
        uint32_t nd, type;
        snprintf(w, sizeof w, "tensor %llu '%s': n_dims", ii, name);
        if (rd_u32(r, &nd, w) < 0) return -1;
        if (nd < 1 || nd > SPADE_GGUF_MAX_DIMS)
            return fail(r, "tensor %llu '%s': n_dims %u (1 to %d allowed)", ii, name, nd, SPADE_GGUF_MAX_DIMS);
        t->n_dims = (int)nd;
        uint64_t ne = 1;
        for (int d = 0; d < SPADE_GGUF_MAX_DIMS; d++) {
            uint64_t dim = 1;
            snprintf(w, sizeof w, "tensor %llu '%s': dimension %d", ii, name, d);
            if (d < (int)nd && rd_u64(r, &dim, w) < 0) return -1;
            if (dim == 0 || dim > (uint64_t)INT64_MAX)
                return fail(r, "tensor %llu '%s': dimension %d is %llu", ii, name, d, (unsigned long long)dim);
            if (ne > (uint64_t)INT64_MAX / dim)
                return fail(r, "tensor %llu '%s': the dimensions' product overflows (dimension %d = %llu)", ii, name, d,
                            (unsigned long long)dim);
            ne *= dim;
            t->dims[d] = (int64_t)dim;
        }
        t->n_elements = ne;
        snprintf(w, sizeof w, "tensor %llu '%s': type", ii, name);
        if (rd_u32(r, &type, w) < 0) return -1;
        uint32_t blck, bytes;
        if (type > INT32_MAX || spade_ggml_type_size((int)type, &blck, &bytes) < 0)
            return fail(r, "tensor %llu '%s': type %u is not a GGML tensor type this reader knows", ii, name, type);
        t->type = (int)type;
        if ((uint64_t)t->dims[0] % blck)
            return fail(r, "tensor %llu '%s': dimension 0 (%lld) is not a multiple of %s's block of %u", ii, name,
                        (long long)t->dims[0], ttypes[type].name, blck);
        if (ne / blck > UINT64_MAX / bytes) return fail(r, "tensor %llu '%s': its size in bytes overflows", ii, name);
        t->n_bytes = ne / blck * bytes;
        snprintf(w, sizeof w, "tensor %llu '%s': offset", ii, name);
        if (rd_u64(r, &t->offset, w) < 0) return -1;
    }
    for (size_t i = 0; i < g->n_tensors; i++)
        g->t_sorted[i] = (ent){.s = g->tensors[i].name, .off = g->tensors[i].offset, .i = i};
    if (g->n_tensors) qsort(g->t_sorted, g->n_tensors, sizeof *g->t_sorted, cmp_ent_s);
    for (size_t i = 1; i < g->n_tensors; i++) {
        size_t a = g->t_sorted[i - 1].i, b = g->t_sorted[i].i;
        if (!strcmp(g->tensors[a].name, g->tensors[b].name))
            return fail(r, "tensor %zu '%s': a duplicate of tensor %zu's name", a > b ? a : b, g->tensors[a].name,
                        a < b ? a : b);
    }
    return 0;
}

static int place_tensors(spade_gguf *g, rd *r) {
    uint64_t a = g->alignment, data = r->pos + (a - r->pos % a) % a;
    if (!g->n_tensors) {
        g->data_off = data > r->size ? r->size : data;
        return 0;
    }
    if (data > r->size)
        return fail(r, "the tensor data should start at byte %llu (aligned to %llu), past the end of the file (%llu)",
                    (unsigned long long)data, (unsigned long long)a, (unsigned long long)r->size);
    g->data_off = data;
    uint64_t room = r->size - data;
    for (size_t i = 0; i < g->n_tensors; i++) {
        spade_gguf_tensor *t = &g->tensors[i];
        if (t->offset % a)
            return fail(r, "tensor %zu '%s': offset %llu is not a multiple of the alignment %llu", i, t->name,
                        (unsigned long long)t->offset, (unsigned long long)a);
        if (t->offset > room || t->n_bytes > room - t->offset)
            return fail(r,
                        "tensor %zu '%s': offset %llu + %llu bytes past the end of the file (%llu bytes; the data "
                        "starts at byte %llu)",
                        i, t->name, (unsigned long long)t->offset, (unsigned long long)t->n_bytes,
                        (unsigned long long)r->size, (unsigned long long)data);
    }
    /* t_sorted is reused: by offset now, to find overlaps; by name again after */
    qsort(g->t_sorted, g->n_tensors, sizeof *g->t_sorted, cmp_ent_off);
    for (size_t k = 1; k < g->n_tensors; k++) {
        const spade_gguf_tensor *p = &g->tensors[g->t_sorted[k - 1].i], *t = &g->tensors[g->t_sorted[k].i];
        if (p->offset + p->n_bytes > t->offset)
            return fail(r, "tensor %zu '%s': bytes %llu..%llu overlap tensor %zu '%s' (bytes %llu..%llu)",
                        g->t_sorted[k].i, t->name, (unsigned long long)t->offset,
                        (unsigned long long)(t->offset + t->n_bytes), g->t_sorted[k - 1].i, p->name,
                        (unsigned long long)p->offset, (unsigned long long)(p->offset + p->n_bytes));
    }
    qsort(g->t_sorted, g->n_tensors, sizeof *g->t_sorted, cmp_ent_s);
    for (size_t i = 0; i < g->n_tensors; i++) {
        g->tensors[i].offset += data;
        g->tensors[i].data = g->p + g->tensors[i].offset;
    }
    return 0;
}

static int parse(spade_gguf *g, const char *name, char *err, size_t errlen) {
    rd r = {.p = g->p, .size = g->size, .name = name, .err = err, .errlen = errlen};
    uint32_t magic, version;
    uint64_t n_t, n_kv;
    if (rd_u32(&r, &magic, "header: magic") < 0) return -1;
    if (magic != 0x46554747u) /* "GGUF" */
        return fail(&r, "header: not a GGUF file (the first 4 bytes are not \"GGUF\")");
    if (rd_u32(&r, &version, "header: version") < 0) return -1;
    if (version == 0x02000000u || version == 0x03000000u)
        return fail(&r, "header: a big-endian GGUF file (this reader reads little-endian ones)");
    if (version == 1)
        return fail(&r, "header: GGUF version 1 (from 2023, before v2) is not read; convert the file again");
    if (version != 2 && version != 3) return fail(&r, "header: GGUF version %u (versions 2 and 3 are read)", version);
    g->version = version;
    if (rd_u64(&r, &n_t, "header: tensor count") < 0 || rd_u64(&r, &n_kv, "header: metadata key count") < 0) return -1;
    if (parse_kvs(g, &r, n_kv) < 0) return -1;
    g->alignment = SPADE_GGUF_DEFAULT_ALIGNMENT;
    const spade_gguf_value *al = spade_gguf_get(g, "general.alignment");
    if (al) {
        if (al->type != SPADE_GGUF_U32)
            return fail(&r, "key 'general.alignment': has type %s, not u32", vname[al->type]);
        uint32_t a = ld32(g->p + al->off);
        if (!a || (a & (a - 1))) return fail(&r, "key 'general.alignment': %u is not a power of two", a);
        g->alignment = a;
    }
    if (parse_tensors(g, &r, n_t) < 0) return -1;
    return place_tensors(g, &r);
}

int spade_gguf_open_memory(spade_gguf **out, const void *data, size_t len, const char *name, char *err, size_t errlen) {
    *out = NULL;
    spade_gguf *g = calloc(1, sizeof *g);
    if (!g) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    g->p = data;
    g->size = len;
    if (parse(g, name ? name : "<memory>", err, errlen) < 0) {
        spade_gguf_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

int spade_gguf_open(spade_gguf **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        spade_errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        spade_errf(err, errlen, "%s: %s", path,
                   S_ISDIR(st.st_mode)    ? "is a directory"
                   : !S_ISREG(st.st_mode) ? "not a regular file"
                                          : "empty");
        close(fd);
        return -1;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        spade_errf(err, errlen, "%s: cannot map it: %s", path, strerror(errno));
        return -1;
    }
    spade_gguf *g = NULL;
    if (spade_gguf_open_memory(&g, map, (size_t)st.st_size, path, err, errlen) < 0) {
        munmap(map, (size_t)st.st_size);
        return -1;
    }
    g->map = map;
    *out = g;
    return 0;
}

uint32_t spade_gguf_version(const spade_gguf *g) { return g->version; }
uint64_t spade_gguf_alignment(const spade_gguf *g) { return g->alignment; }
uint64_t spade_gguf_file_size(const spade_gguf *g) { return g->size; }
uint64_t spade_gguf_data_offset(const spade_gguf *g) { return g->data_off; }

/* ---- metadata access ---- */

size_t spade_gguf_n_kv(const spade_gguf *g) { return g->n_kv; }

const char *spade_gguf_key(const spade_gguf *g, size_t i) { return i < g->n_kv ? g->kvs[i].key : NULL; }

const spade_gguf_value *spade_gguf_kv_value(const spade_gguf *g, size_t i) { return i < g->n_kv ? &g->kvs[i].v : NULL; }

const spade_gguf_value *spade_gguf_get(const spade_gguf *g, const char *key) {
    size_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->kv_sorted[mid].s, key);
        if (!c) return &g->kvs[g->kv_sorted[mid].i].v;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int spade_gguf_value_type(const spade_gguf_value *v) { return v->type; }

/* The scalar of type t at p, as an integer (*is_int) or a double. */
typedef struct num {
    int is_int, is_neg;
    uint64_t u; /* is_int: the magnitude's bits (two's complement when negative) */
    double f;
} num;

static int load_num(int t, const uint8_t *p, num *n) {
    *n = (num){.is_int = 1};
    switch (t) {
    case SPADE_GGUF_U8:
    case SPADE_GGUF_BOOL: n->u = p[0]; break;
    case SPADE_GGUF_I8:
        n->u = (uint64_t)(int64_t)(int8_t)p[0];
        n->is_neg = (int8_t)p[0] < 0;
        break;
    case SPADE_GGUF_U16: n->u = ld16(p); break;
    case SPADE_GGUF_I16:
        n->u = (uint64_t)(int64_t)(int16_t)ld16(p);
        n->is_neg = (int16_t)ld16(p) < 0;
        break;
    case SPADE_GGUF_U32: n->u = ld32(p); break;
    case SPADE_GGUF_I32:
        n->u = (uint64_t)(int64_t)(int32_t)ld32(p);
        n->is_neg = (int32_t)ld32(p) < 0;
        break;
    case SPADE_GGUF_U64: n->u = ld64(p); break;
    case SPADE_GGUF_I64:
        n->u = ld64(p);
        n->is_neg = (int64_t)ld64(p) < 0;
        break;
    case SPADE_GGUF_F32:
        n->is_int = 0;
        n->f = ldf32(p);
        break;
    case SPADE_GGUF_F64: {
        uint64_t u = ld64(p);
        n->is_int = 0;
        memcpy(&n->f, &u, 8);
        break;
    }
    default: return -1;
    }
    return 0;
}

static int num_i64(const num *n, int t, int64_t *out) {
    if (!n->is_int || (!n->is_neg && t == SPADE_GGUF_U64 && n->u > (uint64_t)INT64_MAX)) return -1;
    *out = (int64_t)n->u;
    return 0;
}

static int num_f64(const num *n, double *out) {
    *out = n->is_int ? (n->is_neg ? (double)(int64_t)n->u : (double)n->u) : n->f;
    return 0;
}

int spade_gguf_value_i64(const spade_gguf_value *v, int64_t *out) {
    num n;
    if (load_num(v->type, v->b + v->off, &n) < 0) return -1;
    return num_i64(&n, v->type, out);
}

int spade_gguf_value_u64(const spade_gguf_value *v, uint64_t *out) {
    num n;
    if (load_num(v->type, v->b + v->off, &n) < 0 || !n.is_int || n.is_neg) return -1;
    *out = n.u;
    return 0;
}

int spade_gguf_value_f64(const spade_gguf_value *v, double *out) {
    num n;
    if (load_num(v->type, v->b + v->off, &n) < 0) return -1;
    return num_f64(&n, out);
}

int spade_gguf_value_str(const spade_gguf_value *v, const char **s, size_t *len) {
    if (v->type != SPADE_GGUF_STRING) return -1;
    *s = (const char *)v->b + v->off;
    *len = (size_t)v->n;
    return 0;
}

int spade_gguf_array_type(const spade_gguf_value *v) {
    return v->type == SPADE_GGUF_ARRAY ? v->elem : SPADE_GGUF_NVTYPES;
}

uint64_t spade_gguf_array_len(const spade_gguf_value *v) { return v->type == SPADE_GGUF_ARRAY ? v->n : 0; }

int spade_gguf_array_i64(const spade_gguf_value *v, uint64_t i, int64_t *out) {
    num n;
    if (v->type != SPADE_GGUF_ARRAY || i >= v->n || !vsize[v->elem] ||
        load_num(v->elem, v->b + v->off + i * vsize[v->elem], &n) < 0)
        return -1;
    return num_i64(&n, v->elem, out);
}

int spade_gguf_array_f64(const spade_gguf_value *v, uint64_t i, double *out) {
    num n;
    if (v->type != SPADE_GGUF_ARRAY || i >= v->n || !vsize[v->elem] ||
        load_num(v->elem, v->b + v->off + i * vsize[v->elem], &n) < 0)
        return -1;
    return num_f64(&n, out);
}

int spade_gguf_array_str(const spade_gguf_value *v, uint64_t i, const char **s, size_t *len) {
    if (v->type != SPADE_GGUF_ARRAY || v->elem != SPADE_GGUF_STRING || i >= v->n) return -1;
    const uint8_t *b = v->b;
    *s = (const char *)b + v->str_off[i];
    *len = (size_t)ld64(b + v->str_off[i] - 8);
    return 0;
}

const spade_gguf_value *spade_gguf_array_sub(const spade_gguf_value *v, uint64_t i) {
    if (v->type != SPADE_GGUF_ARRAY || v->elem != SPADE_GGUF_ARRAY || i >= v->n) return NULL;
    return &v->sub[i];
}

/* ---- typed getters by key ---- */

static const spade_gguf_value *get_typed(const spade_gguf *g, const char *key, char *err, size_t errlen) {
    const spade_gguf_value *v = spade_gguf_get(g, key);
    if (!v) spade_errf(err, errlen, "key '%s' is missing", key);
    return v;
}

static int int_getter(const spade_gguf *g, const char *key, int64_t lo, uint64_t hi, const char *tname, uint64_t *u,
                      int64_t *s, char *err, size_t errlen) {
    const spade_gguf_value *v = get_typed(g, key, err, errlen);
    if (!v) return -1;
    num n;
    if (v->type == SPADE_GGUF_BOOL || load_num(v->type, v->b + v->off, &n) < 0 || !n.is_int) {
        spade_errf(err, errlen, "key '%s' has type %s, not an integer", key, vname[v->type]);
        return -1;
    }
    int neg = n.is_neg;
    if ((neg && (lo >= 0 || (int64_t)n.u < lo)) || (!neg && n.u > hi)) {
        if (neg)
            spade_errf(err, errlen, "key '%s' = %lld does not fit in %s", key, (long long)(int64_t)n.u, tname);
        else
            spade_errf(err, errlen, "key '%s' = %llu does not fit in %s", key, (unsigned long long)n.u, tname);
        return -1;
    }
    if (u) *u = n.u;
    if (s) *s = (int64_t)n.u;
    return 0;
}

int spade_gguf_get_u32(const spade_gguf *g, const char *key, uint32_t *out, char *err, size_t errlen) {
    uint64_t u;
    if (int_getter(g, key, 0, UINT32_MAX, "u32", &u, NULL, err, errlen) < 0) return -1;
    *out = (uint32_t)u;
    return 0;
}

int spade_gguf_get_u64(const spade_gguf *g, const char *key, uint64_t *out, char *err, size_t errlen) {
    return int_getter(g, key, 0, UINT64_MAX, "u64", out, NULL, err, errlen);
}

int spade_gguf_get_i64(const spade_gguf *g, const char *key, int64_t *out, char *err, size_t errlen) {
    return int_getter(g, key, INT64_MIN, INT64_MAX, "i64", NULL, out, err, errlen);
}

int spade_gguf_get_f32(const spade_gguf *g, const char *key, float *out, char *err, size_t errlen) {
    const spade_gguf_value *v = get_typed(g, key, err, errlen);
    if (!v) return -1;
    if (v->type != SPADE_GGUF_F32 && v->type != SPADE_GGUF_F64) {
        spade_errf(err, errlen, "key '%s' has type %s, not f32", key, vname[v->type]);
        return -1;
    }
    double d;
    spade_gguf_value_f64(v, &d);
    *out = (float)d;
    return 0;
}

int spade_gguf_get_bool(const spade_gguf *g, const char *key, int *out, char *err, size_t errlen) {
    const spade_gguf_value *v = get_typed(g, key, err, errlen);
    if (!v) return -1;
    if (v->type != SPADE_GGUF_BOOL) {
        spade_errf(err, errlen, "key '%s' has type %s, not bool", key, vname[v->type]);
        return -1;
    }
    *out = v->b[v->off];
    return 0;
}

int spade_gguf_get_str(const spade_gguf *g, const char *key, const char **s, size_t *len, char *err, size_t errlen) {
    const spade_gguf_value *v = get_typed(g, key, err, errlen);
    if (!v) return -1;
    if (spade_gguf_value_str(v, s, len) < 0) {
        spade_errf(err, errlen, "key '%s' has type %s, not string", key, vname[v->type]);
        return -1;
    }
    return 0;
}

int spade_gguf_get_cstr(const spade_gguf *g, const char *key, char *buf, size_t cap, char *err, size_t errlen) {
    const char *s;
    size_t len;
    if (spade_gguf_get_str(g, key, &s, &len, err, errlen) < 0) return -1;
    if (len >= cap || memchr(s, 0, len)) {
        spade_errf(err, errlen, "key '%s': a string of %zu bytes %s", key, len,
                   len >= cap ? "is too long here" : "holding a NUL byte");
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
    return 0;
}

int spade_gguf_get_array(const spade_gguf *g, const char *key, int elem, const spade_gguf_value **vp, uint64_t *n,
                         char *err, size_t errlen) {
    const spade_gguf_value *v = get_typed(g, key, err, errlen);
    if (!v) return -1;
    if (v->type != SPADE_GGUF_ARRAY || (elem != SPADE_GGUF_NVTYPES && v->elem != elem)) {
        if (v->type != SPADE_GGUF_ARRAY)
            spade_errf(err, errlen, "key '%s' has type %s, not array", key, vname[v->type]);
        else
            spade_errf(err, errlen, "key '%s' is an array of %s, not of %s", key, vname[v->elem],
                       spade_gguf_vtype_name(elem));
        return -1;
    }
    if (vp) *vp = v;
    if (n) *n = v->n;
    return 0;
}

static int arr_len_ok(const spade_gguf_value *v, const char *key, uint64_t n, char *err, size_t errlen) {
    if (v->n == n) return 0;
    spade_errf(err, errlen, "key '%s' has %llu elements, %llu expected", key, (unsigned long long)v->n,
               (unsigned long long)n);
    return -1;
}

int spade_gguf_get_arr_i32(const spade_gguf *g, const char *key, int32_t *out, uint64_t n, char *err, size_t errlen) {
    const spade_gguf_value *v;
    if (spade_gguf_get_array(g, key, SPADE_GGUF_NVTYPES, &v, NULL, err, errlen) < 0 ||
        arr_len_ok(v, key, n, err, errlen) < 0)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        int64_t x;
        if (v->elem == SPADE_GGUF_F32 || v->elem == SPADE_GGUF_F64 || spade_gguf_array_i64(v, i, &x) < 0 ||
            x < INT32_MIN || x > INT32_MAX) {
            spade_errf(err, errlen, "key '%s'[%llu]: not an i32 (an array of %s)", key, (unsigned long long)i,
                       vname[v->elem]);
            return -1;
        }
        out[i] = (int32_t)x;
    }
    return 0;
}

int spade_gguf_get_arr_f32(const spade_gguf *g, const char *key, float *out, uint64_t n, char *err, size_t errlen) {
    const spade_gguf_value *v;
    if (spade_gguf_get_array(g, key, SPADE_GGUF_NVTYPES, &v, NULL, err, errlen) < 0 ||
        arr_len_ok(v, key, n, err, errlen) < 0)
        return -1;
    if (v->elem != SPADE_GGUF_F32 && v->elem != SPADE_GGUF_F64) {
        spade_errf(err, errlen, "key '%s' is an array of %s, not of f32", key, vname[v->elem]);
        return -1;
    }
    for (uint64_t i = 0; i < n; i++) {
        double d;
        spade_gguf_array_f64(v, i, &d);
        out[i] = (float)d;
    }
    return 0;
}

/* ---- formatting ---- */

typedef struct sbuf {
    char *buf;
    size_t cap, len;
} sbuf;

static void sb_put(sbuf *s, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++, s->len++)
        if (s->len + 1 < s->cap) s->buf[s->len] = p[i];
    if (s->cap) s->buf[s->len < s->cap ? s->len : s->cap - 1] = 0;
}

static void sb_printf(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *s, const char *fmt, ...) {
    char t[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    sb_put(s, t, n < 0 ? 0 : (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}

static void sb_str(sbuf *s, const uint8_t *p, uint64_t n) {
    sb_put(s, "\"", 1);
    for (uint64_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(s, e, 2);
        } else if (c < 0x20 || c == 0x7f) {
            sb_printf(s, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\u%04x", c);
        } else {
            sb_put(s, (const char *)&c, 1);
        }
    }
    sb_put(s, "\"", 1);
}

static void sb_scalar(sbuf *s, int t, const uint8_t *p) {
    num n;
    load_num(t, p, &n);
    if (t == SPADE_GGUF_BOOL)
        sb_printf(s, "%s", n.u ? "true" : "false");
    else if (!n.is_int) {
        /* the shortest text that reads back as the same number (1e-05, not 9.99999975e-06) */
        char b[40];
        int f32 = t == SPADE_GGUF_F32, max = f32 ? 9 : 17;
        if (fabs(n.f) < 1e15 &&
            n.f == (double)(int64_t)n.f) { /* RoPE base 1000000, not 1e+06; NaN fails the first test */
            sb_printf(s, "%lld", (long long)n.f);
            return;
        }
        for (int prec = 6; prec <= max; prec++) {
            snprintf(b, sizeof b, "%.*g", prec, n.f);
            if (prec == max || (f32 ? strtof(b, NULL) == (float)n.f : strtod(b, NULL) == n.f)) break;
        }
        sb_printf(s, "%s", b);
    } else if (n.is_neg)
        sb_printf(s, "%lld", (long long)(int64_t)n.u);
    else
        sb_printf(s, "%llu", (unsigned long long)n.u);
}

static void sb_value(sbuf *s, const spade_gguf_value *v, size_t max_items) {
    if (v->type == SPADE_GGUF_STRING) {
        sb_str(s, v->b + v->off, v->n);
        return;
    }
    if (v->type != SPADE_GGUF_ARRAY) {
        sb_scalar(s, v->type, v->b + v->off);
        return;
    }
    sb_put(s, "[", 1);
    for (uint64_t i = 0; i < v->n; i++) {
        if (i) sb_put(s, ", ", 2);
        if (i == max_items) {
            sb_printf(s, "... (%llu in all)", (unsigned long long)v->n);
            break;
        }
        if (v->elem == SPADE_GGUF_STRING) {
            const char *p;
            size_t len;
            spade_gguf_array_str(v, i, &p, &len);
            sb_str(s, (const uint8_t *)p, len);
        } else if (v->elem == SPADE_GGUF_ARRAY) {
            sb_value(s, &v->sub[i], max_items);
        } else {
            sb_scalar(s, v->elem, v->b + v->off + i * vsize[v->elem]);
        }
    }
    sb_put(s, "]", 1);
}

size_t spade_gguf_value_format(const spade_gguf_value *v, char *buf, size_t cap, size_t max_items) {
    sbuf s = {.buf = buf, .cap = cap};
    if (cap) buf[0] = 0;
    sb_value(&s, v, max_items);
    return s.len;
}

/* ---- tensors ---- */

size_t spade_gguf_n_tensors(const spade_gguf *g) { return g->n_tensors; }

const spade_gguf_tensor *spade_gguf_tensor_at(const spade_gguf *g, size_t i) {
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const spade_gguf_tensor *spade_gguf_find_tensor(const spade_gguf *g, const char *name) {
    size_t lo = 0, hi = g->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->t_sorted[mid].s, name);
        if (!c) return &g->tensors[g->t_sorted[mid].i];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- quantizers (GGML's reference ones) ---- */

void spade_ggml_quantize_f16(const float *x, uint64_t n, void *out) {
    uint8_t *o = out;
    for (uint64_t i = 0; i < n; i++) {
        uint16_t h = spade_f32_to_fp16(x[i]);
        o[2 * i] = (uint8_t)h, o[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

void spade_ggml_quantize_q8_0(const float *x, uint64_t n, void *out) {
    uint8_t *o = out;
    for (uint64_t b = 0; b < n / 32; b++, x += 32, o += 34) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
        uint16_t h = spade_f32_to_fp16(d);
        o[0] = (uint8_t)h, o[1] = (uint8_t)(h >> 8);
        for (int j = 0; j < 32; j++) o[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
    }
}

/* ---- the writer ---- */

typedef struct wtensor {
    char name[SPADE_GGUF_MAX_NAME + 1];
    int type, n_dims;
    int64_t dims[SPADE_GGUF_MAX_DIMS];
    uint64_t n_elements, n_bytes;
    const float *data;
} wtensor;

struct spade_gguf_writer {
    uint8_t *kv; /* the key-values, serialised */
    size_t kv_len, kv_cap, n_kv;
    char **keys;
    wtensor *t;
    size_t n_t, t_cap;
    uint32_t alignment;
    int oom;
};

int spade_gguf_writer_new(spade_gguf_writer **out, char *err, size_t errlen) {
    if (!(*out = calloc(1, sizeof **out))) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    (*out)->alignment = SPADE_GGUF_DEFAULT_ALIGNMENT;
    return 0;
}

void spade_gguf_writer_free(spade_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    free(w->kv);
    free(w->t);
    free(w);
}

static void w_put(spade_gguf_writer *w, const void *p, size_t n) {
    if (w->oom) return;
    if (w->kv_len + n > w->kv_cap) {
        size_t cap = w->kv_cap ? w->kv_cap : 4096;
        while (cap < w->kv_len + n) cap *= 2;
        uint8_t *nb = realloc(w->kv, cap);
        if (!nb) {
            w->oom = 1;
            return;
        }
        w->kv = nb;
        w->kv_cap = cap;
    }
    memcpy(w->kv + w->kv_len, p, n);
    w->kv_len += n;
}

static void w_u32(spade_gguf_writer *w, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    w_put(w, b, 4);
}

static void w_u64(spade_gguf_writer *w, uint64_t v) {
    w_u32(w, (uint32_t)v);
    w_u32(w, (uint32_t)(v >> 32));
}

static void w_str(spade_gguf_writer *w, const char *s) {
    size_t n = strlen(s);
    w_u64(w, n);
    w_put(w, s, n);
}

/* Starts a key-value: the key and its type. */
static int w_key(spade_gguf_writer *w, const char *key, int type) {
    char **nk = realloc(w->keys, (w->n_kv + 1) * sizeof *nk);
    if (!nk || !(nk[w->n_kv] = strdup(key))) {
        if (nk) w->keys = nk;
        w->oom = 1;
        return -1;
    }
    w->keys = nk;
    w->n_kv++;
    w_str(w, key);
    w_u32(w, (uint32_t)type);
    return w->oom ? -1 : 0;
}

/* Numbers go out little-endian; the host is assumed to be little-endian too
 * (x86-64, aarch64), as GGML assumes. */
int spade_gguf_writer_set_scalar(spade_gguf_writer *w, const char *key, int type, const void *bytes) {
    if (type < 0 || type >= SPADE_GGUF_NVTYPES || !vsize[type] || w_key(w, key, type) < 0) return -1;
    w_put(w, bytes, vsize[type]);
    if (!strcmp(key, "general.alignment") && type == SPADE_GGUF_U32) memcpy(&w->alignment, bytes, 4);
    return w->oom ? -1 : 0;
}

int spade_gguf_writer_set_u32(spade_gguf_writer *w, const char *key, uint32_t v) {
    return spade_gguf_writer_set_scalar(w, key, SPADE_GGUF_U32, &v);
}
int spade_gguf_writer_set_i32(spade_gguf_writer *w, const char *key, int32_t v) {
    return spade_gguf_writer_set_scalar(w, key, SPADE_GGUF_I32, &v);
}
int spade_gguf_writer_set_u64(spade_gguf_writer *w, const char *key, uint64_t v) {
    return spade_gguf_writer_set_scalar(w, key, SPADE_GGUF_U64, &v);
}
int spade_gguf_writer_set_f32(spade_gguf_writer *w, const char *key, float v) {
    return spade_gguf_writer_set_scalar(w, key, SPADE_GGUF_F32, &v);
}
int spade_gguf_writer_set_bool(spade_gguf_writer *w, const char *key, int v) {
    uint8_t b = v != 0;
    return spade_gguf_writer_set_scalar(w, key, SPADE_GGUF_BOOL, &b);
}

int spade_gguf_writer_set_str(spade_gguf_writer *w, const char *key, const char *s) {
    if (w_key(w, key, SPADE_GGUF_STRING) < 0) return -1;
    w_str(w, s);
    return w->oom ? -1 : 0;
}

int spade_gguf_writer_set_array(spade_gguf_writer *w, const char *key, int elem, const void *elems, uint64_t n) {
    if (elem < 0 || elem >= SPADE_GGUF_NVTYPES || !vsize[elem] || n > SIZE_MAX / 8 ||
        w_key(w, key, SPADE_GGUF_ARRAY) < 0)
        return -1;
    w_u32(w, (uint32_t)elem);
    w_u64(w, n);
    w_put(w, elems, (size_t)n * vsize[elem]);
    return w->oom ? -1 : 0;
}

int spade_gguf_writer_set_arr_str(spade_gguf_writer *w, const char *key, const char *const *s, uint64_t n) {
    if (w_key(w, key, SPADE_GGUF_ARRAY) < 0) return -1;
    w_u32(w, SPADE_GGUF_STRING);
    w_u64(w, n);
    for (uint64_t i = 0; i < n; i++) w_str(w, s[i]);
    return w->oom ? -1 : 0;
}

/* A value's body as the file has it (type and key already written): an
 * array's element type and count, then its elements, nested arrays likewise. */
static void w_value_body(spade_gguf_writer *w, const spade_gguf_value *v) {
    if (v->type == SPADE_GGUF_STRING) {
        w_u64(w, v->n);
        w_put(w, v->b + v->off, (size_t)v->n);
    } else if (v->type != SPADE_GGUF_ARRAY) {
        w_put(w, v->b + v->off, vsize[v->type]);
    } else {
        w_u32(w, v->elem);
        w_u64(w, v->n);
        if (v->elem == SPADE_GGUF_STRING) {
            for (uint64_t i = 0; i < v->n; i++) {
                const uint8_t *s = v->b + v->str_off[i];
                uint64_t len = ld64(s - 8);
                w_u64(w, len);
                w_put(w, s, (size_t)len);
            }
        } else if (v->elem == SPADE_GGUF_ARRAY) {
            for (uint64_t i = 0; i < v->n; i++) w_value_body(w, &v->sub[i]);
        } else {
            w_put(w, v->b + v->off, (size_t)v->n * vsize[v->elem]);
        }
    }
}

int spade_gguf_writer_copy(spade_gguf_writer *w, const char *key, const spade_gguf_value *v) {
    if (!v || v->type >= SPADE_GGUF_NVTYPES || w_key(w, key, v->type) < 0) return -1;
    w_value_body(w, v);
    if (!strcmp(key, "general.alignment") && v->type == SPADE_GGUF_U32) memcpy(&w->alignment, v->b + v->off, 4);
    return w->oom ? -1 : 0;
}

int spade_gguf_writer_add_tensor(spade_gguf_writer *w, const char *name, int type, int n_dims, const int64_t *dims,
                                 const float *data, char *err, size_t errlen) {
    if (type != SPADE_GGML_F32 && type != SPADE_GGML_F16 && type != SPADE_GGML_Q8_0) {
        spade_errf(err, errlen, "tensor '%s': the writer writes F32, F16 and Q8_0, not type %d", name, type);
        return -1;
    }
    size_t len = strlen(name);
    if (!len || len > SPADE_GGUF_MAX_NAME) {
        spade_errf(err, errlen, "tensor '%s': a name of %zu bytes (1 to %d)", name, len, SPADE_GGUF_MAX_NAME);
        return -1;
    }
    if (n_dims < 1 || n_dims > SPADE_GGUF_MAX_DIMS) {
        spade_errf(err, errlen, "tensor '%s': %d dimensions (1 to %d)", name, n_dims, SPADE_GGUF_MAX_DIMS);
        return -1;
    }
    wtensor t = {.type = type, .n_dims = n_dims, .data = data, .n_elements = 1};
    memcpy(t.name, name, len + 1);
    for (int d = 0; d < SPADE_GGUF_MAX_DIMS; d++) {
        t.dims[d] = d < n_dims ? dims[d] : 1;
        if (t.dims[d] < 1 || t.n_elements > (uint64_t)INT64_MAX / (uint64_t)t.dims[d]) {
            spade_errf(err, errlen, "tensor '%s': dimension %d is %lld", name, d, (long long)t.dims[d]);
            return -1;
        }
        t.n_elements *= (uint64_t)t.dims[d];
    }
    if (type == SPADE_GGML_Q8_0 && t.dims[0] % 32) {
        spade_errf(err, errlen, "tensor '%s': Q8_0 needs dimension 0 a multiple of 32, not %lld", name,
                   (long long)t.dims[0]);
        return -1;
    }
    t.n_bytes = type == SPADE_GGML_F32   ? t.n_elements * 4
                : type == SPADE_GGML_F16 ? t.n_elements * 2
                                         : t.n_elements / 32 * 34;
    if (w->n_t == w->t_cap) {
        size_t cap = w->t_cap ? 2 * w->t_cap : 16;
        wtensor *nt = realloc(w->t, cap * sizeof *nt);
        if (!nt) {
            spade_errf(err, errlen, "out of memory");
            return -1;
        }
        w->t = nt;
        w->t_cap = cap;
    }
    w->t[w->n_t++] = t;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int pad_to(FILE *f, uint64_t pos, uint64_t a) {
    static const uint8_t zero[64];
    for (uint64_t n = (a - pos % a) % a; n; n -= n > 64 ? 64 : n)
        if (fwrite(zero, 1, n > 64 ? 64 : (size_t)n, f) != (n > 64 ? 64 : n)) return -1;
    return 0;
}

int spade_gguf_writer_write(spade_gguf_writer *w, FILE *f, char *err, size_t errlen) {
    if (w->oom) {
        spade_errf(err, errlen, "out of memory while building the metadata");
        return -1;
    }
    uint64_t a = w->alignment;
    if (!a || (a & (a - 1))) {
        spade_errf(err, errlen, "general.alignment %llu is not a power of two", (unsigned long long)a);
        return -1;
    }
    /* the same uniqueness the reader demands */
    char **sorted = malloc((w->n_kv + w->n_t + 1) * sizeof *sorted);
    if (!sorted) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < w->n_kv; i++) sorted[i] = w->keys[i];
    qsort(sorted, w->n_kv, sizeof *sorted, cmp_str);
    for (size_t i = 1; i < w->n_kv; i++)
        if (!strcmp(sorted[i - 1], sorted[i])) {
            spade_errf(err, errlen, "key '%s' is set twice", sorted[i]);
            free(sorted);
            return -1;
        }
    for (size_t i = 0; i < w->n_t; i++) sorted[i] = w->t[i].name;
    qsort(sorted, w->n_t, sizeof *sorted, cmp_str);
    for (size_t i = 1; i < w->n_t; i++)
        if (!strcmp(sorted[i - 1], sorted[i])) {
            spade_errf(err, errlen, "tensor '%s' is added twice", sorted[i]);
            free(sorted);
            return -1;
        }
    free(sorted);

    /* header and tensor infos go through the kv buffer's tail, then out */
    size_t kv_end = w->kv_len;
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        wtensor *t = &w->t[i];
        w_str(w, t->name);
        w_u32(w, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) w_u64(w, (uint64_t)t->dims[d]);
        w_u32(w, (uint32_t)t->type);
        w_u64(w, off);
        off += t->n_bytes + (a - t->n_bytes % a) % a;
    }
    if (w->oom) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    uint8_t hdr[24] = {'G', 'G', 'U', 'F', 3};
    for (int i = 0; i < 8; i++)
        hdr[8 + i] = (uint8_t)((uint64_t)w->n_t >> (8 * i)), hdr[16 + i] = (uint8_t)((uint64_t)w->n_kv >> (8 * i));
    int bad = fwrite(hdr, 1, 24, f) != 24 || fwrite(w->kv, 1, w->kv_len, f) != w->kv_len;
    uint64_t pos = 24 + w->kv_len;
    w->kv_len = kv_end; /* the infos are rebuilt on the next write */
    bad = bad || pad_to(f, pos, a) < 0;
    enum { CHUNK = 4096 }; /* elements quantized at a time: a multiple of 32 */
    uint8_t buf[CHUNK * 4];
    for (size_t i = 0; i < w->n_t && !bad; i++) {
        wtensor *t = &w->t[i];
        for (uint64_t e = 0; e < t->n_elements && !bad; e += CHUNK) {
            uint64_t n = t->n_elements - e < CHUNK ? t->n_elements - e : CHUNK;
            size_t nb;
            if (t->type == SPADE_GGML_F32) {
                for (uint64_t j = 0; j < n; j++) {
                    uint32_t u;
                    memcpy(&u, &t->data[e + j], 4);
                    for (int k = 0; k < 4; k++) buf[4 * j + k] = (uint8_t)(u >> (8 * k));
                }
                nb = (size_t)n * 4;
            } else if (t->type == SPADE_GGML_F16) {
                spade_ggml_quantize_f16(t->data + e, n, buf);
                nb = (size_t)n * 2;
            } else {
                spade_ggml_quantize_q8_0(t->data + e, n, buf);
                nb = (size_t)n / 32 * 34;
            }
            bad = fwrite(buf, 1, nb, f) != nb;
        }
        bad = bad || pad_to(f, t->n_bytes, a) < 0;
    }
    if (bad || fflush(f) != 0) {
        spade_errf(err, errlen, "write error: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int spade_gguf_writer_write_path(spade_gguf_writer *w, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        spade_errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char e[512];
    int rc = spade_gguf_writer_write(w, f, e, sizeof e);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(e, sizeof e, "write error: %s", strerror(errno));
        rc = -1;
    }
    if (rc < 0) {
        spade_errf(err, errlen, "%s: %s", path, e);
        remove(path);
    }
    return rc;
}
