/* bind.c — tool calls: a parsed call's arguments bound to the tool's
 * signature (positional and keyword) and converted to its C types, with a
 * message that says what was expected and what came when they do not fit.
 * What it is not: the parser (call.c) or the libffi call (tools.c).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/internal.h"

/* ------------------------------------------------------------------------ */
/* type-checking and the call                                                 */

static void sb_value_desc(sbuf *b, const value *v) {
    switch (v->kind) {
    case V_INT:
        sb_str(b, "int ");
        spade_tools_sb_quoted(b, v->src, v->srclen, 40);
        break;
    case V_DOUBLE:
        sb_str(b, "double ");
        spade_tools_sb_quoted(b, v->src, v->srclen, 40);
        break;
    case V_BOOL: sb_str(b, v->b ? "bool true" : "bool false"); break;
    case V_STRING:
        if (v->too_large) {
            sb_printf(b, "a string longer than %d bytes", SPADE_TOOL_ARG_MAX);
        } else {
            sb_str(b, "string \"");
            spade_tools_sb_quoted(b, v->s, v->slen, 40);
            sb_str(b, "\"");
        }
        break;
    case V_NULL: sb_str(b, "null"); break;
    case V_ARRAY: sb_str(b, "an array"); break;
    case V_OBJECT: sb_str(b, "an object"); break;
    default: sb_str(b, "nothing"); break;
    }
}

static double value_to_double(const value *v) {
    if (v->kind == V_INT && !v->out_of_long) return (double)v->i;
    char small[64];
    char *buf = small;
    if (v->srclen >= sizeof small) {
        buf = malloc(v->srclen + 1);
        if (!buf) return NAN;
    }
    memcpy(buf, v->src, v->srclen);
    buf[v->srclen] = '\0';
    double d = strtod(buf, NULL);
    if (buf != small) free(buf);
    return d;
}

/* Converts v for argument k of tool `name`; 0, or -1 with the message in e. */
static int convert_arg(const char *tool, const spade_tool_sig *sig, int k, const value *v, slot *out, sbuf *e) {
    const char *an = sig->argnames[k];
    spade_type t = sig->args[k];
    int ok = 0;
    const char *range = "";
    switch (t) {
    case SPADE_T_INT:
        if (v->kind == V_INT && !v->out_of_long && v->i >= INT_MIN && v->i <= INT_MAX) {
            out->i = (int)v->i;
            ok = 1;
        } else if (v->kind == V_INT) {
            range = " (from -2147483648 to 2147483647)";
        }
        break;
    case SPADE_T_LONG:
        if (v->kind == V_INT && !v->out_of_long) {
            out->l = v->i;
            ok = 1;
        } else if (v->kind == V_INT) {
            range = " (from -9223372036854775808 to 9223372036854775807)";
        }
        break;
    case SPADE_T_DOUBLE:
        if (v->kind == V_INT || v->kind == V_DOUBLE) {
            out->d = value_to_double(v);
            if (isfinite(out->d))
                ok = 1;
            else
                range = " (finite)";
        }
        break;
    case SPADE_T_BOOL:
        if (v->kind == V_BOOL) {
            out->b = (unsigned char)(v->b ? 1 : 0);
            ok = 1;
        }
        break;
    case SPADE_T_STRING:
        if (v->kind == V_STRING && v->too_large) {
            sb_printf(e, "error: argument '%.31s' of %s is longer than %d bytes", an, tool, SPADE_TOOL_ARG_MAX);
            return -1;
        }
        if (v->kind == V_STRING) {
            out->s = v->s;
            ok = 1;
        }
        break;
    default: break;
    }
    if (ok) return 0;
    sb_printf(e, "error: argument '%.31s' of %s must be %s%s, got ", an, tool, spade_type_name(t), range);
    if (range[0] && (v->kind == V_INT || v->kind == V_DOUBLE))
        spade_tools_sb_quoted(e, v->src, v->srclen, 40);
    else
        sb_value_desc(e, v);
    return -1;
}

static void sb_arity(sbuf *e, const char *tool, const spade_tool_sig *sig, int got) {
    if (sig->nargs == 0) {
        sb_printf(e, "error: %s expects no arguments, got %d", tool, got);
        return;
    }
    sb_printf(e, "error: %s expects %d argument%s (", tool, sig->nargs, sig->nargs == 1 ? "" : "s");
    spade_tools_sb_arglist(e, sig);
    sb_printf(e, "), got %d", got);
}

/* Binds the call's arguments to the signature: -1 with the message in e. */
int spade_tools_bind_args(const char *tool, const spade_tool_sig *sig, const call *c, slot *slots, sbuf *e) {
    int got = c->npos + c->nkw + c->nextra;
    const value *bound[SPADE_TOOL_MAX_ARGS] = {0};
    if (c->nextra || c->npos > sig->nargs || (c->nkw == 0 && c->npos != sig->nargs)) {
        sb_arity(e, tool, sig, got);
        return -1;
    }
    for (int i = 0; i < c->npos; i++) bound[i] = &c->pos[i];
    for (int j = 0; j < c->nkw; j++) {
        const value *key = &c->kw[j].key;
        int k = -1;
        for (int i = 0; i < sig->nargs && !key->too_large; i++)
            if (strnlen(sig->argnames[i], sizeof sig->argnames[i]) == key->slen &&
                memcmp(sig->argnames[i], key->s, key->slen) == 0)
                k = i;
        if (k < 0) {
            sb_printf(e, "error: %s has no argument '", tool);
            spade_tools_sb_quoted(e, key->s, key->slen, 40);
            sb_str(e, "'; it takes (");
            spade_tools_sb_arglist(e, sig);
            sb_str(e, ")");
            return -1;
        }
        if (bound[k]) {
            sb_printf(e, "error: argument '%.31s' of %s is given twice", sig->argnames[k], tool);
            return -1;
        }
        bound[k] = &c->kw[j].v;
    }
    for (int i = 0; i < sig->nargs; i++)
        if (!bound[i]) {
            sb_arity(e, tool, sig, got);
            sb_printf(e, " (missing '%.31s')", sig->argnames[i]);
            return -1;
        }
    for (int i = 0; i < sig->nargs; i++)
        if (convert_arg(tool, sig, i, bound[i], &slots[i], e) < 0) return -1;
    return 0;
}
