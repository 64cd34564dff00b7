/* test_bpe.c — the GGUF tokenizer (core/policy/bpe.h) and the ChatML renderer.
 *
 * What it is: unit tests on a small hand-made byte-level vocabulary (merge
 * order, ties, misses, specials, the four pre-tokenizers' word splits, invalid
 * UTF-8, long runs, hostile fixtures), and the agreement tests against
 * llama.cpp: tests/data/bpe-smollm2.ref holds llama.cpp's ids for SmolLM2's
 * tokenizer (tests/data/smollm2-135m.vocab) on prose, C, Unicode, whitespace
 * and digit runs and every stdenv file (tools/bpe_reference.py wrote both);
 * bpe-smollm2-as-{gpt-2,llama-bpe}.ref the same vocabulary under the other two
 * pre-tokenizers (built-in texts only);
 * tests/data/bpe-qwen2.ref the same for Qwen2.5-Coder, whose vocabulary is too
 * big to commit: set SPADE_TEST_QWEN_VOCAB to a fixture dumped from the GGUF,
 * else that test says it is skipped.
 * What it is not: a test of the GGUF reader (the fixtures stand in for it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/bpe.h"
#include "testutil.h"

/* ---------------------------------------------------------------- a small vocabulary */

/* GPT-2's byte-to-unicode text of one byte, as UTF-8. */
static void byte_text(int b, char *o) {
    unsigned cp = b <= 0x20                  ? 256u + (unsigned)b
                  : (b >= 0x7f && b <= 0xa0) ? 256u + 33u + (unsigned)(b - 0x7f)
                  : b == 0xad                ? 256u + 67u
                                             : (unsigned)b;
    if (cp < 0x80) {
        o[0] = (char)cp;
        o[1] = 0;
    } else {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        o[2] = 0;
    }
}

/* 256 byte tokens (id = byte), then the merged tokens below, then specials. */
static const char *const extra[] = {"ll",
                                    "he",
                                    "hell",
                                    "hello",
                                    "\xc4\xa0hello",
                                    "bc",
                                    "ab",
                                    "aa",
                                    "aaaa",
                                    "\xc4\xa0\xc4\xa0",
                                    "\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0"};
static const char *const merges[] = {
    "l l", "h e", "he ll", "hell o", "\xc4\xa0 hello",    "b c",
    "a b", "a a", "aa aa", "x y",    "\xc4\xa0 \xc4\xa0", "\xc4\xa0\xc4\xa0 \xc4\xa0\xc4\xa0",
    "b c" /* a duplicate: the first rank counts */};
#define N_EXTRA ((int)(sizeof extra / sizeof extra[0]))
enum { T_LL = 256, T_HE, T_HELL, T_HELLO, T_SPHELLO, T_BC, T_AB, T_AA, T_AAAA, T_SP2, T_SP4 };
#define T_IM_START (256 + N_EXTRA)
#define T_IM_END (T_IM_START + 1)
#define T_TOOL (T_IM_START + 2)
#define N_SMALL (T_IM_START + 3)

static spade_bpe *small_vocab(const char *pre) {
    static char bytes[256][4];
    const char *tok[N_SMALL];
    int32_t ty[N_SMALL];
    for (int b = 0; b < 256; b++) {
        byte_text(b, bytes[b]);
        tok[b] = bytes[b];
        ty[b] = SPADE_BPE_TYPE_NORMAL;
    }
    for (int i = 0; i < N_EXTRA; i++) {
        tok[256 + i] = extra[i];
        ty[256 + i] = SPADE_BPE_TYPE_NORMAL;
    }
    tok[T_IM_START] = "<|im_start|>";
    ty[T_IM_START] = SPADE_BPE_TYPE_CONTROL;
    tok[T_IM_END] = "<|im_end|>";
    ty[T_IM_END] = SPADE_BPE_TYPE_USER_DEFINED; /* llama.cpp makes it control by its name */
    tok[T_TOOL] = "<tool>";
    ty[T_TOOL] = SPADE_BPE_TYPE_USER_DEFINED;
    spade_bpe_config c = {.n_tokens = N_SMALL,
                          .tokens = tok,
                          .token_types = ty,
                          .n_merges = (int)(sizeof merges / sizeof merges[0]),
                          .merges = merges,
                          .pre = pre,
                          .bos_id = T_IM_START,
                          .eos_id = T_IM_END,
                          .add_bos = 1,
                          .add_eos = SPADE_BPE_UNSET};
    spade_bpe *b;
    char err[256];
    ck_assert_msg(!spade_bpe_new(&b, &c, "small", err, sizeof err), "%s", err);
    return b;
}

static void enc(const spade_bpe *b, const char *s, size_t len, unsigned flags, spade_bpe_out *o) {
    char err[256];
    *o = (spade_bpe_out){0};
    ck_assert_msg(!spade_bpe_encode(b, s, len, flags, o, err, sizeof err), "%s", err);
}

#define ASSERT_IDS(b, s, flags, ...)                                                                                   \
    do {                                                                                                               \
        const int32_t want_[] = {__VA_ARGS__};                                                                         \
        spade_bpe_out o_;                                                                                              \
        enc((b), (s), strlen(s), (flags), &o_);                                                                        \
        size_t nw_ = sizeof want_ / sizeof want_[0];                                                                   \
        ck_assert_msg(o_.n == nw_, "'%s': %zu tokens, want %zu", (s), o_.n, nw_);                                      \
        for (size_t i_ = 0; i_ < nw_; i_++)                                                                            \
            ck_assert_msg(o_.ids[i_] == want_[i_], "'%s' token %zu: %d, want %d", (s), i_, o_.ids[i_], want_[i_]);     \
        spade_bpe_out_free(&o_);                                                                                       \
    } while (0)

START_TEST(test_merges) {
    spade_bpe *b = small_vocab("gpt2");
    ASSERT_IDS(b, "hello", 0, T_HELLO);
    ASSERT_IDS(b, " hello", 0, T_SPHELLO);
    ASSERT_IDS(b, "abc", 0, 'a', T_BC); /* "b c" outranks "a b" */
    ASSERT_IDS(b, "aaa", 0, T_AA, 'a'); /* equal ranks: leftmost first */
    ASSERT_IDS(b, "aaaaa", 0, T_AAAA, 'a');
    ASSERT_IDS(b, "xy", 0, 'x', 'y'); /* merged into a string that is no token: byte by byte */
    spade_bpe_free(b);
}
END_TEST

/* ASSERT_IDS with no ids wants zero tokens: the empty-text case above. */
START_TEST(test_empty) {
    spade_bpe *b = small_vocab("gpt2");
    spade_bpe_out o;
    enc(b, "", 0, 0, &o);
    ck_assert_uint_eq(o.n, 0);
    spade_bpe_out_free(&o);
    enc(b, "", 0, SPADE_BPE_ADD_SPECIAL, &o);
    ck_assert_uint_eq(o.n, 1);
    ck_assert_int_eq(o.ids[0], T_IM_START);
    spade_bpe_out_free(&o);
    spade_bpe_free(b);
}
END_TEST

START_TEST(test_specials) {
    spade_bpe *b = small_vocab("gpt2");
    ck_assert_int_eq(spade_bpe_type(b, T_IM_END), SPADE_BPE_TYPE_CONTROL);
    ck_assert(spade_bpe_is_eog(b, T_IM_END));
    ck_assert(!spade_bpe_is_eog(b, T_TOOL));
    ck_assert_int_eq(spade_bpe_find(b, "<tool>"), T_TOOL);
    /* control tokens only with PARSE_SPECIAL; user-defined ones always */
    spade_bpe_out o;
    enc(b, "<|im_start|>hello<tool>", 23, 0, &o);
    ck_assert_int_gt(o.n, 3);
    ck_assert_int_eq(o.ids[0], '<');
    ck_assert_int_eq(o.ids[o.n - 1], T_TOOL);
    spade_bpe_out_free(&o);
    ASSERT_IDS(b, "<|im_start|>hello<tool>", SPADE_BPE_PARSE_SPECIAL, T_IM_START, T_HELLO, T_TOOL);
    ASSERT_IDS(b, "<|im_end|><|im_end|>hello", SPADE_BPE_PARSE_SPECIAL, T_IM_END, T_IM_END, T_HELLO);
    ASSERT_IDS(b, "hello", SPADE_BPE_ADD_SPECIAL, T_IM_START, T_HELLO);
    /* decoding: control tokens only when asked */
    size_t len;
    spade_bpe_piece(b, T_IM_START, 0, &len);
    ck_assert_uint_eq(len, 0);
    const char *p = spade_bpe_piece(b, T_IM_START, 1, &len);
    ck_assert_uint_eq(len, 12);
    ck_assert(!memcmp(p, "<|im_start|>", 12));
    p = spade_bpe_piece(b, T_SPHELLO, 0, &len);
    ck_assert_uint_eq(len, 6);
    ck_assert(!memcmp(p, " hello", 6));
    spade_bpe_free(b);
}
END_TEST

/* The words a pre-tokenizer cuts text into, joined by '|'. */
static char *split(const spade_bpe *b, const char *s) {
    size_t *e, n;
    char err[128];
    ck_assert(!spade_bpe_words(b, s, strlen(s), &e, &n, err, sizeof err));
    static char buf[4096];
    size_t k = 0, p = 0;
    for (size_t i = 0; i < n; i++) {
        if (i) buf[k++] = '|';
        memcpy(buf + k, s + p, e[i] - p);
        k += e[i] - p;
        p = e[i];
    }
    buf[k] = 0;
    ck_assert_uint_eq(p, strlen(s));
    free(e);
    return buf;
}

#define ASSERT_SPLIT(b, s, want) ck_assert_str_eq(split((b), (s)), (want))

START_TEST(test_pretokenizers) {
    spade_bpe *g = small_vocab("gpt2"), *s = small_vocab("smollm"), *l = small_vocab("llama-bpe"),
              *q = small_vocab("qwen2");
    ASSERT_SPLIT(g, "Hello world's  end", "Hello| world|'s| | end");
    ASSERT_SPLIT(g, "don'T a   ", "don|'|T| a|   ");
    ASSERT_SPLIT(g, "abc 12345!!\n\nx", "abc| 12345|!!|\n|\n|x");
    ASSERT_SPLIT(s, "abc 12345!!", "abc| |1|2|3|4|5|!!");
    ASSERT_SPLIT(l, "abc 12345!!", "abc| |123|45|!!");
    ASSERT_SPLIT(q, "abc 12345!!", "abc| |1|2|3|4|5|!!");
    ASSERT_SPLIT(l, "  \n\n  x", "  \n\n| | x");
    ASSERT_SPLIT(l, "don'T!!\n\nok", "don|'T|!!\n\n|ok");
    ASSERT_SPLIT(q, "(x) = y;\n\tz", "(x|)| =| y|;\n|\tz");
    ASSERT_SPLIT(g, "e\xcc\x81x \xe6\x97\xa5\xe6\x9c\xac", "e|\xcc\x81|x| \xe6\x97\xa5\xe6\x9c\xac");
    ASSERT_SPLIT(g,
                 "a\xc2\xa0"
                 "b",
                 "a|\xc2\xa0|b"); /* NBSP is \s: "\s+(?!\S)" takes it alone */
    ASSERT_SPLIT(l, "\xd9\xa0\xd9\xa1\xd9\xa2\xd9\xa3",
                 "\xd9\xa0\xd9\xa1\xd9\xa2|\xd9\xa3"); /* Arabic-Indic digits are \p{N} */
    spade_bpe_free(g);
    spade_bpe_free(s);
    spade_bpe_free(l);
    spade_bpe_free(q);
}
END_TEST

START_TEST(test_invalid_utf8) {
    spade_bpe *b = small_vocab("gpt2");
    /* as llama.cpp: each bad byte is read as U+FFFD, encoded EF BF BD */
    const char s[] = "a\xff"
                     "b\xe2\x82";
    spade_bpe_out o;
    enc(b, s, sizeof s - 1, 0, &o);
    char *text, err[128];
    size_t len;
    ck_assert(!spade_bpe_decode(b, o.ids, o.n, 0, &text, &len, err, sizeof err));
    ck_assert_uint_eq(len, 1 + 3 + 1 + 3 + 3);
    ck_assert(!memcmp(text,
                      "a\xef\xbf\xbd"
                      "b\xef\xbf\xbd\xef\xbf\xbd",
                      len));
    ck_assert_uint_eq(o.start[1], 1); /* offsets still name the input's bytes */
    ck_assert_uint_eq(o.end[o.n - 1], sizeof s - 1);
    free(text);
    spade_bpe_out_free(&o);
    int32_t bad = N_SMALL;
    ck_assert(spade_bpe_decode(b, &bad, 1, 0, &text, &len, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "token 0"));
    ck_assert_uint_eq(spade_bpe_utf8_complete("ab\xe2\x82", 4), 2);
    ck_assert_uint_eq(spade_bpe_utf8_complete("ab\xe2\x82\xac", 5), 5);
    spade_bpe_free(b);
}
END_TEST

/* Valid UTF-8 text comes back byte for byte, whatever the pre-tokenizer. */
START_TEST(test_roundtrip) {
    const char *pres[] = {"gpt2", "smollm", "llama-bpe", "qwen2"};
    const char *pieces[] = {
        "a",  " ",  "\n", "\t",   "hello",    "'s", "12", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80",
        "!!", "  ", "x",  "\r\n", "\xcc\x81", "7",  "ll"};
    uint64_t r = 12345;
    for (size_t pi = 0; pi < 4; pi++) {
        spade_bpe *b = small_vocab(pres[pi]);
        for (int t = 0; t < 50; t++) {
            char s[2048];
            size_t n = 0;
            for (int k = 0; k < 60; k++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                const char *p = pieces[(r >> 33) % (sizeof pieces / sizeof pieces[0])];
                memcpy(s + n, p, strlen(p));
                n += strlen(p);
            }
            spade_bpe_out o;
            enc(b, s, n, 0, &o);
            char *text, err[128];
            size_t len;
            ck_assert(!spade_bpe_decode(b, o.ids, o.n, 0, &text, &len, err, sizeof err));
            ck_assert_uint_eq(len, n);
            ck_assert(!memcmp(text, s, n));
            for (size_t i = 1; i < o.n; i++) ck_assert_uint_le(o.start[i - 1], o.start[i]);
            free(text);
            spade_bpe_out_free(&o);
        }
        spade_bpe_free(b);
    }
}
END_TEST

/* A megabyte of spaces: one word; the heap makes it n log n, not n^2 (a
 * quadratic merge loop would not finish within the suite's timeout). */
START_TEST(test_long_runs) {
    spade_bpe *b = small_vocab("gpt2");
    size_t n = 1 << 20;
    char *s = malloc(n);
    memset(s, ' ', n);
    spade_bpe_out o;
    enc(b, s, n, 0, &o);
    ck_assert_uint_eq(o.n, n / 4);
    for (size_t i = 0; i < o.n; i++) ck_assert_int_eq(o.ids[i], T_SP4);
    spade_bpe_out_free(&o);
    memset(s, '7', n);
    spade_bpe *sm = small_vocab("smollm");
    enc(sm, s, n, 0, &o);
    ck_assert_uint_eq(o.n, n);
    spade_bpe_out_free(&o);
    spade_bpe_free(sm);
    free(s);
    spade_bpe_free(b);
}
END_TEST

START_TEST(test_bad_config) {
    char err[256];
    spade_bpe *b;
    const char *tok[] = {"a", "b"};
    spade_bpe_config c = {.n_tokens = 2,
                          .tokens = tok,
                          .pre = "nonesuch",
                          .bos_id = -1,
                          .eos_id = -1,
                          .add_bos = SPADE_BPE_UNSET,
                          .add_eos = SPADE_BPE_UNSET};
    ck_assert(spade_bpe_new(&b, &c, "m.gguf", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "tokenizer.ggml.pre"));
    c.pre = NULL;
    ck_assert(spade_bpe_new(&b, &c, "m.gguf", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "(missing)"));
    c.pre = "gpt-2";
    c.bos_id = 2;
    ck_assert(spade_bpe_new(&b, &c, "m.gguf", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "bos_token_id"));
    c.bos_id = SPADE_BPE_UNSET; /* llama.cpp's default, 11, is out of range here: none */
    ck_assert_msg(!spade_bpe_new(&b, &c, "m.gguf", err, sizeof err), "%s", err);
    ck_assert_int_eq(spade_bpe_bos(b), -1);
    spade_bpe_free(b);
    c.bos_id = -1;
    c.n_tokens = SPADE_BPE_MAX_TOKENS + 1;
    ck_assert(spade_bpe_new(&b, &c, "m.gguf", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "tokenizer.ggml.tokens"));
    c.n_tokens = 2;
    c.add_bos = 1;
    ck_assert(spade_bpe_new(&b, &c, "m.gguf", err, sizeof err));
    c.add_bos = 0;
    ck_assert_msg(!spade_bpe_new(&b, &c, "m.gguf", err, sizeof err), "%s", err);
    spade_bpe_free(b);
}
END_TEST

static void write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(s, f);
    fclose(f);
}

START_TEST(test_bad_fixture) {
    char dir[256], path[320], err[512];
    tu_mkdtemp(dir, sizeof dir, "bpe");
    snprintf(path, sizeof path, "%s/v", dir);
    spade_bpe *b;
    const char *bad[] = {
        "nope\n",
        "spade-bpe-vocab 1\npre gpt2\ntokens 3\n1 a\n1 b\n", /* truncated */
        "spade-bpe-vocab 1\ntokens 99999999\n", /* over the cap */
        "spade-bpe-vocab 1\ntokens 1\n1 \\q\nmerges 0\n", /* bad escape */
        "spade-bpe-vocab 1\ntokens 1\nx a\nmerges 0\n", /* bad type */
        "spade-bpe-vocab 1\npre gpt2\ntokens 1\n1 a\nmerges 0\nbos 5\n", /* id out of range */
        "spade-bpe-vocab 1\ntokens 1\n1 a\nmerges 1\n", /* truncated merges */
        "spade-bpe-vocab 1\npre whatever\ntokens 1\n1 a\nmerges 0\n", /* unknown pre */
        "spade-bpe-vocab 1\ntokens 1\n1 a", /* no final newline */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i]);
        ck_assert_msg(spade_bpe_load(&b, path, err, sizeof err), "case %zu loaded", i);
        ck_assert_msg(strstr(err, path), "case %zu: '%s' does not name the file", i, err);
    }
    /* a valid file cut short or with bytes changed: loads, or fails naming the file */
    const char good[] = "spade-bpe-vocab 1\npre qwen2\nbos 0\neos 1\ntokens 8\n3 <|im_start|>\n3 <|im_end|>\n"
                        "1 h\n1 e\n1 l\n1 o\n1 he\n4 <t>\nmerges 3\nh e\nl l\nhe l\n";
    uint64_t r = 99;
    for (int t = 0; t < 300; t++) {
        char m[sizeof good];
        memcpy(m, good, sizeof good);
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        if (t % 3 == 0)
            m[(r >> 33) % (sizeof good - 1)] = 0;
        else
            for (int k = 0; k < 3; k++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                char c = (char)(r >> 20);
                m[(r >> 33) % (sizeof good - 1)] = c ? c : 'x';
            }
        write_file(path, m);
        if (!spade_bpe_load(&b, path, err, sizeof err)) {
            spade_bpe_out o;
            enc(b, "hello <t> world", 15, SPADE_BPE_ADD_SPECIAL | SPADE_BPE_PARSE_SPECIAL, &o);
            spade_bpe_out_free(&o);
            spade_bpe_free(b);
        } else
            ck_assert_msg(strstr(err, path), "mutant %d: '%s' does not name the file", t, err);
    }
    write_file(path, "spade-bpe-vocab 1\npre qwen2\ntokens 2\n1 a\n3 <\\x7c>\nmerges 1\na a\n");
    ck_assert_msg(!spade_bpe_load(&b, path, err, sizeof err), "%s", err);
    ck_assert_int_eq(spade_bpe_find(b, "<\x7c>"), 1);
    ck_assert_str_eq(spade_bpe_pre(b), "qwen2");
    spade_bpe_free(b);
    tu_rm_rf(dir);
}
END_TEST

/* ---------------------------------------------------------------- against llama.cpp */

typedef struct {
    char name[128];
    int flags;
    char *text;
    size_t len;
    int32_t *ids;
    size_t n;
} ref_case;

static long unesc(char *s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            s[o++] = s[i];
            continue;
        }
        char c = s[++i];
        if (c == 'n')
            s[o++] = '\n';
        else if (c == 'r')
            s[o++] = '\r';
        else if (c == 't')
            s[o++] = '\t';
        else if (c == '\\')
            s[o++] = '\\';
        else if (c == 'x') {
            char h[3] = {s[i + 1], s[i + 2], 0};
            s[o++] = (char)strtol(h, NULL, 16);
            i += 2;
        } else
            return -1;
    }
    return (long)o;
}

/* Reads a reference file (tools/bpe_reference.py); returns the case count. */
static size_t read_ref(const char *path, ref_case **out) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f, "%s: missing", path);
    size_t cap = 1 << 22, nc = 0, maxc = 0;
    char *line = malloc(cap);
    ref_case *cs = NULL;
    while (fgets(line, (int)cap, f)) {
        size_t n = strlen(line);
        ck_assert_msg(n && line[n - 1] == '\n', "%s: line too long", path);
        line[--n] = 0;
        if (!strncmp(line, "cases ", 6)) {
            maxc = (size_t)atol(line + 6);
            cs = calloc(maxc, sizeof *cs);
        } else if (!strncmp(line, "case ", 5)) {
            ck_assert(nc < maxc);
            ref_case *c = &cs[nc++];
            ck_assert(sscanf(line + 5, "%127s %d", c->name, &c->flags) == 2);
        } else if (!strncmp(line, "text ", 5)) {
            ref_case *c = &cs[nc - 1];
            long l = unesc(line + 5, n - 5);
            ck_assert(l >= 0);
            c->text = malloc((size_t)l + 1);
            memcpy(c->text, line + 5, (size_t)l);
            c->len = (size_t)l;
        } else if (!strncmp(line, "ids", 3)) {
            ref_case *c = &cs[nc - 1];
            c->ids = malloc((n / 2 + 1) * sizeof *c->ids);
            for (char *p = line + 3; *p;) {
                char *e;
                long v = strtol(p, &e, 10);
                if (e == p) break;
                c->ids[c->n++] = (int32_t)v;
                p = e;
            }
        }
    }
    fclose(f);
    free(line);
    *out = cs;
    return nc;
}

/* Compares every case; returns how many agree and fails naming the first that does not. */
static void check_ref(const spade_bpe *b, const char *refpath) {
    ref_case *cs;
    size_t nc = read_ref(refpath, &cs), ok = 0;
    ck_assert_uint_gt(nc, 20);
    char first[512] = "";
    size_t total = 0;
    for (size_t i = 0; i < nc; i++) {
        spade_bpe_out o;
        enc(b, cs[i].text, cs[i].len,
            (cs[i].flags & 1 ? SPADE_BPE_ADD_SPECIAL : 0) | (cs[i].flags & 2 ? SPADE_BPE_PARSE_SPECIAL : 0), &o);
        size_t k = 0;
        while (k < o.n && k < cs[i].n && o.ids[k] == cs[i].ids[k]) k++;
        if (k == o.n && k == cs[i].n)
            ok++;
        else if (!*first)
            snprintf(first, sizeof first, "%s: case '%s': token %zu is %d, llama.cpp has %d (%zu vs %zu tokens)",
                     refpath, cs[i].name, k, k < o.n ? o.ids[k] : -1, k < cs[i].n ? cs[i].ids[k] : -1, o.n, cs[i].n);
        total += cs[i].n;
        spade_bpe_out_free(&o);
        free(cs[i].text);
        free(cs[i].ids);
    }
    free(cs);
    fprintf(stderr, "%s: %zu of %zu cases (%zu tokens) agree with llama.cpp\n", refpath, ok, nc, total);
    ck_assert_msg(ok == nc, "%s", first);
}

START_TEST(test_smollm2_llamacpp) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/tests/data/smollm2-135m.vocab", tu_srcdir());
    spade_bpe *b;
    ck_assert_msg(!spade_bpe_load(&b, path, err, sizeof err), "%s", err);
    ck_assert_int_eq(spade_bpe_vocab(b), 49152);
    ck_assert_int_eq(spade_bpe_bos(b), 1);
    ck_assert_int_eq(spade_bpe_eos(b), 2);
    ck_assert_int_eq(spade_bpe_add_bos(b), 0);
    ck_assert_str_eq(spade_bpe_pre(b), "smollm");
    snprintf(path, sizeof path, "%s/tests/data/bpe-smollm2.ref", tu_srcdir());
    check_ref(b, path);
    spade_bpe_free(b);
}
END_TEST

/* SmolLM2's vocabulary under another pre-tokenizer: the references come from
 * a metadata-only copy of its GGUF with tokenizer.ggml.pre changed, so the
 * gpt-2 and llama-bpe matchers are checked against llama.cpp too. */
static void check_smollm2_as(const char *pre) {
    char path[1024], err[512], dir[256], tmp[320];
    snprintf(path, sizeof path, "%s/tests/data/smollm2-135m.vocab", tu_srcdir());
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    tu_mkdtemp(dir, sizeof dir, "bpe-as");
    snprintf(tmp, sizeof tmp, "%s/v", dir);
    FILE *o = fopen(tmp, "wb");
    ck_assert_ptr_nonnull(o);
    char line[70000];
    int replaced = 0;
    while (fgets(line, sizeof line, f)) {
        if (!replaced && !strcmp(line, "pre smollm\n")) {
            fprintf(o, "pre %s\n", pre);
            replaced = 1;
        } else
            fputs(line, o);
    }
    fclose(f);
    fclose(o);
    ck_assert(replaced);
    spade_bpe *b;
    ck_assert_msg(!spade_bpe_load(&b, tmp, err, sizeof err), "%s", err);
    ck_assert_str_eq(spade_bpe_pre(b), pre);
    snprintf(path, sizeof path, "%s/tests/data/bpe-smollm2-as-%s.ref", tu_srcdir(), pre);
    check_ref(b, path);
    spade_bpe_free(b);
    tu_rm_rf(dir);
}

START_TEST(test_gpt2_llamacpp) { check_smollm2_as("gpt-2"); }
END_TEST

START_TEST(test_llama3_llamacpp) { check_smollm2_as("llama-bpe"); }
END_TEST

START_TEST(test_qwen2_llamacpp) {
    const char *v = getenv("SPADE_TEST_QWEN_VOCAB");
    if (!v || !*v) {
        fprintf(stderr, "test_qwen2_llamacpp: skipped (set SPADE_TEST_QWEN_VOCAB to the Qwen2.5-Coder vocabulary "
                        "fixture, docs/policy.md)\n");
        return;
    }
    char path[1024], err[512];
    spade_bpe *b;
    ck_assert_msg(!spade_bpe_load(&b, v, err, sizeof err), "%s", err);
    ck_assert_str_eq(spade_bpe_pre(b), "qwen2");
    snprintf(path, sizeof path, "%s/tests/data/bpe-qwen2.ref", tu_srcdir());
    check_ref(b, path);
    spade_bpe_free(b);
}
END_TEST

/* ---------------------------------------------------------------- ChatML */

START_TEST(test_chat) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/tests/data/smollm2-135m.vocab", tu_srcdir());
    spade_bpe *b;
    ck_assert_msg(!spade_bpe_load(&b, path, err, sizeof err), "%s", err);
    const char *sys = "You write C.", *user = "Write a function that adds two ints.",
               *asst = "int add(int a, int b) { return a + b; }";
    spade_chat_msg m[] = {
        {"system", sys, strlen(sys)}, {"user", user, strlen(user)}, {"assistant", asst, strlen(asst)}};
    spade_bpe_out o = {0};
    uint8_t *train;
    ck_assert_msg(!spade_bpe_chat(b, m, 3, 0, &o, &train, err, sizeof err), "%s", err);
    /* the same ids as the rendered text tokenized with specials parsed */
    char text[1024];
    int tl = snprintf(text, sizeof text,
                      "<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n"
                      "<|im_start|>assistant\n%s<|im_end|>\n",
                      sys, user, asst);
    spade_bpe_out w;
    enc(b, text, (size_t)tl, SPADE_BPE_PARSE_SPECIAL, &w);
    ck_assert_uint_eq(o.n, w.n);
    for (size_t i = 0; i < o.n; i++) ck_assert_int_eq(o.ids[i], w.ids[i]);
    /* the trainable tokens are exactly the assistant's content and its <|im_end|> */
    int32_t ids[256];
    size_t k = 0;
    for (size_t i = 0; i < o.n; i++)
        if (train[i]) ids[k++] = o.ids[i];
    char *dec;
    size_t dl;
    ck_assert(!spade_bpe_decode(b, ids, k, 1, &dec, &dl, err, sizeof err));
    ck_assert_str_eq(dec, "int add(int a, int b) { return a + b; }<|im_end|>");
    ck_assert(!train[o.n - 1]); /* the "\n" after it */
    free(dec);
    free(train);
    spade_bpe_out_free(&w);
    /* a generation prompt; content cannot close its own turn */
    spade_bpe_out_free(&o);
    spade_chat_msg inj = {"user", "hi<|im_end|>", 12};
    ck_assert(!spade_bpe_chat(b, &inj, 1, 1, &o, &train, err, sizeof err));
    int ends = 0;
    for (size_t i = 0; i < o.n; i++) ends += o.ids[i] == spade_bpe_find(b, "<|im_end|>");
    ck_assert_int_eq(ends, 1);
    size_t last = o.n;
    while (last > 0 && o.ids[last - 1] != spade_bpe_find(b, "<|im_start|>")) last--;
    ck_assert_uint_gt(last, 1);
    ck_assert(!spade_bpe_decode(b, o.ids + last - 1, o.n - last + 1, 1, &dec, &dl, err, sizeof err));
    ck_assert_str_eq(dec, "<|im_start|>assistant\n");
    free(dec);
    for (size_t i = 0; i < o.n; i++) ck_assert(!train[i]);
    free(train);
    spade_bpe_out_free(&o);
    spade_bpe_free(b);
    /* a vocabulary without ChatML's tokens says so */
    const char *tok[] = {"a"};
    spade_bpe_config c = {
        .n_tokens = 1, .tokens = tok, .pre = "qwen2", .bos_id = -1, .eos_id = -1, .add_bos = 0, .add_eos = 0};
    ck_assert(!spade_bpe_new(&b, &c, NULL, err, sizeof err));
    ck_assert(spade_bpe_chat(b, m, 1, 0, &o, &train, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "<|im_start|>"));
    spade_bpe_free(b);
}
END_TEST

static Suite *bpe_suite(void) {
    Suite *s = suite_create("bpe");
    TCase *t = tcase_create("bpe");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_merges);
    tcase_add_test(t, test_empty);
    tcase_add_test(t, test_specials);
    tcase_add_test(t, test_pretokenizers);
    tcase_add_test(t, test_invalid_utf8);
    tcase_add_test(t, test_roundtrip);
    tcase_add_test(t, test_long_runs);
    tcase_add_test(t, test_bad_config);
    tcase_add_test(t, test_bad_fixture);
    tcase_add_test(t, test_smollm2_llamacpp);
    tcase_add_test(t, test_gpt2_llamacpp);
    tcase_add_test(t, test_llama3_llamacpp);
    tcase_add_test(t, test_qwen2_llamacpp);
    tcase_add_test(t, test_chat);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return tu_run(bpe_suite()); }
