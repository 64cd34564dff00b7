/* cmd_report.c — `spade report RUN_DIR [--out DIR]`: what a run did, for a
 * person: SVG plots over iterations (validity by gate, pass rates with and
 * without the hint, regret, designer reward, Vendi/n, held-out success when
 * the log has it, time per phase; success and loss for a fixed-pool run), the
 * regret histogram, best and worst environments of the archive, and a
 * markdown summary (report.md) that links them.
 *
 * What it is: a reader of the run directory (train.jsonl through core/json,
 * spade.db through core/archive, eval JSONL files `spade eval --jsonl` left
 * there) and a writer of DIR (default RUN/report). A null in the log is a gap
 * in the plot, never a zero; a half-written last line (a killed run) is
 * skipped and said so. What it is not: a way to change a run, nor a live
 * monitor (it reads what is there when it runs).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "archive.h"
#include "cli.h"
#include "json.h"
#include "report_log.h"
#include "report_svg.h"
#include "vendi.h"

#define MAX_VENDI 5000 /* newest valid environments in the cumulative Vendi score (memory: n x 1024 doubles) */

/* The phases' seconds: train.jsonl's "time_s" (docs/selfplay.md, "An iteration's time"), or, in a log
 * written before it, the older t_* keys (no prefill/decoding split: the writing is all "decoding",
 * the fixed-pool part is inside it). */
static const char *const time_keys[N_TIMES] = {"design_prefill", "design_decode", "gates",  "play",
                                               "update",         "pool",          "archive"};
static const char *const time_old_keys[N_TIMES] = {NULL,       "t_design", "t_gates",  "t_play",
                                                   "t_update", NULL,       "t_archive"};
static const char *const time_names[N_TIMES] = {"designer prefill", "designer decoding", "gates",  "play",
                                                "update",           "fixed pool",        "archive"};

void cli_usage_report(FILE *out) {
    fprintf(out, "usage: spade report RUN_DIR [--out DIR] [--top N]\n"
                 "       spade report --compare ARM=RUN[,RUN...] [ARM=RUN[,RUN...]...] [--out DIR] [--last K]\n"
                 "\n"
                 "Writes a report of a run that spade train made: SVG plots over iterations and a\n"
                 "markdown summary, DIR/report.md, that links them (default DIR: RUN_DIR/report).\n"
                 "  self-play   validity by gate (each environment written: valid, or the first\n"
                 "              gate it failed), pass rates without and with the hint, regret,\n"
                 "              designer reward, Vendi/n, held-out success (when train.jsonl has an\n"
                 "              \"eval\" key), time per phase, the regret histogram, and the best and\n"
                 "              worst environments of the archive by regret and by designer reward\n"
                 "  fixed pool  success (overall and per environment) and loss\n"
                 "Eval files that spade eval --jsonl wrote into RUN_DIR are summarised too.\n"
                 "A null in train.jsonl is a gap in a plot, not a zero; a half-written last line\n"
                 "(a killed run) is skipped with a warning.\n"
                 "\n"
                 "With --compare: several runs grouped into arms (the seeds of a trained and of a\n"
                 "frozen designer, say), compared over the iterations every run has, in\n"
                 "DIR/compare.md (default DIR: ./compare) with plots that overlay the arms: per arm\n"
                 "and iteration, the valid share, each gate's share and the near-copies (novelty)\n"
                 "pooled over its runs with Wilson 95%% intervals; the mean over its runs, with a t\n"
                 "95%% interval across them, of pass rates without and with the hint, regret,\n"
                 "designer reward, Vendi/n within the iteration and of the run so far (from its\n"
                 "spade.db), held-out success and seconds an iteration; over the last K\n"
                 "iterations, the first arm minus each other with a 95%% interval.\n"
                 "\n"
                 "  -o, --out DIR   where to write (created; files there are replaced)\n"
                 "  -n, --top N     environments in each best/worst table (default 5)\n"
                 "  -c, --compare   compare arms: each argument is NAME=RUN[,RUN...]\n"
                 "  -k, --last K    with --compare: the summary's iterations, the last K (default\n"
                 "                  10; 0: all)\n"
                 "  -h, --help      this help\n");
}

/* ---- train.jsonl ---- */

static void warn(run_log *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(run_log *L, const char *fmt, ...) {
    char m[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    fprintf(stderr, "spade report: warning: %s\n", m);
    if (L->n_warnings < 8) snprintf(L->warnings[L->n_warnings++], sizeof L->warnings[0], "%s", m);
}

static double get_num(const spade_json *o, const char *key) {
    const spade_json *v = spade_json_get(o, key);
    return v && v->type == SPADE_JSON_NUMBER ? v->number : NAN;
}

/* Held-out success from an "eval" value: a number, or an object with a
 * "success" (or "policy", itself a number or such an object), or else the mean
 * of its numeric members (one per environment). */
static double eval_value(const spade_json *v, int depth) {
    if (!v || depth > 3) return NAN;
    if (v->type == SPADE_JSON_NUMBER) return v->number;
    if (v->type != SPADE_JSON_OBJECT) return NAN;
    const spade_json *s = spade_json_get(v, "success");
    if (!s) s = spade_json_get(v, "policy");
    if (s) return eval_value(s, depth + 1);
    double sum = 0;
    int k = 0;
    for (size_t i = 0; i < v->len; i++)
        if (v->members[i].value.type == SPADE_JSON_NUMBER) sum += v->members[i].value.number, k++;
    return k ? sum / k : NAN;
}

static int name_index(char (*names)[32], int *n, int cap, const char *name) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(names[i], name)) return i;
    if (*n >= cap) return -1;
    snprintf(names[*n], 32, "%s", name);
    return (*n)++;
}

static int env_index(run_log *L, const char *name) {
    for (int i = 0; i < L->n_envs; i++)
        if (!strcmp(L->envs[i], name)) return i;
    if (L->n_envs >= MAX_POOL_ENVS) {
        L->more_envs = 1;
        return -1;
    }
    snprintf(L->envs[L->n_envs], sizeof L->envs[0], "%s", name);
    return L->n_envs++;
}

static int read_row(run_log *L, const spade_json *o, row *r) {
    long long it;
    if (o->type != SPADE_JSON_OBJECT || spade_json_int(spade_json_get(o, "iteration"), 0, 1 << 30, &it) < 0) return -1;
    memset(r, 0, sizeof *r);
    r->iteration = (int)it;
    r->selfplay = spade_json_get(o, "written") != NULL;
    r->written = get_num(o, "written");
    r->valid = get_num(o, "valid");
    for (int g = 0; g < MAX_GATES; g++) r->gate[g] = NAN;
    const spade_json *fa = spade_json_get(o, "failed_at");
    if (fa && fa->type == SPADE_JSON_OBJECT)
        for (size_t i = 0; i < fa->len; i++) {
            int g = name_index(L->gates, &L->n_gates, MAX_GATES, fa->members[i].key);
            if (g >= 0 && fa->members[i].value.type == SPADE_JSON_NUMBER) r->gate[g] = fa->members[i].value.number;
        }
    r->pass = get_num(o, "pass");
    r->pass_hint = get_num(o, "pass_hint");
    r->regret = get_num(o, "regret");
    r->reward = get_num(o, "designer_reward");
    r->vendi_n = get_num(o, "vendi_n");
    r->pool_success = get_num(o, "pool_success");
    const spade_json *ev = spade_json_get(o, "eval");
    if (!ev) ev = spade_json_get(o, "heldout");
    r->eval = eval_value(ev, 0);
    r->eval_only = ev && o->len == 2; /* {"iteration":k,"eval":{...}}: an evaluation, not an iteration's metrics */
    const spade_json *ts = spade_json_get(o, "time_s");
    int has_ts = ts && ts->type == SPADE_JSON_OBJECT;
    for (int k = 0; k < N_TIMES; k++)
        r->t[k] = has_ts ? get_num(ts, time_keys[k]) : time_old_keys[k] ? get_num(o, time_old_keys[k]) : 0;
    r->t_total = has_ts ? get_num(ts, "total") : NAN;
    r->success = get_num(o, "success");
    r->mean_return = get_num(o, "mean_return");
    r->loss = get_num(o, "loss");
    const spade_json *up = spade_json_get(o, "updated");
    if (up && up->type == SPADE_JSON_BOOL && !up->boolean) r->loss = NAN; /* no update made: no loss, not a zero */
    for (int e = 0; e < MAX_POOL_ENVS; e++) r->env_success[e] = NAN;
    const spade_json *pe = spade_json_get(o, "per_env");
    if (pe && pe->type == SPADE_JSON_OBJECT)
        for (size_t i = 0; i < pe->len; i++) {
            int e = env_index(L, pe->members[i].key);
            if (e >= 0 && pe->members[i].value.type == SPADE_JSON_NUMBER)
                r->env_success[e] = pe->members[i].value.number;
        }
    return 0;
}

static int by_iteration(const void *a, const void *b) {
    const row *x = a, *y = b;
    return (x->iteration > y->iteration) - (x->iteration < y->iteration);
}

/* Reads every line; a line that is not a JSON object with an iteration is
 * skipped with a warning naming it; a later line of the same iteration wins
 * (a resumed run). 0, or -1 with a message. */
int cli_report_read_log(const char *path, run_log *L, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        int ended = len > 0 && line[len - 1] == '\n';
        size_t k = (size_t)len;
        while (k && (line[k - 1] == '\n' || line[k - 1] == '\r' || line[k - 1] == ' ')) k--;
        if (!k) continue;
        spade_json_doc *d;
        char jerr[200];
        row r;
        int ok = spade_json_parse(line, k, &d, jerr, sizeof jerr) == 0;
        if (ok) {
            ok = read_row(L, spade_json_root(d), &r) == 0;
            if (!ok) snprintf(jerr, sizeof jerr, "not an object with a whole \"iteration\"");
            spade_json_doc_free(d);
        }
        if (!ok) {
            int c = getc(f);
            int at_end = c == EOF;
            if (!at_end) ungetc(c, f);
            L->skipped++;
            if (at_end) {
                L->torn_tail = 1;
                warn(L, "%s:%d: the last line is %s (a killed run?): skipped", path, lineno,
                     ended ? "not a whole JSON object" : "half written");
            } else
                warn(L, "%s:%d: %s: skipped", path, lineno, jerr);
            continue;
        }
        int j = 0;
        while (j < L->n && L->rows[j].iteration != r.iteration) j++;
        if (j == L->n) {
            if (L->n == L->cap) {
                int nc = L->cap ? 2 * L->cap : 64;
                row *nr = realloc(L->rows, sizeof *nr * (size_t)nc);
                if (!nr) {
                    free(line);
                    fclose(f);
                    snprintf(err, errlen, "%s: out of memory", path);
                    return -1;
                }
                L->rows = nr;
                L->cap = nc;
            }
            L->n++;
            L->rows[j] = r;
        } else if (r.eval_only) {
            L->rows[j].eval = r.eval; /* spade train's eval line follows its iteration's metrics line */
        } else {
            double ev = L->rows[j].eval;
            L->rows[j] = r; /* a resumed run wrote the iteration again: the later line wins */
            if (isnan(r.eval)) L->rows[j].eval = ev;
        }
    }
    free(line);
    fclose(f);
    if (L->n) qsort(L->rows, (size_t)L->n, sizeof *L->rows, by_iteration);
    return 0;
}

/* ---- the archive ---- */

typedef struct env_rec {
    long id;
    int iteration;
    char family[32], gate[32];
    double pass, pass_hint, regret, reward;
} env_rec;

typedef struct envs {
    env_rec *e;
    int n, cap;
} envs;

static env_rec *push(envs *v) {
    if (v->n == v->cap) {
        int nc = v->cap ? 2 * v->cap : 256;
        env_rec *ne = realloc(v->e, sizeof *ne * (size_t)nc);
        if (!ne) return NULL;
        v->e = ne;
        v->cap = nc;
    }
    return &v->e[v->n++];
}

static int collect(void *ctx, const spade_archive_env *e) {
    env_rec *r = push(ctx);
    if (!r) return 1; /* out of memory: the walk stops; the tables show what was read */
    r->id = e->id;
    r->iteration = e->iteration;
    snprintf(r->family, sizeof r->family, "%s", e->family);
    snprintf(r->gate, sizeof r->gate, "%s", e->gate);
    r->pass = e->pass_nohint;
    r->pass_hint = e->pass_hint;
    r->regret = e->regret;
    r->reward = e->reward;
    return 0;
}

/* Orders by one key, highest first, NaN last; ties by the other key, then by id. */
static int sort_key; /* 0 regret, 1 reward */
static int cmp_desc(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
    return (a < b) - (a > b);
}
static int by_key(const void *pa, const void *pb) {
    const env_rec *a = pa, *b = pb;
    int c = sort_key ? cmp_desc(a->reward, b->reward) : cmp_desc(a->regret, b->regret);
    if (!c) c = sort_key ? cmp_desc(a->regret, b->regret) : cmp_desc(a->reward, b->reward);
    return c ? c : (a->id > b->id) - (a->id < b->id);
}

/* ---- writing ---- */

static void fnum(char *b, size_t cap, double v, int dec) {
    if (isfinite(v))
        snprintf(b, cap, "%.*f", dec, v);
    else
        snprintf(b, cap, "–");
}

/* The ENV("name" of a source (the archive's one field a person recognises). */
static void env_name(spade_archive *a, long id, char *out, size_t cap) {
    spade_archive_env e;
    char err[256];
    snprintf(out, cap, "–");
    if (spade_archive_get_env(a, id, &e, err, sizeof err)) return;
    const char *p = e.source ? strstr(e.source, "ENV(\"") : NULL;
    if (p) {
        p += 5;
        size_t n = strcspn(p, "\"\n");
        if (n && n < cap) {
            memcpy(out, p, n);
            out[n] = 0;
            for (char *q = out; *q; q++)
                if (*q == '|' || *q == '`' || *q == '<' || *q == '>') *q = '_'; /* a table cell stays one cell */
        }
    }
    spade_archive_env_clear(&e);
}

static void env_table(FILE *md, spade_archive *a, const env_rec *list, int n, int from_top, int count) {
    fprintf(md, "| id | iteration | family | name | pass | pass + hint | regret | designer reward |\n");
    fprintf(md, "|---:|---:|---|---|---:|---:|---:|---:|\n");
    for (int k = 0; k < count; k++) {
        const env_rec *r = &list[from_top ? k : n - 1 - k];
        char p0[16], p1[16], rg[16], rw[16], name[64];
        fnum(p0, sizeof p0, r->pass, 2);
        fnum(p1, sizeof p1, r->pass_hint, 2);
        fnum(rg, sizeof rg, r->regret, 3);
        fnum(rw, sizeof rw, r->reward, 3);
        env_name(a, r->id, name, sizeof name);
        fprintf(md, "| %ld | %d | %s | %s | %s | %s | %s | %s |\n", r->id, r->iteration, r->family, name, p0, p1, rg,
                rw);
    }
    fprintf(md, "\n");
}

typedef struct out_dir {
    char dir[SPADE_PATH_MAX];
    char written[16][32];
    int n;
    int failed;
} out_dir;

static int plot_done(out_dir *o, cli_plot *p, const char *file) {
    char path[SPADE_PATH_MAX + 64], err[SPADE_PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s", o->dir, file);
    int rc = p ? cli_plot_write(p, path, err, sizeof err) : -1;
    if (!p) snprintf(err, sizeof err, "%s: out of memory", path);
    cli_plot_free(p);
    if (rc < 0) {
        cli_err(CLI_FAIL, "report", "%s", err);
        o->failed = 1;
        return -1;
    }
    if (o->n < 16) snprintf(o->written[o->n++], sizeof o->written[0], "%s", file);
    return 0;
}

/* One metric's row of the summary table: last, mean, min, max over the iterations with a value. */
static void summary_row(FILE *md, const char *name, const run_log *L, double (*get)(const row *), int dec) {
    double sum = 0, mn = INFINITY, mx = -INFINITY, last = NAN;
    int k = 0;
    for (int i = 0; i < L->n; i++) {
        double v = get(&L->rows[i]);
        if (!isfinite(v)) continue;
        sum += v;
        k++;
        if (v < mn) mn = v;
        if (v > mx) mx = v;
        last = v;
    }
    char a[32], b[32], c[32], d[32];
    fnum(a, sizeof a, last, dec);
    fnum(b, sizeof b, k ? sum / k : NAN, dec);
    fnum(c, sizeof c, k ? mn : NAN, dec);
    fnum(d, sizeof d, k ? mx : NAN, dec);
    fprintf(md, "| %s | %s | %s | %s | %s | %d of %d |\n", name, a, b, c, d, k, L->n);
}

static double g_pass(const row *r) { return r->pass; }
static double g_hint(const row *r) { return r->pass_hint; }
static double g_regret(const row *r) { return r->regret; }
static double g_reward(const row *r) { return r->reward; }
static double g_vendi(const row *r) { return r->vendi_n; }
static double g_eval(const row *r) { return r->eval; }
static double g_success(const row *r) { return r->success; }
static double g_loss(const row *r) { return r->loss; }
static double g_return(const row *r) { return r->mean_return; }
static double g_valid_share(const row *r) { return r->written > 0 ? r->valid / r->written : NAN; }

static double *column(const run_log *L, double (*get)(const row *)) {
    double *y = malloc(sizeof *y * (size_t)(L->n ? L->n : 1));
    if (y)
        for (int i = 0; i < L->n; i++) y[i] = get(&L->rows[i]);
    return y;
}

static int any_finite(const run_log *L, double (*get)(const row *)) {
    for (int i = 0; i < L->n; i++)
        if (isfinite(get(&L->rows[i]))) return 1;
    return 0;
}

/* One line plot of one metric. */
static void line_plot(out_dir *o, const run_log *L, const double *x, const char *file, const char *title,
                      const char *ylabel, const char *label, double (*get)(const row *), int unit_range, double ref,
                      const char *ref_label) {
    cli_plot *p = cli_plot_new(title, "iteration", ylabel, x, L->n);
    double *y = column(L, get);
    if (p && y) {
        if (unit_range) cli_plot_yrange(p, 0, 1);
        if (ref_label) cli_plot_hline(p, ref, ref_label);
        if (cli_plot_line(p, label, y, 2, 0) < 0) cli_plot_free(p), p = NULL;
    } else
        cli_plot_free(p), p = NULL;
    free(y);
    plot_done(o, p, file);
}

/* [selfplay] pool_envs from the run's config: pool_success means something only then. */
static int on_ini(void *ctx, const char *section, const char *name, const char *value) {
    if (!strcmp(section, "selfplay") && !strcmp(name, "pool_envs")) *(int *)ctx = atoi(value);
    return 1;
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* Eval summaries (`spade eval --jsonl`) left in the run directory. */
static void eval_files(FILE *md, const char *run) {
    DIR *d = opendir(run);
    if (!d) return;
    struct dirent *de;
    int shown = 0;
    char names[32][256];
    int nn = 0;
    while ((de = readdir(d)) && nn < 32) {
        size_t k = strlen(de->d_name);
        if (k < 7 || strcmp(de->d_name + k - 6, ".jsonl") || !strcmp(de->d_name, "train.jsonl")) continue;
        snprintf(names[nn++], sizeof names[0], "%s", de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof names[0], by_name);
    for (int i = 0; i < nn; i++) {
        char path[SPADE_PATH_MAX + 300];
        if (snprintf(path, sizeof path, "%s/%s", run, names[i]) >= (int)sizeof path) continue;
        FILE *f = fopen(path, "r");
        if (!f) continue;
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, f)) >= 0) {
            spade_json_doc *doc;
            char jerr[128];
            if (spade_json_parse(line, (size_t)len, &doc, jerr, sizeof jerr)) continue;
            const spade_json *r = spade_json_root(doc);
            const spade_json *s = spade_json_get(r, "summary");
            if (s && s->type == SPADE_JSON_BOOL && s->boolean) {
                if (!shown++)
                    fprintf(md, "Evaluations in the run directory (`spade eval --jsonl`; mean success over "
                                "environments):\n\n| file | environments | policy | policy + hint | random | solve |\n"
                                "|---|---:|---:|---:|---:|---:|\n");
                char a[16], b[16], c[16], e[16];
                fnum(a, sizeof a, get_num(r, "policy"), 3);
                fnum(b, sizeof b, get_num(r, "hint"), 3);
                fnum(c, sizeof c, get_num(r, "random"), 3);
                fnum(e, sizeof e, get_num(r, "solve"), 3);
                fprintf(md, "| %s | %.0f | %s | %s | %s | %s |\n", names[i], get_num(r, "envs"), a, b, c, e);
            }
            spade_json_doc_free(doc);
        }
        free(line);
        fclose(f);
    }
    if (shown) fprintf(md, "\n");
}

static void link_plot(FILE *md, const out_dir *o, const char *file, const char *alt) {
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->written[i], file)) {
            fprintf(md, "![%s](%s)\n\n", alt, file);
            return;
        }
}

static void selfplay_plots(out_dir *o, const run_log *L, const double *x, int pool, double cum_vendi_n) {
    int n = L->n;
    /* validity: shares of the environments written, stacked to 1 */
    cli_plot *p = cli_plot_new("Validity by gate: what became of each environment written", "iteration",
                               "share of environments written", x, n);
    double *y = malloc(sizeof *y * (size_t)(n ? n : 1));
    int ok = p && y;
    if (ok) {
        cli_plot_yrange(p, 0, 1);
        for (int i = 0; i < n; i++) y[i] = g_valid_share(&L->rows[i]);
        ok = cli_plot_area(p, "valid", y) == 0 && cli_plot_color(p, "#009E73") == 0;
        static const char *const fail_colors[] = {"#D55E00", "#E69F00", "#CC79A7", "#0072B2", "#56B4E9", "#882255",
                                                  "#999933", "#AA4499", "#332288", "#DDCC77", "#44AA99", "#888888"};
        int c = 0;
        for (int g = 0; ok && g < L->n_gates; g++) {
            double total = 0;
            for (int i = 0; i < n; i++) {
                const row *r = &L->rows[i];
                y[i] = r->written > 0 && isfinite(r->gate[g]) ? r->gate[g] / r->written : NAN;
                if (isfinite(y[i])) total += y[i];
            }
            if (total <= 0) continue; /* a gate nothing stopped at: no band, no legend line */
            char label[64];
            snprintf(label, sizeof label, "failed %s", L->gates[g]);
            ok = cli_plot_area(p, label, y) == 0 && cli_plot_color(p, fail_colors[c++ % 12]) == 0;
        }
    }
    free(y);
    if (!ok) cli_plot_free(p), p = NULL;
    plot_done(o, p, "validity.svg");

    p = cli_plot_new("Pass rates of the valid environments", "iteration", "success rate", x, n);
    double *a = column(L, g_pass), *b = column(L, g_hint), *c = NULL;
    ok = p && a && b;
    if (ok) {
        cli_plot_yrange(p, 0, 1);
        ok = cli_plot_line(p, "without the hint", a, 3.5, 0) == 0 && cli_plot_color(p, "#0072B2") == 0 &&
             cli_plot_line(p, "with the hint", b, 2, 0) == 0 && cli_plot_color(p, "#E69F00") == 0;
        if (ok && pool) {
            c = malloc(sizeof *c * (size_t)(n ? n : 1));
            for (int i = 0; c && i < n; i++) c[i] = L->rows[i].pool_success;
            ok = c && cli_plot_line(p, "agent on the fixed pool", c, 1.5, 1) == 0 && cli_plot_color(p, "#555555") == 0;
        }
    }
    free(a);
    free(b);
    free(c);
    if (!ok) cli_plot_free(p), p = NULL;
    plot_done(o, p, "pass.svg");

    line_plot(o, L, x, "regret.svg", "Regret: success with the hint minus without", "regret", "mean regret", g_regret,
              0, 0, "0");
    line_plot(o, L, x, "designer_reward.svg", "Designer reward", "mean reward", "designer reward", g_reward, 0, 0, "0");
    line_plot(o, L, x, "vendi.svg",
              "Vendi / n within each iteration's valid environments (whole run: all of them together)", "Vendi / n",
              "Vendi/n", g_vendi, 1, cum_vendi_n, isfinite(cum_vendi_n) ? "whole run" : NULL);

    p = cli_plot_new("Time per iteration, by phase", "iteration", "seconds", x, n);
    y = malloc(sizeof *y * (size_t)(n ? n : 1));
    ok = p && y;
    for (int k = 0; ok && k < N_TIMES; k++) {
        for (int i = 0; i < n; i++) y[i] = L->rows[i].t[k];
        ok = cli_plot_area(p, time_names[k], y) == 0;
    }
    free(y);
    if (!ok) cli_plot_free(p), p = NULL;
    plot_done(o, p, "time.svg");
}

static void regret_histogram(out_dir *o, const envs *valid) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < valid->n; i++) {
        double r = valid->e[i].regret;
        if (!isfinite(r)) continue;
        if (r < lo) lo = r;
        if (r > hi) hi = r;
    }
    if (!isfinite(lo)) return;
    /* bins centred on multiples of 0.1 (a regret of exactly 0, the common case,
     * gets a bar of its own around 0), over at least [-0.2, 1] so one run's
     * histogram reads like another's; regret lies in [-1, 1] */
    const double w = 0.1;
    long k0 = lround(lo / w), k1 = lround(hi / w);
    if (k0 > -2) k0 = -2;
    if (k1 < 10) k1 = 10;
    int bins = (int)(k1 - k0 + 1);
    if (bins > 41) bins = 41;
    double first = (k0 - 0.5) * w;
    double *xs = malloc(sizeof *xs * (size_t)bins), *ys = calloc((size_t)bins, sizeof *ys);
    cli_plot *p = NULL;
    if (xs && ys) {
        for (int b = 0; b < bins; b++) xs[b] = first + (b + 0.5) * w;
        for (int i = 0; i < valid->n; i++) {
            double r = valid->e[i].regret;
            if (!isfinite(r)) continue;
            int b = (int)(lround(r / w) - k0);
            ys[b < 0 ? 0 : b >= bins ? bins - 1 : b]++;
        }
        char title[96];
        snprintf(title, sizeof title, "Regret of the %d valid environments (bins of %.1f)", valid->n, w);
        p = cli_plot_new(title, "regret", "environments", xs, bins);
        if (p && (cli_plot_bars(p, "valid environments", ys, w) < 0 || cli_plot_color(p, "#0072B2") < 0))
            cli_plot_free(p), p = NULL;
    }
    free(xs);
    free(ys);
    plot_done(o, p, "regret_hist.svg");
}

static void fixed_plots(out_dir *o, const run_log *L, const double *x) {
    int n = L->n;
    cli_plot *p = cli_plot_new("Success on the fixed pool", "iteration", "success rate", x, n);
    double *y = column(L, g_success);
    int ok = p && y;
    if (ok) {
        cli_plot_yrange(p, 0, 1);
        for (int e = 0; ok && e < L->n_envs; e++) {
            for (int i = 0; i < n; i++) y[i] = L->rows[i].env_success[e];
            ok = cli_plot_line(p, L->envs[e], y, 1.5, 0) == 0;
        }
        for (int i = 0; ok && i < n; i++) y[i] = L->rows[i].success;
        /* added last, so drawn over the per-environment lines */
        ok = ok && cli_plot_line(p, "all environments", y, 3, 0) == 0 && cli_plot_color(p, "#000000") == 0;
    }
    free(y);
    if (!ok) cli_plot_free(p), p = NULL;
    plot_done(o, p, "success.svg");
    line_plot(o, L, x, "loss.svg", "GRPO loss", "loss", "loss", g_loss, 0, 0, NULL);
}

/* What one report is made of. */
typedef struct report {
    const char *run;
    long top;
    run_log L;
    out_dir o;
    spade_archive *a;
    envs all, valid; /* every archived environment, the valid ones */
    int have_db, selfplay, pool, has_eval;
    double cum_vendi; /* the Vendi score of the run's valid environments together (NaN: none) */
    int cum_n;
    double *x; /* (L.n) the iterations, the plots' x */
} report;

/* What the command line asked for. */
typedef struct report_opts {
    const char *out, *run;
    long top, last;
    int compare, top_set, last_set;
    int first_arm; /* with --compare: argv[first_arm..argc) are the arms */
} report_opts;

/* Parses argv; -1 to go on, or the exit code to return now. */
static int report_args(int argc, char **argv, report_opts *o) {
    static const struct option longopts[] = {{"out", required_argument, 0, 'o'}, {"top", required_argument, 0, 'n'},
                                             {"compare", no_argument, 0, 'c'},   {"last", required_argument, 0, 'k'},
                                             {"help", no_argument, 0, 'h'},      {0, 0, 0, 0}};
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "o:n:ck:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'o': o->out = optarg; break;
        case 'n':
            if (cli_parse_long("report", "--top", optarg, 1, 1000, &o->top) < 0) return CLI_USAGE;
            o->top_set = 1;
            break;
        case 'c': o->compare = 1; break;
        case 'k':
            if (cli_parse_long("report", "--last", optarg, 0, 1 << 30, &o->last) < 0) return CLI_USAGE;
            o->last_set = 1;
            break;
        case 'h': cli_usage_report(stdout); return CLI_OK;
        default: return cli_bad_option("report", argc, argv, optopt);
        }
    }
    if (o->compare) {
        if (o->top_set) return cli_err(CLI_USAGE, "report", "--top is for one run's tables, not for --compare");
        if (argc - optind < 1)
            return cli_err(CLI_USAGE, "report", "--compare takes one or more ARM=RUN[,RUN...] (spade report --help)");
        o->first_arm = optind;
        return -1;
    }
    if (o->last_set) return cli_err(CLI_USAGE, "report", "--last is for --compare (a comparison's summary)");
    if (argc - optind != 1) return cli_err(CLI_USAGE, "report", "name one run directory (spade report --help)");
    o->run = argv[optind];
    return -1;
}

/* The archive's environments (a failure to read it is said, and the plots from train.jsonl are
 * still made), and the Vendi score of the valid ones together, each source embedded as the loop
 * embeds it. */
static void report_archive(report *R) {
    char db[SPADE_PATH_MAX + 16], err[SPADE_PATH_MAX + 256];
    struct stat st;
    snprintf(db, sizeof db, "%s/spade.db", R->run);
    R->have_db = stat(db, &st) == 0;
    if (R->have_db && (spade_archive_open(&R->a, db, err, sizeof err) < 0 ||
                       spade_archive_each_env(R->a, 0, NULL, 0, collect, &R->all, err, sizeof err) < 0)) {
        cli_err(CLI_FAIL, "report", "%s (the plots from train.jsonl are still written)", err);
        if (R->a) spade_archive_close(R->a);
        R->a = NULL;
        R->have_db = 0;
    }
    for (int i = 0; i < R->all.n; i++)
        if (!R->all.e[i].gate[0]) {
            env_rec *r = push(&R->valid);
            if (r) *r = R->all.e[i];
        }
    R->cum_vendi = NAN;
    if (!R->a || !R->valid.n) return;
    int m = R->valid.n < MAX_VENDI ? R->valid.n : MAX_VENDI; /* all walks are newest first */
    double *X = malloc(sizeof *X * (size_t)m * SPADE_VENDI_DIM);
    for (int i = 0; X && i < m; i++) {
        spade_archive_env e;
        if (spade_archive_get_env(R->a, R->valid.e[i].id, &e, err, sizeof err)) continue;
        if (e.source && e.source_len)
            spade_vendi_embed(e.source, e.source_len, X + (size_t)R->cum_n++ * SPADE_VENDI_DIM, SPADE_VENDI_DIM);
        spade_archive_env_clear(&e);
    }
    double v;
    if (X && R->cum_n && spade_vendi(X, R->cum_n, SPADE_VENDI_DIM, &v, err, sizeof err) == 0) R->cum_vendi = v;
    free(X);
}

/* Held-out success, measured every few iterations: the measurements are joined, not gaps between them. */
static void heldout_plot(report *R) {
    const run_log *L = &R->L;
    double *ex = malloc(sizeof *ex * (size_t)L->n), *ey = malloc(sizeof *ey * (size_t)L->n);
    int m = 0;
    for (int i = 0; ex && ey && i < L->n; i++)
        if (isfinite(L->rows[i].eval)) ex[m] = R->x[i], ey[m++] = L->rows[i].eval;
    cli_plot *p = ex && ey ? cli_plot_new("Held-out success (eval/heldout)", "iteration", "success rate", ex, m) : NULL;
    if (p) {
        cli_plot_yrange(p, 0, 1);
        if (cli_plot_line(p, "held-out success", ey, 2, 0) < 0) cli_plot_free(p), p = NULL;
    }
    free(ex);
    free(ey);
    plot_done(&R->o, p, "heldout.svg");
}

/* The self-play sections: validity by gate, pass rates, regret, designer reward, diversity. */
static void md_selfplay(FILE *md, report *R) {
    double written = 0, nvalid = 0, gsum[MAX_GATES] = {0};
    for (int i = 0; i < R->L.n; i++) {
        if (isfinite(R->L.rows[i].written)) written += R->L.rows[i].written;
        if (isfinite(R->L.rows[i].valid)) nvalid += R->L.rows[i].valid;
        for (int g = 0; g < R->L.n_gates; g++)
            if (isfinite(R->L.rows[i].gate[g])) gsum[g] += R->L.rows[i].gate[g];
    }
    fprintf(md, "## Validity by gate\n\n");
    link_plot(md, &R->o, "validity.svg", "validity by gate");
    fprintf(md, "Each environment written is valid or stopped at the first gate it failed, in the gates' order "
                "(`spade check --gates FILE` runs them on a file).\n\n| outcome | environments | share |\n"
                "|---|---:|---:|\n");
    fprintf(md, "| valid | %.0f | %.3f |\n", nvalid, written > 0 ? nvalid / written : 0.0);
    for (int g = 0; g < R->L.n_gates; g++)
        if (gsum[g] > 0)
            fprintf(md, "| failed %s | %.0f | %.3f |\n", R->L.gates[g], gsum[g], written > 0 ? gsum[g] / written : 0.0);
    fprintf(md, "| all written | %.0f | |\n\n", written);
    int idle = 0;
    for (int i = 0; i < R->L.n; i++) idle += R->L.rows[i].written == 0;
    if (idle)
        fprintf(md,
                "%d iteration%s wrote no environment (with `selfplay.regen_every` > 1 the agent plays the last "
                "writing's again): %s in the validity plot.\n\n",
                idle, idle == 1 ? "" : "s", idle == 1 ? "it is a gap" : "they are gaps");
    fprintf(md, "## Pass rates\n\n");
    link_plot(md, &R->o, "pass.svg", "pass rates with and without the hint");
    fprintf(md, "The agent's success on the valid environments, on the same seeds without and with the hint%s.\n\n",
            R->pool ? "; dashed: its success on the fixed pool it also trains on" : "");
    fprintf(md, "## Regret\n\n");
    link_plot(md, &R->o, "regret.svg", "regret");
    link_plot(md, &R->o, "regret_hist.svg", "regret histogram");
    if (!R->valid.n) fprintf(md, "No valid environment in the archive: no regret histogram.\n\n");
    fprintf(md, "## Designer reward\n\n");
    link_plot(md, &R->o, "designer_reward.svg", "designer reward");
    fprintf(md, "## Diversity\n\n");
    link_plot(md, &R->o, "vendi.svg", "Vendi / n");
    fprintf(md, "Two figures, two sets: **Vendi/n within one iteration** (the plot, and the table above) measures "
                "the valid environments of that iteration among themselves, so an iteration with one valid "
                "environment, or a few that differ, scores near 1.00; **Vendi/n over the whole run** (below) "
                "measures every valid environment of the run against all the others, so a designer that writes "
                "the same few environments iteration after iteration scores low there however high each "
                "iteration is. 1.00 is all different, 1/n all the same.\n\n");
    if (isfinite(R->cum_vendi))
        fprintf(md,
                "Vendi/n over the whole run: the %d %svalid environments of the archive have a Vendi score of "
                "%.2f, Vendi/n %.3f (the same measure as each iteration's, over all of them together).\n\n",
                R->cum_n, R->cum_n < R->valid.n ? "newest " : "", R->cum_vendi, R->cum_vendi / R->cum_n);
}

/* The fixed-pool sections: success and loss. */
static void md_fixed(FILE *md, report *R) {
    fprintf(md, "## Success\n\n");
    link_plot(md, &R->o, "success.svg", "success on the fixed pool");
    if (R->L.more_envs)
        fprintf(md, "Only the first %d environments of the pool have their own line.\n\n", MAX_POOL_ENVS);
    fprintf(md, "## Loss\n\n");
    link_plot(md, &R->o, "loss.svg", "loss");
}

/* The best and worst valid environments, by regret and by designer reward. */
static void md_environments(FILE *md, report *R) {
    fprintf(md, "## Best and worst environments\n\n");
    if (!R->have_db) {
        fprintf(md, "No archive (`spade.db`) in this run%s: no environments to rank.\n\n",
                R->selfplay ? "" : " (a fixed-pool run builds no environments)");
    } else if (!R->valid.n) {
        fprintf(md,
                "The archive holds %d environment%s and none is valid: nothing was played, so nothing has a regret. "
                "`spade archive list %s` shows each with the gate that stopped it.\n\n",
                R->all.n, R->all.n == 1 ? "" : "s", R->run);
    } else {
        int k = R->valid.n < R->top ? R->valid.n : (int)R->top;
        fprintf(md,
                "%d valid environment%s of %d in the archive. `spade archive show %s ID` prints one with its "
                "source and hint.%s\n\n",
                R->valid.n, R->valid.n == 1 ? "" : "s", R->all.n, R->run,
                R->valid.n < 2 * R->top ? " (Fewer than twice the table size: best and worst lists share environments.)"
                                        : "");
        sort_key = 0;
        qsort(R->valid.e, (size_t)R->valid.n, sizeof *R->valid.e, by_key);
        fprintf(md, "### Highest regret\n\n");
        env_table(md, R->a, R->valid.e, R->valid.n, 1, k);
        fprintf(md, "### Lowest regret\n\n");
        env_table(md, R->a, R->valid.e, R->valid.n, 0, k);
        sort_key = 1;
        qsort(R->valid.e, (size_t)R->valid.n, sizeof *R->valid.e, by_key);
        fprintf(md, "### Highest designer reward\n\n");
        env_table(md, R->a, R->valid.e, R->valid.n, 1, k);
        fprintf(md, "### Lowest designer reward\n\n");
        env_table(md, R->a, R->valid.e, R->valid.n, 0, k);
    }
}

/* report.md: the header, the table over the run, the sections. 0, or -1 (said) when it cannot be written. */
static int write_md(report *R, const char *md_path) {
    FILE *md = fopen(md_path, "w");
    if (!md) {
        cli_err(CLI_FAIL, "report", "%s: %s", md_path, strerror(errno));
        return -1;
    }
    const run_log *L = &R->L;
    fprintf(md, "# Report on the run `%s`\n\n", R->run);
    fprintf(md,
            "%s run: %d iteration%s in `train.jsonl` (iterations %d to %d, numbered from 0 as everywhere in spade)%s. "
            "Written by `spade report`.\n\n",
            R->selfplay ? "Self-play" : "Fixed-pool", L->n, L->n == 1 ? "" : "s", L->rows[0].iteration,
            L->rows[L->n - 1].iteration, R->have_db ? ", with its archive `spade.db`" : "");
    for (int w = 0; w < L->n_warnings; w++) fprintf(md, "> **Warning:** %s\n\n", L->warnings[w]);
    fprintf(md, "## Over the run\n\n| metric | latest | mean | min | max | iterations with a value |\n"
                "|---|---:|---:|---:|---:|---:|\n");
    if (R->selfplay) {
        summary_row(md, "valid share of written", L, g_valid_share, 3);
        summary_row(md, "pass rate without the hint", L, g_pass, 3);
        summary_row(md, "pass rate with the hint", L, g_hint, 3);
        summary_row(md, "regret", L, g_regret, 3);
        summary_row(md, "designer reward", L, g_reward, 3);
        summary_row(md, "Vendi / n within one iteration", L, g_vendi, 3);
    } else {
        summary_row(md, "success", L, g_success, 3);
        summary_row(md, "mean return", L, g_return, 3);
        summary_row(md, "loss", L, g_loss, 4);
    }
    if (R->has_eval) summary_row(md, "held-out success", L, g_eval, 3);
    fprintf(md, "\nA dash is a value the run did not have (no valid environment to play, for instance): plots "
                "leave such iterations as gaps.\n\n");
    if (R->selfplay)
        md_selfplay(md, R);
    else
        md_fixed(md, R);
    fprintf(md, "## Held-out success\n\n");
    if (R->has_eval)
        link_plot(md, &R->o, "heldout.svg", "held-out success");
    else
        fprintf(md,
                "No plot: no line of `train.jsonl` has an `\"eval\"` key (this run did not evaluate on the held-out "
                "suite while training). `spade eval CHECKPOINT --suite heldout --jsonl %s/heldout.jsonl` "
                "evaluates a checkpoint; a report made after it lists the result here.\n\n",
                R->run);
    eval_files(md, R->run);
    if (R->selfplay) {
        fprintf(md, "## Time\n\n");
        link_plot(md, &R->o, "time.svg", "time per phase");
    }
    md_environments(md, R);
    if (fclose(md) != 0) {
        cli_err(CLI_FAIL, "report", "%s: write failed", md_path);
        return -1;
    }
    return 0;
}

int cli_report(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    report_opts opt = {.top = 5, .last = 10};
    int early = report_args(argc, argv, &opt);
    if (early >= 0) return early;
    if (opt.compare) return cli_report_compare(argc - opt.first_arm, argv + opt.first_arm, opt.out, opt.last);
    const char *out = opt.out, *run = opt.run;
    long top = opt.top;
    struct stat st;
    char log_path[SPADE_PATH_MAX], err[SPADE_PATH_MAX + 256];
    if (stat(run, &st) < 0) return cli_err(CLI_FAIL, "report", "%s: %s", run, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_err(CLI_FAIL, "report",
                       "%s: not a directory (spade report takes the run directory spade train wrote)", run);
    if (snprintf(log_path, sizeof log_path, "%s/train.jsonl", run) >= (int)sizeof log_path)
        return cli_err(CLI_FAIL, "report", "%s: path too long", run);
    if (stat(log_path, &st) < 0)
        return cli_err(CLI_FAIL, "report", "%s: not a run directory (no train.jsonl; spade train writes one)", run);

    static report R;
    memset(&R, 0, sizeof R);
    R.run = run;
    R.top = top;
    if (cli_report_read_log(log_path, &R.L, err, sizeof err) < 0) return cli_err(CLI_FAIL, "report", "%s", err);
    if (!R.L.n) {
        free(R.L.rows);
        return cli_err(CLI_FAIL, "report", "%s: no complete iteration yet, nothing to report", log_path);
    }
    for (int i = 0; i < R.L.n; i++) R.selfplay |= R.L.rows[i].selfplay;
    if (out)
        snprintf(R.o.dir, sizeof R.o.dir, "%s", out);
    else
        snprintf(R.o.dir, sizeof R.o.dir, "%s/report", run);
    if (cli_mkdir_p(R.o.dir) < 0) {
        free(R.L.rows);
        return cli_err(CLI_FAIL, "report", "%s: %s", R.o.dir, strerror(errno));
    }
    char cfg[SPADE_PATH_MAX + 16];
    snprintf(cfg, sizeof cfg, "%s/config.ini", run);
    if (R.selfplay) ini_parse(cfg, on_ini, &R.pool);
    report_archive(&R);

    char md_path[SPADE_PATH_MAX + 16];
    snprintf(md_path, sizeof md_path, "%s/report.md", R.o.dir);
    if (!(R.x = malloc(sizeof *R.x * (size_t)R.L.n))) {
        cli_err(CLI_FAIL, "report", "out of memory");
        R.o.failed = 1;
        goto done;
    }
    for (int i = 0; i < R.L.n; i++) R.x[i] = R.L.rows[i].iteration;
    R.has_eval = any_finite(&R.L, g_eval);
    if (R.selfplay) {
        selfplay_plots(&R.o, &R.L, R.x, R.pool, R.cum_n ? R.cum_vendi / R.cum_n : NAN);
        if (R.valid.n) regret_histogram(&R.o, &R.valid);
    } else
        fixed_plots(&R.o, &R.L, R.x);
    if (R.has_eval) heldout_plot(&R);
    if (write_md(&R, md_path) < 0) R.o.failed = 1;
done:
    if (R.a) spade_archive_close(R.a);
    free(R.all.e);
    free(R.valid.e);
    free(R.x);
    free(R.L.rows);
    if (R.o.failed) return CLI_FAIL;
    printf("spade report: wrote %s and %d plot%s:", md_path, R.o.n, R.o.n == 1 ? "" : "s");
    for (int i = 0; i < R.o.n; i++) printf(" %s", R.o.written[i]);
    printf("\n");
    if (!R.has_eval) printf("spade report: no \"eval\" key in %s: no held-out plot\n", log_path);
    return CLI_OK;
}
