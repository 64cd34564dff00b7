/* test_tokenizer.c — Check suite for the tokenizers (core/policy/tokenizer.c)
 * and their place in the policy: exact round trips (random bytes, text-like
 * bytes, every file of the source tree), the fast encoder against the slow
 * reference, deterministic training, the tokenizer file's errors, BPE inside
 * a checkpoint, and a checkpoint written before tokenizers were stored.
 * Not a test of the model's arithmetic (tests/test_policy.c).
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"
#include "testutil.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    size_t k;
    while ((k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap);
            ck_assert_ptr_nonnull(b);
        }
    }
    fclose(f);
    *len = n;
    return b;
}

static void write_bytes(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The regular files directly in dir, sorted (full paths, malloc()ed). */
static int list_dir(const char *dir, char ***out) {
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    char **v = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%.300s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) || !S_ISREG(st.st_mode)) continue;
        v = realloc(v, (size_t)(n + 1) * sizeof *v);
        v[n++] = strdup(p);
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

/* A tokenizer trained on stdenv/ (files added in the order given by `reverse`). */
static spade_tokenizer *train_stdenv(int vocab, int reverse) {
    char dir[4096], err[512];
    snprintf(dir, sizeof dir, "%s/stdenv", tu_srcdir());
    char **files;
    int n = list_dir(dir, &files);
    ck_assert_int_gt(n, 3);
    spade_bpe_trainer *tr;
    ck_assert_int_eq(spade_bpe_trainer_new(&tr, err, sizeof err), 0);
    for (int i = 0; i < n; i++) {
        size_t len;
        char *b = read_all(files[reverse ? n - 1 - i : i], &len);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(spade_bpe_trainer_add(tr, b, len, err, sizeof err), 0);
        free(b);
    }
    for (int i = 0; i < n; i++) free(files[i]);
    free(files);
    spade_tokenizer *t;
    ck_assert_msg(spade_bpe_trainer_finish(tr, vocab, &t, err, sizeof err) == 0, "%s", err);
    spade_bpe_trainer_free(tr);
    return t;
}

/* Encodes with the fast path (cache on and off) and the reference, checks they
 * agree token for token, that no special token and nothing outside [0, V) came
 * out, that spade_tokenizer_count counts as many, and that decoding gives the
 * bytes back. Returns the token count. */
static size_t check_exact(spade_tokenizer *t, const void *bytes, size_t n, const char *what) {
    int *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
    char *dec = malloc(n + 1);
    ck_assert(a && b && dec);
    size_t ka = spade_tokenizer_encode(t, bytes, n, a);
    size_t kb = spade_tokenizer_encode_ref(t, bytes, n, b);
    ck_assert_msg(ka == kb, "%s: fast path %zu tokens, reference %zu", what, ka, kb);
    size_t kn = spade_tokenizer_count(t, bytes, n);
    ck_assert_msg(kn == ka, "%s: count says %zu tokens, encode gave %zu", what, kn, ka);
    /* plain ifs in the loops: every ck_assert is a write(2) to Check's pipe */
    for (size_t i = 0; i < ka; i++) {
        if (a[i] != b[i]) ck_abort_msg("%s: token %zu: fast %d, reference %d", what, i, a[i], b[i]);
        if (a[i] < 0 || a[i] >= spade_tokenizer_vocab(t)) ck_abort_msg("%s: token %d outside V", what, a[i]);
        if (a[i] >= 256 && a[i] < SPADE_TOK_COUNT) ck_abort_msg("%s: special token %d from text", what, a[i]);
    }
    spade_tokenizer_set_cache(t, 0);
    size_t kc = spade_tokenizer_encode(t, bytes, n, b);
    spade_tokenizer_set_cache(t, 1);
    ck_assert_msg(kc == ka && !memcmp(a, b, ka * sizeof *a), "%s: cache off differs from cache on", what);
    ck_assert_uint_le(ka, n);
    size_t dl = 0;
    ck_assert_int_eq(spade_tokenizer_decode(t, a, ka, 1, dec, n + 1, &dl), 0);
    ck_assert_msg(dl == n && !memcmp(dec, bytes, n), "%s: decode(encode(x)) != x", what);
    free(a);
    free(b);
    free(dec);
    return ka;
}

/* ---------------------------------------------------------------- tests */

START_TEST(test_split_covers) {
    /* every chunk is non-empty, at most the limit, and together they are the input */
    uint64_t s = 99;
    for (int trial = 0; trial < 200; trial++) {
        size_t n = (size_t)(rng_next(&s) % 400);
        unsigned char buf[400];
        static const char alpha[] = "ab_Z09 \n\t(){};=->*&\"\\\xc3\xa9\x00";
        for (size_t i = 0; i < n; i++)
            buf[i] = trial % 2 ? (unsigned char)rng_next(&s) : (unsigned char)alpha[rng_next(&s) % (sizeof alpha - 1)];
        if (trial == 7) memset(buf, 'x', n); /* one long word: cut at the limit */
        size_t ends[400], k = spade_tokenizer_split(buf, n, ends), prev = 0;
        for (size_t i = 0; i < k; i++) {
            if (ends[i] <= prev || ends[i] - prev > SPADE_BPE_MAX_CHUNK)
                ck_abort_msg("trial %d: chunk %zu is [%zu, %zu)", trial, i, prev, ends[i]);
            prev = ends[i];
        }
        ck_assert_uint_eq(prev, n);
    }
    /* the rules, on C */
    const char *src = "    if (x->next) return y;\n    z = 0;";
    size_t ends[64], k = spade_tokenizer_split(src, strlen(src), ends), prev = 0;
    const char *want[] = {"   ", " if", " (", "x", "->next", ")", " return", " y", ";\n   ", " z", " =", " 0", ";"};
    ck_assert_uint_eq(k, sizeof want / sizeof *want);
    for (size_t i = 0; i < k; i++) {
        ck_assert_msg(ends[i] - prev == strlen(want[i]) && !memcmp(src + prev, want[i], strlen(want[i])),
                      "chunk %zu is '%.*s', expected '%s'", i, (int)(ends[i] - prev), src + prev, want[i]);
        prev = ends[i];
    }
}
END_TEST

START_TEST(test_bytes_object) {
    spade_tokenizer *t;
    char err[256];
    ck_assert_int_eq(spade_tokenizer_new_bytes(&t, err, sizeof err), 0);
    ck_assert_str_eq(spade_tokenizer_kind(t), "bytes");
    ck_assert_int_eq(spade_tokenizer_vocab(t), SPADE_VOCAB);
    unsigned char b[300];
    for (int i = 0; i < 300; i++) b[i] = (unsigned char)(i * 7);
    int toks[300];
    ck_assert_uint_eq(spade_tokenizer_encode(t, b, 300, toks), 300);
    for (int i = 0; i < 300; i++)
        if (toks[i] != b[i]) ck_abort_msg("byte %d: token %d", i, toks[i]);
    check_exact(t, b, 300, "bytes");
    int bad = SPADE_VOCAB;
    char out[8];
    ck_assert_int_ne(spade_tokenizer_decode(t, &bad, 1, 1, out, sizeof out, NULL), 0);
    spade_tokenizer_free(t);
}
END_TEST

START_TEST(test_roundtrip_random) {
    spade_tokenizer *t = train_stdenv(1024, 0);
    ck_assert_str_eq(spade_tokenizer_kind(t), "bpe");
    ck_assert_int_eq(spade_tokenizer_vocab(t), 1024);
    uint64_t s = 12345;
    unsigned char *buf = malloc(1 << 16);
    for (int trial = 0; trial < 60; trial++) {
        size_t n = trial == 0 ? 0 : (size_t)(rng_next(&s) % (1 << 16));
        /* thirds: uniform random bytes (NUL, invalid UTF-8), C-like text, long runs */
        static const char alpha[] = "int x = 0;\n    return y->z(a, b);\t/* c */ \"s\\n\" #include <a.h>";
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&s);
            if (trial % 3 == 0)
                buf[i] = (unsigned char)r;
            else if (trial % 3 == 1)
                buf[i] = (unsigned char)alpha[r % (sizeof alpha - 1)];
            else
                buf[i] = (unsigned char)" e\n\0"[(r >> 8) % 4 * (r % 97 == 0)];
        }
        char what[64];
        snprintf(what, sizeof what, "random trial %d (%zu bytes)", trial, n);
        check_exact(t, buf, n, what);
    }
    free(buf);
    /* the text of a special token is ordinary text */
    const char *sp = "<|end|><|action|> <|source|>\n";
    check_exact(t, sp, strlen(sp), "special-token text");
    spade_tokenizer_free(t);
}
END_TEST

/* Every file of the source tree: git's list when this is a checkout, else a
 * walk of the directory (dot files and directories skipped). */
static int tree_files(char ***out) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "git -C '%s' ls-files 2>/dev/null", tu_srcdir());
    char **v = NULL;
    int n = 0;
    FILE *p = popen(cmd, "r");
    char line[4096];
    while (p && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        char full[8300];
        snprintf(full, sizeof full, "%s/%s", tu_srcdir(), line);
        struct stat st;
        if (stat(full, &st) || !S_ISREG(st.st_mode)) continue;
        v = realloc(v, (size_t)(n + 1) * sizeof *v);
        v[n++] = strdup(full);
    }
    if (p) pclose(p);
    if (n) {
        *out = v;
        return n;
    }
    /* no git: walk (a stack of directories) */
    char **stack = malloc(sizeof *stack);
    int ns = 1;
    stack[0] = strdup(tu_srcdir());
    while (ns) {
        char *d = stack[--ns];
        DIR *dd = opendir(d);
        struct dirent *e;
        while (dd && (e = readdir(dd))) {
            if (e->d_name[0] == '.') continue;
            char full[8300];
            snprintf(full, sizeof full, "%s/%s", d, e->d_name);
            struct stat st;
            if (lstat(full, &st)) continue;
            if (S_ISDIR(st.st_mode)) {
                stack = realloc(stack, (size_t)(ns + 1) * sizeof *stack);
                stack[ns++] = strdup(full);
            } else if (S_ISREG(st.st_mode) && st.st_size < (4 << 20)) {
                v = realloc(v, (size_t)(n + 1) * sizeof *v);
                v[n++] = strdup(full);
            }
        }
        if (dd) closedir(dd);
        free(d);
    }
    free(stack);
    *out = v;
    return n;
}

START_TEST(test_roundtrip_tree) {
    spade_tokenizer *t = train_stdenv(2048, 0);
    char **files;
    int n = tree_files(&files);
    ck_assert_int_gt(n, 50);
    size_t bytes = 0, toks = 0;
    for (int i = 0; i < n; i++) {
        size_t len;
        char *b = read_all(files[i], &len);
        ck_assert_msg(b != NULL, "cannot read %s", files[i]);
        size_t k = check_exact(t, b, len, files[i]);
        /* the ratio is over the tree's text; tests/data holds fixtures (model
         * vocabularies in GPT-2's byte mapping) and fuzz/ the fuzzers' inputs and
         * their builds, data rather than C or prose, as is any file with a NUL
         * byte (an object the in-tree build left) */
        if (!strstr(files[i], "/tests/data/") && !strstr(files[i], "/fuzz/") && !memchr(b, 0, len)) {
            toks += k;
            bytes += len;
        }
        free(b);
        free(files[i]);
    }
    free(files);
    /* the tree is mostly C and Markdown: the tokenizer must compress it at all */
    ck_assert_msg(toks * 2 < bytes, "%zu bytes became %zu tokens", bytes, toks);
    spade_tokenizer_free(t);
}
END_TEST

START_TEST(test_training_deterministic) {
    spade_tokenizer *a = train_stdenv(1500, 0), *b = train_stdenv(1500, 1);
    char *ba, *bb, err[256];
    size_t la, lb;
    ck_assert_int_eq(spade_tokenizer_serialize(a, &ba, &la, err, sizeof err), 0);
    ck_assert_int_eq(spade_tokenizer_serialize(b, &bb, &lb, err, sizeof err), 0);
    ck_assert_msg(la == lb && !memcmp(ba, bb, la), "the same files in another order trained another tokenizer");
    ck_assert(spade_tokenizer_equal(a, b));
    char dir[256], p1[300], p2[300];
    tu_mkdtemp(dir, sizeof dir, "tok");
    snprintf(p1, sizeof p1, "%s/a.tok", dir);
    snprintf(p2, sizeof p2, "%s/b.tok", dir);
    ck_assert_int_eq(spade_tokenizer_save(a, p1, err, sizeof err), 0);
    ck_assert_int_eq(spade_tokenizer_save(b, p2, err, sizeof err), 0);
    size_t f1, f2;
    char *c1 = read_all(p1, &f1), *c2 = read_all(p2, &f2);
    ck_assert(f1 == f2 && !memcmp(c1, c2, f1));
    ck_assert(f1 == la && !memcmp(c1, ba, la));
    /* and loads back as the same tokenizer */
    spade_tokenizer *c;
    ck_assert_msg(spade_tokenizer_load(&c, p1, err, sizeof err) == 0, "%s", err);
    ck_assert(spade_tokenizer_equal(a, c));
    for (int id = SPADE_TOK_COUNT; id < spade_tokenizer_vocab(a); id++) {
        size_t l1, l2;
        const unsigned char *x = spade_tokenizer_piece(a, id, &l1), *y = spade_tokenizer_piece(c, id, &l2);
        if (!x || !y || l1 != l2 || memcmp(x, y, l1)) ck_abort_msg("token %d differs after loading", id);
    }
    ck_assert_ptr_null(spade_tokenizer_piece(a, SPADE_TOK_END, NULL));
    /* a vocabulary the corpus cannot fill stops where no pair repeats */
    spade_bpe_trainer *tr;
    ck_assert_int_eq(spade_bpe_trainer_new(&tr, err, sizeof err), 0);
    ck_assert_int_eq(spade_bpe_trainer_add(tr, "abab abab", 9, err, sizeof err), 0);
    spade_tokenizer *small;
    ck_assert_int_eq(spade_bpe_trainer_finish(tr, 4096, &small, err, sizeof err), 0);
    ck_assert_int_lt(spade_tokenizer_vocab(small), 270);
    ck_assert_int_gt(spade_tokenizer_vocab(small), SPADE_TOK_COUNT);
    int out[9];
    ck_assert_uint_eq(spade_tokenizer_encode(small, "abab abab", 9, out), 3); /* "abab" " " "abab" */
    ck_assert_int_ne(spade_bpe_trainer_finish(tr, 100, &small, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "vocabulary 100"));
    spade_bpe_trainer_free(tr);
    spade_tokenizer_free(small);
    free(ba);
    free(bb);
    free(c1);
    free(c2);
    spade_tokenizer_free(a);
    spade_tokenizer_free(b);
    spade_tokenizer_free(c);
    tu_rm_rf(dir);
}
END_TEST

/* Writes text as a tokenizer file at path and expects loading it to fail with
 * a message naming the file and containing `fault`. */
static void expect_bad_file(const char *path, const char *text, size_t n, const char *fault) {
    write_bytes(path, text, n);
    spade_tokenizer *t = (spade_tokenizer *)1;
    char err[512];
    ck_assert_int_ne(spade_tokenizer_load(&t, path, err, sizeof err), 0);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, path) != NULL, "error does not name the file: %s", err);
    ck_assert_msg(strstr(err, fault) != NULL, "error '%s' does not say '%s'", err, fault);
}

#define expect_bad_lit(path, lit, fault) expect_bad_file(path, lit, strlen(lit), fault)

START_TEST(test_bad_files) {
    spade_tokenizer *t = train_stdenv(600, 0);
    char *txt, err[512], dir[256], path[300];
    size_t n;
    ck_assert_int_eq(spade_tokenizer_serialize(t, &txt, &n, err, sizeof err), 0);
    tu_mkdtemp(dir, sizeof dir, "tokbad");
    snprintf(path, sizeof path, "%s/t.tok", dir);
    expect_bad_lit(path, "", "empty");
    expect_bad_file(path, txt, n / 2, "truncated");
    char *nl = memchr(txt + n / 2, '\n', n / 2);
    expect_bad_file(path, txt, (size_t)(nl - txt) + 1, "truncated: it ends after");
    expect_bad_file(path, txt, n - 3, "truncated");
    expect_bad_lit(path, "GPT2 merges\n", "not a spade tokenizer file");
    expect_bad_lit(path, "spade-tokenizer 9\nsplit code-1\nmerges 0\n", "format version");
    expect_bad_lit(path, "spade-tokenizer 1\nsplit regex\nmerges 0\n", "split");
    expect_bad_lit(path, "spade-tokenizer 1\nsplit code-1\nmerges -4\n", "line 3");
    expect_bad_lit(path, "spade-tokenizer 1\nsplit code-1\nmerges 2\n999 5\n",
                   "line 4: merge 0: token 999 is not defined");
    expect_bad_lit(path, "spade-tokenizer 1\nsplit code-1\nmerges 1\n256 97\n", "special token");
    expect_bad_lit(path, "spade-tokenizer 1\nsplit code-1\nmerges 2\n97 98\n97 98\n", "already merge 0");
    expect_bad_lit(path, "spade-tokenizer 1\nsplit code-1\nmerges 1\n97 x\n", "expected two token ids");
    /* one byte changed in the comment of a merge line: it still parses (the
     * comment is not read back), the checksum does not */
    char *bad = malloc(n);
    memcpy(bad, txt, n);
    char *line4 = strchr(strchr(strchr(bad, '\n') + 1, '\n') + 1, '\n') + 1, *q = strchr(line4, '"');
    ck_assert(q && q < strchr(line4, '\n'));
    q[1] = q[1] == 'x' ? 'y' : 'x';
    expect_bad_file(path, bad, n, "checksum mismatch");
    memcpy(bad, txt, n);
    expect_bad_file(path, bad, n - 1, "no newline");
    /* trailing data after a valid file */
    char *more = malloc(n + 6);
    memcpy(more, txt, n);
    memcpy(more + n, "extra\n", 6);
    expect_bad_file(path, more, n + 6, "trailing data");
    /* a missing file */
    char missing[320];
    snprintf(missing, sizeof missing, "%s/none.tok", dir);
    spade_tokenizer *x;
    ck_assert_int_ne(spade_tokenizer_load(&x, missing, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, missing));
    ck_assert_ptr_nonnull(strstr(err, "No such file"));
    /* the whole file is fine */
    write_bytes(path, txt, n);
    ck_assert_msg(spade_tokenizer_load(&x, path, err, sizeof err) == 0, "%s", err);
    ck_assert(spade_tokenizer_equal(t, x));
    spade_tokenizer_free(x);
    free(more);
    free(bad);
    free(txt);
    spade_tokenizer_free(t);
    tu_rm_rf(dir);
}
END_TEST

static void small_config(spade_gpt_config *c) {
    spade_gpt_config_default(c);
    c->layers = 1;
    c->heads = 2;
    c->width = 16;
    c->context = 16;
    snprintf(c->backend, sizeof c->backend, "cpu_ref");
}

START_TEST(test_checkpoint_bpe) {
    spade_tokenizer *t = train_stdenv(700, 0);
    spade_gpt_config c;
    small_config(&c);
    char err[512], dir[256], ck[300], tokf[300];
    tu_mkdtemp(dir, sizeof dir, "tokck");
    snprintf(ck, sizeof ck, "%s/p.ckpt", dir);
    snprintf(tokf, sizeof tokf, "%s/t.tok", dir);
    spade_policy *p, *q;
    ck_assert_msg(spade_policy_new_with_tokenizer(&p, &c, t, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(spade_policy_config(p)->vocab, 700);
    ck_assert_str_eq(spade_policy_config(p)->tokenizer, "bpe");
    ck_assert(spade_tokenizer_equal(spade_policy_tokenizer(p), t));
    /* Vp follows V: 700 rounds up to 704 embedding rows */
    size_t cnt;
    ck_assert_int_eq(spade_policy_tensor(p, 0, NULL, NULL, &cnt), 0);
    ck_assert_uint_eq(cnt, (size_t)704 * 16);
    /* tokens above 263 train */
    const char *text = "    return sp->next;\n";
    int tok[16], tg[16];
    size_t k = spade_tokenizer_encode(spade_policy_tokenizer(p), text, strlen(text), tok);
    ck_assert_uint_lt(k, 10);
    for (size_t i = 0; i + 1 < k; i++) tg[i] = tok[i + 1];
    tg[k - 1] = SPADE_TOK_END;
    float loss, loss2;
    spade_adamw_opts o;
    spade_adamw_opts_default(&o);
    ck_assert_msg(spade_policy_forward(p, tok, tg, NULL, 1, (int)k, &loss, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert(isfinite(loss));
    ck_assert_int_eq(spade_policy_backward(p, 1, err, sizeof err), 0);
    ck_assert_int_eq(spade_policy_step(p, &o, NULL, err, sizeof err), 0);
    ck_assert_msg(spade_policy_save(p, ck, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(spade_policy_load(&q, ck, NULL, err, sizeof err) == 0, "%s", err);
    ck_assert(spade_tokenizer_equal(spade_policy_tokenizer(q), t));
    ck_assert_int_eq(spade_policy_config(q)->vocab, 700);
    ck_assert_uint_eq(spade_policy_num_params(q), spade_policy_num_params(p));
    ck_assert_int_eq(spade_policy_steps(q), 1);
    ck_assert_int_eq(spade_policy_forward(p, tok, tg, NULL, 1, (int)k, &loss, NULL, err, sizeof err), 0);
    ck_assert_int_eq(spade_policy_forward(q, tok, tg, NULL, 1, (int)k, &loss2, NULL, err, sizeof err), 0);
    ck_assert(loss == loss2);
    spade_gpt_config rc;
    ck_assert_int_eq(spade_policy_read_config(ck, &rc, err, sizeof err), 0);
    ck_assert_int_eq(rc.vocab, 700);
    ck_assert_str_eq(rc.tokenizer, "bpe");
    spade_tokenizer *rt;
    ck_assert_msg(spade_policy_read_tokenizer(ck, &rt, err, sizeof err) == 0, "%s", err);
    ck_assert(spade_tokenizer_equal(rt, t));
    spade_tokenizer_free(rt);
    /* the clone keeps it too */
    spade_policy *cl;
    ck_assert_int_eq(spade_policy_clone(&cl, q, NULL, err, sizeof err), 0);
    ck_assert(spade_tokenizer_equal(spade_policy_tokenizer(cl), t));
    spade_policy_free(cl);
    /* policy.tokenizer = bpe through the config keys and a file */
    ck_assert_int_eq(spade_tokenizer_save(t, tokf, err, sizeof err), 0);
    spade_gpt_config c2;
    small_config(&c2);
    ck_assert_int_eq(spade_gpt_config_set(&c2, "policy.tokenizer", "bpe", err, sizeof err), 0);
    ck_assert_int_ne(spade_policy_new(&cl, &c2, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "policy.tokenizer_file"));
    ck_assert_int_eq(spade_gpt_config_set(&c2, "policy.tokenizer_file", tokf, err, sizeof err), 0);
    ck_assert_msg(spade_policy_new(&cl, &c2, err, sizeof err) == 0, "%s", err);
    ck_assert(spade_tokenizer_equal(spade_policy_tokenizer(cl), t));
    spade_policy_free(cl);
    ck_assert_int_eq(spade_gpt_config_set(&c2, "tokenizer_file", ck, err, sizeof err), 0);
    ck_assert_int_ne(spade_policy_new(&cl, &c2, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, ck)); /* a checkpoint is not a tokenizer file, and says which file */
    ck_assert_int_eq(spade_gpt_config_set(&c2, "tokenizer", "words", err, sizeof err), SPADE_POLICY_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "bytes or bpe"));
    /* corruption inside the stored tokenizer: the message names the checkpoint */
    size_t n;
    char *b = read_all(ck, &n);
    ck_assert_ptr_nonnull(b);
    ck_assert(!memcmp(b + 96, "spade-tokenizer 1\n", 18));
    b[96 + 20] ^= 1;
    write_bytes(ck, b, n);
    ck_assert_int_ne(spade_policy_load(&cl, ck, NULL, err, sizeof err), 0);
    ck_assert_msg(strstr(err, ck) && strstr(err, "tokenizer"), "%s", err);
    b[96 + 20] ^= 1;
    write_bytes(ck, b, n - 100);
    ck_assert_int_ne(spade_policy_load(&cl, ck, NULL, err, sizeof err), 0);
    ck_assert_msg(strstr(err, ck) && strstr(err, "truncated"), "%s", err);
    ck_assert_int_ne(spade_policy_read_tokenizer(ck, &rt, err, sizeof err), 0);
    free(b);
    spade_policy_free(p);
    spade_policy_free(q);
    spade_tokenizer_free(t);
    tu_rm_rf(dir);
}
END_TEST

START_TEST(test_checkpoint_v1_bytes) {
    /* tests/data/policy-v1-bytes.ckpt was written by the code before checkpoints
     * stored a tokenizer (format version 1): L1 NH2 C8 T8, seed 42, cpu_ref, one
     * AdamW step at lr 1e-2 on the sequence below; its loss there after the step
     * was 5.41979074. */
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/tests/data/policy-v1-bytes.ckpt", tu_srcdir());
    size_t n;
    char *b = read_all(path, &n);
    ck_assert_msg(b != NULL, "cannot read %s", path);
    ck_assert_int_eq(b[8], 1); /* really version 1 */
    free(b);
    spade_policy *p;
    ck_assert_msg(spade_policy_load(&p, path, "cpu_ref", err, sizeof err) == 0, "%s", err);
    const spade_gpt_config *c = spade_policy_config(p);
    ck_assert_int_eq(c->layers, 1);
    ck_assert_int_eq(c->heads, 2);
    ck_assert_int_eq(c->width, 8);
    ck_assert_int_eq(c->context, 8);
    ck_assert_int_eq(c->vocab, SPADE_VOCAB);
    ck_assert_str_eq(c->tokenizer, "bytes");
    ck_assert_int_eq(spade_policy_steps(p), 1);
    ck_assert_str_eq(spade_tokenizer_kind(spade_policy_tokenizer(p)), "bytes");
    int tok[8] = {'s', 'p', 'a', 'd', 'e', SPADE_TOK_END, 'x', 'y'};
    int tg[8] = {'p', 'a', 'd', 'e', SPADE_TOK_END, 'x', 'y', -1};
    float loss;
    ck_assert_int_eq(spade_policy_forward(p, tok, tg, NULL, 1, 8, &loss, NULL, err, sizeof err), 0);
    ck_assert_msg(fabsf(loss - 5.41979074f) < 1e-5f, "loss %.9g", loss);
    spade_tokenizer *t;
    ck_assert_int_eq(spade_policy_read_tokenizer(path, &t, err, sizeof err), 0);
    ck_assert_str_eq(spade_tokenizer_kind(t), "bytes");
    spade_tokenizer_free(t);
    /* saved again it becomes version 2 with no tokenizer text, and still loads */
    char dir[256], p2[300];
    tu_mkdtemp(dir, sizeof dir, "tokv1");
    snprintf(p2, sizeof p2, "%s/v2.ckpt", dir);
    ck_assert_int_eq(spade_policy_save(p, p2, err, sizeof err), 0);
    b = read_all(p2, &n);
    ck_assert_int_eq(b[8], 2);
    ck_assert_uint_eq(n, 42248); /* the same size: K = 0 */
    free(b);
    spade_policy *q;
    ck_assert_msg(spade_policy_load(&q, p2, NULL, err, sizeof err) == 0, "%s", err);
    float l2;
    ck_assert_int_eq(spade_policy_forward(q, tok, tg, NULL, 1, 8, &l2, NULL, err, sizeof err), 0);
    ck_assert(l2 == loss);
    spade_policy_free(q);
    spade_policy_free(p);
    tu_rm_rf(dir);
}
END_TEST

Suite *tokenizer_suite(void) {
    Suite *s = suite_create("tokenizer");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_split_covers);
    tcase_add_test(t, test_bytes_object);
    tcase_add_test(t, test_roundtrip_random);
    tcase_add_test(t, test_roundtrip_tree);
    tcase_add_test(t, test_training_deterministic);
    tcase_add_test(t, test_bad_files);
    tcase_add_test(t, test_checkpoint_bpe);
    tcase_add_test(t, test_checkpoint_v1_bytes);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(tokenizer_suite()); }
