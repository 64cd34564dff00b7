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
 *        H    K   the tokenizer file's text (tokenizer.h), when K > 0
 *      H+K   4P   parameters (float32, in the order of gpt_internal.h for the arch)
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

#define CKPT_MAGIC "SPADEGPT"
#define CKPT_VERSION 3u
#define CKPT_HEADER 136u
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

int spade_policy_save(spade_policy *p, const char *path, char *err, size_t errlen) {
    size_t P = p->num_params;
    float *host = malloc(P * sizeof(float));
    if (!host) {
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    /* A GPT is written as version 2, byte for byte what it was before there
     * were two architectures (older builds still read it; no architecture
     * field means gpt); only a Llama needs version 3's longer header. */
    int v3 = p->arch != SPADE_ARCH_GPT;
    uint32_t hsize = v3 ? CKPT_HEADER : CKPT_HEADER_V2;
    unsigned char hdr[CKPT_HEADER] = {0};
    memcpy(hdr, CKPT_MAGIC, 8);
    put32(hdr + 8, v3 ? CKPT_VERSION : 2u);
    put32(hdr + 12, 0x01020304u);
    put32(hdr + 16, hsize);
    int32_t dims[6] = {p->L, p->NH, p->C, p->maxT, p->V, p->Vp};
    memcpy(hdr + 20, dims, sizeof dims);
    put32(hdr + 44, 1u);
    put64(hdr + 48, p->cfg.seed);
    put64(hdr + 56, (uint64_t)p->step);
    put64(hdr + 64, P);
    memcpy(hdr + 80, p->cfg.backend, strnlen(p->cfg.backend, 15));
    const char *arch = v3 ? "llama" : "gpt";
    memcpy(hdr + 96, arch, strlen(arch));
    int32_t ldims[3] = {p->cfg.kv_heads, p->cfg.ffn, p->cfg.rope_dims};
    memcpy(hdr + 104, ldims, sizeof ldims);
    put32(hdr + 116, (p->cfg.rope_neox ? 1u : 0u) | (p->cfg.untied ? 2u : 0u) | (p->cfg.qkv_bias ? 4u : 0u));
    memcpy(hdr + 120, &p->cfg.rope_base, 8);
    memcpy(hdr + 128, &p->cfg.norm_eps, 4);
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
    const float *srcs[3] = {p->params_mem, p->m_mem, p->v_mem};
    if (write_all(fd, hdr, hsize, &h)) rc = SPADE_POLICY_EIO;
    if (!rc && toklen && write_all(fd, tokbuf, toklen, &h)) rc = SPADE_POLICY_EIO;
    free(tokbuf);
    for (int i = 0; i < 3 && !rc; i++) {
        if (p->be.vt->download(p->be.ctx, host, srcs[i], P * sizeof(float))) {
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

/* Reads and checks the header; fills cfg, *step, *P, *flags and the file size. */
static int read_header(FILE *f, const char *path, spade_gpt_config *cfg, uint64_t *step, uint64_t *P, uint32_t *flags,
                       uint64_t *toklen, uint64_t *h, char *err, size_t errlen) {
    struct stat st;
    if (fstat(fileno(f), &st)) {
        spade_errf(err, errlen, "checkpoint '%s': %s", path, strerror(errno));
        return SPADE_POLICY_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        spade_errf(err, errlen, "checkpoint '%s': not a regular file", path);
        return SPADE_POLICY_EFORMAT;
    }
    unsigned char hdr[CKPT_HEADER] = {0};
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
    uint32_t ver = get32(hdr + 8);
    if (get32(hdr + 12) != 0x01020304u) {
        spade_errf(err, errlen, "checkpoint '%s': written on a machine with the other byte order", path);
        return SPADE_POLICY_EFORMAT;
    }
    if (ver < 1 || ver > CKPT_VERSION) {
        spade_errf(err, errlen, "checkpoint '%s': format version %u, this build reads versions 1 to %u", path, ver,
                   CKPT_VERSION);
        return SPADE_POLICY_EFORMAT;
    }
    uint32_t hsize = ver >= 3 ? CKPT_HEADER : CKPT_HEADER_V2;
    if (get32(hdr + 16) != hsize) {
        spade_errf(err, errlen, "checkpoint '%s': header size %u, expected %u for version %u", path, get32(hdr + 16),
                   hsize, ver);
        return SPADE_POLICY_EFORMAT;
    }
    if (hsize > CKPT_HEADER_V2 && fread(hdr + CKPT_HEADER_V2, 1, hsize - CKPT_HEADER_V2, f) != hsize - CKPT_HEADER_V2) {
        spade_errf(err, errlen, "checkpoint '%s': truncated: %llu bytes, shorter than the %u-byte header", path,
                   (unsigned long long)st.st_size, hsize);
        return SPADE_POLICY_EFORMAT;
    }
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
    if (ver >= 3) {
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
    }
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
    /* "gguf" when the stored text is a pretrained model's reference (read_tokenizer sets it) */
    snprintf(cfg->tokenizer, sizeof cfg->tokenizer, "%s", *toklen ? "bpe" : "bytes");
    char cerr[200];
    if (spade_gpt_config_validate(cfg, cerr, sizeof cerr)) {
        spade_errf(err, errlen, "checkpoint '%s': bad config header: %s", path, cerr);
        return SPADE_POLICY_EFORMAT;
    }
    *flags = get32(hdr + 44);
    *step = get64(hdr + 56);
    *P = get64(hdr + 64);
    if (*P != spade_gpt_config_num_params(cfg)) {
        spade_errf(err, errlen, "checkpoint '%s': %llu parameters, but its config needs %zu", path,
                   (unsigned long long)*P, spade_gpt_config_num_params(cfg));
        return SPADE_POLICY_EFORMAT;
    }
    uint64_t want = hsize + *toklen + (*P) * 4 * ((*flags & 1) ? 3 : 1) + 8;
    if ((uint64_t)st.st_size != want) {
        spade_errf(err, errlen, "checkpoint '%s': %s: %llu bytes, the header promises %llu", path,
                   (uint64_t)st.st_size < want ? "truncated" : "trailing garbage", (unsigned long long)st.st_size,
                   (unsigned long long)want);
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
    int rc = read_header(f, path, cfg, &step, &P, &flags, &toklen, &h, err, errlen);
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
    int rc = read_header(f, path, &cfg, &step, &P, &flags, &toklen, &h, err, errlen);
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

int spade_policy_load(spade_policy **out, const char *path, const char *backend, char *err, size_t errlen) {
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
    int rc = read_header(f, path, &cfg, &step, &P, &flags, &toklen, &h, err, errlen);
    if (!rc) rc = read_tokenizer(f, path, &cfg, toklen, &h, &tok, err, errlen);
    if (rc) {
        fclose(f);
        return rc;
    }
    if (backend) snprintf(cfg.backend, sizeof cfg.backend, "%s", backend);
    int nt = (flags & 1) ? 3 : 1;
    float *host = malloc((size_t)P * nt * sizeof(float));
    if (!host) {
        fclose(f);
        spade_tokenizer_free(tok);
        spade_errf(err, errlen, "checkpoint '%s': out of host memory", path);
        return SPADE_POLICY_ENOMEM;
    }
    unsigned char tr[8];
    if (fread(host, sizeof(float), (size_t)P * nt, f) != (size_t)P * nt || fread(tr, 1, 8, f) != 8) {
        spade_errf(err, errlen, "checkpoint '%s': read error or file changed while reading", path);
        free(host);
        fclose(f);
        spade_tokenizer_free(tok);
        return SPADE_POLICY_EIO;
    }
    fclose(f);
    h = fnv1a(h, host, (size_t)P * nt * sizeof(float));
    if (h != get64(tr)) {
        spade_errf(err, errlen, "checkpoint '%s': checksum mismatch: the file is corrupt", path);
        free(host);
        spade_tokenizer_free(tok);
        return SPADE_POLICY_EFORMAT;
    }
    spade_policy *p;
    rc = gpt_alloc(&p, &cfg, err, errlen);
    if (rc) {
        free(host);
        spade_tokenizer_free(tok);
        return rc;
    }
    p->tok = tok;
    float *dst[3] = {p->params_mem, p->m_mem, p->v_mem};
    for (int i = 0; i < nt && !rc; i++)
        if (p->be.vt->upload(p->be.ctx, dst[i], host + (size_t)i * P, (size_t)P * sizeof(float)))
            rc = gpt_backend_fail(p, "checkpoint upload", err, errlen);
    free(host);
    if (rc) {
        spade_policy_free(p);
        return rc;
    }
    p->step = (long)step;
    *out = p;
    return 0;
}
