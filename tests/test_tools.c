/* test_tools.c — Check suite for core/tools: signature parsing, finding the
 * call in agent text, type-checking, libffi invocation, error observations,
 * and a seeded fuzz loop proving the parser survives hostile text.
 *
 * What it is not: a test of the host (which sets the state pointer and routes
 * actions) nor of TOOL under the JIT; the tools here are plain C functions
 * with the same shape TOOL produces (static, no state argument).
 */
#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "tools/tools.h"
#include "errbuf.h"

/* ---- the tools under test (the shape TOOL gives them) -------------------- */

static long g_balance;
static int g_void_calls;
static char g_last[SPADE_TOOL_ARG_MAX + 16];

static int deposit(int amount) {
    g_balance += amount;
    return (int)g_balance;
}
static int withdraw(int amount) {
    g_balance -= amount;
    return (int)g_balance;
}
static long balance(void) { return g_balance; }
static int send(int amount, const char *to) {
    snprintf(g_last, sizeof g_last, "%d->%s", amount, to);
    g_balance -= amount;
    return (int)g_balance;
}
static long twice(long x) { return (long)((unsigned long)x * 2u); } /* wraps, no UB under fuzz */
static double scale(double x, double by) { return x * by; }
static bool negate(bool b) { return !b; }
static const char *echo(const char *s) {
    snprintf(g_last, sizeof g_last, "%s", s);
    return g_last;
}
static long length(const char *s) { return (long)strlen(s); }
static void reset_all(void) {
    g_balance = 0;
    g_void_calls++;
}
static const char *mix(int a, long b, double c, bool d, const char *e) {
    snprintf(g_last, sizeof g_last, "a=%d b=%ld c=%g d=%d e=%s", a, b, c, (int)d, e);
    return g_last;
}
static double sum8(int a, double b, long c, double d, int e, double f, long g, double h) {
    return a + b + (double)c + d + e + f + (double)g + h;
}
static const char *nothing(void) { return NULL; }

#define DEF(name, sig, desc)                                                                                           \
    { #name, sig, desc, (void *)name }
static const spade_tool_def DEFS[] = {
    DEF(deposit, "int (int amount)", "Deposit money."),
    DEF(withdraw, "int (int amount)", "Withdraw money."),
    DEF(balance, "long (void)", "The balance."),
    DEF(send, "int (int amount, const char *to)", "Send money to someone."),
    DEF(twice, "long (long x)", ""),
    DEF(scale, "double (double x, double by)", ""),
    DEF(negate, "bool (bool b)", ""),
    DEF(echo, "const char * (const char * s)", ""),
    DEF(length, "long (const char *s)", ""),
    DEF(reset_all, "void ()", ""),
    DEF(mix, "char * (int a, long b, double c, _Bool d, char const *e)", ""),
    DEF(sum8, "double (int a, double b, long c, double d, int e, double f, long g, double h)", ""),
    DEF(nothing, "char *(void)", ""),
};
#define NDEFS ((int)(sizeof DEFS / sizeof DEFS[0]))
static spade_tool_sig SIGS[NDEFS];
static spade_tool_table *TABLE;

static void setup(void) {
    char err[256];
    for (int i = 0; i < NDEFS; i++)
        ck_assert_msg(spade_tool_sig_parse(DEFS[i].signature, &SIGS[i], err, sizeof err) == 0, "%s: %s",
                      DEFS[i].signature, err);
    ck_assert_msg(spade_tool_table_new(&TABLE, DEFS, SIGS, NDEFS, err, sizeof err) == 0, "%s", err);
    g_balance = 0;
    g_void_calls = 0;
    g_last[0] = '\0';
}

static void teardown(void) {
    spade_tool_table_free(TABLE);
    TABLE = NULL;
}

static char OUT[1 << 16];

/* Dispatches through both entry points and insists they agree, so every
 * test covers the prepared table and the plain function alike. The table runs
 * second, on the state the plain call left, hence the reset of balance. */
static spade_dispatch run_len(const char *text, size_t len) {
    static char out2[1 << 16];
    long before = g_balance;
    spade_dispatch r1 = spade_tools_dispatch(DEFS, SIGS, NDEFS, text, len, out2, sizeof out2);
    long after1 = g_balance;
    g_balance = before;
    spade_dispatch r2 = spade_tool_table_dispatch(TABLE, text, len, OUT, sizeof OUT);
    ck_assert_int_eq(r1, r2);
    ck_assert_int_eq(after1, g_balance);
    ck_assert_str_eq(out2, OUT);
    return r2;
}
static spade_dispatch run(const char *text) { return run_len(text, strlen(text)); }

#define CALLED(text, expect)                                                                                           \
    do {                                                                                                               \
        spade_dispatch r_ = run(text);                                                                                 \
        ck_assert_msg(r_ == SPADE_DISPATCH_CALLED, "%s -> %d: %s", text, r_, OUT);                                     \
        ck_assert_str_eq(OUT, expect);                                                                                 \
    } while (0)
#define FAILS(text, expect)                                                                                            \
    do {                                                                                                               \
        spade_dispatch r_ = run(text);                                                                                 \
        ck_assert_msg(r_ == SPADE_DISPATCH_ERROR, "%s -> %d: %s", text, r_, OUT);                                      \
        ck_assert_str_eq(OUT, expect);                                                                                 \
    } while (0)
#define FAILS_LIKE(text, part)                                                                                         \
    do {                                                                                                               \
        spade_dispatch r_ = run(text);                                                                                 \
        ck_assert_msg(r_ == SPADE_DISPATCH_ERROR, "%s -> %d: %s", text, r_, OUT);                                      \
        ck_assert_msg(strstr(OUT, part) != NULL, "'%s' not in '%s'", part, OUT);                                       \
    } while (0)
#define NOT_A_CALL(text)                                                                                               \
    do {                                                                                                               \
        spade_dispatch r_ = run(text);                                                                                 \
        ck_assert_msg(r_ == SPADE_DISPATCH_NOT_A_CALL, "%s -> %d: %s", text, r_, OUT);                                 \
        ck_assert_str_eq(OUT, "");                                                                                     \
    } while (0)

/* ---- signatures ----------------------------------------------------------- */

START_TEST(sig_good) {
    spade_tool_sig s;
    char err[256];
    ck_assert_int_eq(spade_tool_sig_parse("int (int amount, const char *to)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_INT);
    ck_assert_int_eq(s.nargs, 2);
    ck_assert_int_eq(s.args[0], SPADE_T_INT);
    ck_assert_int_eq(s.args[1], SPADE_T_STRING);
    ck_assert_str_eq(s.argnames[0], "amount");
    ck_assert_str_eq(s.argnames[1], "to");

    ck_assert_int_eq(spade_tool_sig_parse("long (void)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_LONG);
    ck_assert_int_eq(s.nargs, 0);
    ck_assert_int_eq(spade_tool_sig_parse("double ()", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_DOUBLE);
    ck_assert_int_eq(s.nargs, 0);
    ck_assert_int_eq(spade_tool_sig_parse("double (  )", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.nargs, 0);
    ck_assert_int_eq(spade_tool_sig_parse("bool (bool flag)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_BOOL);
    ck_assert_int_eq(s.args[0], SPADE_T_BOOL);
    ck_assert_int_eq(spade_tool_sig_parse("_Bool (_Bool flag)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_BOOL);
    ck_assert_int_eq(spade_tool_sig_parse("void (const char * name)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_VOID);
    ck_assert_int_eq(s.args[0], SPADE_T_STRING);
    ck_assert_str_eq(s.argnames[0], "name");
    ck_assert_int_eq(spade_tool_sig_parse("char * (char *s)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_STRING);
    ck_assert_int_eq(spade_tool_sig_parse("const char*(char const*s)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_STRING);
    ck_assert_int_eq(s.args[0], SPADE_T_STRING);
    ck_assert_int_eq(
        spade_tool_sig_parse("long int (signed long a, long int b, signed c, signed int d)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.ret, SPADE_T_LONG);
    ck_assert_int_eq(s.args[0], SPADE_T_LONG);
    ck_assert_int_eq(s.args[1], SPADE_T_LONG);
    ck_assert_int_eq(s.args[2], SPADE_T_INT);
    ck_assert_int_eq(s.args[3], SPADE_T_INT);
    /* unnamed parameters are named by position */
    ck_assert_int_eq(spade_tool_sig_parse("int (int, const char *)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.nargs, 2);
    ck_assert_str_eq(s.argnames[0], "arg1");
    ck_assert_str_eq(s.argnames[1], "arg2");
    ck_assert_int_eq(s.args[1], SPADE_T_STRING);
    /* exactly the maximum */
    ck_assert_int_eq(
        spade_tool_sig_parse("int (int a, int b, int c, int d, int e, int f, int g, int h)", &s, err, sizeof err), 0);
    ck_assert_int_eq(s.nargs, SPADE_TOOL_MAX_ARGS);
}
END_TEST

static void sig_bad(const char *sig, const char *part) {
    spade_tool_sig s;
    char err[256] = "";
    ck_assert_msg(spade_tool_sig_parse(sig, &s, err, sizeof err) == -1, "'%s' was accepted", sig);
    ck_assert_msg(strstr(err, part) != NULL, "'%s': '%s' not in '%s'", sig, part, err);
}

START_TEST(sig_bad_all) {
    sig_bad("float (int x)", "unsupported return type 'float'");
    sig_bad("int (float x)", "argument 1 ('x'): unsupported type 'float'");
    sig_bad("int (int a, unsigned b)", "argument 2 ('b'): unsupported type 'unsigned'");
    sig_bad("int (int a, unsigned int b)", "unsupported type 'unsigned int'");
    sig_bad("int (int *p)", "argument 1 ('p'): unsupported type 'int *'");
    sig_bad("int (void *p)", "('p'): unsupported type 'void *'");
    sig_bad("int (char **argv)", "unsupported type 'char **'");
    sig_bad("int (struct point p)", "('p'): unsupported type 'struct point'");
    sig_bad("int (char c)", "('c'): unsupported type 'char'");
    sig_bad("int (short s)", "('s'): unsupported type 'short'");
    sig_bad("int (long long x)", "('x'): unsupported type 'long long'");
    sig_bad("int (size_t n)", "('n'): unsupported type 'size_t'");
    sig_bad("int (void x)", "('x'): unsupported type 'void'");
    sig_bad("int (void, int y)", "argument 1");
    sig_bad("int (int a, ...)", "argument 2: variadic");
    sig_bad("int (int a,)", "argument 2 is empty");
    sig_bad("int (int a[])", "argument 1 ('int a[]'): unsupported declaration");
    sig_bad("int (int (*f)(int))", "function pointer");
    sig_bad("int (amount)", "argument 1 ('amount') has no type");
    sig_bad("int (int a, int a)", "duplicate name 'a'");
    sig_bad("int (int a, int b, int c, int d, int e, int f, int g, int h, int i)", "more than 8 arguments");
    sig_bad("int (int a_name_that_is_far_too_long_for_the_table)", "longer than 31 bytes");
    sig_bad("int x", "no '('");
    sig_bad("int (int x", "no ')'");
    sig_bad("int (int x) junk", "unexpected text after ')'");
    sig_bad("(int x)", "cannot read the return type");
    sig_bad("float * (int x)", "unsupported return type 'float *'");
    sig_bad("int", "no '('");
    sig_bad("", "no '('");
    spade_tool_sig s;
    char err[64];
    ck_assert_int_eq(spade_tool_sig_parse(NULL, &s, err, sizeof err), -1);
    ck_assert_int_eq(spade_tool_sig_parse("int (int x)", NULL, err, sizeof err), -1);
    /* a tiny error buffer is truncated, not overrun */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    ck_assert_int_eq(spade_tool_sig_parse("float (int x)", &s, tiny, 5), -1);
    ck_assert_int_eq(tiny[4], '\0');
    ck_assert_int_eq(tiny[5], 'x');
}
END_TEST

START_TEST(describe) {
    char buf[256];
    int n = spade_tool_describe(&DEFS[0], &SIGS[0], buf, sizeof buf);
    ck_assert_str_eq(buf, "deposit(amount: int) -> int \xe2\x80\x94 Deposit money.");
    ck_assert_int_eq(n, (int)strlen(buf));
    spade_tool_describe(&DEFS[3], &SIGS[3], buf, sizeof buf);
    ck_assert_str_eq(buf, "send(amount: int, to: string) -> int \xe2\x80\x94 Send money to someone.");
    spade_tool_describe(&DEFS[9], &SIGS[9], buf, sizeof buf);
    ck_assert_str_eq(buf, "reset_all() -> void");
    ck_assert_int_eq(spade_tool_describe(&DEFS[0], &SIGS[0], buf, 8), n);
    ck_assert_str_eq(buf, "deposit");
    ck_assert_str_eq(spade_type_name(SPADE_T_STRING), "string");
}
END_TEST

/* ---- dispatch: good calls ------------------------------------------------- */

START_TEST(c_form_types) {
    CALLED("deposit(5)", "5");
    ck_assert_int_eq(g_balance, 5);
    CALLED("withdraw(2)", "3");
    CALLED("balance()", "3");
    CALLED("balance( )", "3");
    CALLED("deposit(-10)", "-7");
    CALLED("deposit(0x10)", "9");
    CALLED("deposit(+1)", "10");
    CALLED("twice(4611686018427387903)", "9223372036854775806");
    CALLED("twice(-4611686018427387904)", "-9223372036854775808");
    CALLED("twice(3000000000)", "6000000000");
    CALLED("scale(1.5, 2)", "3");
    CALLED("scale(0.1, 1)", "0.1");
    CALLED("scale(1e300, 10)", "1e+301");
    CALLED("scale(1, 3)", "3");
    CALLED("scale(0.1, 3)", "0.30000000000000004");
    CALLED("scale(.5, -2.)", "-1");
    CALLED("negate(true)", "false");
    CALLED("negate(false)", "true");
    CALLED("negate(True)", "false");
    CALLED("echo(\"hello\")", "hello");
    CALLED("echo('single')", "single");
    CALLED("echo(\"\")", "");
    CALLED("length(\"four\")", "4");
    CALLED("mix(1, 2, 3.25, true, \"x y\")", "a=1 b=2 c=3.25 d=1 e=x y");
    CALLED("sum8(1, 2.5, 3, 4.5, 5, 6.5, 7, 8.5)", "38");
    CALLED("nothing()", "null");
    /* keyword arguments, in any order */
    CALLED("send(to=\"bob\", amount=5)", "5");
    ck_assert_str_eq(g_last, "5->bob");
    CALLED("send(7, to: 'amy')", "-2");
    ck_assert_str_eq(g_last, "7->amy");
    /* trailing comma, blanks everywhere */
    CALLED("send( 1 ,\n\t\"zed\" , )", "-3");
}
END_TEST

START_TEST(void_and_state) {
    CALLED("deposit(100)", "100");
    ck_assert_int_eq(g_balance, 100);
    CALLED("reset_all()", "");
    ck_assert_int_eq(g_balance, 0);
    ck_assert_int_eq(g_void_calls, 2); /* once per entry point */
    CALLED("send(30, \"carol\")", "-30");
    ck_assert_int_eq(g_balance, -30);
}
END_TEST

START_TEST(strings) {
    CALLED("echo(\"a\\\"b\\\\c\\nd\\te\\rf\\/g\")", "a\"b\\c\nd\te\rf/g");
    CALLED("echo('it\\'s \"quoted\"')", "it's \"quoted\"");
    CALLED("echo(\"caf\\u00e9\")", "caf\xc3\xa9");
    CALLED("echo(\"\\u20AC\")", "\xe2\x82\xac");
    CALLED("echo(\"\\ud83d\\ude00!\")", "\xf0\x9f\x98\x80!");
    CALLED("echo(\"raw caf\xc3\xa9 \xf0\x9f\x98\x80\")", "raw caf\xc3\xa9 \xf0\x9f\x98\x80");
    CALLED("echo(\"\\x41\\x4a\")", "AJ");
    CALLED("echo(\"a (b) c, d\")", "a (b) c, d");
    CALLED("echo(\"line1\nline2\")", "line1\nline2");
    FAILS("echo(\"unterminated)", "error: malformed call: unterminated string");
    FAILS_LIKE("echo(\"\\ud83d alone\")", "unpaired surrogate \\uD83D");
    FAILS_LIKE("echo(\"\\ude00\")", "unpaired surrogate \\uDE00");
    FAILS_LIKE("echo(\"\\u12\")", "needs 4 hex digits");
    FAILS_LIKE("echo(\"\\q\")", "invalid escape '\\q'");
    FAILS_LIKE("echo(\"nul\\u0000\")", "NUL byte");
    FAILS_LIKE("echo(\"nul\\0\")", "NUL byte");
    FAILS_LIKE("echo(\"nul\\x00\")", "NUL byte");
    static const char raw_nul[] = "echo(\"a\0b\")";
    spade_dispatch r = run_len(raw_nul, sizeof raw_nul - 1);
    ck_assert_int_eq(r, SPADE_DISPATCH_ERROR);
    ck_assert_ptr_nonnull(strstr(OUT, "NUL byte"));
}
END_TEST

START_TEST(huge_arguments) {
    size_t big = 1 << 20;
    char *text = malloc(big + 64);
    ck_assert_ptr_nonnull(text);
    /* exactly the limit: accepted */
    int k = sprintf(text, "length(\"");
    memset(text + k, 'a', SPADE_TOOL_ARG_MAX);
    strcpy(text + k + SPADE_TOOL_ARG_MAX, "\")");
    CALLED(text, "65536");
    /* one byte over, and 1 MB: an error naming the argument */
    memset(text + k, 'a', SPADE_TOOL_ARG_MAX + 1);
    strcpy(text + k + SPADE_TOOL_ARG_MAX + 1, "\")");
    FAILS(text, "error: argument 's' of length is longer than 65536 bytes");
    memset(text + k, 'b', big);
    strcpy(text + k + big, "\")");
    FAILS(text, "error: argument 's' of length is longer than 65536 bytes");
    /* the same through JSON */
    k = sprintf(text, "{\"name\": \"echo\", \"arguments\": {\"s\": \"");
    memset(text + k, 'c', big);
    strcpy(text + k + big, "\"}}");
    FAILS(text, "error: argument 's' of echo is longer than 65536 bytes");
    /* escapes count decoded bytes: 65536 escaped quotes are fine */
    k = sprintf(text, "length(\"");
    for (int i = 0; i < SPADE_TOOL_ARG_MAX; i++) memcpy(text + k + 2 * i, "\\\"", 2);
    strcpy(text + k + 2 * SPADE_TOOL_ARG_MAX, "\")");
    CALLED(text, "65536");
    free(text);
}
END_TEST

/* ---- dispatch: JSON and tags ---------------------------------------------- */

START_TEST(json_form) {
    CALLED("{\"name\": \"deposit\", \"arguments\": {\"amount\": 12}}", "12");
    CALLED("{\"arguments\": {\"to\": \"bob\", \"amount\": 2}, \"name\": \"send\"}", "10");
    ck_assert_str_eq(g_last, "2->bob");
    CALLED("{\"name\": \"send\", \"arguments\": \"{\\\"amount\\\": 3, \\\"to\\\": \\\"\\\\u00e9\\\"}\"}", "7");
    ck_assert_str_eq(g_last, "3->\xc3\xa9");
    CALLED("{\"name\": \"balance\", \"arguments\": {}}", "7");
    CALLED("{\"name\": \"balance\"}", "7");
    CALLED("{\"name\": \"balance\", \"arguments\": \"\"}", "7");
    CALLED("{\"name\": \"balance\", \"arguments\": null}", "7");
    CALLED("{\"name\": \"send\", \"arguments\": [1, \"x\"]}", "6");
    CALLED("{'name': 'negate', 'arguments': {'b': False}}", "true");
    CALLED("{\"id\": \"c1\", \"type\": \"function\", \"name\": \"twice\", \"arguments\": {\"x\": -21}, \"extra\": [1, "
           "{\"a\": []}]}",
           "-42");
    /* OpenAI's nesting: the outer object has no name, the inner one does */
    CALLED("{\"type\": \"function\", \"function\": {\"name\": \"deposit\", \"arguments\": \"{\\\"amount\\\": 4}\"}}",
           "10");
    CALLED("```json\n{\"name\": \"scale\", \"arguments\": {\"by\": 2, \"x\": 0.25}}\n```", "0.5");
    FAILS(
        "{\"name\": \"depositt\", \"arguments\": {\"amount\": 1}}",
        "error: unknown tool 'depositt'; tools: deposit, withdraw, balance, send, twice, scale, negate, echo, length, "
        "reset_all, mix, sum8, nothing");
    FAILS("{\"name\": \"deposit\", \"arguments\": {\"amt\": 1}}",
          "error: deposit has no argument 'amt'; it takes (amount: int)");
    FAILS("{\"name\": \"send\", \"arguments\": {\"amount\": 1}}",
          "error: send expects 2 arguments (amount: int, to: string), got 1 (missing 'to')");
    FAILS("{\"name\": \"deposit\", \"arguments\": {}}", "error: deposit expects 1 argument (amount: int), got 0");
    FAILS("{\"name\": \"deposit\", \"arguments\": {\"amount\": 1, \"amount\": 2}}",
          "error: argument 'amount' of deposit is given twice");
    FAILS("{\"name\": \"deposit\", \"arguments\": {\"amount\": 5}",
          "error: malformed call: unexpected end of the text (missing '}')");
    FAILS_LIKE("{\"name\": \"deposit\", \"arguments\": \"{\\\"amount\\\": }\"}",
               "in the arguments string: expected a value");
    FAILS_LIKE("{\"name\": \"deposit\", \"arguments\": \"[1]\"}", "must hold a JSON object");
    FAILS_LIKE("{\"name\": \"deposit\", \"arguments\": 5}", "the arguments must be an object");
    FAILS_LIKE("{\"name\": 5}", "\"name\" must be a string");
    FAILS_LIKE("{\"name\": \"a\", \"name\": \"b\"}", "\"name\" given twice");
    FAILS("{\"name\": \"deposit\", \"arguments\": {\"amount\": [1]}}",
          "error: argument 'amount' of deposit must be int, got an array");
    FAILS("{\"name\": \"deposit\", \"arguments\": {\"amount\": {}}}",
          "error: argument 'amount' of deposit must be int, got an object");
    FAILS("{\"name\": \"deposit\", \"arguments\": {\"amount\": null}}",
          "error: argument 'amount' of deposit must be int, got null");
    /* a JSON object without "name" is not a call; neither is set notation */
    NOT_A_CALL("{\"answer\": 42}");
    NOT_A_CALL("the set {x | x > 0} and {1, 2}");
    NOT_A_CALL("{\"note\": \"deposit(5) would be silly\"}");
}
END_TEST

START_TEST(tags) {
    CALLED("<tool_call>{\"name\": \"deposit\", \"arguments\": {\"amount\": 3}}</tool_call>", "3");
    CALLED("Let me act.\n<tool_call>\ndeposit(4)\n</tool_call>\n", "7");
    CALLED("<tool_call>  withdraw (1)</tool_call>", "6");
    CALLED("<tool_call>\n```json\n{\"name\": \"balance\"}\n```\n</tool_call>", "6");
    /* unclosed tag: generation stopped at the stop sequence */
    CALLED("<tool_call>{\"name\": \"deposit\", \"arguments\": {\"amount\": 1}}", "7");
    /* inside tags any name counts as a call attempt */
    FAILS("<tool_call>frobnicate(1)</tool_call>",
          "error: unknown tool 'frobnicate'; tools: deposit, withdraw, balance, send, twice, scale, negate, echo, "
          "length, reset_all, mix, sum8, nothing");
    FAILS("<tool_call>just words</tool_call>", "error: malformed call: expected '(' after the tool name, found 'w'");
    FAILS("<tool_call>42</tool_call>",
          "error: malformed call: expected name(arguments) or a JSON object inside <tool_call>");
    FAILS("<tool_call>{\"arguments\": {}}</tool_call>",
          "error: malformed call: the JSON object in <tool_call> has no \"name\"");
    FAILS("<tool_call></tool_call>",
          "error: malformed call: expected name(arguments) or a JSON object inside <tool_call>");
}
END_TEST

START_TEST(last_call_wins) {
    /* only the last one runs: the balance moves once */
    CALLED("I could deposit(1), or deposit(2); I will deposit(3).", "3");
    ck_assert_int_eq(g_balance, 3);
    CALLED("deposit(100)\n<tool_call>{\"name\": \"withdraw\", \"arguments\": {\"amount\": 1}}</tool_call>", "2");
    CALLED("{\"name\": \"deposit\", \"arguments\": {\"amount\": 100}} then withdraw(2)", "0");
    /* an earlier good call does not rescue a later bad one */
    FAILS("deposit(1) then deposit(\"x\")", "error: argument 'amount' of deposit must be int, got string \"x\"");
    ck_assert_int_eq(g_balance, 0);
    /* a later good call wins over an earlier bad one */
    CALLED("deposit(amount) is the tool; so: deposit(9)", "9");
    /* a call quoted inside another call's string is not a call */
    CALLED("echo(\"try deposit(5) later\")", "try deposit(5) later");
    ck_assert_int_eq(g_balance, 9);
    CALLED("send(1, \"} deposit(50) {\")", "8");
}
END_TEST

START_TEST(prose_is_not_a_call) {
    NOT_A_CALL("I think f(x) is increasing.");
    NOT_A_CALL("The deposit is 5 and the balance (after) is 3.");
    NOT_A_CALL("redeposit(5) and deposits(3) are other words");
    NOT_A_CALL("deposit (5) has a space");
    NOT_A_CALL("42");
    NOT_A_CALL("");
    NOT_A_CALL("<tool_call"); /* not the tag */
    NOT_A_CALL("\"unbalanced quote deposit is not called");
    ck_assert_int_eq(spade_tools_dispatch(DEFS, SIGS, NDEFS, NULL, 5, OUT, sizeof OUT), SPADE_DISPATCH_NOT_A_CALL);
    ck_assert_int_eq(g_balance, 0);
}
END_TEST

/* ---- dispatch: bad calls --------------------------------------------------- */

START_TEST(bad_calls) {
    FAILS("deposit(1, 2)", "error: deposit expects 1 argument (amount: int), got 2");
    FAILS("deposit()", "error: deposit expects 1 argument (amount: int), got 0");
    FAILS("send(1)", "error: send expects 2 arguments (amount: int, to: string), got 1");
    FAILS("balance(1)", "error: balance expects no arguments, got 1");
    FAILS("deposit(1,2,3,4,5,6,7,8,9,10,11)", "error: deposit expects 1 argument (amount: int), got 11");
    FAILS("deposit(\"ten\")", "error: argument 'amount' of deposit must be int, got string \"ten\"");
    FAILS("deposit(2.5)", "error: argument 'amount' of deposit must be int, got double 2.5");
    FAILS("deposit(5.0)", "error: argument 'amount' of deposit must be int, got double 5.0");
    FAILS("deposit(true)", "error: argument 'amount' of deposit must be int, got bool true");
    FAILS("deposit(3000000000)",
          "error: argument 'amount' of deposit must be int (from -2147483648 to 2147483647), got 3000000000");
    FAILS("deposit(-2147483649)",
          "error: argument 'amount' of deposit must be int (from -2147483648 to 2147483647), got -2147483649");
    /* exactly one past each end (an off-by-one here wrapped 2147483648 to INT_MIN and passed, issue 10) */
    FAILS("deposit(2147483648)",
          "error: argument 'amount' of deposit must be int (from -2147483648 to 2147483647), got 2147483648");
    FAILS("deposit(amount=2147483648)",
          "error: argument 'amount' of deposit must be int (from -2147483648 to 2147483647), got 2147483648");
    FAILS("{\"name\": \"deposit\", \"arguments\": {\"amount\": 2147483648}}",
          "error: argument 'amount' of deposit must be int (from -2147483648 to 2147483647), got 2147483648");
    CALLED("deposit(-2147483648)", "-2147483648");
    CALLED("reset_all()", "");
    CALLED("deposit(2147483647)", "2147483647");
    FAILS("twice(9223372036854775808)",
          "error: argument 'x' of twice must be long (from -9223372036854775808 to 9223372036854775807), got "
          "9223372036854775808");
    FAILS("twice(99999999999999999999999)",
          "error: argument 'x' of twice must be long (from -9223372036854775808 to 9223372036854775807), got "
          "99999999999999999999999");
    CALLED("scale(99999999999999999999999, 1)", "1e+23");
    FAILS("scale(1e999, 1)", "error: argument 'x' of scale must be double (finite), got 1e999");
    FAILS("scale(\"1\", 1)", "error: argument 'x' of scale must be double, got string \"1\"");
    FAILS("negate(1)", "error: argument 'b' of negate must be bool, got int 1");
    FAILS("echo(5)", "error: argument 's' of echo must be string, got int 5");
    FAILS("echo(null)", "error: argument 's' of echo must be string, got null");
    FAILS("send(to=\"x\", to=\"y\")", "error: argument 'to' of send is given twice");
    FAILS("send(1, amount=2)", "error: argument 'amount' of send is given twice");
    FAILS("send(1, too=\"y\")", "error: send has no argument 'too'; it takes (amount: int, to: string)");
    FAILS("send(to=\"x\")", "error: send expects 2 arguments (amount: int, to: string), got 1 (missing 'amount')");
    FAILS("send(to=\"x\", 5)", "error: malformed call: argument 2: a positional argument after a named one");
    FAILS("deposit(amount)",
          "error: malformed call: expected a value (number, \"string\", true or false), found 'amount'");
    FAILS("deposit(5", "error: malformed call: unexpected end of the text (missing ')')");
    FAILS("deposit(5 6)", "error: malformed call: expected ',' or ')' after argument 1, found '6'");
    FAILS("deposit(5x)", "error: malformed call: invalid number '5x'");
    FAILS("deposit(0x)", "error: malformed call: invalid number '0x'");
    FAILS("deposit(1.2.3)", "error: malformed call: invalid number '1.2.3'");
    FAILS("deposit(-)", "error: malformed call: invalid number '-'");
    FAILS("deposit(@)", "error: malformed call: expected a value, found '@'");
    FAILS("deposit([[[[1]]]])", "error: argument 'amount' of deposit must be int, got an array");
    FAILS("echo(\"x\" \"y\")", "error: malformed call: expected ',' or ')' after argument 1, found '\"'");
    /* long quoted values are cut in messages */
    FAILS("echo(123456789012345678901234567890123456789012345678901234567890)",
          "error: argument 's' of echo must be string, got int 1234567890123456789012345678901234567890...");
}
END_TEST

START_TEST(output_truncation) {
    char small[6];
    memset(small, '#', sizeof small);
    ck_assert_int_eq(spade_tool_table_dispatch(TABLE, "echo(\"abcdefghij\")", 18, small, 4), SPADE_DISPATCH_CALLED);
    ck_assert_str_eq(small, "abc");
    ck_assert_int_eq(small[4], '#');
    ck_assert_int_eq(spade_tool_table_dispatch(TABLE, "deposit(\"x\")", 12, small, 4), SPADE_DISPATCH_ERROR);
    ck_assert_str_eq(small, "err");
    /* no output buffer at all: still runs */
    ck_assert_int_eq(spade_tool_table_dispatch(TABLE, "deposit(1)", 10, NULL, 0), SPADE_DISPATCH_CALLED);
    ck_assert_int_eq(g_balance, 1);
    /* the text is read only within len */
    ck_assert_int_eq(spade_tool_table_dispatch(TABLE, "deposit(1)", 9, small, sizeof small), SPADE_DISPATCH_ERROR);
    ck_assert_int_eq(g_balance, 1);
}
END_TEST

START_TEST(table_errors) {
    spade_tool_table *t = (spade_tool_table *)1;
    char err[256];
    spade_tool_def d[2] = {DEF(deposit, "int (int amount)", ""), DEF(deposit, "int (int amount)", "")};
    ck_assert_int_eq(spade_tool_table_new(&t, d, NULL, 2, err, sizeof err), -1);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(err, "declared twice"));
    d[1].name = "9lives";
    ck_assert_int_eq(spade_tool_table_new(&t, d, NULL, 2, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "tool 1: name must be an identifier"));
    d[1].name = "withdraw";
    d[1].fn = NULL;
    ck_assert_int_eq(spade_tool_table_new(&t, d, NULL, 2, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "tool 'withdraw': no function"));
    d[1].fn = (void *)withdraw;
    d[1].signature = "int (float amount)";
    ck_assert_int_eq(spade_tool_table_new(&t, d, NULL, 2, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "tool 'withdraw': tool signature \"int (float amount)\": argument 1 ('amount')"));
    d[1].signature = "int (int amount)";
    ck_assert_int_eq(spade_tool_table_new(&t, d, NULL, 2, err, sizeof err), 0);
    ck_assert_int_eq(spade_tool_table_size(t), 2);
    g_balance = 10;
    ck_assert_int_eq(spade_tool_table_dispatch(t, "withdraw(4)", 11, OUT, sizeof OUT), SPADE_DISPATCH_CALLED);
    ck_assert_str_eq(OUT, "6");
    spade_tool_table_free(t);
    /* an empty table: only explicit attempts are errors */
    ck_assert_int_eq(spade_tool_table_new(&t, NULL, NULL, 0, err, sizeof err), 0);
    ck_assert_int_eq(spade_tool_table_dispatch(t, "deposit(1)", 10, OUT, sizeof OUT), SPADE_DISPATCH_NOT_A_CALL);
    ck_assert_int_eq(spade_tool_table_dispatch(t, "{\"name\": \"x\"}", 13, OUT, sizeof OUT), SPADE_DISPATCH_ERROR);
    ck_assert_str_eq(OUT, "error: unknown tool 'x'; tools: (none)");
    spade_tool_table_free(t);
    spade_tool_table_free(NULL);
}
END_TEST

/* ---- fuzz ------------------------------------------------------------------ */

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* The output must be a NUL-terminated string inside the buffer, the result a
 * known value; ASan builds (--enable-sanitizers) add the out-of-bounds check. */
static void fuzz_one(const char *text, size_t len) {
    static char out[512];
    memset(out, 0x5a, sizeof out);
    spade_dispatch r = spade_tool_table_dispatch(TABLE, text, len, out, 300);
    ck_assert(r == SPADE_DISPATCH_NOT_A_CALL || r == SPADE_DISPATCH_CALLED || r == SPADE_DISPATCH_ERROR);
    ck_assert_ptr_nonnull(memchr(out, '\0', 300));
    ck_assert_int_eq((unsigned char)out[300], 0x5a);
    if (r == SPADE_DISPATCH_ERROR) ck_assert_int_eq(strncmp(out, "error: ", 7), 0);
}

START_TEST(fuzz) {
    static const char *const pieces[] = {
        "deposit",     "send",
        "echo",        "twice",
        "scale",       "negate",
        "balance",     "(",
        ")",           ",",
        "\"",          "'",
        "\\",          "\\u",
        "d83d",        "\\ude00",
        "{",           "}",
        "[",           "]",
        ":",           "=",
        "\"name\"",    "\"arguments\"",
        "<tool_call>", "</tool_call>",
        "true",        "null",
        "-",           "0x",
        "1e",          "5",
        "2147483648",  " ",
        "\n",          "\xc3\xa9",
        "\xff",        ".",
        "amount",      "to",
    };
    const int np = (int)(sizeof pieces / sizeof pieces[0]);
    char buf[600];
    rng_state = 0x9e3779b97f4a7c15ull;
    time_t t0 = time(NULL);
    for (int iter = 0; iter < 40000; iter++) {
        size_t len = 0;
        int mode = iter % 3;
        size_t target = rnd() % 300;
        while (len < target) {
            if (mode == 0) {
                buf[len++] = (char)rnd();
            } else {
                const char *p = pieces[rnd() % np];
                size_t n = strlen(p);
                if (len + n > sizeof buf) break;
                memcpy(buf + len, p, n);
                len += n;
            }
        }
        /* exact length: a heap copy so reading one byte past is an ASan error */
        char *exact = malloc(len ? len : 1);
        memcpy(exact, buf, len);
        fuzz_one(exact, len);
        free(exact);
    }
    /* every prefix of valid calls (truncated JSON, cut strings) */
    static const char *const valid[] = {
        "<tool_call>{\"name\": \"send\", \"arguments\": \"{\\\"amount\\\": 3, \\\"to\\\": "
        "\\\"\\ud83d\\ude00\\\"}\"}</tool_call>",
        "send(to='x\\n', amount=0x7fffffff,)",
        "{\"type\": \"function\", \"function\": {\"name\": \"scale\", \"arguments\": [1e3, -2.5]}}",
    };
    for (size_t v = 0; v < sizeof valid / sizeof valid[0]; v++) {
        size_t n = strlen(valid[v]);
        for (size_t cut = 0; cut <= n; cut++) {
            char *exact = malloc(cut ? cut : 1);
            memcpy(exact, valid[v], cut);
            fuzz_one(exact, cut);
            /* and with one byte flipped */
            if (cut) {
                exact[rnd() % cut] = (char)rnd();
                fuzz_one(exact, cut);
            }
            free(exact);
        }
    }
    ck_assert_msg(time(NULL) - t0 < 60, "fuzz took too long");
}
END_TEST

/* 1 MB of each pathological shape: deep nesting, unbalanced brackets and
 * quotes, many candidate objects. Each must return promptly. */
START_TEST(big_inputs) {
    size_t n = 1 << 20;
    char *text = malloc(n + 128);
    ck_assert_ptr_nonnull(text);
    static const char *const fills[] = {"[",
                                        "{",
                                        "{\"a\":",
                                        "{\"name\":",
                                        "(",
                                        "\"",
                                        "'",
                                        "deposit(",
                                        "<tool_call>",
                                        "\\",
                                        "{\"name\": \"deposit\", \"arguments\": [",
                                        "}",
                                        "deposit(1)"};
    for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
        size_t m = strlen(fills[f]), len = 0;
        while (len + m <= n) {
            memcpy(text + len, fills[f], m);
            len += m;
        }
        clock_t c0 = clock();
        spade_dispatch r = spade_tool_table_dispatch(TABLE, text, len, OUT, sizeof OUT);
        double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
        ck_assert_msg(secs < 5.0, "fill '%s' took %.2f s", fills[f], secs);
        if (f == 0 || f == 1 || f == 2 || f == 4 || f == 5 || f == 6 || f == 9 || f == 11)
            ck_assert_int_eq(r, SPADE_DISPATCH_NOT_A_CALL);
        if (f == 3 || f == 7 || f == 8 || f == 10) ck_assert_int_eq(r, SPADE_DISPATCH_ERROR);
        if (f == 12) ck_assert_int_eq(r, SPADE_DISPATCH_CALLED);
    }
    /* deep nesting inside a call's arguments is an error, not a stack overflow */
    size_t k = (size_t)sprintf(text, "{\"name\": \"deposit\", \"arguments\": {\"amount\": ");
    memset(text + k, '[', n);
    ck_assert_int_eq(spade_tool_table_dispatch(TABLE, text, k + n, OUT, sizeof OUT), SPADE_DISPATCH_ERROR);
    ck_assert_ptr_nonnull(strstr(OUT, "nesting deeper than 64 levels"));
    free(text);
}
END_TEST

/* spade_vputf (core/errbuf.h), the formatter behind tools' messages and the
 * JIT's text: the result arrives whole, past the 512-byte stack buffer too
 * (both old copies cut there). */
static char vput_buf[4096];
static size_t vput_len;
static void vput_collect(void *ctx, const char *s, size_t n) {
    (void)ctx;
    if (vput_len + n < sizeof vput_buf) memcpy(vput_buf + vput_len, s, n);
    vput_len += n;
    vput_buf[vput_len < sizeof vput_buf ? vput_len : sizeof vput_buf - 1] = 0;
}
static void vput(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    spade_vputf(vput_collect, NULL, fmt, ap);
    va_end(ap);
}
START_TEST(vputf_whole) {
    char big[2001];
    memset(big, 'x', 2000);
    big[2000] = 0;
    vput_len = 0;
    vput("[%s] %d", big, 42);
    ck_assert_uint_eq(vput_len, 2000 + 2 + 3);
    ck_assert_str_eq(vput_buf + 2002, " 42");
    vput_len = 0;
    vput("short %s", "one");
    ck_assert_str_eq(vput_buf, "short one");
}
END_TEST

static Suite *tools_suite(void) {
    Suite *s = suite_create("tools");
    TCase *tc = tcase_create("signatures");
    tcase_add_test(tc, sig_good);
    tcase_add_test(tc, vputf_whole);
    tcase_add_test(tc, sig_bad_all);
    suite_add_tcase(s, tc);
    tc = tcase_create("dispatch");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, describe);
    tcase_add_test(tc, c_form_types);
    tcase_add_test(tc, void_and_state);
    tcase_add_test(tc, strings);
    tcase_add_test(tc, huge_arguments);
    tcase_add_test(tc, json_form);
    tcase_add_test(tc, tags);
    tcase_add_test(tc, last_call_wins);
    tcase_add_test(tc, prose_is_not_a_call);
    tcase_add_test(tc, bad_calls);
    tcase_add_test(tc, output_truncation);
    tcase_add_test(tc, table_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("fuzz");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fuzz);
    tcase_add_test(tc, big_inputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tu_run(tools_suite()); }
