/* test_serve.c — Check suite for core/json.[ch] (the reader refuses what is not
 * JSON and reads what is, exactly; the writer's output is valid JSON that reads
 * back as what was written, whatever bytes it is given) and for the request
 * handler of `spade serve` (cli/serve_proto.c) driven line by line, without a
 * transport: error objects, per-connection handles, workers freed with the
 * connection, the shared token. The wire, the fuzzing over sockets and the Python package are
 * tested by tests/python (tests/test_python.sh).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "json.h"
#include "serve.h"
#include "testutil.h"

static spade_json_doc *parse_ok(const char *s) {
    spade_json_doc *d = NULL;
    char err[256] = "";
    int rc = spade_json_parse(s, strlen(s), &d, err, sizeof err);
    ck_assert_msg(rc == 0 && d, "'%s' should parse: %s", s, err);
    return d;
}

START_TEST(reader_reads_json) {
    spade_json_doc *d =
        parse_ok(" {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\\u0000y\"],"
                 " \"b\": {}, \"a\": 7, \"big\": 18446744073709551615, \"neg\": -9223372036854775808} ");
    const spade_json *r = spade_json_root(d);
    ck_assert_int_eq(r->type, SPADE_JSON_OBJECT);
    ck_assert_uint_eq(r->len, 5);
    const spade_json *a = spade_json_get(r, "a"); /* the first of two "a" */
    ck_assert_int_eq(a->type, SPADE_JSON_ARRAY);
    ck_assert_uint_eq(a->len, 6);
    ck_assert(a->items[1].number == -2500.0);
    ck_assert(a->items[2].boolean && !a->items[3].boolean && a->items[4].type == SPADE_JSON_NULL);
    const spade_json *s = &a->items[5];
    /* x, é (2 bytes), U+1F600 (4 bytes), \n, NUL, y */
    ck_assert_uint_eq(s->len, 1 + 2 + 4 + 1 + 1 + 1);
    ck_assert(!memcmp(s->str, "x\xC3\xA9\xF0\x9F\x98\x80\n\0y", s->len));
    uint64_t u;
    ck_assert_int_eq(spade_json_u64(spade_json_get(r, "big"), &u), 0);
    ck_assert(u == UINT64_MAX);
    long long v;
    ck_assert_int_eq(spade_json_int(spade_json_get(r, "neg"), INT64_MIN, 0, &v), 0);
    ck_assert(v == INT64_MIN);
    ck_assert_int_eq(spade_json_int(&a->items[0], 2, 5, &v), -1); /* 1 outside [2, 5] */
    ck_assert_int_eq(spade_json_int(&a->items[1], -10000, 0, &v), 0);
    ck_assert(v == -2500);
    ck_assert_int_eq(spade_json_u64(&a->items[1], &u), -1); /* negative */
    spade_json_doc_free(d);
    /* integers past 2^53 are read from their digits, not through a double */
    static const char *const exact[] = {"9007199254740993", "-9007199254740993", "1234567890123457",
                                        "-999999999999999"};
    static const long long want[] = {9007199254740993LL, -9007199254740993LL, 1234567890123457LL, -999999999999999LL};
    for (int i = 0; i < 4; i++) {
        d = parse_ok(exact[i]);
        ck_assert_int_eq(spade_json_int(spade_json_root(d), INT64_MIN, INT64_MAX, &v), 0);
        ck_assert_msg(v == want[i], "%s read as %lld", exact[i], v);
        if (want[i] > 0) {
            ck_assert_int_eq(spade_json_u64(spade_json_root(d), &u), 0);
            ck_assert(u == (uint64_t)want[i]);
        }
        spade_json_doc_free(d);
    }
}
END_TEST

START_TEST(reader_refuses_what_is_not_json) {
    static const char *const bad[] = {
        "",           " ",        "{",           "}",           "[1,]",
        "{\"a\":1,}", "'a'",      "NaN",         "Infinity",    "01",
        "-",          "1.",       ".5",          "1e",          "+1",
        "\"\\x\"",    "\"a\tb\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
        "\"\\u12\"",  "tru",      "nul",         "[1 2]",       "{\"a\" 1}",
        "{1:2}",      "1 2",      "\"abc",       "[",           "{\"a\":}",
        "\"\\",       "[-]",      "{\"a\":1}x",  "\x01",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        spade_json_doc *d = (spade_json_doc *)1;
        char err[256] = "";
        ck_assert_msg(spade_json_parse(bad[i], strlen(bad[i]), &d, err, sizeof err) == -1, "'%s' parsed", bad[i]);
        ck_assert(d == NULL);
        ck_assert_msg(!strncmp(err, "offset ", 7), "'%s': message '%s' has no offset", bad[i], err);
    }
    /* nesting: 64 levels are read, 65 are not */
    char deep[200];
    for (int depth = 64; depth <= 65; depth++) {
        int n = 0;
        for (int i = 0; i < depth; i++) deep[n++] = '[';
        for (int i = 0; i < depth; i++) deep[n++] = ']';
        spade_json_doc *d = NULL;
        char err[256] = "";
        int rc = spade_json_parse(deep, (size_t)n, &d, err, sizeof err);
        ck_assert_int_eq(rc, (depth == 64 ? 0 : -1));
        if (depth == 65) ck_assert(strstr(err, "deeper") != NULL);
        spade_json_doc_free(d);
    }
}
END_TEST

/* Whether s[0..n) is valid UTF-8 (the slow, obvious way: decode each sequence). */
static int valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return 0;
        unsigned cp = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k;
    }
    return 1;
}

START_TEST(writer_output_reads_back) {
    uint64_t rng = 12345;
    spade_jbuf b = {0};
    for (int iter = 0; iter < 20000; iter++) {
        unsigned char bytes[64];
        size_t n = spade_splitmix64(&rng) % sizeof bytes;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = spade_splitmix64(&rng);
            /* mostly text, some control bytes, some high bytes (valid sequences and not) */
            static const unsigned char high[] = {0xC3, 0xA9, 0xE2, 0x86, 0x92};
            if (r % 4 == 0)
                bytes[i] = (unsigned char)((r >> 8) % 256);
            else if (r % 4 == 1)
                bytes[i] = high[(r >> 8) % 5];
            else
                bytes[i] = (unsigned char)(0x20 + (r >> 8) % 95);
        }
        double num;
        memcpy(&num, &(uint64_t){spade_splitmix64(&rng)}, sizeof num);
        if (iter % 3 == 0) num = (double)(int64_t)(spade_splitmix64(&rng) % 2000000000000000ULL) - 1e15;
        spade_jbuf_clear(&b);
        spade_jw_obj(&b);
        spade_jw_key(&b, "s");
        spade_jw_str(&b, (const char *)bytes, n);
        spade_jw_key(&b, "n");
        spade_jw_num(&b, num);
        spade_jw_key(&b, "a");
        spade_jw_arr(&b);
        spade_jw_int(&b, -7);
        spade_jw_u64(&b, UINT64_MAX);
        spade_jw_bool(&b, 1);
        spade_jw_null(&b);
        spade_jw_end_arr(&b);
        spade_jw_end_obj(&b);
        ck_assert(!b.oom);
        ck_assert_msg(valid_utf8((const unsigned char *)b.p, b.len), "invalid UTF-8 written: %s", b.p);
        spade_json_doc *d = NULL;
        char err[256];
        ck_assert_msg(spade_json_parse(b.p, b.len, &d, err, sizeof err) == 0, "%s: %s", b.p, err);
        const spade_json *r = spade_json_root(d), *s = spade_json_get(r, "s"), *nv = spade_json_get(r, "n");
        /* valid input comes back byte for byte; invalid bytes as U+FFFD, never dropped silently */
        if (valid_utf8(bytes, n))
            ck_assert(s->len == n && !memcmp(s->str, bytes, n));
        else
            ck_assert(memmem(s->str, s->len, "\xEF\xBF\xBD", 3) != NULL);
        if (isfinite(num))
            ck_assert_msg(nv->type == SPADE_JSON_NUMBER && nv->number == num, "%.17g -> %s", num, nv->str);
        else
            ck_assert_int_eq(nv->type, SPADE_JSON_NULL);
        /* and a parsed tree written again is the same text */
        spade_jbuf again = {0};
        spade_jw_value(&again, r);
        ck_assert_str_eq(again.p, b.p);
        spade_jbuf_free(&again);
        spade_json_doc_free(d);
    }
    spade_jbuf_free(&b);
}
END_TEST

START_TEST(reader_survives_mutated_input) {
    static const char *const seeds[] = {
        "{\"op\":\"step\",\"env\":1,\"ids\":[0,1],\"actions\":[\"north\",\"\\u00e9\"]}",
        "[1,2.5e-3,{\"a\":[true,false,null]},\"\\ud83d\\ude00\"]",
    };
    uint64_t rng = 99;
    char buf[256];
    int parsed = 0;
    for (int iter = 0; iter < 50000; iter++) {
        const char *s = seeds[iter % 2];
        size_t n = strlen(s);
        memcpy(buf, s, n);
        for (int k = 0, m = 1 + (int)(spade_splitmix64(&rng) % 4); k < m; k++)
            buf[spade_splitmix64(&rng) % n] = (char)(spade_splitmix64(&rng) % 256);
        spade_json_doc *d = NULL;
        char err[128];
        if (spade_json_parse(buf, n, &d, err, sizeof err) == 0) {
            parsed++;
            spade_jbuf w = {0};
            spade_jw_value(&w, spade_json_root(d));
            ck_assert(valid_utf8((const unsigned char *)w.p, w.len));
            spade_jbuf_free(&w);
            spade_json_doc_free(d);
        } else {
            ck_assert(d == NULL && !strncmp(err, "offset ", 7));
        }
    }
    ck_assert(parsed > 100 && parsed < 50000);
}
END_TEST

/* ---- the request handler ------------------------------------------------------ */
static spade_sandbox *sb;
static void setup(void) { sb = tu_sandbox(&(spade_sandbox_opts){.compile_timeout_s = 10.0, .call_timeout_s = 5.0}); }
static void teardown(void) {
    spade_sandbox_free(sb);
    sb = NULL;
}

/* One request, its response parsed (the caller frees it). */
static spade_json_doc *ask(serve_conn *c, const char *line) {
    spade_jbuf out = {0};
    serve_handle_line(c, line, strlen(line), &out);
    ck_assert(out.len > 0 && out.p[out.len - 1] == '\n');
    ck_assert_msg(memchr(out.p, '\n', out.len) == out.p + out.len - 1, "one line: %s", out.p);
    spade_json_doc *d = NULL;
    char err[256];
    ck_assert_msg(spade_json_parse(out.p, out.len - 1, &d, err, sizeof err) == 0, "%s: %s", out.p, err);
    spade_jbuf_free(&out);
    return d;
}

static const char *error_code(const spade_json_doc *d) {
    const spade_json *e = spade_json_get(spade_json_get(spade_json_root(d), "error"), "code");
    return e && e->type == SPADE_JSON_STRING ? e->str : "(none)";
}

static const char *ADD =
    "{\"op\":\"make\",\"instances\":3,\"workers\":2,\"filename\":\"add.c\",\"source\":\"#include <spade/dsl.h>\\n"
    "ENV(\\\"add\\\", \\\"Add.\\\", .max_steps = 1)\\nSTATE { long a; };\\nRESET { S->a = rand_range(1, 9); "
    "say(\\\"%ld\\\", S->a); }\\nSTEP { finish(parse_int(action) == S->a); }\\nHINT { say(\\\"h\\\"); }\\n"
    "SOLVE { act(\\\"%ld\\\", S->a); }\\n\"}";

START_TEST(handler_answers_and_refuses) {
    serve_conn *c = serve_conn_new(sb, NULL), *other = serve_conn_new(sb, NULL);
    spade_json_doc *d = ask(c, "{\"op\":\"hello\",\"id\":{\"k\":[1]}}");
    const spade_json *r = spade_json_root(d);
    ck_assert(spade_json_get(r, "ok")->boolean);
    ck_assert_int_eq((int)spade_json_get(r, "protocol")->number, SPADE_PROTOCOL_VERSION);
    ck_assert_int_eq(spade_json_get(r, "id")->type, SPADE_JSON_OBJECT);
    spade_json_doc_free(d);
    static const struct {
        const char *line, *code;
    } bad[] = {
        {"nope", "bad_json"},
        {"3", "bad_request"},
        {"{\"op\":\"x\"}", "unknown_op"},
        {"{}", "missing_field"},
        {"{\"op\":null}", "missing_field"},
        {"{\"op\":[]}", "wrong_type"},
        {"{\"op\":\"close\",\"env\":1}", "unknown_handle"},
        {"{\"op\":\"make\",\"spec\":\"maze\",\"workers\":-1}", "bad_value"},
        {"{\"op\":\"make\",\"spec\":\"maze\",\"instances\":100000}", "bad_value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        d = ask(c, bad[i].line);
        ck_assert_msg(!strcmp(error_code(d), bad[i].code), "%s: %s, not %s", bad[i].line, error_code(d), bad[i].code);
        spade_json_doc_free(d);
    }
    d = ask(c, ADD);
    ck_assert_msg(spade_json_get(spade_json_root(d), "ok")->boolean, "make: %s", error_code(d));
    ck_assert_int_eq((int)spade_json_get(spade_json_root(d), "env")->number, 1);
    spade_json_doc_free(d);
    ck_assert_int_eq(serve_conn_num_workers(c), 2);
    /* the other connection does not see handle 1 */
    d = ask(other, "{\"op\":\"reset\",\"env\":1,\"ids\":[0]}");
    ck_assert_str_eq(error_code(d), "unknown_handle");
    spade_json_doc_free(d);
    /* instances 0 and 2 on worker 0, 1 on worker 1; the answers are in request order */
    d = ask(c, "{\"op\":\"reset\",\"env\":1,\"ids\":[2,1,0],\"seed\":40}");
    r = spade_json_root(d);
    const spade_json *obs = spade_json_get(r, "obs");
    ck_assert_uint_eq(obs->len, 3);
    char answers[3][16];
    for (int i = 0; i < 3; i++) snprintf(answers[i], sizeof answers[i], "%s", obs->items[i].str);
    spade_json_doc_free(d);
    char line[256];
    snprintf(line, sizeof line, "{\"op\":\"step\",\"env\":1,\"ids\":[0,1,2],\"actions\":[\"%s\",\"%s\",\"wrong\"]}",
             answers[2], answers[1]);
    d = ask(c, line);
    r = spade_json_root(d);
    const spade_json *rw = spade_json_get(r, "reward"), *te = spade_json_get(r, "terminated");
    ck_assert(rw->items[0].number == 1 && rw->items[1].number == 1 && rw->items[2].number == 0);
    ck_assert(te->items[0].boolean && te->items[1].boolean && te->items[2].boolean);
    ck_assert_ptr_null(spade_json_get(r, "failures"));
    spade_json_doc_free(d);
    /* stepping ended episodes: a failure for each, with the reason */
    d = ask(c, "{\"op\":\"step\",\"env\":1,\"ids\":[1],\"actions\":[\"1\"],\"reset\":{\"ids\":[0]}}");
    r = spade_json_root(d);
    const spade_json *f = spade_json_get(r, "failures");
    ck_assert_msg(f && f->len == 1, "failures expected");
    ck_assert(strstr(spade_json_get(&f->items[0], "message")->str, "ended") != NULL);
    ck_assert_ptr_null(spade_json_get(spade_json_get(r, "reset"), "failures"));
    spade_json_doc_free(d);
    d = ask(c, "{\"op\":\"solve\",\"env\":1,\"instance\":0}");
    ck_assert_int_eq(spade_json_get(spade_json_root(d), "action")->type, SPADE_JSON_STRING);
    spade_json_doc_free(d);
    /* a compile error: the class and the line */
    d = ask(c,
            "{\"op\":\"make\",\"source\":\"#include <spade/dsl.h>\\nENV(\\\"x\\\", \\\"y\\\")\\nSTATE { int a }\\n\"}");
    const spade_json *fl = spade_json_get(spade_json_get(spade_json_root(d), "error"), "failure");
    ck_assert_str_eq(error_code(d), "env_failure");
    ck_assert_str_eq(spade_json_get(fl, "outcome")->str, "compile_error");
    ck_assert(spade_json_get(fl, "line") != NULL);
    spade_json_doc_free(d);
    ck_assert_int_eq(serve_conn_num_envs(c), 1);
    /* freeing the connection frees its workers */
    pid_t z = spade_sandbox_zygote_pid(sb);
    int with = tu_children_of(z, NULL);
    serve_conn_free(c);
    int after = tu_children_of(z, NULL);
    for (int i = 0; i < 200 && after > with - 2; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        after = tu_children_of(z, NULL);
    }
    ck_assert_msg(after <= with - 2, "workers: %d with the connection, %d after", with, after);
    serve_conn_free(other);
}
END_TEST

/* A server with a token: nothing before a hello that carries it; a wrong or
 * missing one is "unauthorized" and ends the connection; the right one opens it. */
START_TEST(handler_asks_for_the_token) {
    serve_limits lim;
    serve_limits_default(&lim);
    lim.token = "0123456789abcdef-secret";
    lim.token_len = strlen(lim.token);
    static const char *const refused[] = {
        "{\"op\":\"list\"}",
        "{\"op\":\"hello\"}",
        "{\"op\":\"hello\",\"token\":\"0123456789abcdef-secreT\"}",
        "{\"op\":\"hello\",\"token\":\"0123456789abcdef-secret \"}",
        "{\"op\":\"hello\",\"token\":7}",
        "not json",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        serve_conn *c = serve_conn_new(sb, &lim);
        ck_assert(!serve_conn_closing(c));
        ck_assert_uint_eq(serve_conn_max_line(c), SERVE_UNAUTH_LINE_MAX);
        spade_json_doc *d = ask(c, refused[i]);
        ck_assert_msg(!strcmp(error_code(d), i == 5 ? "bad_json" : "unauthorized"), "%s: %s", refused[i],
                      error_code(d));
        ck_assert_msg(serve_conn_closing(c), "%s: the connection should end", refused[i]);
        spade_json_doc_free(d);
        serve_conn_free(c);
    }
    serve_conn *c = serve_conn_new(sb, &lim);
    spade_json_doc *d = ask(c, "{\"op\":\"hello\",\"token\":\"0123456789abcdef-secret\"}");
    ck_assert(spade_json_get(spade_json_root(d), "ok")->boolean);
    ck_assert_str_eq(spade_json_get(spade_json_root(d), "auth")->str, "token");
    spade_json_doc_free(d);
    ck_assert(!serve_conn_closing(c));
    ck_assert_uint_eq(serve_conn_max_line(c), lim.max_line);
    d = ask(c, "{\"op\":\"hello\"}"); /* a keepalive hello may leave it out */
    ck_assert(spade_json_get(spade_json_root(d), "ok")->boolean);
    spade_json_doc_free(d);
    d = ask(c, "{\"op\":\"nope\"}"); /* a bad request once in does not end it */
    ck_assert_str_eq(error_code(d), "unknown_op");
    ck_assert(!serve_conn_closing(c));
    spade_json_doc_free(d);
    d = ask(c, "{\"op\":\"hello\",\"token\":\"wrong-wrong-wrong\"}");
    ck_assert_str_eq(error_code(d), "unauthorized");
    ck_assert(serve_conn_closing(c));
    spade_json_doc_free(d);
    serve_conn_free(c);
    /* without a token asked, one sent is ignored */
    c = serve_conn_new(sb, NULL);
    d = ask(c, "{\"op\":\"hello\",\"token\":\"anything\"}");
    ck_assert(spade_json_get(spade_json_root(d), "ok")->boolean);
    ck_assert_str_eq(spade_json_get(spade_json_root(d), "auth")->str, "none");
    spade_json_doc_free(d);
    serve_conn_free(c);
}
END_TEST

int main(void) {
    Suite *s = suite_create("serve");
    TCase *j = tcase_create("json");
    tcase_set_timeout(j, 60); /* not Check's default 4 s: the fuzzing takes 0.3 s here, more on a loaded machine */
    tcase_add_test(j, reader_reads_json);
    tcase_add_test(j, reader_refuses_what_is_not_json);
    tcase_add_test(j, writer_output_reads_back);
    tcase_add_test(j, reader_survives_mutated_input);
    suite_add_tcase(s, j);
    TCase *h = tcase_create("handler");
    tcase_add_checked_fixture(h, setup, teardown);
    tcase_set_timeout(h, 60);
    tcase_add_test(h, handler_answers_and_refuses);
    tcase_add_test(h, handler_asks_for_the_token);
    suite_add_tcase(s, h);
    return tu_run(s);
}
