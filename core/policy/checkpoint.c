/* checkpoint.c — saving and loading a policy: one file, written atomically.
 *
 * What it is: the on-disk format of a spade policy and its validation.
 *   offset  size  field
 *        0     8  magic "SPADEGPT"
 *        8     4  u32 format version: 3 for a Llama; a GPT is written as version 2 (no
 *                  architecture field: a GPT, header 96 bytes), as before; version 1 files
 *                  (no tokenizer) still load; a version-3 file may also hold a GPT
 *       12     4  u32 0x01020304, to catch a file from a machine of the other byte order
 *       16     4  u32 header size in bytes H (136; 96 in versions 1 and 2)
 *       20    24  i32 layers, heads, width, context, vocab V, padded vocab Vp
 *       44     4  u32 flags: bit 0 = AdamW moments present
 *       48     8  u64 seed
 *       56     8  u64 optimizer steps taken
 *       64     8  u64 number of parameters P (must match the config)
 *       72     8  u64 K: bytes of tokenizer text (0: the byte tokenizer; version 1: 0)
 *       80    16  policy.backend the file was written with (NUL-padded text)
 *       96     8  policy.arch: "gpt" or "llama" (NUL-padded text)      } version 3
 *      104    12  i32 kv_heads, ffn, rope_dims (as in the config: 0 = the default)
 *      116     4  u32 bit 0 rope_pairing = half, bit 1 untied head, bit 2 qkv_bias
 *      120     8  f64 rope_base (0 = 10000)
 *      128     4  f32 norm_eps (0 = 1e-5)
 *      132     4  u32 0 (reserved)                                       }
 *      136     4  i32 lora_rank r >= 1                                   } version 4:
 *      140     4  f32 lora_alpha                                           a LoRA policy
 *      144     4  u32 lora_targets (bit t: lora_target_names[t], lora.c)   (H = 1264)
 *      148     4  u32 base kind: 1 a model file, 2 a spade checkpoint, 0 made from the seed
 *      152    64  the base file's SHA-256, lowercase hex (kind 0: zeros)
 *      216  1024  the base: a model name or an absolute path (NUL-padded text)
 *     1240    24  zeros (reserved)                                       }
 *        H    K   the tokenizer file's text (tokenizer.h), when K > 0
 *      H+K   4P   parameters (float32, in the order of gpt_internal.h for the arch);
 *                 a LoRA policy: its adapters only (P = their count; lora.c's order),
 *                 the base weights being the named file's, checked by its SHA-256
 *           4P    AdamW m   (if flag bit 0)
 *           4P    AdamW v   (if flag bit 0)
 *  end-8     8    u64 FNV-1a hash of every byte before it
 * Writing goes to PATH.tmp.PID, is fsynced, renamed over PATH, and the
 * directory is fsynced, so a crash leaves either the old file or the new one.
 * What it is not: a general serialisation library, or portable across byte
 * orders (it detects the mismatch and says so instead).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errbuf.h"
#include "policy/gpt_internal.h"
#include "policy/models.h"
#include "policy/pretrained.h"
#include "sha256.h"

#define CKPT_MAGIC "SPADEGPT"
#define CKPT_VERSION 4u
#define CKPT_HEADER_V3 136u
#define CKPT_HEADER 1264u /* version 4 (LoRA) */
#define CKPT_HEADER_V2 96u /* versions 1 and 2 */
/* More tokenizer text than the largest valid tokenizer file is a corrupt header. */
#define CKPT_MAX_TOKENIZER (64ull << 20)

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001B3ull;
    }
    return h;
}
#define FNV_INIT 0xCBF29CE484222325ull

static void put32(unsigned char *b, uint32_t v) { memcpy(b, &v, 4); }
static void put64(unsigned char *b, uint64_t v) { memcpy(b, &v, 8); }
static uint32_t get32(const unsigned char *b) {
    uint32_t v;
    memcpy(&v, b, 4);
    return v;
}
static uint64_t get64(const unsigned char *b) {
    uint64_t v;
    memcpy(&v, b, 8);
    return v;
}

static int write_all(int fd, const void *buf, size_t n, uint64_t *h) {
    const char *c = buf;
    *h = fnv1a(*h, buf, n);
    while (n) {
        ssize_t w = write(fd, c, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The header of p's file (the layout above); returns its size. */
static uint32_t build_header(const spade_policy *p, unsigned char *hdr) {
    /* A GPT is written as version 2, byte for byte what it was before there
     * were two architectures (older builds still read it; no architecture
     * field means gpt); a Llama needs version 3's longer header, a LoRA
     * policy version 4's. */
    int v3 = p->arch != SPADE_ARCH_GPT, v4 = p->lora_r > 0;
    uint32_t hsize = v4 ? CKPT_HEADER : v3 ? CKPT_HEADER_V3 : CKPT_HEADER_V2;
    memcpy(hdr, CKPT_MAGIC, 8);
    put32(hdr + 8, v4 ? 4u : v3 ? 3u : 2u);
    put32(hdr + 12, 0x01020304u);
    put32(hdr + 16, hsize);
    int32_t dims[6] = {p->L, p->NH, p->C, p->maxT, p->V, p->Vp};
    memcpy(hdr + 20, dims, sizeof dims);
    put32(hdr + 44, 1u);
    put64(hdr + 48, p->cfg.seed);
    put64(hdr + 56, (uint64_t)p->step);
    put64(hdr + 64, v4 ? p->ntrain : p->num_params);
    memcpy(hdr + 80, p->cfg.backend, strnlen(p->cfg.backend, 15));
    const char *arch = v3 ? "llama" : "gpt";
    memcpy(hdr + 96, arch, strlen(arch));
    int32_t ldims[3] = {p->cfg.kv_heads, p->cfg.ffn, p->cfg.rope_dims};
    memcpy(hdr + 104, ldims, sizeof ldims);
    put32(hdr + 116, (p->cfg.rope_neox ? 1u : 0u) | (p->cfg.untied ? 2u : 0u) | (p->cfg.qkv_bias ? 4u : 0u));
    memcpy(hdr + 120, &p->cfg.rope_base, 8);
    memcpy(hdr + 128, &p->cfg.norm_eps, 4);
    if (v4) { /* the base is named and hashed */
        put32(hdr + 136, (uint32_t)p->lora_r);
        memcpy(hdr + 140, &p->lora_alpha, 4);
        put32(hdr + 144, p->lora_mask);
        put32(hdr + 148, (uint32_t)p->origin_kind);
        if (p->origin_kind) memcpy(hdr + 152, p->origin_sha256, 64);
        memcpy(hdr + 216, p->origin, strnlen(p->origin, 1023));
    }
    return hsize;
}

int spade_policy_save(spade_policy *p, const char *path, char *err, size_t errlen) {
    int v4 = p->lora_r > 0;
    size_t P = p->ntrain; /* the parameters, or a LoRA policy's adapters only */
    float *host = malloc(P * sizeof(float));
    if (!host) {
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    unsigned char hdr[CKPT_HEADER] = {0};
    uint32_t hsize = build_header(p, hdr);
    char *tokbuf = NULL;
    size_t toklen = 0;
    spade_tokenizer *tok = spade_policy_tokenizer(p);
    if (tok && strcmp(spade_tokenizer_kind(tok), "bytes")) {
        char e[200];
        if (spade_tokenizer_serialize(tok, &tokbuf, &toklen, e, sizeof e)) {
            free(host);
            spade_errf(err, errlen, "checkpoint '%s': %s", path, e);
            return SPADE_POLICY_ENOMEM;
        }
    }
    put64(hdr + 72, toklen);

    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) {
        free(host);
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        spade_errf(err, errlen, "checkpoint '%s': cannot create '%s': %s", path, tmp, strerror(errno));
        free(tmp);
        free(host);
        free(tokbuf);
        return SPADE_POLICY_EIO;
    }
    uint64_t h = FNV_INIT;
    const float *srcs[3] = {v4 ? p->lora_mem : p->params_mem, p->m_mem, p->v_mem};
    if (write_all(fd, hdr, hsize, &h)) rc = SPADE_POLICY_EIO;
    if (!rc && toklen && write_all(fd, tokbuf, toklen, &h)) rc = SPADE_POLICY_EIO;
    free(tokbuf);
    for (int i = 0; i < 3 && !rc; i++) {
        if (!srcs[i]) { /* moments never allocated (no step taken here): they are zero */
            memset(host, 0, P * sizeof(float));
        } else if (p->be.vt->download(p->be.ctx, host, srcs[i], P * sizeof(float))) {
            rc = gpt_backend_fail(p, "checkpoint download", err, errlen);
            break;
        }
        if (write_all(fd, host, P * sizeof(float), &h)) rc = SPADE_POLICY_EIO;
    }
    unsigned char tr[8];
    put64(tr, h);
    uint64_t dummy = 0;
    if (!rc && write_all(fd, tr, 8, &dummy)) rc = SPADE_POLICY_EIO;
    if (!rc && fsync(fd)) rc = SPADE_POLICY_EIO;
    if (rc == SPADE_POLICY_EIO)
        spade_errf(err, errlen, "checkpoint '%s': writing '%s': %s", path, tmp, strerror(errno));
    if (close(fd) && !rc) {
        spade_errf(err, errlen, "checkpoint '%s': closing '%s': %s", path, tmp, strerror(errno));
        rc = SPADE_POLICY_EIO;
    }
    if (!rc && rename(tmp, path)) {
        spade_errf(err, errlen, "checkpoint '%s': rename from '%s': %s", path, tmp, strerror(errno));
        rc = SPADE_POLICY_EIO;
    }
    if (rc) {
        unlink(tmp);
    } else {
        /* fsync the directory so the rename itself survives a crash */
        char *dup = strdup(path);
        if (dup) {
            int dfd = open(dirname(dup), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                if (fsync(dfd) && errno != EINVAL) {
                    spade_errf(err, errlen, "checkpoint '%s': fsync of its directory: %s", path, strerror(errno));
                    rc = SPADE_POLICY_EIO;
                }
                close(dfd);
            }
            free(dup);
        }
    }
    free(tmp);
    free(host);
    return rc;
}

/* A LoRA checkpoint's base (version 4). */
typedef struct {
    int kind;
    char sha256[65];
    char spec[1025];
} ckpt_base;

/* Version 4's LoRA fields (bytes 136..1240) into cfg and base; bytes from
 * outside, so every field is checked. */
static int read_lora_header(const unsigned char *hdr, const char *path, spade_gpt_config *cfg, ckpt_base *base,
                            char *err, size_t errlen) {
    int32_t r;
    memcpy(&r, hdr + 136, 4);
    memcpy(&cfg->lora_alpha, hdr + 140, 4);
    cfg->lora_targets = get32(hdr + 144);
    base->kind = (int)get32(hdr + 148);
    memcpy(base->sha256, hdr + 152, 64);
    memcpy(base->spec, hdr + 216, 1024);
    int hex = 0; /* how many of the 64 characters, from the first, are lowercase hex digits */
    while (hex < 64 && ((base->sha256[hex] >= '0' && base->sha256[hex] <= '9') ||
                        (base->sha256[hex] >= 'a' && base->sha256[hex] <= 'f')))
        hex++;
    if (r < 1 || r > 1024 || !(cfg->lora_alpha > 0 && cfg->lora_alpha <= 1e6) || !cfg->lora_targets ||
        cfg->lora_targets > LORA_ALL || base->kind < 0 || base->kind > 2) {
        spade_errf(err, errlen,
                   "checkpoint '%s': bad LoRA header: lora_rank %d, lora_alpha %g, targets 0x%x, base kind %d", path, r,
                   (double)cfg->lora_alpha, cfg->lora_targets, base->kind);
        return -1;
    }
    /* a base file is named and hashed: each field said apart, a short or mangled hash as such */
    if (base->kind && hex < 64) {
        spade_errf(err, errlen,
                   "checkpoint '%s': bad LoRA header: lora.base_sha256 is not 64 lowercase hex digits (the first %d "
                   "are)",
                   path, hex);
        return -1;
    }
    if (base->kind && !base->spec[0]) {
        spade_errf(err, errlen, "checkpoint '%s': bad LoRA header: lora.base is empty (base kind %d names a file)",
                   path, base->kind);
        return -1;
    }
    cfg->lora_rank = r;
    return 0;
}

/* The fixed part: a regular file, the magic, byte order, version and the
 * header size it implies, the whole header read into hdr. */
static int read_header_bytes(FILE *f, const char *path, unsigned char *hdr, uint32_t *ver, uint32_t *hsize,
                             uint64_t *size, char *err, size_t errlen) {
    struct stat st;
    if (fstat(fileno(f), &st)) {
        spade_errf(err, errlen, "checkpoint '%s': %s", path, strerror(errno));
        return SPADE_POLICY_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        spade_errf(err, errlen, "checkpoint '%s': not a regular file", path);
        return SPADE_POLICY_EFORMAT;
    }
    *size = (uint64_t)st.st_size;
    size_t got = fread(hdr, 1, CKPT_HEADER_V2, f);
    if (got >= 8 && memcmp(hdr, CKPT_MAGIC, 8)) {
        spade_errf(err, errlen, "checkpoint '%s': not a spade policy checkpoint (it does not start with \"%s\")", path,
                   CKPT_MAGIC);
        return SPADE_POLICY_EFORMAT;
    }
    if (got < CKPT_HEADER_V2) {
        spade_errf(err, errlen, "checkpoint '%s': truncated: %zu bytes, shorter than the %u-byte header", path, got,
                   CKPT_HEADER_V2);
        return SPADE_POLICY_EFORMAT;
    }
    *ver = get32(hdr + 8);
    if (get32(hdr + 12) != 0x01020304u) {
        spade_errf(err, errlen, "checkpoint '%s': written on a machine with the other byte order", path);
        return SPADE_POLICY_EFORMAT;
    }
    if (*ver < 1 || *ver > CKPT_VERSION) {
        spade_errf(err, errlen, "checkpoint '%s': format version %u, this build reads versions 1 to %u", path, *ver,
                   CKPT_VERSION);
        return SPADE_POLICY_EFORMAT;
    }
    *hsize = *ver >= 4 ? CKPT_HEADER : *ver == 3 ? CKPT_HEADER_V3 : CKPT_HEADER_V2;
    if (get32(hdr + 16) != *hsize) {
        spade_errf(err, errlen, "checkpoint '%s': header size %u, expected %u for version %u", path, get32(hdr + 16),
                   *hsize, *ver);
        return SPADE_POLICY_EFORMAT;
    }
    uint32_t rest = *hsize - CKPT_HEADER_V2;
    if (rest && fread(hdr + CKPT_HEADER_V2, 1, rest, f) != rest) {
        spade_errf(err, errlen, "checkpoint '%s': truncated: %llu bytes, shorter than the %u-byte header", path,
                   (unsigned long long)st.st_size, *hsize);
        return SPADE_POLICY_EFORMAT;
    }
    return 0;
}

/* Version 3's architecture fields (bytes 96..136) into cfg. */
static int read_arch_header(const unsigned char *hdr, const char *path, spade_gpt_config *cfg, char *err,
                            size_t errlen) {
    /* bytes from outside: the text must be one of the two names, the rest
     * passes spade_gpt_config_validate below or the file is refused */
    char arch[9] = {0};
    memcpy(arch, hdr + 96, 8);
    if (strcmp(arch, "gpt") && strcmp(arch, "llama")) {
        spade_errf(err, errlen, "checkpoint '%s': architecture '%.8s': expected gpt or llama", path, arch);
        return SPADE_POLICY_EFORMAT;
    }
    snprintf(cfg->arch, sizeof cfg->arch, "%s", arch);
    int32_t ld[3];
    memcpy(ld, hdr + 104, sizeof ld);
    cfg->kv_heads = ld[0];
    cfg->ffn = ld[1];
    cfg->rope_dims = ld[2];
    uint32_t bits = get32(hdr + 116);
    if (bits > 7) {
        spade_errf(err, errlen, "checkpoint '%s': bad header: architecture flags 0x%x", path, bits);
        return SPADE_POLICY_EFORMAT;
    }
    cfg->rope_neox = bits & 1;
    cfg->untied = (bits >> 1) & 1;
    cfg->qkv_bias = (bits >> 2) & 1;
    memcpy(&cfg->rope_base, hdr + 120, 8);
    memcpy(&cfg->norm_eps, hdr + 128, 4);
    return 0;
}

/* The tokenizer's length and the vocabulary it goes with (dims[4], padded
 * dims[5]) into *toklen and cfg. */
static int read_vocab_header(const unsigned char *hdr, uint32_t ver, const int32_t *dims, const char *path,
                             spade_gpt_config *cfg, uint64_t *toklen, char *err, size_t errlen) {
    /* Version 1 had only the byte tokenizer, and 0 in the tokenizer length's place. */
    *toklen = ver >= 2 ? get64(hdr + 72) : 0;
    if (*toklen > CKPT_MAX_TOKENIZER) {
        spade_errf(err, errlen, "checkpoint '%s': bad header: %llu bytes of tokenizer", path,
                   (unsigned long long)*toklen);
        return SPADE_POLICY_EFORMAT;
    }
    /* a stored tokenizer may be a pretrained model's (any size up to SPADE_POLICY_MAX_VOCAB);
     * read_tokenizer checks the stored one's vocabulary against this */
    if (*toklen ? (dims[4] < 1 || dims[4] > SPADE_POLICY_MAX_VOCAB) : dims[4] != SPADE_VOCAB) {
        spade_errf(err, errlen, "checkpoint '%s': vocabulary %d with %s tokenizer: expected %s", path, dims[4],
                   *toklen ? "a stored" : "the byte", *toklen ? "1..262144" : "263");
        return SPADE_POLICY_EFORMAT;
    }
    if (dims[5] != SPADE_VOCAB_PAD(dims[4])) {
        spade_errf(err, errlen, "checkpoint '%s': padded vocabulary %d, expected %d for vocabulary %d", path, dims[5],
                   SPADE_VOCAB_PAD(dims[4]), dims[4]);
        return SPADE_POLICY_EFORMAT;
    }
    cfg->vocab = dims[4];
    /* "gguf" when the stored text is a pretrained model's reference (read_tokenizer sets it from
     * the text and checks its vocabulary against this one). Until then: a stored vocabulary past
     * spade's BPE cap can only be such a reference (Qwen2.5's 151,936), so the config is checked
     * as one; else a Qwen checkpoint could not be read back, and a killed run not resumed. */
    snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "%s",
             !*toklen                        ? "bytes"
             : dims[4] > SPADE_TOK_MAX_VOCAB ? "gguf"
                                             : "bpe");
    return 0;
}

/* Reads and checks the header; fills cfg, *step, *P, *flags, *toklen, *h (the
 * FNV-1a of the header) and, for a LoRA checkpoint, base (NULL: not wanted). */
static int read_header(FILE *f, const char *path, spade_gpt_config *cfg, uint64_t *step, uint64_t *P, uint32_t *flags,
                       uint64_t *toklen, uint64_t *h, ckpt_base *base, char *err, size_t errlen) {
    unsigned char hdr[CKPT_HEADER] = {0};
    uint32_t ver, hsize;
    uint64_t size;
    int rc = read_header_bytes(f, path, hdr, &ver, &hsize, &size, err, errlen);
    if (rc) return rc;
    int32_t dims[6];
    memcpy(dims, hdr + 20, sizeof dims);
    spade_gpt_config_default(cfg);
    cfg->layers = dims[0];
    cfg->heads = dims[1];
    cfg->width = dims[2];
    cfg->context = dims[3];
    cfg->seed = get64(hdr + 48);
    memcpy(cfg->backend, hdr + 80, 15);
    cfg->backend[15] = 0;
    if (ver >= 3 && (rc = read_arch_header(hdr, path, cfg, err, errlen))) return rc;
    ckpt_base own;
    if (!base) base = &own;
    memset(base, 0, sizeof *base);
    if (ver >= 4 && read_lora_header(hdr, path, cfg, base, err, errlen)) return SPADE_POLICY_EFORMAT;
    if ((rc = read_vocab_header(hdr, ver, dims, path, cfg, toklen, err, errlen))) return rc;
    char cerr[200];
    if (spade_gpt_config_validate(cfg, cerr, sizeof cerr)) {
        spade_errf(err, errlen, "checkpoint '%s': bad config header: %s", path, cerr);
        return SPADE_POLICY_EFORMAT;
    }
    *flags = get32(hdr + 44);
    *step = get64(hdr + 56);
    *P = get64(hdr + 64);
    size_t need = cfg->lora_rank ? gpt_lora_count(cfg) : spade_gpt_config_num_params(cfg);
    if (*P != need) {
        spade_errf(err, errlen, "checkpoint '%s': %llu %s, but its config needs %zu", path, (unsigned long long)*P,
                   cfg->lora_rank ? "LoRA parameters" : "parameters", need);
        return SPADE_POLICY_EFORMAT;
    }
    uint64_t want = hsize + *toklen + (*P) * 4 * ((*flags & 1) ? 3 : 1) + 8;
    if (size != want) {
        spade_errf(err, errlen, "checkpoint '%s': %s: %llu bytes, the header promises %llu", path,
                   size < want ? "truncated" : "trailing garbage", (unsigned long long)size, (unsigned long long)want);
        return SPADE_POLICY_EFORMAT;
    }
    *h = fnv1a(FNV_INIT, hdr, hsize);
    return 0;
}

int spade_policy_read_config(const char *path, spade_gpt_config *cfg, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        spade_errf(err, errlen, "checkpoint '%s': %s", path, strerror(errno));
        return SPADE_POLICY_EIO;
    }
    uint64_t step, P, h, toklen;
    uint32_t flags;
    int rc = read_header(f, path, cfg, &step, &P, &flags, &toklen, &h, NULL, err, errlen);
    fclose(f);
    return rc;
}

/* Reads the K bytes of tokenizer text that follow the header (or makes the
 * byte tokenizer when K = 0) and hashes them into *h. */
static int read_tokenizer(FILE *f, const char *path, spade_gpt_config *cfg, uint64_t toklen, uint64_t *h,
                          spade_tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    if (!toklen) return spade_tokenizer_new_bytes(out, err, errlen);
    char *buf = malloc((size_t)toklen);
    if (!buf) {
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    if (fread(buf, 1, (size_t)toklen, f) != (size_t)toklen) {
        free(buf);
        spade_errf(err, errlen, "checkpoint '%s': read error or file changed while reading", path);
        return SPADE_POLICY_EIO;
    }
    *h = fnv1a(*h, buf, (size_t)toklen);
    size_t nl = strlen(path) + 32;
    char *name = malloc(nl);
    if (!name) {
        free(buf);
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    snprintf(name, nl, "checkpoint '%s': tokenizer", path);
    int rc = spade_tokenizer_parse(out, buf, (size_t)toklen, name, err, errlen);
    free(name);
    free(buf);
    if (!rc) snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "%s", spade_tokenizer_kind(*out));
    if (!rc && spade_tokenizer_vocab(*out) != cfg->vocab) {
        spade_errf(err, errlen, "checkpoint '%s': its tokenizer has %d tokens, its header says %d", path,
                   spade_tokenizer_vocab(*out), cfg->vocab);
        spade_tokenizer_free(*out);
        *out = NULL;
        rc = SPADE_POLICY_EFORMAT;
    }
    return rc;
}

int spade_policy_read_tokenizer(const char *path, spade_tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        spade_errf(err, errlen, "checkpoint '%s': %s", path, strerror(errno));
        return SPADE_POLICY_EIO;
    }
    spade_gpt_config cfg;
    uint64_t step, P, h, toklen;
    uint32_t flags;
    spade_tokenizer *tok = NULL;
    int rc = read_header(f, path, &cfg, &step, &P, &flags, &toklen, &h, NULL, err, errlen);
    if (!rc) rc = read_tokenizer(f, path, &cfg, toklen, &h, &tok, err, errlen);
    /* the rest is only hashed: a tokenizer from a corrupt file is not trusted */
    enum { BLK = 1 << 16 };
    unsigned char *blk = rc ? NULL : malloc(BLK);
    if (!rc && !blk) {
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        rc = SPADE_POLICY_ENOMEM;
    }
    uint64_t left = P * 4 * ((flags & 1) ? 3 : 1);
    while (!rc && left) {
        size_t k = left > BLK ? BLK : (size_t)left;
        if (fread(blk, 1, k, f) != k) {
            spade_errf(err, errlen, "checkpoint '%s': read error or file changed while reading", path);
            rc = SPADE_POLICY_EIO;
            break;
        }
        h = fnv1a(h, blk, k);
        left -= k;
    }
    free(blk);
    unsigned char tr[8];
    if (!rc && fread(tr, 1, 8, f) != 8) {
        spade_errf(err, errlen, "checkpoint '%s': read error or file changed while reading", path);
        rc = SPADE_POLICY_EIO;
    }
    if (!rc && h != get64(tr)) {
        spade_errf(err, errlen, "checkpoint '%s': checksum mismatch: the file is corrupt", path);
        rc = SPADE_POLICY_EFORMAT;
    }
    fclose(f);
    if (rc) {
        spade_tokenizer_free(tok);
        return rc;
    }
    *out = tok;
    return 0;
}

/* Reads n floats of the file into backend memory dst (NULL: read and hash
 * only), a block at a time, so that loading never holds a host copy of the
 * weights. *all_zero: whether every float read was 0. h2 (may be NULL): a
 * second hash of the same bytes. */
static int stream_floats(spade_policy *p, FILE *f, const char *path, float *dst, size_t n, float *blk, size_t cap,
                         uint64_t *h, uint64_t *h2, int *all_zero, char *err, size_t errlen) {
    *all_zero = 1;
    for (size_t o = 0; o < n;) {
        size_t k = n - o < cap ? n - o : cap;
        if (fread(blk, sizeof(float), k, f) != k) {
            spade_errf(err, errlen, "checkpoint '%s': read error or file changed while reading", path);
            return SPADE_POLICY_EIO;
        }
        *h = fnv1a(*h, blk, k * sizeof(float));
        if (h2) *h2 = fnv1a(*h2, blk, k * sizeof(float));
        for (size_t j = 0; j < k && *all_zero; j++) *all_zero = blk[j] == 0.0f;
        if (dst && p->be.vt->upload(p->be.ctx, dst + o, blk, k * sizeof(float)))
            return gpt_backend_fail(p, "checkpoint upload", err, errlen);
        o += k;
    }
    return 0;
}

/* The parameters, then the moments when the file has them: kept when
 * weights_only = 0 and they are not all zero (a policy never stepped keeps
 * none, as one just made), else read only for the checksum. */
static int load_body(spade_policy *p, FILE *f, const char *path, int has_moments, int weights_only, uint64_t *h,
                     char *err, size_t errlen) {
    size_t P = p->ntrain, cap = (size_t)1 << 20; /* the parameters, or a LoRA policy's adapters */
    float *blk = malloc(cap * sizeof(float));
    if (!blk) {
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    float *dst = p->lora_r ? p->lora_mem : p->params_mem;
    if (!p->lora_r) p->q8_valid = 0; /* new weights: the 8-bit sampling copies are stale */
    int zero, rc = stream_floats(p, f, path, dst, P, blk, cap, h, NULL, &zero, err, errlen);
    if (!rc && has_moments) {
        long pos = ftell(f);
        /* a first pass decides whether they are worth memory; the second keeps
         * them, and must read the bytes the first one hashed */
        int zm = 1, zv = 1;
        uint64_t h1 = FNV_INIT, h2 = FNV_INIT;
        rc = stream_floats(p, f, path, NULL, P, blk, cap, h, &h1, &zm, err, errlen);
        if (!rc) rc = stream_floats(p, f, path, NULL, P, blk, cap, h, &h1, &zv, err, errlen);
        if (!rc && !weights_only && !(zm && zv)) {
            if (pos < 0 || fseek(f, pos, SEEK_SET)) {
                spade_errf(err, errlen, "checkpoint '%s': cannot seek back to the moments", path);
                rc = SPADE_POLICY_EIO;
            }
            uint64_t dummy = 0;
            if (!rc) rc = gpt_ensure_moments(p, err, errlen);
            if (!rc) rc = stream_floats(p, f, path, p->m_mem, P, blk, cap, &dummy, &h2, &zm, err, errlen);
            if (!rc) rc = stream_floats(p, f, path, p->v_mem, P, blk, cap, &dummy, &h2, &zv, err, errlen);
            if (!rc && h1 != h2) {
                spade_errf(err, errlen, "checkpoint '%s': the file changed while reading", path);
                rc = SPADE_POLICY_EIO;
            }
        }
    }
    free(blk);
    return rc;
}

/* A LoRA checkpoint's base weights: the file it names, if its SHA-256 is the
 * one recorded, or (kind 0) the seeded init of the config without adapters;
 * then the adapters are put on (their values come from the file next). */
static int open_base(spade_policy **out, const char *path, const spade_gpt_config *cfg, const ckpt_base *b,
                     spade_tokenizer *tok, char *err, size_t errlen) {
    *out = NULL;
    spade_gpt_config c0 = *cfg;
    c0.lora_rank = 0;
    c0.lora_alpha = 0;
    c0.lora_targets = 0;
    char file[4096], hex[65], e[1200];
    int rc;
    spade_policy *p = NULL;
    if (b->kind == 0) {
        rc = gpt_policy_new(&p, &c0, tok, 1, e, sizeof e);
    } else {
        uint64_t sz;
        if (b->kind == 1 ? spade_model_resolve(b->spec, file, sizeof file, e, sizeof e)
                         : snprintf(file, sizeof file, "%s", b->spec) >= (int)sizeof file) {
            spade_errf(err, errlen, "checkpoint '%s': lora.base '%s': %s", path, b->spec,
                       b->kind == 1 ? e : "too long");
            return SPADE_POLICY_EIO;
        }
        if (spade_sha256_file(file, hex, &sz, e, sizeof e)) {
            spade_errf(err, errlen, "checkpoint '%s': lora.base '%s': %s", path, b->spec, e);
            return SPADE_POLICY_EIO;
        }
        if (strcmp(hex, b->sha256)) {
            spade_errf(err, errlen,
                       "checkpoint '%s': lora.base_sha256: its adapters were trained on '%s' with SHA-256 %.64s, "
                       "but %s has %s: refusing to put them on another base",
                       path, b->spec, b->sha256, file, hex);
            return SPADE_POLICY_EFORMAT;
        }
        if (b->kind == 1) {
            spade_model_opts mo = {.backend = cfg->backend, .context = cfg->context};
            rc = spade_policy_from_model(&p, b->spec, &mo, e, sizeof e);
        } else {
            rc = spade_policy_load_weights(&p, file, cfg->backend, e, sizeof e);
        }
    }
    if (!rc && (p->cfg.layers != cfg->layers || p->cfg.heads != cfg->heads || p->cfg.width != cfg->width ||
                p->cfg.context != cfg->context || p->V != cfg->vocab || !spade_gpt_config_same_arch(&p->cfg, cfg))) {
        snprintf(e, sizeof e, "its shape is not the checkpoint's");
        rc = SPADE_POLICY_EFORMAT;
    }
    if (!rc && p->lora_r) {
        snprintf(e, sizeof e, "it has adapters of its own");
        rc = SPADE_POLICY_EFORMAT;
    }
    if (!rc && tok && !spade_tokenizer_equal(tok, spade_policy_tokenizer(p))) {
        snprintf(e, sizeof e, "its tokenizer is not the checkpoint's");
        rc = SPADE_POLICY_EFORMAT;
    }
    if (!rc) {
        p->origin_kind = b->kind;
        memcpy(p->origin, b->spec, sizeof p->origin - 1); /* written with at most 1023 bytes */
        p->origin[sizeof p->origin - 1] = 0;
        memcpy(p->origin_sha256, b->sha256, sizeof p->origin_sha256);
        rc = gpt_lora_enable(p, cfg->lora_rank, cfg->lora_alpha, cfg->lora_targets, e, sizeof e);
    }
    if (rc) {
        spade_errf(err, errlen, "checkpoint '%s': lora.base '%s': %s", path, b->kind ? b->spec : "(seeded init)", e);
        spade_policy_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

static int load_file(spade_policy **out, const char *path, const char *backend, int weights_only, char *err,
                     size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        spade_errf(err, errlen, "checkpoint '%s': %s", path, strerror(errno));
        return SPADE_POLICY_EIO;
    }
    spade_gpt_config cfg;
    uint64_t step, P, h, toklen;
    uint32_t flags;
    spade_tokenizer *tok = NULL;
    ckpt_base base;
    int rc = read_header(f, path, &cfg, &step, &P, &flags, &toklen, &h, &base, err, errlen);
    if (!rc) rc = read_tokenizer(f, path, &cfg, toklen, &h, &tok, err, errlen);
    if (rc) {
        fclose(f);
        return rc;
    }
    if (backend) snprintf(cfg.backend, sizeof cfg.backend, "%s", backend);
    spade_policy *p;
    rc = cfg.lora_rank ? open_base(&p, path, &cfg, &base, tok, err, errlen) : gpt_alloc(&p, &cfg, err, errlen);
    if (rc) {
        fclose(f);
        spade_tokenizer_free(tok);
        return rc;
    }
    if (cfg.lora_rank) {
        spade_tokenizer_free(tok); /* the base's own, found equal */
    } else {
        p->tok = tok;
        /* a LoRA put on this policy later names this file as its base */
        p->origin_kind = 2;
        char *rp = realpath(path, NULL);
        snprintf(p->origin, sizeof p->origin, "%s", rp ? rp : path);
        free(rp);
    }
    rc = load_body(p, f, path, flags & 1, weights_only, &h, err, errlen);
    unsigned char tr[8];
    if (!rc && fread(tr, 1, 8, f) != 8) {
        spade_errf(err, errlen, "checkpoint '%s': read error or file changed while reading", path);
        rc = SPADE_POLICY_EIO;
    }
    fclose(f);
    if (!rc && h != get64(tr)) {
        spade_errf(err, errlen, "checkpoint '%s': checksum mismatch: the file is corrupt", path);
        rc = SPADE_POLICY_EFORMAT;
    }
    if (rc) {
        spade_policy_free(p);
        return rc;
    }
    p->step = (long)step;
    *out = p;
    return 0;
}

int spade_policy_load(spade_policy **out, const char *path, const char *backend, char *err, size_t errlen) {
    return load_file(out, path, backend, 0, err, errlen);
}

int spade_policy_load_weights(spade_policy **out, const char *path, const char *backend, char *err, size_t errlen) {
    return load_file(out, path, backend, 1, err, errlen);
}
