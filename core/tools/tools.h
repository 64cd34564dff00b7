/* tools.h — tool calls: parse the agent's text into a call, type-check it
 * against the tool's declared C signature, and invoke it through libffi.
 *
 * What it is: pure, in-process machinery the host (core/host.c) uses inside a
 * worker. What it is not: a sandbox (the tool is environment code and runs in
 * the worker) nor the place tools are declared (TOOL in <spade/dsl.h>).
 *
 * Accepted call forms (anywhere in the action; the last call wins; LLM agents
 * think aloud before acting):
 *   name(arg, ...)                                     C-like; strings "quoted" with \" \\ \n \t \uXXXX escapes
 *   {"name": "...", "arguments": {"arg": value, ...}}  JSON, as LLM tool use speaks
 *   either of them inside <tool_call>...</tool_call>
 */
#ifndef SPADE_TOOLS_H
#define SPADE_TOOLS_H

#include <stddef.h>

#include "env.h"

typedef enum spade_type {
    SPADE_T_VOID = 0, /* return only */
    SPADE_T_INT,
    SPADE_T_LONG,
    SPADE_T_DOUBLE,
    SPADE_T_BOOL,
    SPADE_T_STRING, /* const char * */
} spade_type;

#define SPADE_TOOL_MAX_ARGS 8

typedef struct spade_tool_sig {
    spade_type ret;
    int nargs;
    spade_type args[SPADE_TOOL_MAX_ARGS];
    char argnames[SPADE_TOOL_MAX_ARGS][32];
} spade_tool_sig;

/* "int (int amount, const char *to)" -> sig. -1 with a message naming the
 * offending part. "(void)" and "()" mean no arguments. */
int spade_tool_sig_parse(const char *signature, spade_tool_sig *out, char *err, size_t errlen);

/* One-line rendering for observations: "deposit(amount: int) -> int — Deposit money." */
int spade_tool_describe(const spade_tool_def *def, const spade_tool_sig *sig, char *out, size_t cap);

typedef enum spade_dispatch {
    SPADE_DISPATCH_NOT_A_CALL = 0, /* no call to a declared tool in the text: hand it to step */
    SPADE_DISPATCH_CALLED = 1, /* out holds the printed result */
    SPADE_DISPATCH_ERROR = 2, /* a call was attempted but is wrong; out says what
                                 (unknown tool, arity, type, malformed) */
} spade_dispatch;

/* Finds the call in action[0..len), checks it against sigs[i] of defs[i], and
 * invokes defs[i].fn through libffi with the parsed arguments. The result is
 * printed into out (ints as %d/%ld, doubles %.17g trimmed, bool true/false,
 * strings as returned; void prints nothing). Never crashes on any input. */
spade_dispatch spade_tools_dispatch(const spade_tool_def *defs, const spade_tool_sig *sigs, int n, const char *action,
                                    size_t len, char *out, size_t cap);

/* ---- additions (compatible with the above) -------------------------------- */

/* Decoded bytes one string argument may have; a longer one is an error
 * observation, not a crash. */
#define SPADE_TOOL_ARG_MAX (64 * 1024)

/* "int", "long", "double", "bool", "string", "void"; "?" for anything else. */
const char *spade_type_name(spade_type t);

/* A set of tools ready to call: names validated ([A-Za-z_][A-Za-z0-9_]*, at
 * most 63 bytes, unique), signatures parsed (from defs[i].signature when sigs
 * is NULL), and one libffi call interface prepared per tool, so a dispatch
 * only parses the text and calls. defs[i].fn must stay valid while the table
 * lives; names are copied. -1 with a message naming the tool on failure. */
typedef struct spade_tool_table spade_tool_table;
int spade_tool_table_new(spade_tool_table **out, const spade_tool_def *defs, const spade_tool_sig *sigs, int n,
                         char *err, size_t errlen);
void spade_tool_table_free(spade_tool_table *t);
int spade_tool_table_size(const spade_tool_table *t);
/* Same contract as spade_tools_dispatch, with the prepared interfaces. */
spade_dispatch spade_tool_table_dispatch(const spade_tool_table *t, const char *action, size_t len, char *out,
                                         size_t cap);

#endif /* SPADE_TOOLS_H */
