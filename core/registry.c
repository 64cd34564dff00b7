/* registry.c — environment lookup, listing, spec parsing and hot-loading (see
 * registry.h for the search order and the hot-loading contract).
 *
 * What it is not: a compiler. Every compile goes through the sandbox, so a
 * hostile file found on the path can at worst fail its own listing line.
 */
#include "registry.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errbuf.h"
#include "paths.h" /* generated: SPADE_PATHS_DATADIR, _SRCDIR, _BUILDDIR */

uint64_t spade_hash64(const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- specs ---------------------------------------------------------------- */

/* key=value[,key=value]* with identifier keys and non-empty values without
 * ':' or ','. Blanks around items are tolerated (spade_params_parse trims). */
static int looks_like_params(const char *s) {
    if (!*s) return 1;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!(isalpha((unsigned char)*p) || *p == '_')) return 0;
        while (isalnum((unsigned char)*p) || *p == '_') p++;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '=') return 0;
        p++;
        size_t vlen = 0;
        while (*p && *p != ',' && *p != ':' && *p != '/') p++, vlen++;
        if (!vlen || *p == ':' || *p == '/') return 0;
        if (!*p) return 1;
        p++; /* ',' */
    }
}

int spade_spec_parse(const char *text, spade_spec *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!text || !*text) {
        spade_errf(err, errlen, "empty environment spec (expected NAME_OR_FILE[:key=value,...])");
        return -1;
    }
    const char *colon = strrchr(text, ':');
    size_t tlen = strlen(text);
    const char *params = NULL;
    if (colon && looks_like_params(colon + 1)) {
        tlen = (size_t)(colon - text);
        params = colon + 1;
    } else if (colon && strchr(colon + 1, '=') && !strchr(colon + 1, '/')) {
        /* Something after the last ':' was meant as params but is malformed:
         * say so rather than report a missing file named "maze:size=". */
        spade_errf(err, errlen, "spec '%s': malformed params '%s' (expected key=value,...)", text, colon + 1);
        return -1;
    }
    if (!tlen) {
        spade_errf(err, errlen, "spec '%s': no environment name or file before ':'", text);
        return -1;
    }
    if (tlen >= sizeof out->target) {
        spade_errf(err, errlen, "spec: file name longer than %zu bytes", sizeof out->target - 1);
        return -1;
    }
    memcpy(out->target, text, tlen);
    out->target[tlen] = 0;
    if (params) {
        if (strlen(params) >= sizeof out->params) {
            spade_errf(err, errlen, "spec '%s': params longer than %zu bytes", out->target, sizeof out->params - 1);
            return -1;
        }
        strcpy(out->params, params);
    }
    return 0;
}

int spade_spec_is_path(const char *target) {
    size_t n = strlen(target);
    return strchr(target, '/') != NULL || (n > 2 && !strcmp(target + n - 2, ".c"));
}

int spade_name_valid(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > 63) return 0;
    if (!(islower((unsigned char)name[0]) || isdigit((unsigned char)name[0]))) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!(islower(c) || isdigit(c) || c == '_' || c == '-')) return 0;
    }
    return 1;
}

int spade_read_source(const char *path, char **out, size_t *len, char *err, size_t errlen) {
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        spade_errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        spade_errf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_size > SPADE_SOURCE_MAX) {
        spade_errf(err, errlen, "%s: %lld bytes, larger than the %d-byte limit for an environment source", path,
                   (long long)st.st_size, SPADE_SOURCE_MAX);
        close(fd);
        return -1;
    }
    /* Read to EOF rather than trusting st_size: the file may be growing while
     * an editor writes it; one byte more than the limit tells us it is too big. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        spade_errf(err, errlen, "%s: out of memory", path);
        close(fd);
        return -1;
    }
    for (;;) {
        if (n == cap) {
            if (cap > SPADE_SOURCE_MAX) break;
            size_t ncap = cap * 2 > SPADE_SOURCE_MAX + 1 ? SPADE_SOURCE_MAX + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) break;
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            spade_errf(err, errlen, "%s: read: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (n > SPADE_SOURCE_MAX) {
        spade_errf(err, errlen, "%s: larger than the %d-byte limit for an environment source", path, SPADE_SOURCE_MAX);
        free(buf);
        return -1;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

/* ---- the registry --------------------------------------------------------- */

struct spade_registry {
    int n;
    char **dirs;
    char **real; /* realpath of each, for deduplication */
};

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int add_dir(spade_registry *r, const char *dir) {
    if (!*dir || !is_dir(dir)) return 0;
    char *real = realpath(dir, NULL);
    if (!real) return 0;
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->real[i], real)) {
            free(real);
            return 0;
        }
    char **nd = realloc(r->dirs, sizeof *nd * (size_t)(r->n + 1));
    if (!nd) goto oom;
    r->dirs = nd;
    char **nr = realloc(r->real, sizeof *nr * (size_t)(r->n + 1));
    if (!nr) goto oom;
    r->real = nr;
    r->dirs[r->n] = strdup(dir);
    if (!r->dirs[r->n]) goto oom;
    r->real[r->n] = real;
    r->n++;
    return 0;
oom:
    free(real);
    return -1;
}

static void beside_binary(char *dir, size_t cap);

int spade_registry_new(spade_registry **out, const char *spade_path, int flags, char *err, size_t errlen) {
    *out = NULL;
    spade_registry *r = calloc(1, sizeof *r);
    if (!r) goto oom;
    if (!spade_path) spade_path = getenv("SPADE_PATH");
    if (spade_path) {
        const char *p = spade_path;
        while (*p) {
            const char *e = strchr(p, ':');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (n && n < SPADE_PATH_MAX) {
                char dir[SPADE_PATH_MAX];
                memcpy(dir, p, n);
                dir[n] = 0;
                if (add_dir(r, dir) < 0) goto oom;
            }
            p += n;
            if (*p == ':') p++;
        }
    }
    if (!(flags & SPADE_REGISTRY_NO_DEFAULTS)) {
        static const char *const defaults[] = {
            "plugins",
            "stdenv",
            SPADE_PATHS_DATADIR "/plugins",
            SPADE_PATHS_DATADIR "/stdenv",
            SPADE_PATHS_SRCDIR "/plugins",
            SPADE_PATHS_SRCDIR "/stdenv",
        };
        /* The source tree's directories are for the uninstalled build only:
         * an installed program finds the installed data (and the user's). */
        int un = spade_registry_uninstalled();
        size_t n = un ? 6 : 4;
        char here[SPADE_PATH_MAX], d[SPADE_PATH_MAX + 16];
        beside_binary(here, sizeof here);
        for (size_t i = 0; i < n; i++) {
            if (i == 2 && !un && here[0]) /* a moved build tree: its data beside its binary, before the installed */
                for (int k = 0; k < 2; k++) {
                    snprintf(d, sizeof d, "%s/%s", here, k ? "stdenv" : "plugins");
                    if (add_dir(r, d) < 0) goto oom;
                }
            if (add_dir(r, defaults[i]) < 0) goto oom;
        }
    }
    *out = r;
    return 0;
oom:
    spade_registry_free(r);
    spade_errf(err, errlen, "registry: out of memory");
    return -1;
}

/* The directory of the running program (not the installed bindir's): a built
 * tree copied or moved elsewhere keeps its data beside its binary. "" when it is
 * the installed program or cannot be read. */
static void beside_binary(char *dir, size_t cap) {
    char exe[SPADE_PATH_MAX], bin[SPADE_PATH_MAX];
    dir[0] = 0;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = 0;
    if (realpath(SPADE_PATHS_BINDIR, bin) && !strcmp(bin, exe)) return;
    snprintf(dir, cap, "%s", exe);
}

static int data_candidates(const char *sub, char out[4][SPADE_PATH_MAX + 64]) {
    int n = 0;
    char here[SPADE_PATH_MAX];
    if (spade_registry_uninstalled()) snprintf(out[n++], SPADE_PATH_MAX + 64, "%s/%s", SPADE_PATHS_SRCDIR, sub);
    beside_binary(here, sizeof here);
    if (here[0]) snprintf(out[n++], SPADE_PATH_MAX + 64, "%s/%s", here, sub);
    /* a staged install (make install DESTDIR=STAGE): the binary is STAGE + bindir, its data STAGE + datadir */
    size_t hl = strlen(here), bl = strlen(SPADE_PATHS_BINDIR);
    if (here[0] && hl > bl && !strcmp(here + hl - bl, SPADE_PATHS_BINDIR))
        snprintf(out[n++], SPADE_PATH_MAX + 64, "%.*s%s/%s", (int)(hl - bl), here, SPADE_PATHS_DATADIR, sub);
    snprintf(out[n++], SPADE_PATH_MAX + 64, "%s/%s", SPADE_PATHS_DATADIR, sub);
    return n;
}

const char *spade_data_path(const char *sub, char *out, size_t cap) {
    char c[4][SPADE_PATH_MAX + 64];
    int n = data_candidates(sub, c);
    struct stat st;
    int pick = n - 1; /* none there: the installed one, which the error names with spade_data_tried */
    for (int i = 0; i < n; i++)
        if (stat(c[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            pick = i;
            break;
        }
    snprintf(out, cap, "%s", c[pick]);
    return out;
}

const char *spade_data_tried(const char *sub, char *out, size_t cap) {
    char c[4][SPADE_PATH_MAX + 64];
    int n = data_candidates(sub, c);
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < n && at < cap; i++) at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? ", " : "", c[i]);
    return out;
}

int spade_registry_uninstalled(void) {
    /* The running program lives under the build directory: it was built
     * there and not installed (tests, ./spade). /proc/self/exe is the real
     * file, whatever symlink or relative path started it. */
    char exe[SPADE_PATH_MAX], build[SPADE_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || !realpath(SPADE_PATHS_BUILDDIR, build)) return 0;
    exe[n] = 0;
    size_t bl = strlen(build);
    return strncmp(exe, build, bl) == 0 && exe[bl] == '/';
}

void spade_registry_free(spade_registry *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        free(r->dirs[i]);
        free(r->real[i]);
    }
    free(r->dirs);
    free(r->real);
    free(r);
}

int spade_registry_num_dirs(const spade_registry *r) { return r->n; }
const char *spade_registry_dir(const spade_registry *r, int i) { return i >= 0 && i < r->n ? r->dirs[i] : NULL; }

static int is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int spade_registry_find(const spade_registry *r, const char *name, char *path, size_t pathcap, char *err,
                        size_t errlen) {
    if (spade_spec_is_path(name)) {
        if (!is_file(name)) {
            spade_errf(err, errlen, "%s: %s", name, is_dir(name) ? "is a directory" : "no such file");
            return -1;
        }
        if (strlen(name) >= pathcap) {
            spade_errf(err, errlen, "%s: path too long", name);
            return -1;
        }
        strcpy(path, name);
        return 0;
    }
    if (!spade_name_valid(name)) {
        spade_errf(err, errlen, "'%s' is neither a file (no '/' or '.c') nor a valid environment name ([a-z0-9_-]+)",
                   name);
        return -1;
    }
    for (int i = 0; i < r->n; i++) {
        char cand[SPADE_PATH_MAX];
        int k = snprintf(cand, sizeof cand, "%s/%s.c", r->dirs[i], name);
        if (k < 0 || (size_t)k >= sizeof cand) continue;
        if (is_file(cand)) {
            if (strlen(cand) >= pathcap) {
                spade_errf(err, errlen, "%s: path too long", cand);
                return -1;
            }
            strcpy(path, cand);
            return 0;
        }
    }
    /* Name every directory searched: "not found" alone sends people hunting. */
    size_t off = 0;
    int k = snprintf(err, errlen, "no environment named '%s' (looked for %s.c in:", name, name);
    if (k > 0) off = (size_t)k;
    for (int i = 0; i < r->n && off < errlen; i++) {
        k = snprintf(err + off, errlen - off, " %s", r->dirs[i]);
        if (k > 0) off += (size_t)k;
    }
    if (off < errlen)
        snprintf(err + off, errlen - off, "%s; set SPADE_PATH to add directories)", r->n ? "" : " nothing");
    return -1;
}

int spade_registry_resolve(const spade_registry *r, const char *specs, char *path, size_t pathcap, char *params,
                           size_t paramscap, char *err, size_t errlen) {
    spade_spec *sp = malloc(sizeof *sp);
    if (!sp) {
        spade_errf(err, errlen, "out of memory");
        return -1;
    }
    int rc = spade_spec_parse(specs, sp, err, errlen);
    if (!rc) rc = spade_registry_find(r, sp->target, path, pathcap, err, errlen);
    if (!rc && params) {
        if (strlen(sp->params) >= paramscap) {
            spade_errf(err, errlen, "spec '%s': params too long", specs);
            rc = -1;
        } else {
            strcpy(params, sp->params);
        }
    }
    free(sp);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int spade_dir_envs(const char *dir, char ***names, int *n, int *missing) {
    *names = NULL;
    *n = 0;
    if (missing) *missing = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (missing) *missing = 1;
        return 0;
    }
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".c")) continue;
        char stem[256];
        if (len - 2 >= sizeof stem) continue;
        memcpy(stem, e->d_name, len - 2);
        stem[len - 2] = 0;
        if (!spade_name_valid(stem)) continue;
        char full[SPADE_PATH_MAX];
        int k = snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (k < 0 || (size_t)k >= sizeof full || !is_file(full)) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(*names, sizeof *nn * (size_t)cap);
            if (!nn) goto oom;
            *names = nn;
        }
        (*names)[*n] = strdup(stem);
        if (!(*names)[*n]) goto oom;
        (*n)++;
    }
    closedir(d);
    if (*n) qsort(*names, (size_t)*n, sizeof **names, cmp_str);
    return 0;
oom:
    closedir(d);
    for (int i = 0; i < *n; i++) free((*names)[i]);
    free(*names);
    *names = NULL;
    *n = 0;
    return -1;
}

static void load_info(spade_sandbox *sb, spade_env_listing *L) {
    char *src = NULL;
    size_t len = 0;
    if (spade_read_source(L->path, &src, &len, L->error, sizeof L->error) < 0) return;
    spade_worker *w = NULL;
    spade_failure f;
    memset(&f, 0, sizeof f);
    if (spade_worker_load(sb, L->path, src, len, &w, &f) == 0 && w) {
        L->info = *spade_worker_info(w);
        L->ok = 1;
        spade_worker_free(w);
    } else {
        snprintf(L->error, sizeof L->error, "%s: %s", spade_outcome_name(f.outcome), f.message);
    }
    free(src);
}

int spade_registry_list(const spade_registry *r, spade_sandbox *sb, spade_env_listing **out, int *nout, char *err,
                        size_t errlen) {
    *out = NULL;
    *nout = 0;
    spade_env_listing *list = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < r->n; i++) {
        char **names;
        int nn;
        if (spade_dir_envs(r->dirs[i], &names, &nn, NULL) < 0) goto oom;
        for (int j = 0; j < nn; j++) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                spade_env_listing *nl = realloc(list, sizeof *nl * (size_t)cap);
                if (!nl) {
                    for (int k = j; k < nn; k++) free(names[k]);
                    free(names);
                    goto oom;
                }
                list = nl;
            }
            spade_env_listing *L = &list[n];
            memset(L, 0, sizeof *L);
            snprintf(L->name, sizeof L->name, "%s", names[j]);
            snprintf(L->path, sizeof L->path, "%s/%s.c", r->dirs[i], names[j]);
            for (int k = 0; k < n; k++)
                if (!strcmp(list[k].name, L->name)) L->shadowed = 1;
            n++;
            free(names[j]);
        }
        free(names);
    }
    if (sb)
        for (int i = 0; i < n; i++)
            if (!list[i].shadowed) load_info(sb, &list[i]);
    *out = list;
    *nout = n;
    return 0;
oom:
    free(list);
    spade_errf(err, errlen, "registry list: out of memory");
    return -1;
}

/* ---- hot-loading ---------------------------------------------------------- */

struct spade_hotenv {
    spade_sandbox *sb;
    char path[SPADE_PATH_MAX];
    char params[SPADE_SPEC_PARAMS_MAX];
    spade_hotenv_version *cur;
    /* What the file looked like when last examined, and the hash of content
     * that failed, so a broken file is compiled once, not on every acquire. */
    struct timespec mtime;
    off_t size;
    int have_stat;
    uint64_t failed_hash;
    int have_failed;
    spade_failure last;
    char last_error[1200];
    spade_hotenv_error_fn cb;
    void *cb_ctx;
};

static void fail(spade_failure *f, spade_outcome o, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(spade_failure *f, spade_outcome o, const char *fmt, ...) {
    memset(f, 0, sizeof *f);
    f->outcome = o;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
}

static void version_free(spade_hotenv_version *v) {
    if (!v) return;
    spade_worker_free(v->worker);
    free((char *)v->source);
    free(v);
}

/* Compiles src (taking ownership) into a new version. */
static spade_hotenv_version *version_build(spade_hotenv *h, char *src, size_t len, int generation, spade_failure *f) {
    spade_hotenv_version *v = calloc(1, sizeof *v);
    if (!v) {
        free(src);
        fail(f, SPADE_OUT_INTERNAL, "%s: out of memory", h->path);
        return NULL;
    }
    v->source = src;
    v->source_len = len;
    v->hash = spade_hash64(src, len);
    v->generation = generation;
    memset(f, 0, sizeof *f);
    if (spade_worker_load(h->sb, h->path, src, len, &v->worker, f) != 0 || !v->worker) {
        if (f->outcome == SPADE_OUT_OK) fail(f, SPADE_OUT_INTERNAL, "%s: load failed", h->path);
        v->worker = NULL;
        version_free(v);
        return NULL;
    }
    v->info = spade_worker_info(v->worker);
    char perr[512];
    if (spade_params_parse(v->info, h->params, v->param_values, perr, sizeof perr) != 0) {
        fail(f, SPADE_OUT_BAD_CALL, "%s: params: %s", h->path, perr);
        version_free(v);
        return NULL;
    }
    return v;
}

/* A file modified within the timestamp granularity of the last look can change
 * again without a new mtime or size (coarse filesystem clocks tick every few
 * ms; git calls this "racy"). While its mtime is that recent, compare content. */
static int racy(const struct timespec *mtime) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec - mtime->tv_sec <= 2;
}

static int stat_file(const char *path, struct timespec *mt, off_t *size) {
    struct stat st;
    if (stat(path, &st) < 0) return -1;
    *mt = st.st_mtim;
    *size = st.st_size;
    return 0;
}

int spade_hotenv_new(spade_hotenv **out, spade_sandbox *sb, const char *path, const char *params, spade_failure *f) {
    *out = NULL;
    spade_hotenv *h = calloc(1, sizeof *h);
    if (!h) {
        fail(f, SPADE_OUT_INTERNAL, "%s: out of memory", path);
        return -1;
    }
    h->sb = sb;
    if (strlen(path) >= sizeof h->path || (params && strlen(params) >= sizeof h->params)) {
        fail(f, SPADE_OUT_BAD_CALL, "%s: path or params too long", path);
        free(h);
        return -1;
    }
    strcpy(h->path, path);
    if (params) strcpy(h->params, params);
    if (stat_file(path, &h->mtime, &h->size) == 0) h->have_stat = 1;
    char *src;
    size_t len;
    char err[1024];
    if (spade_read_source(path, &src, &len, err, sizeof err) < 0) {
        fail(f, SPADE_OUT_BAD_CALL, "%s", err);
        free(h);
        return -1;
    }
    h->cur = version_build(h, src, len, 1, f);
    if (!h->cur) {
        free(h);
        return -1;
    }
    h->cur->refs_ = 1; /* the handle's own reference */
    *out = h;
    return 0;
}

void spade_hotenv_free(spade_hotenv *h) {
    if (!h) return;
    spade_hotenv_release(NULL, h->cur);
    free(h);
}

void spade_hotenv_set_error_callback(spade_hotenv *h, spade_hotenv_error_fn fn, void *ctx) {
    h->cb = fn;
    h->cb_ctx = ctx;
}

static void record_failure(spade_hotenv *h, const spade_failure *f) {
    h->last = *f;
    snprintf(h->last_error, sizeof h->last_error, "%s", f->message);
    if (h->cb) h->cb(h->cb_ctx, h->path, f);
}

/* clear: the file's current content is what now serves, so no error stands. */
static void install(spade_hotenv *h, spade_hotenv_version *nv, int clear) {
    nv->refs_ = 1;
    spade_hotenv_release(NULL, h->cur); /* drop the handle's reference to the old one */
    h->cur = nv;
    if (clear) {
        h->have_failed = 0;
        h->last_error[0] = 0;
        memset(&h->last, 0, sizeof h->last);
    }
}

int spade_hotenv_acquire(spade_hotenv *h, spade_hotenv_version **out, int *reloaded) {
    *out = NULL;
    if (reloaded) *reloaded = 0;
    struct timespec mt;
    off_t size;
    spade_failure f;
    if (stat_file(h->path, &mt, &size) < 0) {
        /* The file vanished (an editor's rename-into-place may be mid-way):
         * keep serving what we have, and say why nothing new loads. */
        fail(&f, SPADE_OUT_BAD_CALL, "%s: %s (serving the version loaded before)", h->path, strerror(errno));
        if (strcmp(h->last_error, f.message)) record_failure(h, &f);
    } else if (!h->have_stat || mt.tv_sec != h->mtime.tv_sec || mt.tv_nsec != h->mtime.tv_nsec || size != h->size ||
               racy(&h->mtime)) {
        char *src;
        size_t len;
        char err[1024];
        if (spade_read_source(h->path, &src, &len, err, sizeof err) < 0) {
            fail(&f, SPADE_OUT_BAD_CALL, "%s", err);
            record_failure(h, &f);
        } else {
            h->mtime = mt;
            h->size = size;
            h->have_stat = 1;
            uint64_t hash = spade_hash64(src, len);
            if (hash == h->cur->hash && len == h->cur->source_len && !memcmp(src, h->cur->source, len)) {
                /* touched, or reverted to the serving version */
                free(src);
                h->have_failed = 0;
                h->last_error[0] = 0;
            } else if (h->have_failed && hash == h->failed_hash) {
                free(src); /* same broken content: the error stands */
            } else {
                spade_hotenv_version *nv = version_build(h, src, len, h->cur->generation + 1, &f);
                if (nv) {
                    install(h, nv, 1);
                    if (reloaded) *reloaded = 1;
                } else {
                    h->have_failed = 1;
                    h->failed_hash = hash;
                    record_failure(h, &f);
                }
            }
        }
    }
    if (!spade_worker_alive(h->cur->worker)) {
        /* The environment crashed a worker: its code is the same, so a fresh
         * worker is the whole fix. Episodes holding the dead one see failures. */
        char *src = malloc(h->cur->source_len + 1);
        if (!src) return -1;
        memcpy(src, h->cur->source, h->cur->source_len + 1);
        spade_hotenv_version *nv = version_build(h, src, h->cur->source_len, h->cur->generation, &f);
        if (!nv) {
            record_failure(h, &f);
            return -1;
        }
        install(h, nv, 0);
    }
    h->cur->refs_++;
    *out = h->cur;
    return 0;
}

void spade_hotenv_release(spade_hotenv *h, spade_hotenv_version *v) {
    (void)h;
    if (v && --v->refs_ <= 0) version_free(v);
}

const char *spade_hotenv_last_error(const spade_hotenv *h) { return h->last_error; }
const spade_failure *spade_hotenv_last_failure(const spade_hotenv *h) { return &h->last; }
const char *spade_hotenv_path(const spade_hotenv *h) { return h->path; }
int spade_hotenv_generation(const spade_hotenv *h) { return h->cur->generation; }
