/* tools.c — tool calls: the dispatcher. Finds the call in an agent's text
 * (call.c), binds and type-checks its arguments (bind.c), and invokes the tool
 * through libffi; the prepared table of an environment's tools.
 *
 * What it is: the libffi trampoline to functions the environment declared
 * with TOOL (<spade/dsl.h>), and the bounded output buffer's helpers the parts
 * share. What it is not: a sandbox (the tool runs in this process; the host
 * runs inside a sandboxed worker), nor the parser (call.c) or the type checker
 * (bind.c). The signature parser is in signature.c; what the parts share,
 * internal.h.
 */
#include <ffi.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/internal.h"
#include "errbuf.h"

/* ------------------------------------------------------------------------ */
/* small helpers                                                              */

/* Byte classes for the scan over agent text, which is mostly prose: one load
 * decides whether a byte can start anything. */
const unsigned char spade_tools_class[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 4, 0, 0, 0, 0, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 0, 0, 0, 3, 0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* %ld without printf's machinery: results are printed on every call. */
static void sb_long(sbuf *b, long v) {
    char tmp[24];
    char *p = tmp + sizeof tmp;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    sb_put(b, p, (size_t)(tmp + sizeof tmp - p));
}

static void sb_put_fn(void *b, const char *s, size_t n) { sb_put(b, s, n); }

void spade_tools_sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    spade_vputf(sb_put_fn, b, fmt, ap);
    va_end(ap);
}

/* Agent text quoted back in a message: at most `max` bytes, escaped so the
 * message stays one printable line. */
void spade_tools_sb_quoted(sbuf *b, const char *s, size_t n, size_t max) {
    size_t i;
    for (i = 0; i < n && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
        } else if (c == '\n') {
            sb_put(b, "\\n", 2);
        } else if (c == '\t') {
            sb_put(b, "\\t", 2);
        } else if (c < 0x20 || c == 0x7f) {
            sb_printf(b, "\\x%02x", c);
        } else {
            sb_put(b, (const char *)&s[i], 1);
        }
    }
    if (i < n) sb_str(b, "...");
}

static ffi_type *ffi_of(spade_type t) {
    switch (t) {
    case SPADE_T_INT: return &ffi_type_sint;
    case SPADE_T_LONG: return &ffi_type_slong;
    case SPADE_T_DOUBLE: return &ffi_type_double;
    case SPADE_T_BOOL: return &ffi_type_uint8;
    case SPADE_T_STRING: return &ffi_type_pointer;
    case SPADE_T_VOID: return &ffi_type_void;
    }
    return &ffi_type_void;
}

static int prep_cif(ffi_cif *cif, ffi_type **atypes, const spade_tool_sig *sig) {
    for (int i = 0; i < sig->nargs; i++) atypes[i] = ffi_of(sig->args[i]);
    return ffi_prep_cif(cif, FFI_DEFAULT_ABI, (unsigned)sig->nargs, ffi_of(sig->ret), atypes) == FFI_OK ? 0 : -1;
}

/* Shortest %g that reads back as the same double (at most 17 digits). */
static void sb_double(sbuf *b, double d) {
    if (isnan(d)) {
        sb_str(b, "nan");
        return;
    }
    if (isinf(d)) {
        sb_str(b, d < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (prec == 17 || strtod(tmp, NULL) == d) break;
    }
    sb_str(b, tmp);
}

static spade_dispatch invoke(const toolset *T, int k, const call *c, sbuf *o) {
    const spade_tool_def *def = &T->defs[k];
    const spade_tool_sig *sig = &T->sigs[k];
    const char *tool = def->name;
    if (!def->fn || !spade_tools_sig_is_sane(sig)) {
        sb_printf(o, "error: tool '%s' cannot be called (bad declaration)", tool);
        return SPADE_DISPATCH_ERROR;
    }
    slot slots[SPADE_TOOL_MAX_ARGS];
    void *avalues[SPADE_TOOL_MAX_ARGS];
    if (spade_tools_bind_args(tool, sig, c, slots, o) < 0) return SPADE_DISPATCH_ERROR;
    for (int i = 0; i < sig->nargs; i++) avalues[i] = &slots[i];

    ffi_cif local;
    ffi_type *atypes[SPADE_TOOL_MAX_ARGS];
    ffi_cif *cif = T->cifs ? &T->cifs[k] : &local;
    if (!T->cifs && prep_cif(&local, atypes, sig) < 0) {
        sb_printf(o, "error: tool '%s' cannot be called (libffi rejected its signature)", tool);
        return SPADE_DISPATCH_ERROR;
    }
    union {
        ffi_arg a;
        ffi_sarg sa;
        long l;
        double d;
        void *p;
        char pad[16];
    } rv;
    memset(&rv, 0, sizeof rv);
    ffi_call(cif, FFI_FN(def->fn), &rv, sig->nargs ? avalues : NULL);
    switch (sig->ret) {
    case SPADE_T_VOID: break;
    case SPADE_T_INT: sb_long(o, (int)rv.sa); break;
    case SPADE_T_LONG: sb_long(o, rv.l); break;
    case SPADE_T_DOUBLE: sb_double(o, rv.d); break;
    case SPADE_T_BOOL: sb_str(o, (unsigned char)rv.a ? "true" : "false"); break;
    case SPADE_T_STRING: sb_str(o, rv.p ? (const char *)rv.p : "null"); break;
    }
    return SPADE_DISPATCH_CALLED;
}

static spade_dispatch dispatch(const toolset *T, const char *action, size_t len, char *out, size_t cap) {
    sbuf o;
    sb_init(&o, out, cap);
    if (!action || len == 0) return SPADE_DISPATCH_NOT_A_CALL;
    call calls[2];
    arena ars[2];
    spade_tools_arena_init(&ars[0]);
    spade_tools_arena_init(&ars[1]);
    int bi = -1;
    int kind = spade_tools_find_last_call(T, action, len, calls, ars, &bi);
    spade_dispatch r = SPADE_DISPATCH_NOT_A_CALL;
    if (kind == CAND_MALFORMED) {
        sb_printf(&o, "error: malformed call: %s", calls[bi].err);
        r = SPADE_DISPATCH_ERROR;
    } else if (kind == CAND_CALL) {
        const call *c = &calls[bi];
        int k = c->name.too_large ? -1 : -2;
        for (int i = 0; k == -2 && i < T->n; i++)
            if (T->defs[i].name && strlen(T->defs[i].name) == c->name.slen &&
                memcmp(T->defs[i].name, c->name.s, c->name.slen) == 0)
                k = i;
        if (k < 0) {
            sb_str(&o, "error: unknown tool '");
            spade_tools_sb_quoted(&o, c->name.s, c->name.slen, 64);
            sb_str(&o, "'; tools: ");
            int listed = 0;
            for (int i = 0; i < T->n; i++)
                if (T->defs[i].name) sb_printf(&o, "%s%s", listed++ ? ", " : "", T->defs[i].name);
            if (!listed) sb_str(&o, "(none)");
            r = SPADE_DISPATCH_ERROR;
        } else {
            r = invoke(T, k, c, &o);
        }
    }
    spade_tools_arena_reset(&ars[0]);
    spade_tools_arena_reset(&ars[1]);
    return r;
}

spade_dispatch spade_tools_dispatch(const spade_tool_def *defs, const spade_tool_sig *sigs, int n, const char *action,
                                    size_t len, char *out, size_t cap) {
    toolset T = {(defs && sigs && n > 0) ? n : 0, defs, sigs, NULL};
    return dispatch(&T, action, len, out, cap);
}

/* ------------------------------------------------------------------------ */
/* the prepared table                                                         */

struct spade_tool_table {
    int n;
    spade_tool_def *defs;
    spade_tool_sig *sigs;
    ffi_cif *cifs;
    ffi_type *(*atypes)[SPADE_TOOL_MAX_ARGS];
    char (*names)[TOOLS_NAME_MAX];
};

void spade_tool_table_free(spade_tool_table *t) {
    if (!t) return;
    free(t->defs);
    free(t->sigs);
    free(t->cifs);
    free(t->atypes);
    free(t->names);
    free(t);
}

int spade_tool_table_size(const spade_tool_table *t) { return t ? t->n : 0; }

int spade_tool_table_new(spade_tool_table **out, const spade_tool_def *defs, const spade_tool_sig *sigs, int n,
                         char *err, size_t errlen) {
    sbuf e;
    sb_init(&e, err, errlen);
    if (!out) return -1;
    *out = NULL;
    if (n < 0 || (n > 0 && !defs)) {
        sb_str(&e, "tool table: no tools given");
        return -1;
    }
    spade_tool_table *t = calloc(1, sizeof *t);
    size_t m = n ? (size_t)n : 1;
    if (t) {
        t->defs = calloc(m, sizeof *t->defs);
        t->sigs = calloc(m, sizeof *t->sigs);
        t->cifs = calloc(m, sizeof *t->cifs);
        t->atypes = calloc(m, sizeof *t->atypes);
        t->names = calloc(m, sizeof *t->names);
    }
    if (!t || !t->defs || !t->sigs || !t->cifs || !t->atypes || !t->names) {
        spade_tool_table_free(t);
        sb_str(&e, "tool table: out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *nm = defs[i].name;
        size_t nl = nm ? strnlen(nm, TOOLS_NAME_MAX) : 0;
        int ok = nl > 0 && nl < TOOLS_NAME_MAX && is_ident_start((unsigned char)nm[0]);
        for (size_t j = 1; ok && j < nl; j++) ok = is_ident_char((unsigned char)nm[j]);
        if (!ok) {
            sb_printf(&e, "tool %d: name must be an identifier of 1 to %d bytes", i, TOOLS_NAME_MAX - 1);
            spade_tool_table_free(t);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(t->names[j], nm) == 0) {
                sb_printf(&e, "tool %d ('%s'): declared twice", i, nm);
                spade_tool_table_free(t);
                return -1;
            }
        memcpy(t->names[i], nm, nl + 1);
        if (!defs[i].fn) {
            sb_printf(&e, "tool '%s': no function", nm);
            spade_tool_table_free(t);
            return -1;
        }
        if (sigs) {
            t->sigs[i] = sigs[i];
            if (!spade_tools_sig_is_sane(&t->sigs[i])) {
                sb_printf(&e, "tool '%s': invalid signature", nm);
                spade_tool_table_free(t);
                return -1;
            }
        } else {
            char why[256];
            if (spade_tool_sig_parse(defs[i].signature, &t->sigs[i], why, sizeof why) < 0) {
                sb_printf(&e, "tool '%s': %s", nm, why);
                spade_tool_table_free(t);
                return -1;
            }
        }
        t->defs[i] = defs[i];
        t->defs[i].name = t->names[i];
        if (prep_cif(&t->cifs[i], t->atypes[i], &t->sigs[i]) < 0) {
            sb_printf(&e, "tool '%s': libffi rejected its signature", nm);
            spade_tool_table_free(t);
            return -1;
        }
    }
    t->n = n;
    *out = t;
    return 0;
}

spade_dispatch spade_tool_table_dispatch(const spade_tool_table *t, const char *action, size_t len, char *out,
                                         size_t cap) {
    toolset T = {t ? t->n : 0, t ? t->defs : NULL, t ? t->sigs : NULL, t ? t->cifs : NULL};
    return dispatch(&T, action, len, out, cap);
}
