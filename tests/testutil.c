/* testutil.c — helpers the Check suites share (see testutil.h).
 * Not part of libspade: linked into each test program that uses it. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *tu_srcdir(void) {
    const char *s = getenv("srcdir");
    return s && *s ? s : SPADE_SRCDIR;
}

char *tu_read_env(const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/envs/%s", tu_srcdir(), name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(path, sizeof path, "%s/tests/envs/%s", SPADE_SRCDIR, name);
        f = fopen(path, "rb");
    }
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

spade_sandbox *tu_sandbox(const spade_sandbox_opts *o) {
    spade_sandbox *sb = NULL;
    char err[512];
    /* A compile is milliseconds, but make check beside busy loops has seen a
     * worker's load and revive outlast the library's 2 s default: a test that
     * does not test the compile deadline gets one no loaded machine reaches. */
    spade_sandbox_opts given = o ? *o : (spade_sandbox_opts){0};
    if (given.compile_timeout_s <= 0) given.compile_timeout_s = TU_COMPILE_TIMEOUT_S;
    ck_assert_msg(spade_sandbox_new(&sb, &given, err, sizeof err) == 0, "sandbox: %s", err);
    return sb;
}

int tu_count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own fd */
}

int tu_children_of(pid_t pid, pid_t *first) {
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int p = atoi(e->d_name);
        if (p <= 0) continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", p);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        const char *rp = strrchr(buf, ')'); /* the name may hold spaces */
        int ppid = 0;
        char state;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == pid) {
            if (first && n == 0) *first = p;
            n++;
        }
    }
    closedir(d);
    return n;
}

void tu_assert_reaped_at(pid_t pid, const char *file, int line) {
    int st;
    errno = 0;
    pid_t got = waitpid(pid, &st, WNOHANG);
    int e = errno;
    ck_assert_msg(got == -1 && e == ECHILD, "%s:%d: a child is left: waitpid(%d, WNOHANG) = %d%s%s", file, line,
                  (int)pid, (int)got, got == -1 ? ": " : "", got == -1 ? strerror(e) : "");
}

void tu_mkdtemp(char *dir, size_t cap, const char *tag) {
    const char *t = getenv("TMPDIR");
    int n = snprintf(dir, cap, "%s/spade-test-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    ck_assert_msg(n > 0 && (size_t)n < cap, "temporary directory name too long for %zu bytes", cap);
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) { return remove(path); }

int tu_rm_rf(const char *dir) {
    /* Depth first, and without following links: only what is below dir goes. */
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

unsigned long long tu_rng_seed(unsigned long long dflt) {
    const char *v = getenv("SPADE_TEST_RNG_SEED");
    if (!v || !*v) return dflt;
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    ck_assert_msg(!errno && !*end && *v != '-', "SPADE_TEST_RNG_SEED=%s is not a decimal number", v);
    return s;
}

static int tu_only_added; /* tests added that SPADE_TEST_ONLY named */

/* 1 when name is one of the comma-separated list's entries. */
static int tu_listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p += len + (e != NULL);
    }
    return 0;
}

void tu_add_test(TCase *tc, const TTest *tf) {
    const char *only = getenv("SPADE_TEST_ONLY");
    if (only && *only) {
        if (!tu_listed(only, tf->name)) return;
        tu_only_added++;
    }
    _tcase_add_test(tc, tf, 0, 0, 0, 1); /* what Check's own tcase_add_test expands to */
}

int tu_run(Suite *s) {
    const char *only = getenv("SPADE_TEST_ONLY");
    if (only && *only) {
        int names = 1;
        for (const char *p = only; *p; p++) names += *p == ',';
        if (tu_only_added != names) {
            fprintf(stderr, "SPADE_TEST_ONLY=%s: %d of its %d names are tests of this suite\n", only, tu_only_added,
                    names);
            return EXIT_FAILURE;
        }
    }
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tu_descendants(pid_t root, pid_t *child) {
    DIR *d = opendir("/proc");
    if (!d) return -1;
    /* Sizes are size_t and every allocation is checked: with an int count,
     * gcc saw calloc's argument as possibly negative (-Walloc-size-larger-than,
     * an error in the --enable-sanitizers build), and a failed realloc lost
     * the old array and wrote through NULL. */
    size_t cap = 4096, n = 0;
    pid_t *pid = malloc(sizeof(pid_t) * cap), *ppid = malloc(sizeof(pid_t) * cap);
    if (!pid || !ppid) {
        free(pid);
        free(ppid);
        closedir(d);
        return -1;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp) continue;
        size_t got = fread(buf, 1, sizeof buf - 1, fp);
        fclose(fp);
        buf[got] = '\0';
        char *rp = strrchr(buf, ')');
        int pp;
        char st;
        if (!rp || sscanf(rp + 1, " %c %d", &st, &pp) != 2) continue;
        if (n == cap) {
            pid_t *np = realloc(pid, sizeof(pid_t) * cap * 2);
            if (np) pid = np;
            pid_t *npp = np ? realloc(ppid, sizeof(pid_t) * cap * 2) : NULL;
            if (npp) ppid = npp;
            if (!np || !npp) {
                free(pid);
                free(ppid);
                closedir(d);
                return -1;
            }
            cap *= 2;
        }
        pid[n] = (pid_t)atoi(de->d_name);
        ppid[n] = pp;
        n++;
    }
    closedir(d);
    if (child) {
        *child = 0;
        for (size_t i = 0; i < n; i++)
            if (ppid[i] == root && (*child == 0 || pid[i] < *child)) *child = pid[i];
    }
    /* Mark descendants of root by repeated passes (the tree is small). */
    char *in = calloc(n ? n : 1, 1);
    if (!in) {
        free(pid);
        free(ppid);
        return -1;
    }
    int count = 0, changed = 1;
    while (changed) {
        changed = 0;
        for (size_t i = 0; i < n; i++) {
            if (in[i]) continue;
            int under = ppid[i] == root;
            for (size_t j = 0; !under && j < n; j++) under = in[j] && pid[j] == ppid[i];
            if (under) {
                in[i] = 1;
                count++;
                changed = 1;
            }
        }
    }
    free(in);
    free(pid);
    free(ppid);
    return count;
}

spade_policy *tu_tiny_policy(int context, uint64_t seed) {
    spade_gpt_config cfg;
    char err[512];
    spade_gpt_config_default(&cfg);
    cfg.layers = 1;
    cfg.heads = 2;
    cfg.width = 32;
    cfg.context = context;
    cfg.seed = seed;
    snprintf(cfg.backend, sizeof cfg.backend, "cpu");
    spade_policy *p;
    ck_assert_msg(spade_policy_new(&p, &cfg, err, sizeof err) == 0, "%s", err);
    return p;
}

typedef struct {
    double w;
    int tok;
} tu_cand;

static int tu_cand_desc(const void *a, const void *b) {
    const tu_cand *x = a, *y = b;
    return x->w > y->w ? -1 : x->w < y->w ? 1 : x->tok - y->tok;
}

double tu_sampled_logprob(const float *lp1, int V, double temp, double top_p, int tok) {
    tu_cand *c = malloc((size_t)V * sizeof *c);
    ck_assert(c != NULL);
    double mx = -INFINITY, total = 0;
    for (int v = 0; v < V; v++)
        if (lp1[v] / temp > mx) mx = lp1[v] / temp;
    for (int v = 0; v < V; v++) {
        c[v].w = exp(lp1[v] / temp - mx);
        c[v].tok = v;
        total += c[v].w;
    }
    qsort(c, (size_t)V, sizeof *c, tu_cand_desc);
    double kept = 0, wt = -1;
    for (int k = 0; k < V; k++) {
        kept += c[k].w;
        if (c[k].tok == tok) wt = c[k].w;
        if (kept >= top_p * total) break;
    }
    free(c);
    return wt < 0 ? -INFINITY : log(wt) - log(kept);
}

void tu_next_logprobs(spade_policy *p, const int *h, int n, float *out) {
    char e[256];
    spade_decoder *d = NULL;
    ck_assert_msg(spade_decoder_new(&d, p, 1, e, sizeof e) == 0, "decoder_new: %s", e);
    ck_assert_msg(spade_decoder_append(d, 0, h, n, e, sizeof e) == 0, "decoder_append: %s", e);
    ck_assert_msg(spade_decoder_next_logprobs(d, 0, out, e, sizeof e) == 0, "next_logprobs: %s", e);
    spade_decoder_free(d);
}

void tu_assert_grads_close_at(const char *file, int line, const spade_policy *p, const float *ref, const float *got,
                              double rel, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *name;
    size_t off, cnt;
    for (int t = 0; spade_policy_tensor(p, t, &name, &off, &cnt) == 0; t++) {
        double mx = 0, md = 0;
        size_t at = 0;
        for (size_t j = 0; j < cnt; j++) {
            double r = ref[off + j], d = fabs(r - got[off + j]);
            mx = fmax(mx, fabs(r));
            /* a NaN difference is kept (fmax would drop it): it fails below */
            if (!isnan(md) && !(d <= md)) md = d, at = j;
        }
        ck_assert_msg(md <= rel * mx + 1e-12,
                      "%s:%d: %s%sgrad %s[%zu]: %.9g vs %.9g, max diff %.3g, max |g| %.3g (tolerance %.3g relative)",
                      file, line, what, *what ? ": " : "", name, at, ref[off + at], got[off + at], md, mx, rel);
    }
}

double tu_grpo_loss(spade_policy *p, spade_policy *ref, const float *w, const spade_grpo_sample *s, int n,
                    const spade_grpo_opts *o) {
    char err[512];
    ck_assert_msg(spade_policy_set_params(p, w, err, sizeof err) == 0, "%s", err);
    spade_grpo_stats st;
    ck_assert_msg(spade_grpo_batch(p, ref, s, n, o, &st, err, sizeof err) == 0, "%s", err);
    return st.loss;
}

/* The central difference of loss along d at step h. */
static double central_diff(tu_loss_fn loss, void *ctx, const float *w, float *wd, const float *d, size_t P, double h) {
    for (size_t j = 0; j < P; j++) wd[j] = w[j] + (float)h * d[j];
    double lp = loss(ctx, wd);
    for (size_t j = 0; j < P; j++) wd[j] = w[j] - (float)h * d[j];
    double lm = loss(ctx, wd);
    return (lp - lm) / (2 * h);
}

double tu_richardson_diff(tu_loss_fn loss, void *ctx, const float *w, float *wd, const float *d, size_t P, double h) {
    return (4 * central_diff(loss, ctx, w, wd, d, P, h / 2) - central_diff(loss, ctx, w, wd, d, P, h)) / 3;
}

typedef struct grpo_loss_ctx {
    spade_policy *p, *ref;
    const spade_grpo_sample *s;
    int n;
    const spade_grpo_opts *o;
} grpo_loss_ctx;

static double grpo_loss_at(void *ctx, const float *w) {
    grpo_loss_ctx *c = ctx;
    return tu_grpo_loss(c->p, c->ref, w, c->s, c->n, c->o);
}

double tu_grpo_richardson(spade_policy *p, spade_policy *ref, const float *w, float *wd, const float *d, size_t P,
                          double h, const spade_grpo_sample *s, int n, const spade_grpo_opts *o) {
    grpo_loss_ctx c = {.p = p, .ref = ref, .s = s, .n = n, .o = o};
    return tu_richardson_diff(grpo_loss_at, &c, w, wd, d, P, h);
}
