/* signature.c — tool signatures: parses the C-like "ret (type name, ...)" an
 * environment declares with TOOL (<spade/dsl.h>) into a spade_tool_sig, and
 * describes a tool for the first observation.
 * What it is not: the agent's side (finding and type-checking a call in its
 * text, and the libffi call: tools.c). Split out of tools.c at this seam: it
 * runs once per tool at load, on the designer's text, not per step.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "tools/internal.h"

const char *spade_type_name(spade_type t) {
    switch (t) {
    case SPADE_T_VOID: return "void";
    case SPADE_T_INT: return "int";
    case SPADE_T_LONG: return "long";
    case SPADE_T_DOUBLE: return "double";
    case SPADE_T_BOOL: return "bool";
    case SPADE_T_STRING: return "string";
    }
    return "?";
}

typedef struct tok {
    const char *s;
    size_t n;
} tok;

#define SIG_MAX_TOKENS 12

static int is_type_word(const tok *t) {
    static const char *const words[] = {"int",      "long",   "short", "signed", "unsigned", "double",
                                        "float",    "bool",   "_Bool", "char",   "void",     "const",
                                        "volatile", "struct", "union", "enum",   "restrict", NULL};
    for (int i = 0; words[i]; i++)
        if (span_is(t->s, t->n, words[i])) return 1;
    return 0;
}

/* Splits one declaration ("const char *to") into identifier and '*' tokens.
 * Anything else (brackets, digits, parentheses) makes it unsupported. */
static int decl_tokens(const char *p, const char *end, tok *toks, int *ntok, char *badc) {
    int n = 0;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (is_space(c)) {
            p++;
            continue;
        }
        if (n == SIG_MAX_TOKENS) {
            *badc = 0;
            return -1;
        }
        if (c == '*') {
            toks[n].s = p;
            toks[n++].n = 1;
            p++;
        } else if (is_ident_start(c)) {
            const char *s = p;
            while (p < end && is_ident_char((unsigned char)*p)) p++;
            toks[n].s = s;
            toks[n++].n = (size_t)(p - s);
        } else {
            *badc = (char)c;
            return -1;
        }
    }
    *ntok = n;
    return 0;
}

static void type_text(const tok *toks, int n, char *buf, size_t cap) {
    sbuf b;
    sb_init(&b, buf, cap);
    for (int i = 0; i < n; i++) {
        if (i && !(toks[i].n == 1 && toks[i].s[0] == '*' && toks[i - 1].n == 1 && toks[i - 1].s[0] == '*'))
            sb_put(&b, " ", 1);
        sb_put(&b, toks[i].s, toks[i].n);
    }
}

/* The type named by toks[0..n) (qualifiers in any order, `const` ignored), or -1. */
static int classify(const tok *toks, int n) {
    int stars = 0, n_int = 0, n_long = 0, n_signed = 0, n_double = 0, n_bool = 0, n_char = 0, n_void = 0, other = 0,
        words = 0;
    for (int i = 0; i < n; i++) {
        const tok *t = &toks[i];
        if (t->n == 1 && t->s[0] == '*') {
            stars++;
            continue;
        }
        if (span_is(t->s, t->n, "const")) continue;
        words++;
        if (span_is(t->s, t->n, "int"))
            n_int++;
        else if (span_is(t->s, t->n, "long"))
            n_long++;
        else if (span_is(t->s, t->n, "signed"))
            n_signed++;
        else if (span_is(t->s, t->n, "double"))
            n_double++;
        else if (span_is(t->s, t->n, "bool") || span_is(t->s, t->n, "_Bool"))
            n_bool++;
        else if (span_is(t->s, t->n, "char"))
            n_char++;
        else if (span_is(t->s, t->n, "void"))
            n_void++;
        else
            other++;
    }
    if (other || words == 0) return -1;
    if (stars == 1 && n_char == 1 && words == 1) return SPADE_T_STRING;
    if (stars) return -1;
    if (n_double == 1 && words == 1) return SPADE_T_DOUBLE;
    if (n_bool == 1 && words == 1) return SPADE_T_BOOL;
    if (n_void == 1 && words == 1) return SPADE_T_VOID;
    if (n_double || n_bool || n_void || n_char) return -1;
    if (n_long == 1 && n_int <= 1 && n_signed <= 1) return SPADE_T_LONG;
    if (n_long == 0 && n_int <= 1 && n_signed <= 1) return SPADE_T_INT;
    return -1;
}

#define SUPPORTED_TYPES "int, long, double, bool, const char *"

/* The parentheses of signature found (*open, *close): one '(' before one
 * ')', nothing after it, none inside. 0, or -1 having said why. */
static int sig_parens(const char *signature, const char **open, const char **close, sbuf *e) {
    *open = strchr(signature, '(');
    if (!*open) {
        sb_printf(e, "tool signature \"%.80s\": no '(' before the arguments", signature);
        return -1;
    }
    *close = strrchr(signature, ')');
    if (!*close || *close < *open) {
        sb_printf(e, "tool signature \"%.80s\": no ')' after the arguments", signature);
        return -1;
    }
    for (const char *p = *close + 1; *p; p++)
        if (!is_space((unsigned char)*p)) {
            sb_printf(e, "tool signature \"%.80s\": unexpected text after ')'", signature);
            return -1;
        }
    for (const char *p = *open + 1; p < *close; p++)
        if (*p == '(' || *p == ')') {
            sb_printf(e, "tool signature \"%.80s\": function pointer arguments are not supported", signature);
            return -1;
        }
    return 0;
}

/* The return type, the text before open, into out->ret. */
static int sig_return(const char *signature, const char *open, spade_tool_sig *out, sbuf *e) {
    tok toks[SIG_MAX_TOKENS];
    int nt = 0;
    char badc = 0, tt[96];
    if (decl_tokens(signature, open, toks, &nt, &badc) < 0 || nt == 0) {
        sb_printf(e, "tool signature \"%.80s\": cannot read the return type", signature);
        return -1;
    }
    int rt = classify(toks, nt);
    if (rt < 0) {
        type_text(toks, nt, tt, sizeof tt);
        sb_printf(e, "tool signature \"%.80s\": unsupported return type '%s' (tools return void, " SUPPORTED_TYPES ")",
                  signature, tt);
        return -1;
    }
    out->ret = (spade_type)rt;
    return 0;
}

/* The name of an argument declared by toks[0..nt): a trailing identifier that
 * is not a type word, else argIDX; *ntype gets how many tokens the type is. */
static int sig_arg_name(const char *signature, int idx, const tok *toks, int nt, char name[32], int *ntype, sbuf *e) {
    *ntype = nt;
    if (nt >= 1 && toks[nt - 1].s[0] != '*' && !is_type_word(&toks[nt - 1])) {
        const tok *nm = &toks[nt - 1];
        if (nm->n >= 32) {
            sb_printf(e, "tool signature \"%.80s\": argument %d: name '%.*s...' is longer than %d bytes", signature,
                      idx, 20, nm->s, 31);
            return -1;
        }
        memcpy(name, nm->s, nm->n);
        name[nm->n] = '\0';
        *ntype = nt - 1;
    } else {
        snprintf(name, 32, "arg%d", idx);
    }
    return 0;
}

/* Argument idx, the text [a, b) (blanks trimmed), added to out; last: no
 * comma after it. 0, 1 for a lone (void), or -1 having said why. */
static int sig_arg(const char *signature, int idx, const char *a, const char *b, int last, spade_tool_sig *out,
                   sbuf *e) {
    tok toks[SIG_MAX_TOKENS];
    int nt = 0, ntype;
    char badc = 0, tt[96], name[32];
    if (a == b) {
        sb_printf(e, "tool signature \"%.80s\": argument %d is empty", signature, idx);
        return -1;
    }
    if (b - a == 3 && memcmp(a, "...", 3) == 0) {
        sb_printf(e, "tool signature \"%.80s\": argument %d: variadic tools (...) are not supported", signature, idx);
        return -1;
    }
    if (decl_tokens(a, b, toks, &nt, &badc) < 0) {
        sb_printf(e,
                  "tool signature \"%.80s\": argument %d ('%.*s'): unsupported declaration (tools take " SUPPORTED_TYPES
                  ")",
                  signature, idx, (int)(b - a > 60 ? 60 : b - a), a);
        return -1;
    }
    if (sig_arg_name(signature, idx, toks, nt, name, &ntype, e)) return -1;
    int at = ntype ? classify(toks, ntype) : -1;
    if (at == SPADE_T_VOID && ntype == nt && idx == 1 && last && out->nargs == 0) return 1; /* (void) */
    if (at < 0 || at == SPADE_T_VOID) {
        if (ntype == 0) {
            sb_printf(e, "tool signature \"%.80s\": argument %d ('%s') has no type", signature, idx, name);
        } else {
            type_text(toks, ntype, tt, sizeof tt);
            sb_printf(e,
                      "tool signature \"%.80s\": argument %d ('%s'): unsupported type '%s' (tools take " SUPPORTED_TYPES
                      ")",
                      signature, idx, name, tt);
        }
        return -1;
    }
    for (int j = 0; j < out->nargs; j++)
        if (strcmp(out->argnames[j], name) == 0) {
            sb_printf(e, "tool signature \"%.80s\": argument %d: duplicate name '%s'", signature, idx, name);
            return -1;
        }
    out->args[out->nargs] = (spade_type)at;
    memcpy(out->argnames[out->nargs], name, sizeof name);
    out->nargs++;
    return 0;
}

int spade_tool_sig_parse(const char *signature, spade_tool_sig *out, char *err, size_t errlen) {
    sbuf e;
    sb_init(&e, err, errlen);
    if (!signature || !out) {
        sb_str(&e, "tool signature: missing");
        return -1;
    }
    memset(out, 0, sizeof *out);
    const char *open, *close;
    if (sig_parens(signature, &open, &close, &e) || sig_return(signature, open, out, &e)) return -1;
    /* arguments: split on ',' */
    const char *p = open + 1;
    int all_blank = 1;
    for (const char *q = p; q < close; q++)
        if (!is_space((unsigned char)*q)) all_blank = 0;
    if (all_blank) return 0; /* "()" */
    for (int idx = 1;; idx++) {
        const char *comma = p;
        while (comma < close && *comma != ',') comma++;
        if (idx > SPADE_TOOL_MAX_ARGS) {
            sb_printf(&e, "tool signature \"%.80s\": more than %d arguments", signature, SPADE_TOOL_MAX_ARGS);
            return -1;
        }
        const char *a = p, *b = comma;
        while (a < b && is_space((unsigned char)*a)) a++;
        while (b > a && is_space((unsigned char)b[-1])) b--;
        int rc = sig_arg(signature, idx, a, b, comma == close, out, &e);
        if (rc) return rc < 0 ? -1 : 0;
        if (comma == close) return 0;
        p = comma + 1;
    }
}

int spade_tools_sig_is_sane(const spade_tool_sig *sig) {
    if (sig->nargs < 0 || sig->nargs > SPADE_TOOL_MAX_ARGS) return 0;
    if ((int)sig->ret < SPADE_T_VOID || sig->ret > SPADE_T_STRING) return 0;
    for (int i = 0; i < sig->nargs; i++)
        if (sig->args[i] <= SPADE_T_VOID || sig->args[i] > SPADE_T_STRING) return 0;
    return 1;
}

void spade_tools_sb_arglist(sbuf *b, const spade_tool_sig *sig) {
    for (int i = 0; i < sig->nargs; i++) {
        char nm[sizeof sig->argnames[0]];
        memcpy(nm, sig->argnames[i], sizeof nm);
        nm[sizeof nm - 1] = '\0';
        sb_printf(b, "%s%s: %s", i ? ", " : "", nm, spade_type_name(sig->args[i]));
    }
}

int spade_tool_describe(const spade_tool_def *def, const spade_tool_sig *sig, char *out, size_t cap) {
    if (!def || !sig || !def->name || !spade_tools_sig_is_sane(sig)) return -1;
    sbuf b;
    sb_init(&b, out, cap);
    sb_str(&b, def->name);
    sb_put(&b, "(", 1);
    spade_tools_sb_arglist(&b, sig);
    sb_printf(&b, ") -> %s", spade_type_name(sig->ret));
    if (def->description && def->description[0]) {
        sb_str(&b, " \xe2\x80\x94 "); /* em dash */
        sb_str(&b, def->description);
    }
    return b.len > INT_MAX ? INT_MAX : (int)b.len;
}
