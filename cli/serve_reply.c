/* serve_reply.c — the reply builders of `spade serve` (docs/protocol.md): a
 * sandbox failure, an environment's info and param values, a checker
 * report's lines, each written as JSON into a buffer.
 *
 * What it is not: the envelope of a response (serve_proto.c) nor the ops that
 * decide what to write (serve_ops.c, serve_batch.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "serve_internal.h"

void serve_write_failure(spade_jbuf *b, const spade_failure *f) {
    spade_jw_obj(b);
    spade_jw_key(b, "outcome");
    spade_jw_cstr(b, spade_outcome_name(f->outcome));
    if (f->signal) {
        spade_jw_key(b, "signal");
        spade_jw_int(b, f->signal);
    }
    if (f->line) {
        spade_jw_key(b, "line");
        spade_jw_int(b, f->line);
    }
    spade_jw_key(b, "message");
    spade_jw_cstr(b, f->message);
    spade_jw_end_obj(b);
}

/* One JSON member per row: the key, how the field is written, where it is.
 * env_info, params and tools are written from these tables, so a field added
 * to spade_env_info is one row here, not two more hand-written calls. */
typedef enum { FIELD_STR, FIELD_INT, FIELD_NUM, FIELD_U64, FIELD_BOOL } field_kind;
typedef struct {
    const char *key;
    field_kind kind;
    size_t offset;
} info_field;

#define ROW(T, member, kind)                                                                                           \
    { #member, kind, offsetof(T, member) }
static const info_field env_fields[] = {
    ROW(spade_env_info, name, FIELD_STR),       ROW(spade_env_info, description, FIELD_STR),
    ROW(spade_env_info, family, FIELD_STR),     ROW(spade_env_info, abi, FIELD_INT),
    ROW(spade_env_info, max_steps, FIELD_INT),  ROW(spade_env_info, success, FIELD_NUM),
    ROW(spade_env_info, state_size, FIELD_U64), ROW(spade_env_info, has_solve, FIELD_BOOL),
};
static const info_field param_fields[] = {
    {"default", FIELD_NUM, offsetof(spade_param_info, def)},
    ROW(spade_param_info, min, FIELD_NUM),
    ROW(spade_param_info, max, FIELD_NUM),
};
static const info_field tool_fields[] = {
    ROW(spade_tool_info, name, FIELD_STR),
    ROW(spade_tool_info, signature, FIELD_STR),
    ROW(spade_tool_info, description, FIELD_STR),
};
#undef ROW

static void write_fields(spade_jbuf *b, const void *base, const info_field *f, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char *at = (const char *)base + f[i].offset;
        spade_jw_key(b, f[i].key);
        switch (f[i].kind) {
        case FIELD_STR: spade_jw_cstr(b, at); break;
        case FIELD_INT: spade_jw_int(b, *(const int *)at); break;
        case FIELD_NUM: spade_jw_num(b, *(const double *)at); break;
        case FIELD_U64: spade_jw_u64(b, *(const uint64_t *)at); break;
        case FIELD_BOOL: spade_jw_bool(b, *(const int *)at); break;
        }
    }
}

void serve_write_info(spade_jbuf *b, const spade_env_info *info) {
    spade_jw_obj(b);
    write_fields(b, info, env_fields, sizeof env_fields / sizeof *env_fields);
    spade_jw_key(b, "params");
    spade_jw_arr(b);
    for (int i = 0; i < info->n_params; i++) {
        const spade_param_info *p = &info->params[i];
        spade_jw_obj(b);
        spade_jw_key(b, "name");
        spade_jw_cstr(b, p->name);
        spade_jw_key(b, "type");
        spade_jw_cstr(b, p->type == SPADE_PARAM_INT ? "int" : "real");
        write_fields(b, p, param_fields, sizeof param_fields / sizeof *param_fields);
        spade_jw_end_obj(b);
    }
    spade_jw_end_arr(b);
    spade_jw_key(b, "tools");
    spade_jw_arr(b);
    for (int i = 0; i < info->n_tools; i++) {
        spade_jw_obj(b);
        write_fields(b, &info->tools[i], tool_fields, sizeof tool_fields / sizeof *tool_fields);
        spade_jw_end_obj(b);
    }
    spade_jw_end_arr(b);
    spade_jw_end_obj(b);
}

/* The param values as an object {name: value}, all of them (defaults filled). */
void serve_write_param_values(spade_jbuf *b, const spade_env_info *info, const double *v) {
    spade_jw_obj(b);
    for (int i = 0; i < info->n_params; i++) {
        spade_jw_key(b, info->params[i].name);
        spade_jw_num(b, v[i]);
    }
    spade_jw_end_obj(b);
}

/* One check line: "PASS name (detail)", "FAIL name: reason", "WARN ...", "SKIP ...", "INFO ...". */
void serve_write_check_lines(spade_jbuf *b, const char *text) {
    spade_jw_arr(b);
    const char *p = text;
    int open = 0;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        static const char *const words[] = {"PASS ", "FAIL ", "WARN ", "SKIP ", "INFO "};
        int which = -1;
        for (int k = 0; k < 5; k++)
            if (n > 5 && !strncmp(p, words[k], 5)) which = k;
        if (which >= 0) {
            if (open) spade_jw_end_obj(b);
            const char *name = p + 5, *end = p + n;
            const char *ne = name;
            while (ne < end && *ne != ' ' && *ne != ':') ne++;
            const char *d = ne;
            while (d < end && (*d == ' ' || *d == ':')) d++;
            spade_jw_obj(b);
            spade_jw_key(b, "status");
            static const char *const st[] = {"pass", "fail", "warn", "skip", "info"};
            spade_jw_cstr(b, st[which]);
            spade_jw_key(b, "name");
            spade_jw_str(b, name, (size_t)(ne - name));
            spade_jw_key(b, "detail");
            spade_jw_str(b, d, (size_t)(end - d));
            spade_jw_key(b, "line");
            spade_jw_str(b, p, n);
            open = 1;
        }
        /* continuation lines (a compile error's source excerpt) stay in "text" */
        p += n + (eol ? 1 : 0);
    }
    if (open) spade_jw_end_obj(b);
    spade_jw_end_arr(b);
}
