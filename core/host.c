/* host.c — runs one compiled environment in this process (core/host.h): finds
 * its symbols through a resolver, validates them, parses params, and drives
 * instances through reset / step / hint / solve, capturing what they say.
 *
 * What it is not: a sandbox. The environment's code runs here, trusted; what it
 * SAYS is not trusted (over-long output, NaN rewards, a garbage format are
 * contained by dsl/runtime.c and reported as a status), what it DOES (crash,
 * loop) is contained only by core/sandbox around the worker that hosts us.
 *
 * Choices worth knowing:
 *  - Before every call the host writes the instance's param values into the
 *    environment's globals, points spade_S at the instance's state and
 *    spade_rt_current at a fresh context (dsl/runtime.h).
 *  - reset: reward() and finish() in RESET are ignored (Gymnasium's reset has
 *    no reward); the first observation of an environment with tools ends with
 *    the list of tools.
 *  - hint and solve run on a scratch copy of the state and of the RNG, so
 *    asking for them never changes the episode: an agent with the hint and one
 *    without play the same seed identically until their actions differ. (A
 *    state holding pointers into itself would defeat the copy; the DSL's
 *    plain-data STATE has none.)
 *  - A call that says more than SPADE_OBS_MAX fails with OUTPUT_TOO_LARGE and
 *    ends the episode (done; the next step is BAD_CALL until a reset).
 *  - Tool calls: ERROR observations are the dispatcher's message; both CALLED
 *    and ERROR count as a step and can truncate.
 *  - A step's reward is finite and within +-SPADE_REWARD_MAX (host.h): a
 *    reward() of NaN, an infinity or a larger value, or rewards summing past
 *    it, fail the step with BAD_REWARD and end the episode (done), so the
 *    episode's return stays within +-1e15. The sandbox's parent treats a
 *    value out of those bounds from a worker as a protocol violation
 *    (core/sandbox/ipc.c).
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "host.h"
#include "runtime.h"
#include "tools/tools.h"

typedef void (*fn_void)(void);
typedef unsigned long (*fn_size)(void);
typedef void (*fn_step)(const char *action, unsigned long len);

typedef struct instance {
    void *state;
    double *params; /* [n_params] */
    uint64_t rng[4];
    long steps;
    double episode_return;
    int started; /* reset was called */
    int done; /* terminated, truncated, or failed: step is refused */
} instance;

struct spade_host {
    spade_env_info info;
    void **state_ptr; /* &spade_S in the environment; NULL when state_size is 0 */
    fn_step step;
    fn_void reset, hint, solve;
    size_t state_size;
    spade_param_def *params[SPADE_INFO_MAX_PARAMS];
    spade_tool_def tools[SPADE_INFO_MAX_TOOLS];
    spade_tool_sig sigs[SPADE_INFO_MAX_TOOLS];
    spade_tool_table *tool_table; /* libffi interfaces prepared once */
    char *tool_list; /* "\n\nTools:\n- ...\n" appended to the first observation */
    size_t tool_list_len;
    instance **inst;
    int n_inst, cap_inst;
    spade_rt rt;
    char *out; /* SPADE_OBS_MAX + 1 */
    char *action; /* SPADE_ACTION_MAX + 1: a NUL-terminated copy of the action */
    char *tool_out; /* SPADE_OBS_MAX + 2: one byte more than fits, to see a result too large */
    void *scratch; /* state_size: hint and solve run on a copy */
    uint64_t poison; /* spade_host_set_poison; 0 = off */
};

/* Copies src into a fixed field; -1 when it does not fit (with the NUL). */
static int copy_field(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

int spade_info_name_ok(const char *s) {
    if (!*s) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) return 0;
    return 1;
}

int spade_info_c_ident_ok(const char *s) {
    if (!*s || (*s >= '0' && *s <= '9')) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
    return 1;
}

int spade_info_one_line_ok(const char *s) {
    if (!*s) return 0;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t') return 0;
    return 1;
}

int spade_info_whole_int(double v) { return isfinite(v) && v == floor(v) && v >= -2147483648.0 && v <= 2147483647.0; }

static int validate_meta(spade_host *h, const spade_env_meta *m, char *err, size_t errlen) {
    spade_env_info *info = &h->info;
    if (m->abi != SPADE_ENV_ABI) {
        spade_errf(err, errlen, "meta: abi %d, this runtime speaks abi %d", m->abi, SPADE_ENV_ABI);
        return -1;
    }
    info->abi = m->abi;
    if (!m->name || !spade_info_name_ok(m->name)) {
        spade_errf(err, errlen, "meta: name '%s' must be non-empty [a-z0-9_-]", m->name ? m->name : "(null)");
        return -1;
    }
    if (copy_field(info->name, sizeof info->name, m->name)) {
        spade_errf(err, errlen, "meta: name longer than %zu bytes", sizeof info->name - 1);
        return -1;
    }
    if (!m->description || !*m->description) {
        spade_errf(err, errlen, "meta: description of '%s' is empty", info->name);
        return -1;
    }
    if (!spade_info_one_line_ok(m->description) ||
        copy_field(info->description, sizeof info->description, m->description)) {
        spade_errf(err, errlen, "meta: description of '%s' must be one line of at most %zu bytes", info->name,
                   sizeof info->description - 1);
        return -1;
    }
    const char *family = m->family ? m->family : "";
    if ((*family && !spade_info_name_ok(family)) || copy_field(info->family, sizeof info->family, family)) {
        spade_errf(err, errlen, "meta: family '%.40s' must be [a-z0-9_-], at most %zu bytes", family,
                   sizeof info->family - 1);
        return -1;
    }
    if (m->max_steps < 0 || m->max_steps > SPADE_MAX_STEPS_LIMIT) {
        spade_errf(err, errlen, "meta: max_steps %d outside [1, %d]", m->max_steps, SPADE_MAX_STEPS_LIMIT);
        return -1;
    }
    info->max_steps = m->max_steps ? m->max_steps : SPADE_DEFAULT_MAX_STEPS;
    if (!isfinite(m->success) || fabs(m->success) > SPADE_SUCCESS_MAX) {
        spade_errf(err, errlen,
                   "meta: .success = %g: the success threshold must be a finite number within +-%g (rewards are "
                   "at most %g a step, so no episode returns more)",
                   m->success, SPADE_SUCCESS_MAX, SPADE_REWARD_MAX);
        return -1;
    }
    info->success = m->success != 0.0 ? m->success : SPADE_DEFAULT_SUCCESS;
    return 0;
}

static int validate_param(const spade_param_def *p, int k, char *err, size_t errlen) {
    if (!p->name || !spade_info_c_ident_ok(p->name) || strlen(p->name) >= sizeof((spade_param_info *)0)->name) {
        spade_errf(err, errlen, "param %d (spade_param_%d): name '%.40s' must be a C identifier of at most 31 bytes", k,
                   k, p->name ? p->name : "(null)");
        return -1;
    }
    if (p->type != SPADE_PARAM_INT && p->type != SPADE_PARAM_REAL) {
        spade_errf(err, errlen, "param '%s': type %d is neither int nor double", p->name, p->type);
        return -1;
    }
    if (!p->value) {
        spade_errf(err, errlen, "param '%s': no storage (value is NULL)", p->name);
        return -1;
    }
    if (!isfinite(p->def) || !isfinite(p->min) || !isfinite(p->max)) {
        spade_errf(err, errlen, "param '%s': default, min and max must be finite", p->name);
        return -1;
    }
    if (p->min > p->max) {
        spade_errf(err, errlen, "param '%s': min %g > max %g", p->name, p->min, p->max);
        return -1;
    }
    if (p->def < p->min || p->def > p->max) {
        spade_errf(err, errlen, "param '%s': default %g outside [%g, %g]", p->name, p->def, p->min, p->max);
        return -1;
    }
    if (p->type == SPADE_PARAM_INT &&
        (!spade_info_whole_int(p->def) || !spade_info_whole_int(p->min) || !spade_info_whole_int(p->max))) {
        spade_errf(err, errlen, "param '%s': int param with default %g, min %g, max %g: each must be an int", p->name,
                   p->def, p->min, p->max);
        return -1;
    }
    return 0;
}

static int validate_tool(spade_host *h, const spade_tool_def *t, int k, char *err, size_t errlen) {
    int i = h->info.n_tools;
    spade_tool_info *ti = &h->info.tools[i];
    if (!t->name || !spade_info_c_ident_ok(t->name) || copy_field(ti->name, sizeof ti->name, t->name)) {
        spade_errf(err, errlen, "tool %d (spade_tool_%d): name '%.40s' must be a C identifier of at most %zu bytes", k,
                   k, t->name ? t->name : "(null)", sizeof ti->name - 1);
        return -1;
    }
    if (!t->fn) {
        spade_errf(err, errlen, "tool '%s': no function", t->name);
        return -1;
    }
    if (!t->signature || copy_field(ti->signature, sizeof ti->signature, t->signature)) {
        spade_errf(err, errlen, "tool '%s': signature missing or longer than %zu bytes", t->name,
                   sizeof ti->signature - 1);
        return -1;
    }
    const char *desc = t->description ? t->description : "";
    if (!spade_info_one_line_ok(desc) || copy_field(ti->description, sizeof ti->description, desc)) {
        spade_errf(err, errlen, "tool '%s': description must be one non-empty line of at most %zu bytes", t->name,
                   sizeof ti->description - 1);
        return -1;
    }
    char why[256] = "";
    if (spade_tool_sig_parse(t->signature, &h->sigs[i], why, sizeof why) != 0) {
        /* why already quotes the signature (spade_tool_sig_parse) */
        spade_errf(err, errlen, "tool '%s': %s", t->name, why);
        return -1;
    }
    for (int j = 0; j < i; j++)
        if (strcmp(h->info.tools[j].name, ti->name) == 0) {
            spade_errf(err, errlen, "tool '%s': declared twice", t->name);
            return -1;
        }
    h->tools[i] = *t;
    h->info.n_tools++;
    return 0;
}

/* "\n\nTools (call as name(arg, ...)):\n- line\n..." for the first observation. */
static int build_tool_list(spade_host *h, char *err, size_t errlen) {
    size_t cap = 128 + (size_t)h->info.n_tools * 1024, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    len += (size_t)snprintf(buf, cap, "\n\nTools (call one as name(arg, ...)):\n");
    for (int i = 0; i < h->info.n_tools; i++) {
        char line[1000];
        if (spade_tool_describe(&h->tools[i], &h->sigs[i], line, sizeof line) < 0)
            snprintf(line, sizeof line, "%s%s — %s", h->tools[i].name, h->tools[i].signature, h->tools[i].description);
        int n = snprintf(buf + len, cap - len, "- %s\n", line);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
    h->tool_list = buf;
    h->tool_list_len = len;
    return 0;
}

int spade_host_new(spade_host **out, spade_symbol_fn sym, void *sym_ctx, char *err, size_t errlen) {
    if (!out || !sym) {
        spade_errf(err, errlen, "spade_host_new: no output or no resolver");
        return -1;
    }
    *out = NULL;
    spade_host *h = calloc(1, sizeof *h);
    if (!h) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    const spade_env_meta *meta = sym(sym_ctx, "spade_meta");
    if (!meta) {
        spade_errf(err, errlen, "spade_meta: missing (no ENV(...) line?)");
        goto fail;
    }
    if (validate_meta(h, meta, err, errlen)) goto fail;

    /* Object pointers to function pointers through memcpy: ISO C has no cast. */
    void *p;
    static const struct {
        const char *name, *what;
    } required[] = {{"spade_state_size", "STATE and RESET"},
                    {"spade_reset", "RESET"},
                    {"spade_step", "STEP"},
                    {"spade_hint", "HINT"}};
    void *addr[4];
    for (int i = 0; i < 4; i++)
        if (!(addr[i] = sym(sym_ctx, required[i].name))) {
            spade_errf(err, errlen, "%s: missing (no %s block?)", required[i].name, required[i].what);
            goto fail;
        }
    fn_size state_size;
    memcpy(&state_size, &addr[0], sizeof state_size);
    memcpy(&h->reset, &addr[1], sizeof h->reset);
    memcpy(&h->step, &addr[2], sizeof h->step);
    memcpy(&h->hint, &addr[3], sizeof h->hint);
    if ((p = sym(sym_ctx, "spade_solve"))) memcpy(&h->solve, &p, sizeof h->solve);
    h->info.has_solve = h->solve != NULL;

    unsigned long ss = state_size();
    if (ss > SPADE_STATE_MAX) {
        spade_errf(err, errlen, "state_size: %lu bytes, more than the %d allowed", ss, SPADE_STATE_MAX);
        goto fail;
    }
    h->state_size = ss;
    h->info.state_size = ss;
    h->state_ptr = sym(sym_ctx, "spade_S");
    if (!h->state_ptr && ss > 0) {
        spade_errf(err, errlen, "spade_S: missing, but state_size is %lu", ss);
        goto fail;
    }

    char name[32];
    for (int k = 0; k < SPADE_MAX_DECLS; k++) {
        snprintf(name, sizeof name, "spade_param_%d", k);
        spade_param_def *pd = sym(sym_ctx, name);
        if (!pd) continue;
        if (h->info.n_params == SPADE_INFO_MAX_PARAMS) {
            spade_errf(err, errlen, "more than %d params", SPADE_INFO_MAX_PARAMS);
            goto fail;
        }
        if (validate_param(pd, k, err, errlen)) goto fail;
        for (int j = 0; j < h->info.n_params; j++)
            if (strcmp(h->info.params[j].name, pd->name) == 0) {
                spade_errf(err, errlen, "param '%s': declared twice", pd->name);
                goto fail;
            }
        spade_param_info *pi = &h->info.params[h->info.n_params];
        copy_field(pi->name, sizeof pi->name, pd->name);
        pi->type = pd->type;
        pi->def = pd->def;
        pi->min = pd->min;
        pi->max = pd->max;
        h->params[h->info.n_params++] = pd;
    }
    for (int k = 0; k < SPADE_MAX_DECLS; k++) {
        snprintf(name, sizeof name, "spade_tool_%d", k);
        spade_tool_def *td = sym(sym_ctx, name);
        if (!td) continue;
        if (h->info.n_tools == SPADE_INFO_MAX_TOOLS) {
            spade_errf(err, errlen, "tools: more than %d", SPADE_INFO_MAX_TOOLS);
            goto fail;
        }
        if (validate_tool(h, td, k, err, errlen)) goto fail;
    }
    if (h->info.n_tools) {
        char why[256] = "";
        if (spade_tool_table_new(&h->tool_table, h->tools, h->sigs, h->info.n_tools, why, sizeof why) != 0) {
            spade_errf(err, errlen, "tools: %s", why);
            goto fail;
        }
        if (build_tool_list(h, err, errlen)) goto fail;
    }

    h->out = malloc(SPADE_OBS_MAX + 1);
    h->action = malloc(SPADE_ACTION_MAX + 1);
    h->tool_out = h->info.n_tools ? malloc(SPADE_OBS_MAX + 2) : NULL;
    h->scratch = malloc(ss ? ss : 1);
    if (!h->out || !h->action || (h->info.n_tools && !h->tool_out) || !h->scratch) {
        spade_errf(err, errlen, "out of memory");
        goto fail;
    }
    h->out[0] = '\0';
    *out = h;
    return 0;
fail:
    spade_host_free(h);
    return -1;
}

void spade_host_free(spade_host *h) {
    if (!h) return;
    for (int i = 0; i < h->n_inst; i++) {
        free(h->inst[i]->state);
        free(h->inst[i]->params);
        free(h->inst[i]);
    }
    free(h->inst);
    spade_tool_table_free(h->tool_table);
    free(h->tool_list);
    free(h->out);
    free(h->action);
    free(h->tool_out);
    free(h->scratch);
    free(h);
}

const spade_env_info *spade_host_info(const spade_host *h) { return h ? &h->info : NULL; }

/* ---- params --------------------------------------------------------------- */

static int check_param_value(const spade_param_info *p, double v, char *err, size_t errlen) {
    if (!isfinite(v)) {
        spade_errf(err, errlen, "param '%s': value is not a finite number", p->name);
        return -1;
    }
    if (p->type == SPADE_PARAM_INT && v != floor(v)) {
        spade_errf(err, errlen, "param '%s': %g is not an integer", p->name, v);
        return -1;
    }
    if (v < p->min || v > p->max) {
        spade_errf(err, errlen, "param '%s': %g outside [%g, %g]", p->name, v, p->min, p->max);
        return -1;
    }
    return 0;
}

int spade_params_parse(const spade_env_info *info, const char *spec, double *values, char *err, size_t errlen) {
    if (!info || (!values && info->n_params > 0)) {
        spade_errf(err, errlen, "params: no environment or no output");
        return -1;
    }
    int n = info->n_params < 0 ? 0 : info->n_params > SPADE_INFO_MAX_PARAMS ? SPADE_INFO_MAX_PARAMS : info->n_params;
    int seen[SPADE_INFO_MAX_PARAMS] = {0};
    for (int i = 0; i < n; i++) values[i] = info->params[i].def;
    if (!spec) return 0;
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t seglen = end ? (size_t)(end - p) : strlen(p);
        const char *a = p, *b = p + seglen;
        p = end ? end + 1 : p + seglen;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (a == b) continue; /* "a=1,,b=2" or a trailing comma */
        const char *eq = memchr(a, '=', (size_t)(b - a));
        if (!eq) {
            spade_errf(err, errlen, "'%.*s' is not key=value", (int)((b - a) > 64 ? 64 : (b - a)), a);
            return -1;
        }
        const char *ke = eq;
        while (ke > a && isspace((unsigned char)ke[-1])) ke--;
        size_t klen = (size_t)(ke - a);
        int idx = -1;
        for (int i = 0; i < n; i++)
            if (strlen(info->params[i].name) == klen && memcmp(info->params[i].name, a, klen) == 0) idx = i;
        if (idx < 0) {
            /* Name the keys there are: the mistake is usually a key from another environment or a template. */
            char keys[SPADE_INFO_MAX_PARAMS * 34 + 1] = "";
            size_t ko = 0;
            for (int i = 0; i < n && ko + 34 < sizeof keys; i++)
                ko += (size_t)snprintf(keys + ko, sizeof keys - ko, "%s%s", i ? ", " : "", info->params[i].name);
            spade_errf(err, errlen, "unknown key '%.*s' for '%.64s' (%s%s)", (int)(klen > 64 ? 64 : klen), a,
                       info->name, n ? "its params: " : "it has no params", keys);
            return -1;
        }
        const spade_param_info *pi = &info->params[idx];
        if (seen[idx]) {
            spade_errf(err, errlen, "param '%s': given twice", pi->name);
            return -1;
        }
        seen[idx] = 1;
        const char *v = eq + 1;
        while (v < b && isspace((unsigned char)*v)) v++;
        char num[64];
        size_t vlen = (size_t)(b - v);
        if (vlen == 0 || vlen >= sizeof num) {
            spade_errf(err, errlen, "param '%s': bad number '%.*s'", pi->name, (int)(vlen > 64 ? 64 : vlen), v);
            return -1;
        }
        memcpy(num, v, vlen);
        num[vlen] = '\0';
        /* An int param is a decimal integer: strtod would also take 0x10,
         * 1e1 and 7.0, which read as typing mistakes. */
        if (pi->type == SPADE_PARAM_INT) {
            size_t k = (num[0] == '-' || num[0] == '+') ? 1 : 0;
            int digits = num[k] != '\0';
            for (; num[k]; k++) digits &= num[k] >= '0' && num[k] <= '9';
            if (!digits) {
                spade_errf(err, errlen, "param '%s': '%s' is not a decimal integer (an int param)", pi->name, num);
                return -1;
            }
        } else if (strchr(num, 'x') || strchr(num, 'X')) {
            spade_errf(err, errlen, "param '%s': bad number '%s' (hexadecimal is not taken)", pi->name, num);
            return -1;
        }
        char *stop;
        errno = 0;
        double x = strtod(num, &stop);
        if (*stop != '\0' || errno == ERANGE || !isfinite(x)) {
            spade_errf(err, errlen, "param '%s': bad number '%s'", pi->name, num);
            return -1;
        }
        if (check_param_value(pi, x, err, errlen)) return -1;
        values[idx] = x;
    }
    return 0;
}

/* ---- instances ------------------------------------------------------------ */

int spade_host_add_instance(spade_host *h, const double *param_values) {
    if (!h) return -1;
    if (param_values)
        for (int i = 0; i < h->info.n_params; i++)
            if (check_param_value(&h->info.params[i], param_values[i], NULL, 0)) return -1;
    if (h->n_inst == h->cap_inst) {
        if (h->cap_inst >= (1 << 24)) return -1;
        int cap = h->cap_inst ? h->cap_inst * 2 : 8;
        instance **ni = realloc(h->inst, (size_t)cap * sizeof *ni);
        if (!ni) return -1;
        h->inst = ni;
        h->cap_inst = cap;
    }
    instance *in = calloc(1, sizeof *in);
    if (!in) return -1;
    in->state = calloc(1, h->state_size ? h->state_size : 1);
    in->params = calloc((size_t)(h->info.n_params ? h->info.n_params : 1), sizeof(double));
    if (!in->state || !in->params) {
        free(in->state);
        free(in->params);
        free(in);
        return -1;
    }
    for (int i = 0; i < h->info.n_params; i++) in->params[i] = param_values ? param_values[i] : h->info.params[i].def;
    h->inst[h->n_inst] = in;
    return h->n_inst++;
}

int spade_host_num_instances(const spade_host *h) { return h ? h->n_inst : 0; }

static instance *get_instance(spade_host *h, int inst) {
    if (!h || inst < 0 || inst >= h->n_inst) return NULL;
    return h->inst[inst];
}

/* Everything the environment sees of one instance, set before each call. */
static void enter(spade_host *h, instance *in, void *state, uint64_t *rng, int sink) {
    for (int i = 0; i < h->info.n_params; i++) {
        spade_param_def *pd = h->params[i];
        if (pd->type == SPADE_PARAM_INT)
            *(int *)pd->value = (int)in->params[i];
        else
            *(double *)pd->value = in->params[i];
    }
    if (h->state_ptr) *h->state_ptr = state;
    spade_rt_begin(&h->rt, h->out, SPADE_OBS_MAX, rng, in->steps, sink);
    spade_rt_current = &h->rt;
}

void spade_host_set_poison(spade_host *h, uint64_t seed) {
    if (h) h->poison = seed;
}

#define POISON_STACK 32768
#define POISON_TAIL 256

/* Adjacent instances get complementary patterns, so every bit of an
 * uninitialised read differs between the checker's two side-by-side copies
 * (ids n and n + 1). */
static uint64_t poison_word(const spade_host *h, int inst) {
    uint64_t z = h->poison * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return inst & 1 ? ~z : z;
}

/* Fills the stack below the caller's frame, where the environment's frame
 * goes next (called right before it, from the same frame). noinline so that
 * the buffer is a frame of its own; the empty asm keeps the stores. */
__attribute__((noinline)) static void poison_stack(uint64_t word) {
    uint64_t buf[POISON_STACK / 8];
    for (size_t i = 0; i < POISON_STACK / 8; i++) buf[i] = word;
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}

static void poison(spade_host *h, int inst, size_t action_len) {
    if (!h->poison) return;
    uint64_t word = poison_word(h, inst);
    /* The action buffer's tail: a read past the NUL would meet the previous
     * action's bytes, the same in both instances of a batch. */
    size_t room = SPADE_ACTION_MAX - action_len;
    size_t n = room < POISON_TAIL ? room : POISON_TAIL;
    for (size_t i = 0; i < n; i++) h->action[action_len + 1 + i] = (char)(word >> (8 * (i % 8)));
    poison_stack(word);
}

static void leave(spade_host *h) {
    spade_rt_current = NULL;
    if (h->state_ptr) *h->state_ptr = NULL;
}

static void fill_result(spade_host *h, instance *in, spade_step_result *out, double reward, int terminated,
                        int truncated) {
    if (!out) return;
    out->obs = h->out;
    out->obs_len = h->rt.out_len;
    out->reward = reward;
    out->terminated = terminated;
    out->truncated = truncated;
    out->episode_return = in->episode_return;
    out->success = in->episode_return >= h->info.success;
}

spade_host_status spade_host_reset(spade_host *h, int inst, uint64_t seed, spade_step_result *out) {
    instance *in = get_instance(h, inst);
    if (!in) return SPADE_HOST_BAD_CALL;
    memset(in->state, 0, h->state_size);
    spade_rng_seed(in->rng, seed);
    in->steps = 0;
    in->episode_return = 0.0;
    in->started = 1;
    in->done = 0;
    enter(h, in, in->state, in->rng, SPADE_RT_SAY);
    poison(h, inst, 0);
    h->reset();
    if (h->info.n_tools) spade_rt_append(&h->rt, h->tool_list, h->tool_list_len);
    leave(h);
    fill_result(h, in, out, 0.0, 0, 0);
    if (h->rt.overflow) {
        in->done = 1;
        return SPADE_HOST_OUTPUT_TOO_LARGE;
    }
    return SPADE_HOST_OK;
}

spade_host_status spade_host_step(spade_host *h, int inst, const char *action, size_t len, spade_step_result *out) {
    instance *in = get_instance(h, inst);
    if (!in || !in->started || in->done || len > SPADE_ACTION_MAX || (!action && len)) return SPADE_HOST_BAD_CALL;
    if (len <= 16) /* most actions: a call of memcpy would cost more than the bytes */
        for (size_t k = 0; k < len; k++) h->action[k] = action[k];
    else
        memcpy(h->action, action, len);
    h->action[len] = '\0';
    enter(h, in, in->state, in->rng, SPADE_RT_SAY);
    spade_dispatch d = SPADE_DISPATCH_NOT_A_CALL;
    if (h->info.n_tools) {
        h->tool_out[0] = '\0';
        d = spade_tool_table_dispatch(h->tool_table, h->action, len, h->tool_out, SPADE_OBS_MAX + 2);
        if (d == SPADE_DISPATCH_CALLED || d == SPADE_DISPATCH_ERROR) {
            h->tool_out[SPADE_OBS_MAX + 1] = '\0';
            size_t n = strlen(h->tool_out);
            if (n && h->rt.out_len && h->out[h->rt.out_len - 1] != '\n') spade_rt_append(&h->rt, "\n", 1);
            spade_rt_append(&h->rt, h->tool_out, n);
        }
    }
    if (d == SPADE_DISPATCH_NOT_A_CALL) {
        poison(h, inst, len);
        h->step(h->action, len);
    }
    leave(h);
    in->steps++;
    double r = h->rt.reward;
    if (h->rt.bad_reward || !(fabs(r) <= SPADE_REWARD_MAX)) {
        in->done = 1;
        fill_result(h, in, out, 0.0, 1, 0);
        if (out) out->obs_len = 0;
        return SPADE_HOST_BAD_REWARD;
    }
    in->episode_return += r;
    int terminated = h->rt.terminated;
    int truncated = !terminated && in->steps >= h->info.max_steps;
    in->done = terminated || truncated;
    fill_result(h, in, out, r, terminated, truncated);
    if (h->rt.overflow) {
        in->done = 1;
        return SPADE_HOST_OUTPUT_TOO_LARGE;
    }
    return SPADE_HOST_OK;
}

/* hint and solve: on copies, so the episode cannot tell it was asked. */
static spade_host_status side_call(spade_host *h, int inst, int sink, const char **text, size_t *len) {
    instance *in = get_instance(h, inst);
    if (!in || !in->started) return SPADE_HOST_BAD_CALL;
    if (sink == SPADE_RT_ACT && !h->solve) return SPADE_HOST_BAD_CALL;
    uint64_t rng[4];
    memcpy(rng, in->rng, sizeof rng);
    if (h->state_size) memcpy(h->scratch, in->state, h->state_size);
    enter(h, in, h->scratch, rng, sink);
    poison(h, inst, 0);
    if (sink == SPADE_RT_ACT)
        h->solve();
    else
        h->hint();
    leave(h);
    if (text) *text = h->out;
    if (len) *len = h->rt.out_len;
    return h->rt.overflow ? SPADE_HOST_OUTPUT_TOO_LARGE : SPADE_HOST_OK;
}

spade_host_status spade_host_hint(spade_host *h, int inst, const char **text, size_t *len) {
    return side_call(h, inst, SPADE_RT_SAY, text, len);
}

spade_host_status spade_host_solve(spade_host *h, int inst, const char **text, size_t *len) {
    return side_call(h, inst, SPADE_RT_ACT, text, len);
}
