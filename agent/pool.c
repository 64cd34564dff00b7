/* pool.c — the fixed pool and its refresh between iterations (pool.h).
 *
 * What it is not: a file watcher. Changes are seen by a stat of each file
 * at a refresh; a file changed twice within one mtime tick and the same size
 * is also caught because its content is compared, not only its mtime.
 */
#include "agent/pool.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errbuf.h"
#include "host.h"

struct spade_pool {
    spade_sandbox *sb;
    const spade_heldout_guard *guard;
    spade_pool_report_fn report;
    void *ctx;
    char dirs[16][SPADE_PATH_MAX];
    int n_dirs;
    spade_pool_entry *e;
    int n;
    /* directory files that did not load: not retried (nor reported again) until they change */
    struct rejected {
        char path[SPADE_PATH_MAX];
        uint64_t content; /* FNV-1a of the bytes that did not load */
    } * rej;
    int n_rej;
};

static uint64_t bytes_hash(const char *src, size_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)src[i]) * 1099511628211ULL;
    return h;
}

static uint64_t content_hash(const char *path) {
    char *src = NULL, e[8];
    size_t len;
    if (spade_read_source(path, &src, &len, e, sizeof e) < 0) return 0;
    uint64_t h = bytes_hash(src, len);
    free(src);
    return h;
}

/* 1 when path was rejected with the content it has now; else 0 (and it is forgotten). */
static int still_rejected(spade_pool *p, const char *path) {
    for (int i = 0; i < p->n_rej; i++)
        if (!strcmp(p->rej[i].path, path)) {
            if (content_hash(path) == p->rej[i].content) return 1;
            p->rej[i] = p->rej[--p->n_rej];
            return 0;
        }
    return 0;
}

/* Remembers the bytes that did not load (not the file as it is now: it may
 * have been half written when it was read, and be whole by now). */
static void reject(spade_pool *p, const char *path, const char *src, size_t len) {
    if (p->n_rej == SPADE_POOL_MAX) return;
    snprintf(p->rej[p->n_rej].path, SPADE_PATH_MAX, "%s", path);
    p->rej[p->n_rej++].content = bytes_hash(src, len);
}

static void say(spade_pool *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(spade_pool *p, const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (p->report) p->report(p->ctx, line);
}

/* Compiles src in a worker and checks the params; fills family. 0 or -1 with why. */
static int try_load(spade_pool *p, const char *path, const char *src, size_t len, const char *params, char *family,
                    char *why, size_t whylen) {
    spade_worker *w = NULL;
    spade_failure f;
    if (spade_worker_load(p->sb, path, src, len, &w, &f) < 0) {
        spade_errf(why, whylen, "%s: %s", spade_outcome_name(f.outcome), f.message);
        return -1;
    }
    const spade_env_info *info = spade_worker_info(w);
    double values[SPADE_INFO_MAX_PARAMS];
    char e[512];
    int rc = 0;
    if (params && *params && spade_params_parse(info, params, values, e, sizeof e) < 0) {
        spade_errf(why, whylen, "%s: params: %s", path, e);
        rc = -1;
    }
    snprintf(family, 32, "%s", info->family);
    spade_worker_free(w);
    return rc;
}

static int add_entry(spade_pool *p, const char *name, const char *path, const char *params, int from_dir, char *err,
                     size_t errlen) {
    if (p->n == SPADE_POOL_MAX) {
        spade_errf(err, errlen, "pool: more than %d environments", SPADE_POOL_MAX);
        return -1;
    }
    char *src = NULL, why[2048];
    size_t len;
    struct stat st;
    if (spade_read_source(path, &src, &len, err, errlen) < 0 || stat(path, &st) < 0) {
        free(src);
        return from_dir ? 0 : -1; /* a directory file that vanished is simply not there */
    }
    if (p->guard && spade_heldout_guard_refuses(p->guard, path, src, len, why, sizeof why)) {
        say(p, "pool: %s refused: %s", path, why);
        reject(p, path, src, len);
        free(src);
        if (!from_dir) {
            spade_errf(err, errlen, "pool: %s", why);
            return -1;
        }
        return 0;
    }
    spade_pool_entry *e = &p->e[p->n];
    memset(e, 0, sizeof *e);
    if (try_load(p, path, src, len, params, e->family, why, sizeof why) < 0) {
        if (from_dir) reject(p, path, src, len);
        free(src);
        if (!from_dir) {
            spade_errf(err, errlen, "pool: %s", why);
            return -1;
        }
        say(p, "pool: %s does not load, left out until it does: %s", path, why);
        return 0;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->path, sizeof e->path, "%s", path);
    snprintf(e->params, sizeof e->params, "%s", params ? params : "");
    e->source = src;
    e->len = len;
    e->from_dir = from_dir;
    e->mtime = st.st_mtime;
    e->size = st.st_size;
    e->version = 1;
    p->n++;
    return 1;
}

static int scan(spade_pool *p, int initial, char *err, size_t errlen) {
    int changed = 0;
    for (int k = 0; k < p->n_dirs; k++) {
        char **names;
        int n, missing;
        if (spade_dir_envs(p->dirs[k], &names, &n, &missing) < 0 || missing) {
            if (!missing) {
                spade_errf(err, errlen, "pool: out of memory listing %s", p->dirs[k]);
                return -1;
            }
            if (initial) {
                spade_errf(err, errlen, "pool: cannot read the directory %s", p->dirs[k]);
                return -1;
            }
            continue;
        }
        for (int i = 0; i < n; i++) {
            char path[SPADE_PATH_MAX], name[64];
            snprintf(path, sizeof path, "%s/%s.c", p->dirs[k], names[i]);
            snprintf(name, sizeof name, "%s", names[i]);
            int at = -1;
            for (int j = 0; j < p->n && at < 0; j++)
                if (p->e[j].from_dir && !strcmp(p->e[j].path, path)) at = j;
            if (at < 0) {
                if (still_rejected(p, path)) continue;
                int rc = add_entry(p, name, path, NULL, 1, err, errlen);
                if (rc < 0 && initial) return -1;
                if (rc > 0) {
                    changed++;
                    if (!initial) say(p, "pool: %s joined (%s)", name, path);
                }
                continue;
            }
            spade_pool_entry *e = &p->e[at];
            struct stat st;
            if (stat(path, &st) < 0 ||
                (st.st_mtime == e->mtime && st.st_size == e->size && time(NULL) - st.st_mtime > 2))
                continue;
            char *src = NULL, why[2048], family[32];
            size_t len;
            if (spade_read_source(path, &src, &len, why, sizeof why) < 0) continue;
            if (len == e->len && !memcmp(src, e->source, len)) {
                e->mtime = st.st_mtime;
                e->size = st.st_size;
                free(src);
                continue;
            }
            if ((p->guard && spade_heldout_guard_refuses(p->guard, path, src, len, why, sizeof why)) ||
                try_load(p, path, src, len, NULL, family, why, sizeof why) < 0) {
                say(p, "pool: %s changed but does not load; version %d keeps serving: %s", name, e->version, why);
                e->mtime = st.st_mtime; /* the same broken content is not retried until it changes again */
                e->size = st.st_size;
                free(src);
                continue;
            }
            free(e->source);
            e->source = src;
            e->len = len;
            e->mtime = st.st_mtime;
            e->size = st.st_size;
            snprintf(e->family, sizeof e->family, "%s", family);
            e->version++;
            changed++;
            say(p, "pool: %s reloaded (version %d)", name, e->version);
        }
        for (int i = 0; i < n; i++) free(names[i]);
        free(names);
    }
    return changed;
}

int spade_pool_new(spade_pool **out, spade_sandbox *sb, const spade_registry *reg, const char *const *specs,
                   int n_specs, const char *const *dirs, int n_dirs, const spade_heldout_guard *guard,
                   spade_pool_report_fn report, void *ctx, char *err, size_t errlen) {
    spade_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p || !(p->e = calloc(SPADE_POOL_MAX, sizeof *p->e)) || !(p->rej = calloc(SPADE_POOL_MAX, sizeof *p->rej))) {
        if (p) free(p->e);
        free(p);
        spade_errf(err, errlen, "pool: out of memory");
        return -1;
    }
    p->sb = sb;
    p->guard = guard;
    p->report = report;
    p->ctx = ctx;
    for (int i = 0; i < n_specs; i++) {
        char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX], name[64];
        if (spade_registry_resolve(reg, specs[i], path, sizeof path, params, sizeof params, err, errlen) < 0) goto fail;
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(base, "."), base);
        if (add_entry(p, name, path, params, 0, err, errlen) < 0) goto fail;
    }
    if (n_dirs > 16) {
        spade_errf(err, errlen, "pool: more than 16 directories");
        goto fail;
    }
    for (int i = 0; i < n_dirs; i++) snprintf(p->dirs[p->n_dirs++], SPADE_PATH_MAX, "%s", dirs[i]);
    if (scan(p, 1, err, errlen) < 0) goto fail;
    if (p->n == 0) {
        spade_errf(err, errlen, "pool: no environment (give [pool] envs or dirs)");
        goto fail;
    }
    *out = p;
    return 0;
fail:
    spade_pool_free(p);
    return -1;
}

void spade_pool_free(spade_pool *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->e[i].source);
    free(p->e);
    free(p->rej);
    free(p);
}

int spade_pool_count(const spade_pool *p) { return p->n; }
const spade_pool_entry *spade_pool_entry_at(const spade_pool *p, int i) { return i >= 0 && i < p->n ? &p->e[i] : NULL; }
int spade_pool_refresh(spade_pool *p, char *err, size_t errlen) { return scan(p, 0, err, errlen); }
