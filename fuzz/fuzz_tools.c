/* fuzz_tools.c — libFuzzer harness for the tool-call parser (core/tools/):
 * the whole input is an agent's action, dispatched against a fixed table of
 * tools of every argument type (so a well-formed call really goes through
 * libffi), and its first line is also parsed as a C signature.
 * What it is not: a test of what the tools compute (tests/test_tools.c).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tools.h"

static char last[SPADE_TOOL_ARG_MAX + 64];
static int add(int a, int b) { return (int)((unsigned)a + (unsigned)b); } /* wraps: no UB of our own */
static long neg(long x) { return (long)(0ul - (unsigned long)x); }
static double half(double x) { return x / 2; }
static bool not_(bool b) { return !b; }
static const char *echo(const char *s) { return s; }
static long len(const char *s) { return (long)strlen(s); }
static void nop(void) {}
static const char *none(void) { return NULL; }
static const char *all(int a, long b, double c, bool d, const char *e) {
    snprintf(last, sizeof last, "%d %ld %g %d %s", a, b, c, (int)d, e);
    return last;
}

#define T(name, sig)                                                                                                   \
    { #name, sig, "", (void *)name }
static const spade_tool_def defs[] = {
    T(add, "int (int a, int b)"),
    T(neg, "long (long x)"),
    T(half, "double (double x)"),
    T(not_, "bool (bool b)"),
    T(echo, "const char *(const char *s)"),
    T(len, "long (const char *s)"),
    T(nop, "void (void)"),
    T(none, "char *()"),
    T(all, "const char *(int a, long b, double c, _Bool d, const char *e)"),
};
#define NDEFS ((int)(sizeof defs / sizeof defs[0]))
static spade_tool_table *table;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256];
    if (!table && spade_tool_table_new(&table, defs, NULL, NDEFS, err, sizeof err) < 0) abort();
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    size_t n1 = nl ? (size_t)(nl - text) : size;
    if (n1 < 512) {
        char sigtext[512];
        memcpy(sigtext, text, n1);
        sigtext[n1] = 0;
        spade_tool_sig sig;
        if (spade_tool_sig_parse(sigtext, &sig, err, sizeof err) == 0) {
            if (sig.nargs < 0 || sig.nargs > SPADE_TOOL_MAX_ARGS) abort();
            char line[1024];
            spade_tool_def d = {"t", sigtext, "what it does", (void *)nop};
            (void)spade_tool_describe(&d, &sig, line, sizeof line);
        }
    }
    char out[4096];
    spade_dispatch r = spade_tool_table_dispatch(table, text, size, out, sizeof out);
    if (r != SPADE_DISPATCH_NOT_A_CALL && r != SPADE_DISPATCH_CALLED && r != SPADE_DISPATCH_ERROR) abort();
    if (r != SPADE_DISPATCH_NOT_A_CALL && !memchr(out, 0, sizeof out)) abort(); /* out is a C string */
    return 0;
}
