/* report_compare.c — `spade report --compare ARM=RUN[,RUN...] ...`: several
 * runs of spade train grouped into arms (a trained and a frozen designer, say,
 * each over a few seeds), compared iteration by iteration and over the last K
 * iterations, in DIR/compare.md with SVG plots that overlay the arms.
 *
 * What it computes, per arm and common iteration: the environments written,
 * valid, and stopped at each gate, pooled over the arm's runs, as shares with
 * Wilson 95% intervals (the novelty gate's share is the near-copies); the mean
 * over the arm's runs, with a t 95% interval across runs (two or more with a
 * value), of the pass rates without and with the hint, regret, designer reward,
 * Vendi/n within the iteration, Vendi/n of the run's valid environments up to
 * that iteration (from its archive, spade.db) and held-out success (an "eval"
 * key). Then, over the last K common iterations, each arm's figure and the first
 * arm minus each other arm with a 95% interval (Newcombe's for pooled shares,
 * Welch's for means over runs).
 * What it is not: a test of significance, a reader of anything but train.jsonl
 * and spade.db, nor a way to change a run. A value a run did not have is left
 * out (a gap in a plot, a dash in a table), never a zero.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/eval.h"
#include "archive.h"
#include "cli.h"
#include "report_log.h"
#include "report_svg.h"
#include "vendi.h"

#define MAX_ARMS 8
#define MAX_RUNS 16 /* per arm */
#define MAX_CUM_POINTS 64 /* cumulative Vendi/n is computed at most at this many iterations (evenly spaced) */
#define MAX_CUM_ENVS 5000 /* and over at most this many valid environments (n x 1024 doubles) */
/* A testing knob: SPADE_COMPARE_MAX_ENVS=N (1 <= N <= MAX_CUM_ENVS) lowers the cap, so that a test
 * reaches it without building 5,000 environments; anything else leaves MAX_CUM_ENVS. */
#define MAX_CUM_ENVS_ENV "SPADE_COMPARE_MAX_ENVS"
#define Z95 1.959964

static const char *const arm_colors[MAX_ARMS] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                 "#E69F00", "#56B4E9", "#000000", "#882255"};

typedef struct cmp_run {
    const char *dir;
    run_log L;
    int *at; /* (n_its) the row of each common iteration */
    double *cum; /* (n_its) Vendi/n of the valid environments up to that iteration; NAN: not computed */
    const char *cum_none; /* why there is no cumulative Vendi/n, or NULL */
    int cum_from_source; /* valid environments without a stored embedding, embedded from their source */
    int cum_capped; /* 1: past the cap from iteration cum_capped_at on (within the comparison): none shown */
    int cum_capped_at; /* the iteration of the run's first valid environment past the cap */
} cmp_run;

typedef struct cmp_arm {
    char name[32];
    cmp_run runs[MAX_RUNS];
    int n;
} cmp_arm;

typedef struct cmp {
    cmp_arm arms[MAX_ARMS];
    int n_arms;
    int *its, n_its; /* the iterations every run has */
    int w0; /* the summary's window: common iterations [w0, n_its) */
    char gates[MAX_GATES][32]; /* every gate of every run, in the order met */
    int n_gates, novelty; /* novelty: index of the "novelty" gate, or -1 */
    char dir[SPADE_PATH_MAX];
    char written[16][32];
    int n_written, failed, has_eval, has_cum, has_time;
    int max_envs; /* the cap on the run-so-far Vendi/n: MAX_CUM_ENVS, or lower by MAX_CUM_ENVS_ENV */
    double *x; /* (n_its) the plots' x */
} cmp;

enum { M_PASS, M_HINT, M_REGRET, M_REWARD, M_VENDI, M_CUM, M_EVAL, M_TIME, N_METRICS };
static const char *const metric_names[N_METRICS] = {
    "pass rate without the hint",   "pass rate with the hint",   "regret",           "designer reward",
    "Vendi/n within the iteration", "Vendi/n of the run so far", "held-out success", "seconds an iteration"};
/* The same in a plot's legend, which cuts labels at 30 characters. */
static const char *const metric_short[N_METRICS] = {"no hint", "hint",       "regret",   "reward",
                                                    "within",  "run so far", "held-out", "seconds"};

/* ---- statistics ---- */

/* The 0.975 quantile of Student's t with df degrees of freedom (df >= 1). */
static double t975(double df) {
    static const double t[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1) df = 1;
    int k = (int)floor(df); /* rounding df down: the wider interval */
    if (k <= 30) return t[k - 1];
    return Z95 + (Z95 * Z95 * Z95 + Z95) / (4 * df); /* Cornish-Fisher: within 0.002 above 30 */
}

typedef struct stat_ci {
    int n; /* values (runs) */
    double mean, sd, lo, hi; /* lo, hi: NAN with fewer than 2 values */
} stat_ci;

static stat_ci mean_ci(const double *v, int n) {
    stat_ci s = {0, NAN, NAN, NAN, NAN};
    double sum = 0, ss = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) sum += v[i], s.n++;
    if (!s.n) return s;
    s.mean = sum / s.n;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) ss += (v[i] - s.mean) * (v[i] - s.mean);
    if (s.n < 2) return s;
    s.sd = sqrt(ss / (s.n - 1));
    double half = t975(s.n - 1) * s.sd / sqrt(s.n);
    s.lo = s.mean - half;
    s.hi = s.mean + half;
    return s;
}

/* Welch's 95% interval of a.mean - b.mean; 0 with it in *lo, *hi, or -1 when either has fewer than 2 values. */
static int welch(stat_ci a, stat_ci b, double *lo, double *hi) {
    if (a.n < 2 || b.n < 2) return -1;
    double va = a.sd * a.sd / a.n, vb = b.sd * b.sd / b.n, se = sqrt(va + vb), d = a.mean - b.mean;
    if (se == 0) {
        *lo = *hi = d;
        return 0;
    }
    double df = (va + vb) * (va + vb) / (va * va / (a.n - 1) + vb * vb / (b.n - 1));
    *lo = d - t975(df) * se;
    *hi = d + t975(df) * se;
    return 0;
}

/* Newcombe's hybrid score interval (his method 10) of k1/n1 - k2/n2, from the two Wilson intervals. */
static void newcombe(long k1, long n1, long k2, long n2, double *lo, double *hi) {
    double p1 = (double)k1 / n1, p2 = (double)k2 / n2, l1, u1, l2, u2;
    spade_wilson(k1, n1, Z95, &l1, &u1);
    spade_wilson(k2, n2, Z95, &l2, &u2);
    *lo = p1 - p2 - sqrt((p1 - l1) * (p1 - l1) + (u2 - p2) * (u2 - p2));
    *hi = p1 - p2 + sqrt((u1 - p1) * (u1 - p1) + (p2 - l2) * (p2 - l2));
}

/* ---- reading ---- */

/* Checks one run directory as the one-run report does and reads its log. 0, or a CLI code (said). */
static int read_run(cmp_run *r, const char *arm) {
    struct stat st;
    char log_path[SPADE_PATH_MAX], err[SPADE_PATH_MAX + 256];
    if (stat(r->dir, &st) < 0) return cli_err(CLI_FAIL, "report", "%s (arm %s): %s", r->dir, arm, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_err(CLI_FAIL, "report", "%s (arm %s): not a directory (name the run directories spade train wrote)",
                       r->dir, arm);
    if (snprintf(log_path, sizeof log_path, "%s/train.jsonl", r->dir) >= (int)sizeof log_path)
        return cli_err(CLI_FAIL, "report", "%s: path too long", r->dir);
    if (stat(log_path, &st) < 0)
        return cli_err(CLI_FAIL, "report", "%s (arm %s): not a run directory (no train.jsonl; spade train writes one)",
                       r->dir, arm);
    if (cli_report_read_log(log_path, &r->L, err, sizeof err) < 0) return cli_err(CLI_FAIL, "report", "%s", err);
    if (!r->L.n) return cli_err(CLI_FAIL, "report", "%s: no complete iteration yet, nothing to compare", log_path);
    return 0;
}

/* ARM=RUN[,RUN...]: the arm's name and its runs (pointers into arg, which is split in place). */
static int parse_arm(cmp *C, char *arg) {
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return cli_err(CLI_USAGE, "report", "'%s': an arm is NAME=RUN[,RUN...] (trained=runs/t1,runs/t2)", arg);
    *eq = 0;
    size_t len = strlen(arg);
    if (len >= sizeof C->arms[0].name ||
        strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != len)
        return cli_err(CLI_USAGE, "report", "'%s': an arm's name is 1 to 31 letters, digits, '_', '.' or '-'", arg);
    for (int a = 0; a < C->n_arms; a++)
        if (!strcmp(C->arms[a].name, arg)) return cli_err(CLI_USAGE, "report", "arm '%s' is named twice", arg);
    if (C->n_arms == MAX_ARMS) return cli_err(CLI_USAGE, "report", "at most %d arms", MAX_ARMS);
    cmp_arm *A = &C->arms[C->n_arms++];
    snprintf(A->name, sizeof A->name, "%s", arg);
    for (char *p = eq + 1, *next; p; p = next) {
        next = strchr(p, ',');
        if (next) *next++ = 0;
        if (!*p) return cli_err(CLI_USAGE, "report", "arm '%s': an empty run directory in its list", A->name);
        if (A->n == MAX_RUNS) return cli_err(CLI_USAGE, "report", "arm '%s': at most %d runs", A->name, MAX_RUNS);
        A->runs[A->n++].dir = p;
    }
    return 0;
}

static int row_of(const run_log *L, int iteration) {
    for (int i = 0; i < L->n; i++)
        if (L->rows[i].iteration == iteration) return i;
    return -1;
}

/* The iterations every run has, and each run's row for each; the union of the gates. 0, or -1 (said). */
static int common_iterations(cmp *C) {
    const run_log *L0 = &C->arms[0].runs[0].L;
    C->its = malloc(sizeof *C->its * (size_t)L0->n);
    if (!C->its) return cli_err(-1, "report", "out of memory");
    for (int i = 0; i < L0->n; i++) {
        int all = 1;
        for (int a = 0; all && a < C->n_arms; a++)
            for (int r = 0; all && r < C->arms[a].n; r++)
                all = row_of(&C->arms[a].runs[r].L, L0->rows[i].iteration) >= 0;
        if (all) C->its[C->n_its++] = L0->rows[i].iteration;
    }
    if (!C->n_its) return cli_err(-1, "report", "the runs have no iteration in common: nothing to compare");
    C->novelty = -1;
    for (int a = 0; a < C->n_arms; a++)
        for (int r = 0; r < C->arms[a].n; r++) {
            cmp_run *R = &C->arms[a].runs[r];
            R->at = malloc(sizeof *R->at * (size_t)C->n_its);
            R->cum = malloc(sizeof *R->cum * (size_t)C->n_its);
            if (!R->at || !R->cum) return cli_err(-1, "report", "out of memory");
            for (int i = 0; i < C->n_its; i++) R->at[i] = row_of(&R->L, C->its[i]), R->cum[i] = NAN;
            for (int g = 0; g < R->L.n_gates; g++) {
                int k = 0;
                while (k < C->n_gates && strcmp(C->gates[k], R->L.gates[g])) k++;
                if (k == C->n_gates && C->n_gates < MAX_GATES)
                    snprintf(C->gates[C->n_gates++], 32, "%s", R->L.gates[g]);
            }
        }
    for (int g = 0; g < C->n_gates; g++)
        if (!strcmp(C->gates[g], "novelty")) C->novelty = g;
    return 0;
}

/* ---- the cumulative Vendi/n ---- */

typedef struct valid_src {
    int iteration;
    long id;
} valid_src;

typedef struct valid_list {
    valid_src *v;
    int n, cap;
} valid_list;

static int collect_valid(void *ctx, const spade_archive_env *e) {
    valid_list *l = ctx;
    if (e->gate[0]) return 0;
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 256;
        valid_src *nv = realloc(l->v, sizeof *nv * (size_t)nc);
        if (!nv) return 1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = (valid_src){e->iteration, e->id};
    return 0;
}

static int by_iteration_then_id(const void *pa, const void *pb) {
    const valid_src *a = pa, *b = pb;
    if (a->iteration != b->iteration) return (a->iteration > b->iteration) - (a->iteration < b->iteration);
    return (a->id > b->id) - (a->id < b->id);
}

/* The cap: MAX_CUM_ENVS, or the testing knob's lower value. */
static int max_cum_envs(void) {
    const char *v = getenv(MAX_CUM_ENVS_ENV);
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : 0;
    return n >= 1 && n <= MAX_CUM_ENVS && !*end ? (int)n : MAX_CUM_ENVS;
}

/* R->cum[i]: Vendi/n of the run's valid archived environments written at iterations <= its[i], each
 * by the embedding the loop stored with it (the one its vendi_n used), or else its source's; at every common iteration,
 * or at MAX_CUM_POINTS evenly spaced ones (always the last). Without an archive R->cum_none says why.
 * The cap (C->max_envs) keeps the first environments by iteration then id, and a figure is computed only
 * where the whole set fits: from the iteration of the first one past the cap on there is none (NAN), and
 * R->cum_capped says from where, so that no figure over part of a run's environments is ever shown. */
static void cumulative_vendi(const cmp *C, cmp_run *R) {
    char db[SPADE_PATH_MAX + 16], err[SPADE_PATH_MAX + 256];
    struct stat st;
    snprintf(db, sizeof db, "%s/spade.db", R->dir);
    if (stat(db, &st) < 0) {
        R->cum_none = "no archive (spade.db)";
        return;
    }
    spade_archive *a = NULL;
    valid_list l = {0};
    if (spade_archive_open(&a, db, err, sizeof err) < 0 ||
        spade_archive_each_env(a, 1, NULL, 0, collect_valid, &l, err, sizeof err) < 0) {
        cli_err(CLI_FAIL, "report", "%s (its cumulative Vendi/n is left out)", err);
        R->cum_none = "the archive could not be read";
        if (a) spade_archive_close(a);
        free(l.v);
        return;
    }
    qsort(l.v, (size_t)l.n, sizeof *l.v, by_iteration_then_id);
    int m = l.n < C->max_envs ? l.n : C->max_envs;
    if (l.n > m && l.v[m].iteration <= C->its[C->n_its - 1]) R->cum_capped = 1, R->cum_capped_at = l.v[m].iteration;
    double *X = malloc(sizeof *X * (size_t)(m ? m : 1) * SPADE_VENDI_DIM);
    int *it = malloc(sizeof *it * (size_t)(m ? m : 1)), k = 0;
    for (int i = 0; X && it && i < m; i++) {
        spade_archive_env e;
        if (spade_archive_get_env(a, l.v[i].id, &e, err, sizeof err)) continue;
        double *x = X + (size_t)k * SPADE_VENDI_DIM;
        if (e.embedding && e.embed_dim == SPADE_VENDI_DIM) { /* the loop's own (a template's: its fillings) */
            for (int d = 0; d < SPADE_VENDI_DIM; d++) x[d] = e.embedding[d];
            it[k++] = l.v[i].iteration;
        } else if (e.source && e.source_len) { /* an archive without it: the source's, as spade vendi embeds it */
            spade_vendi_embed(e.source, e.source_len, x, SPADE_VENDI_DIM);
            it[k++] = l.v[i].iteration;
            R->cum_from_source++;
        }
        spade_archive_env_clear(&e);
    }
    int stride = (C->n_its + MAX_CUM_POINTS - 1) / MAX_CUM_POINTS;
    for (int i = 0; X && it && i < C->n_its; i++) {
        if (i % stride && i != C->n_its - 1) continue;
        int n = 0;
        while (n < k && it[n] <= C->its[i]) n++;
        double v;
        if (R->cum_capped && R->cum_capped_at <= C->its[i]) break; /* past the cap: not the run's whole set */
        if (n && spade_vendi(X, n, SPADE_VENDI_DIM, &v, err, sizeof err) == 0) R->cum[i] = v / n;
    }
    if (!X || !it) R->cum_none = "out of memory";
    free(X);
    free(it);
    free(l.v);
    spade_archive_close(a);
}

/* ---- per iteration ---- */

static double run_metric(const cmp_run *R, int metric, int i) {
    const row *r = &R->L.rows[R->at[i]];
    switch (metric) {
    case M_PASS: return r->pass;
    case M_HINT: return r->pass_hint;
    case M_REGRET: return r->regret;
    case M_REWARD: return r->reward;
    case M_VENDI: return r->vendi_n;
    case M_CUM: return R->cum[i];
    case M_TIME: return r->t_total;
    default: return r->eval;
    }
}

/* The interval cut to what the metric can be (a rate to [0, 1], regret to [-1, 1]): with 2 or 3 runs a t
 * interval reaches past them, and the mean cannot. */
static stat_ci clamp_ci(stat_ci s, int metric) {
    double lo = metric == M_REGRET ? -1 : 0, hi = 1;
    if (metric == M_REWARD || metric == M_TIME || !isfinite(s.lo)) return s; /* no fixed range */
    if (s.lo < lo) s.lo = lo;
    if (s.hi > hi) s.hi = hi;
    return s;
}

static stat_ci arm_metric(const cmp_arm *A, int metric, int i) {
    double v[MAX_RUNS];
    for (int r = 0; r < A->n; r++) v[r] = run_metric(&A->runs[r], metric, i);
    return clamp_ci(mean_ci(v, A->n), metric);
}

/* A gate's count in one run's row, by the comparison's gate index. */
static double gate_count(const cmp *C, const cmp_run *R, const row *r, int g) {
    for (int k = 0; k < R->L.n_gates; k++)
        if (!strcmp(R->L.gates[k], C->gates[g])) return r->gate[k];
    return NAN;
}

/* Pooled counts of the arm over common iterations [i0, i1): what = -1 valid, else a gate's index. */
static void arm_counts(const cmp *C, const cmp_arm *A, int i0, int i1, int what, long *k, long *n) {
    *k = *n = 0;
    for (int r = 0; r < A->n; r++)
        for (int i = i0; i < i1; i++) {
            const cmp_run *R = &A->runs[r];
            const row *w = &R->L.rows[R->at[i]];
            double c = what < 0 ? w->valid : gate_count(C, R, w, what);
            if (!isfinite(w->written) || w->written <= 0) continue;
            *n += (long)w->written;
            if (isfinite(c)) *k += (long)c;
        }
}

/* ---- cells ---- */

static void share_cell(char *b, size_t cap, long k, long n) {
    double lo, hi;
    if (n <= 0) {
        snprintf(b, cap, "0/0 –");
        return;
    }
    spade_wilson(k, n, Z95, &lo, &hi);
    snprintf(b, cap, "%ld/%ld = %.3f [%.3f, %.3f]", k, n, (double)k / n, lo, hi);
}

static void mean_cell(char *b, size_t cap, stat_ci s) {
    if (!s.n)
        snprintf(b, cap, "–");
    else if (s.n < 2)
        snprintf(b, cap, "%.3f (1)", s.mean);
    else
        snprintf(b, cap, "%.3f [%.3f, %.3f] (%d)", s.mean, s.lo, s.hi, s.n);
}

static double no_minus_zero(double v) { return fabs(v) < 5e-4 ? 0 : v; } /* "-0.000" reads as a finding */

static void diff_cell(char *b, size_t cap, double d, int ok, double lo, double hi) {
    d = no_minus_zero(d), lo = no_minus_zero(lo), hi = no_minus_zero(hi);
    if (!isfinite(d))
        snprintf(b, cap, "–");
    else if (!ok)
        snprintf(b, cap, "%+.3f (no interval)", d);
    else
        snprintf(b, cap, "%+.3f [%+.3f, %+.3f]", d, lo, hi);
}

/* ---- plots ---- */

static void plot_done(cmp *C, cli_plot *p, const char *file) {
    char path[SPADE_PATH_MAX + 64], err[SPADE_PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s", C->dir, file);
    int rc = p ? cli_plot_write(p, path, err, sizeof err) : -1;
    if (!p) snprintf(err, sizeof err, "%s: out of memory", path);
    cli_plot_free(p);
    if (rc < 0) {
        cli_err(CLI_FAIL, "report", "%s", err);
        C->failed = 1;
        return;
    }
    if (C->n_written < 16) snprintf(C->written[C->n_written++], sizeof C->written[0], "%s", file);
}

/* An arm's line in its colour, and its interval's bounds as thin dashed lines (NULL: none). */
static int arm_lines(cli_plot *p, int a, const char *label, const double *y, const double *lo, const double *hi,
                     int dashed) {
    char l[96];
    if (cli_plot_line(p, label, y, 2.5, dashed) < 0 || cli_plot_color(p, arm_colors[a]) < 0) return -1;
    if (!lo) return 0;
    snprintf(l, sizeof l, "%s: 95%% interval", label);
    if (cli_plot_line(p, l, lo, 1, 1) < 0 || cli_plot_color(p, arm_colors[a]) < 0) return -1;
    if (cli_plot_line(p, "", hi, 1, 1) < 0 || cli_plot_color(p, arm_colors[a]) < 0) return -1;
    return 0;
}

/* A pooled share per arm (what: -1 valid, else a gate) with its Wilson interval. */
static void share_plot(cmp *C, const char *file, const char *title, int what) {
    int n = C->n_its;
    cli_plot *p = cli_plot_new(title, "iteration", "share of environments written", C->x, n);
    double *y = malloc(sizeof *y * (size_t)n * 3), *lo = y + n, *hi = y + 2 * n;
    int ok = p && y;
    if (ok) cli_plot_yrange(p, 0, 1);
    for (int a = 0; ok && a < C->n_arms; a++) {
        for (int i = 0; i < n; i++) {
            long k, m;
            arm_counts(C, &C->arms[a], i, i + 1, what, &k, &m);
            y[i] = lo[i] = hi[i] = NAN;
            if (m > 0) y[i] = (double)k / m, spade_wilson(k, m, Z95, &lo[i], &hi[i]);
        }
        ok = arm_lines(p, a, C->arms[a].name, y, lo, hi, 0) == 0;
    }
    free(y);
    if (!ok) cli_plot_free(p), p = NULL;
    plot_done(C, p, file);
}

/* Metrics per arm, the mean over its runs with the t interval (intervals: 0 for none). */
static void mean_plot(cmp *C, const char *file, const char *title, const char *ylabel, const int *metrics, int nm,
                      int intervals, int unit_range) {
    int n = C->n_its;
    cli_plot *p = cli_plot_new(title, "iteration", ylabel, C->x, n);
    double *y = malloc(sizeof *y * (size_t)n * 3), *lo = y + n, *hi = y + 2 * n;
    int ok = p && y;
    if (ok && unit_range) cli_plot_yrange(p, 0, 1);
    for (int a = 0; ok && a < C->n_arms; a++)
        for (int m = 0; ok && m < nm; m++) {
            for (int i = 0; i < n; i++) {
                stat_ci s = arm_metric(&C->arms[a], metrics[m], i);
                y[i] = s.mean, lo[i] = s.lo, hi[i] = s.hi;
            }
            char label[96];
            if (nm > 1)
                snprintf(label, sizeof label, "%s: %s", C->arms[a].name, metric_short[metrics[m]]);
            else
                snprintf(label, sizeof label, "%s", C->arms[a].name);
            ok = arm_lines(p, a, label, y, intervals ? lo : NULL, intervals ? hi : NULL, m > 0) == 0;
        }
    free(y);
    if (!ok) cli_plot_free(p), p = NULL;
    plot_done(C, p, file);
}

static void compare_plots(cmp *C) {
    share_plot(C, "validity.svg", "Valid share of the environments written (pooled over each arm's runs)", -1);
    if (C->novelty >= 0) share_plot(C, "nearcopies.svg", "Near-copies: share refused by the novelty gate", C->novelty);
    static const int pass[] = {M_PASS, M_HINT};
    mean_plot(C, "pass.svg", "Pass rates of the valid environments (solid: without the hint; dashed: with it)",
              "success rate", pass, 2, 0, 1);
    static const int regret[] = {M_REGRET}, reward[] = {M_REWARD}, vendi[] = {M_VENDI, M_CUM}, eval[] = {M_EVAL},
                     secs[] = {M_TIME};
    mean_plot(C, "regret.svg", "Regret: success with the hint minus without (mean over runs)", "regret", regret, 1, 1,
              0);
    mean_plot(C, "designer_reward.svg", "Designer reward (mean over runs)", "mean reward", reward, 1, 1, 0);
    mean_plot(C, "vendi.svg", "Vendi/n: within each iteration (solid) and of the run so far (dashed)", "Vendi / n",
              vendi, C->has_cum ? 2 : 1, 0, 1);
    if (C->has_eval) mean_plot(C, "heldout.svg", "Held-out success (mean over runs)", "success rate", eval, 1, 1, 1);
    if (C->has_time) mean_plot(C, "time.svg", "Seconds per iteration (mean over runs)", "seconds", secs, 1, 1, 0);
}

static void link_plot(FILE *md, const cmp *C, const char *file, const char *alt) {
    for (int i = 0; i < C->n_written; i++)
        if (!strcmp(C->written[i], file)) {
            fprintf(md, "![%s](%s)\n\n", alt, file);
            return;
        }
}

/* ---- compare.md ---- */

/* One run's figure over the summary's window: the mean of its values there (the cumulative Vendi/n: its
 * value at the window's last iteration, always computed, or none: a run past the cap there has none, not
 * an earlier iteration's, which would compare a shorter run so far with the other runs'). */
static double run_window(const cmp *C, const cmp_run *R, int metric) {
    if (metric == M_CUM) return R->cum[C->n_its - 1];
    double sum = 0;
    int k = 0;
    for (int i = C->w0; i < C->n_its; i++) {
        double v = run_metric(R, metric, i);
        if (isfinite(v)) sum += v, k++;
    }
    return k ? sum / k : NAN;
}

static void summary_head(FILE *md, const cmp *C) {
    fprintf(md, "| metric |");
    for (int a = 0; a < C->n_arms; a++) fprintf(md, " %s |", C->arms[a].name);
    for (int a = 1; a < C->n_arms; a++) fprintf(md, " %s − %s |", C->arms[0].name, C->arms[a].name);
    fprintf(md, "\n|---|");
    for (int a = 1; a < 2 * C->n_arms; a++) fprintf(md, "---:|");
    fprintf(md, "\n");
}

/* A pooled share over the window, per arm, and the first arm minus each other (Newcombe). */
static void summary_share(FILE *md, const cmp *C, const char *name, int what) {
    long k[MAX_ARMS], n[MAX_ARMS];
    char b[96];
    fprintf(md, "| %s |", name);
    for (int a = 0; a < C->n_arms; a++) {
        arm_counts(C, &C->arms[a], C->w0, C->n_its, what, &k[a], &n[a]);
        share_cell(b, sizeof b, k[a], n[a]);
        fprintf(md, " %s |", b);
    }
    for (int a = 1; a < C->n_arms; a++) {
        double lo = NAN, hi = NAN, d = NAN;
        if (n[0] > 0 && n[a] > 0) {
            d = (double)k[0] / n[0] - (double)k[a] / n[a];
            newcombe(k[0], n[0], k[a], n[a], &lo, &hi);
        }
        diff_cell(b, sizeof b, d, 1, lo, hi);
        fprintf(md, " %s |", b);
    }
    fprintf(md, "\n");
}

/* A mean over each arm's runs of the runs' window figures, and the first arm minus each other (Welch). */
static void summary_mean(FILE *md, const cmp *C, int metric) {
    stat_ci s[MAX_ARMS];
    char b[96];
    fprintf(md, "| %s |", metric_names[metric]);
    for (int a = 0; a < C->n_arms; a++) {
        double v[MAX_RUNS];
        for (int r = 0; r < C->arms[a].n; r++) v[r] = run_window(C, &C->arms[a].runs[r], metric);
        s[a] = mean_ci(v, C->arms[a].n);
        mean_cell(b, sizeof b, clamp_ci(s[a], metric));
        fprintf(md, " %s |", b);
    }
    for (int a = 1; a < C->n_arms; a++) {
        double lo = NAN, hi = NAN;
        int ok = welch(s[0], s[a], &lo, &hi) == 0;
        diff_cell(b, sizeof b, s[0].n && s[a].n ? s[0].mean - s[a].mean : NAN, ok, lo, hi);
        fprintf(md, " %s |", b);
    }
    fprintf(md, "\n");
}

static void md_summary(FILE *md, const cmp *C) {
    fprintf(md, "## Over the last %d iteration%s (%d to %d)\n\n", C->n_its - C->w0, C->n_its - C->w0 == 1 ? "" : "s",
            C->its[C->w0], C->its[C->n_its - 1]);
    fprintf(md, "Shares pool the environments of an arm's runs over these iterations (k/n = share [Wilson 95%%]); "
                "their difference has Newcombe's 95%% interval, which takes the environments as independent and "
                "so ignores how runs differ. The other rows average each run over these iterations (the run so far: "
                "its value at the last of them, none for a run capped there), then the runs: mean [t 95%% interval "
                "over runs] (runs with a "
                "value); the difference has Welch's 95%% interval, and none when an arm has fewer than 2 runs with "
                "a value.\n\n");
    summary_head(md, C);
    summary_share(md, C, "valid share", -1);
    if (C->novelty >= 0) summary_share(md, C, "near-copies (refused by novelty)", C->novelty);
    for (int g = 0; g < C->n_gates; g++) {
        long k = 0, n;
        for (int a = 0; a < C->n_arms; a++) {
            long ka;
            arm_counts(C, &C->arms[a], C->w0, C->n_its, g, &ka, &n);
            k += ka;
        }
        char name[64];
        snprintf(name, sizeof name, "failed %s first", C->gates[g]);
        if (k > 0 && g != C->novelty) summary_share(md, C, name, g);
    }
    for (int m = 0; m < N_METRICS; m++)
        if ((m != M_CUM || C->has_cum) && (m != M_EVAL || C->has_eval) && (m != M_TIME || C->has_time))
            summary_mean(md, C, m);
    fprintf(md, "\n");
}

/* Per arm: the environments written, valid and stopped at each gate, pooled over its runs. */
static void md_counts(FILE *md, const cmp *C, const cmp_arm *A) {
    int show[MAX_GATES], ns = 0;
    for (int g = 0; g < C->n_gates; g++) {
        long k = 0, n;
        for (int a = 0; a < C->n_arms; a++) {
            long ka;
            arm_counts(C, &C->arms[a], 0, C->n_its, g, &ka, &n);
            k += ka;
        }
        if (k > 0 || g == C->novelty) show[ns++] = g;
    }
    fprintf(md, "### %s: validity by gate (%d run%s pooled)\n\n| iteration | written | valid |", A->name, A->n,
            A->n == 1 ? "" : "s");
    for (int s = 0; s < ns; s++)
        fprintf(md, " %s |", show[s] == C->novelty ? "near-copies (novelty)" : C->gates[show[s]]);
    fprintf(md, "\n|---:|---:|---:|");
    for (int s = 0; s < ns; s++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (int i = 0; i < C->n_its; i++) {
        long k, n;
        char b[96];
        arm_counts(C, A, i, i + 1, -1, &k, &n);
        share_cell(b, sizeof b, k, n);
        fprintf(md, "| %d | %ld | %s |", C->its[i], n, b);
        for (int s = 0; s < ns; s++) {
            arm_counts(C, A, i, i + 1, show[s], &k, &n);
            share_cell(b, sizeof b, k, n);
            fprintf(md, " %s |", b);
        }
        fprintf(md, "\n");
    }
    fprintf(md, "\n");
}

/* Per metric: the arms side by side, iteration by iteration. */
static void md_metric(FILE *md, const cmp *C, int metric) {
    fprintf(md, "### %s\n\n| iteration |", metric_names[metric]);
    for (int a = 0; a < C->n_arms; a++) fprintf(md, " %s |", C->arms[a].name);
    fprintf(md, "\n|---:|");
    for (int a = 0; a < C->n_arms; a++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (int i = 0; i < C->n_its; i++) {
        int any = 0;
        char b[MAX_ARMS][96];
        for (int a = 0; a < C->n_arms; a++) {
            stat_ci s = arm_metric(&C->arms[a], metric, i);
            mean_cell(b[a], sizeof b[a], s);
            any |= s.n > 0;
        }
        if (!any && (metric == M_CUM || metric == M_EVAL)) continue; /* not measured at this iteration */
        fprintf(md, "| %d |", C->its[i]);
        for (int a = 0; a < C->n_arms; a++) fprintf(md, " %s |", b[a]);
        fprintf(md, "\n");
    }
    fprintf(md, "\n");
}

/* The title, the arms and their runs, the iterations compared, and what is left out and why. */
static void md_head(FILE *md, const cmp *C) {
    fprintf(md,
            "# Comparison of %d arm%s\n\nWritten by `spade report --compare`. Iterations are numbered from 0 as "
            "everywhere in spade.\n\n",
            C->n_arms, C->n_arms == 1 ? "" : "s");
    int unequal = 0;
    for (int a = 0; a < C->n_arms; a++) {
        const cmp_arm *A = &C->arms[a];
        fprintf(md, "- **%s**: %d run%s:", A->name, A->n, A->n == 1 ? "" : "s");
        for (int r = 0; r < A->n; r++) {
            const run_log *L = &A->runs[r].L;
            fprintf(md, "%s `%s` (%d iteration%s, %d to %d)", r ? "," : "", A->runs[r].dir, L->n, L->n == 1 ? "" : "s",
                    L->rows[0].iteration, L->rows[L->n - 1].iteration);
            unequal |= L->n != C->n_its;
        }
        fprintf(md, "\n");
    }
    fprintf(md, "\nCompared over the %d iteration%s every run has (%d to %d)%s.\n\n", C->n_its,
            C->n_its == 1 ? "" : "s", C->its[0], C->its[C->n_its - 1],
            unequal ? "; **the runs are of unequal length**: a longer run's other iterations are left out" : "");
    for (int a = 0; a < C->n_arms; a++)
        for (int r = 0; r < C->arms[a].n; r++) {
            const cmp_run *R = &C->arms[a].runs[r];
            for (int w = 0; w < R->L.n_warnings; w++) fprintf(md, "> **Warning:** %s\n\n", R->L.warnings[w]);
            if (R->cum_none)
                fprintf(md, "> `%s` has %s: its Vendi/n of the run so far is left out.\n\n", R->dir, R->cum_none);
            if (R->cum_from_source)
                fprintf(md,
                        "> `%s`: %d valid environment%s of the archive had no stored embedding, embedded from "
                        "the source as `spade vendi` does.\n\n",
                        R->dir, R->cum_from_source, R->cum_from_source == 1 ? "" : "s");
            if (R->cum_capped)
                fprintf(md,
                        "> **Capped:** `%s` has more than %d valid environments from iteration %d on: its Vendi/n "
                        "of the run so far is left out from there (a dash), in the tables and plots and in the "
                        "summary when its window ends there; it is never computed over part of them%s.\n\n",
                        R->dir, C->max_envs, R->cum_capped_at,
                        C->max_envs < MAX_CUM_ENVS ? " (the cap lowered by " MAX_CUM_ENVS_ENV ", a testing knob)" : "");
        }
    if (C->n_its > MAX_CUM_POINTS)
        fprintf(md,
                "Vendi/n of the run so far is computed at every %d-th common iteration and the last (at most %d "
                "points).\n\n",
                (C->n_its + MAX_CUM_POINTS - 1) / MAX_CUM_POINTS, MAX_CUM_POINTS);
    fprintf(md, "Two Vendi/n figures: **within the iteration** is train.jsonl's `vendi_n`, the valid environments of "
                "that iteration among themselves; **of the run so far** is computed here from the run's archive "
                "(`spade.db`): every valid environment the run wrote up to that iteration, by the embedding the "
                "loop stored with it, the one `vendi_n` used (a template's fillings; a written source's "
                "5-grams: docs/selfplay.md, \"Diversity\"), one run at a time (never pooled over seeds, which "
                "would count different seeds' environments as diversity).\n\n");
    if (!C->has_eval)
        fprintf(md,
                "No held-out success: no run's `train.jsonl` has an `\"eval\"` key at the iterations compared.\n\n");
}

static int write_md(const cmp *C, const char *path) {
    FILE *md = fopen(path, "w");
    if (!md) return cli_err(-1, "report", "%s: %s", path, strerror(errno));
    md_head(md, C);
    md_summary(md, C);
    fprintf(md, "## Over iterations\n\n");
    link_plot(md, C, "validity.svg", "valid share");
    link_plot(md, C, "nearcopies.svg", "near-copies");
    link_plot(md, C, "pass.svg", "pass rates");
    link_plot(md, C, "regret.svg", "regret");
    link_plot(md, C, "designer_reward.svg", "designer reward");
    link_plot(md, C, "vendi.svg", "Vendi / n");
    link_plot(md, C, "heldout.svg", "held-out success");
    link_plot(md, C, "time.svg", "seconds per iteration");
    fprintf(md,
            "Plots draw each arm in one colour: its mean (a pooled share for validity) and, thin and dashed, "
            "its 95%% interval; a gap is an iteration with no value (nothing valid to play), never a zero.\n\n"
            "In the tables a share is k/n = share [Wilson 95%%], pooled over the arm's runs; a mean is over the "
            "arm's runs with a value: mean [t 95%% interval, cut to the metric's range: a rate to [0, 1], regret to "
            "[-1, 1]] (runs), or value (1) with one run, which has no "
            "interval; – is no value.\n\n");
    for (int a = 0; a < C->n_arms; a++) md_counts(md, C, &C->arms[a]);
    for (int m = 0; m < N_METRICS; m++)
        if ((m != M_CUM || C->has_cum) && (m != M_EVAL || C->has_eval) && (m != M_TIME || C->has_time))
            md_metric(md, C, m);
    if (fclose(md) != 0) return cli_err(-1, "report", "%s: write failed", path);
    return 0;
}

static void free_cmp(cmp *C) {
    for (int a = 0; a < C->n_arms; a++)
        for (int r = 0; r < C->arms[a].n; r++) {
            free(C->arms[a].runs[r].L.rows);
            free(C->arms[a].runs[r].at);
            free(C->arms[a].runs[r].cum);
        }
    free(C->its);
    free(C->x);
}

/* Reads every arm's runs, the iterations they share and each run's cumulative Vendi/n. 0, or a CLI code. */
static int load(cmp *C, int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        int rc = parse_arm(C, argv[i]);
        if (rc) return rc;
    }
    for (int a = 0; a < C->n_arms; a++)
        for (int r = 0; r < C->arms[a].n; r++) {
            int rc = read_run(&C->arms[a].runs[r], C->arms[a].name);
            if (rc) return rc;
        }
    if (common_iterations(C) < 0) return CLI_FAIL;
    C->max_envs = max_cum_envs();
    for (int a = 0; a < C->n_arms; a++)
        for (int r = 0; r < C->arms[a].n; r++) {
            cmp_run *R = &C->arms[a].runs[r];
            if (R->L.n != C->n_its)
                fprintf(stderr,
                        "spade report: warning: %s has %d iterations, %d of them in every run: the comparison "
                        "covers those %d\n",
                        R->dir, R->L.n, C->n_its, C->n_its);
            cumulative_vendi(C, R);
            if (R->cum_capped)
                fprintf(stderr,
                        "spade report: warning: %s has more than %d valid environments from iteration %d on: its "
                        "Vendi/n of the run so far is left out from there\n",
                        R->dir, C->max_envs, R->cum_capped_at);
            for (int i = 0; i < C->n_its; i++) {
                C->has_cum |= isfinite(R->cum[i]);
                C->has_eval |= isfinite(R->L.rows[R->at[i]].eval);
                C->has_time |= isfinite(R->L.rows[R->at[i]].t_total);
            }
        }
    return 0;
}

int cli_report_compare(int argc, char **argv, const char *out, long last) {
    static cmp C;
    memset(&C, 0, sizeof C);
    int rc = load(&C, argc, argv);
    if (rc) {
        free_cmp(&C);
        return rc;
    }
    C.w0 = last > 0 && last < C.n_its ? C.n_its - (int)last : 0;
    snprintf(C.dir, sizeof C.dir, "%s", out ? out : "compare");
    char md_path[SPADE_PATH_MAX + 16];
    snprintf(md_path, sizeof md_path, "%s/compare.md", C.dir);
    if (cli_mkdir_p(C.dir) < 0) {
        cli_err(CLI_FAIL, "report", "%s: %s", C.dir, strerror(errno));
        free_cmp(&C);
        return CLI_FAIL;
    }
    if (!(C.x = malloc(sizeof *C.x * (size_t)C.n_its))) {
        free_cmp(&C);
        return cli_err(CLI_FAIL, "report", "out of memory");
    }
    for (int i = 0; i < C.n_its; i++) C.x[i] = C.its[i];
    compare_plots(&C);
    if (write_md(&C, md_path) < 0) C.failed = 1;
    if (!C.failed) {
        printf("spade report: compared %d arm%s over %d common iteration%s: wrote %s and %d plot%s:", C.n_arms,
               C.n_arms == 1 ? "" : "s", C.n_its, C.n_its == 1 ? "" : "s", md_path, C.n_written,
               C.n_written == 1 ? "" : "s");
        for (int i = 0; i < C.n_written; i++) printf(" %s", C.written[i]);
        printf("\n");
    }
    free_cmp(&C);
    return C.failed ? CLI_FAIL : CLI_OK;
}
