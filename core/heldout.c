/* heldout.c — finding the held-out suite and refusing its files to loaders
 * (heldout.h says what the guard promises and what it does not).
 *
 * What it is not: a registry. Files are listed with readdir and read with
 * spade_read_source; nothing here compiles or runs an environment.
 */
#include "heldout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errbuf.h"
#include "registry.h"
#include "source.h"

struct spade_heldout_guard {
    char dir[SPADE_PATH_MAX];
    int n;
    uint64_t print[SPADE_HELDOUT_MAX_FILES];
    char name[SPADE_HELDOUT_MAX_FILES][64];
};

static int has_marker(const char *dir) {
    char p[SPADE_PATH_MAX + 16];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, SPADE_HELDOUT_MARKER) >= (int)sizeof p) return 0;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int spade_heldout_dir(char *out, size_t cap, char *err, size_t errlen) {
    const char *env = getenv("SPADE_HELDOUT");
    if (env && *env) {
        if (!has_marker(env)) {
            spade_errf(err, errlen, "SPADE_HELDOUT=%s: not a held-out suite (no %s marker file there)", env,
                       SPADE_HELDOUT_MARKER);
            return -1;
        }
        if (snprintf(out, cap, "%s", env) >= (int)cap) goto too_long;
        return 0;
    }
    char place[SPADE_PATH_MAX];
    spade_data_path("eval/heldout", place, sizeof place);
    if (has_marker(place)) {
        if (snprintf(out, cap, "%s", place) >= (int)cap) goto too_long;
        return 0;
    }
    spade_errf(err, errlen, "the held-out suite was not found (no %s in %s); set SPADE_HELDOUT", SPADE_HELDOUT_MARKER,
               place);
    return -1;
too_long:
    spade_errf(err, errlen, "the held-out suite's path is longer than %zu bytes", cap - 1);
    return -1;
}

int spade_heldout_files(const char *dir, char ***paths, int *n, char *err, size_t errlen) {
    char **stems;
    int k, missing;
    *paths = NULL;
    *n = 0;
    if (spade_dir_envs(dir, &stems, &k, &missing) < 0) {
        spade_errf(err, errlen, "%s: out of memory listing the environments", dir);
        return -1;
    }
    if (missing) {
        spade_errf(err, errlen, "%s: %s", dir, strerror(errno ? errno : ENOENT));
        return -1;
    }
    for (int i = 0; i < k; i++) { /* the stem becomes the full path, in place */
        size_t need = strlen(dir) + strlen(stems[i]) + 4;
        char *full = malloc(need);
        if (!full) {
            for (int j = 0; j < k; j++) free(stems[j]);
            free(stems);
            spade_errf(err, errlen, "%s: out of memory listing the environments", dir);
            return -1;
        }
        snprintf(full, need, "%s/%s.c", dir, stems[i]);
        free(stems[i]);
        stems[i] = full;
    }
    *paths = stems;
    *n = k;
    return 0;
}

int spade_path_is_heldout(const char *path) {
    char dir[SPADE_PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) return has_marker(".");
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir) return 0;
    memcpy(dir, path, n);
    dir[n] = 0;
    return has_marker(n ? dir : "/");
}

int spade_heldout_guard_new(spade_heldout_guard **out, const char *dir, char *err, size_t errlen) {
    spade_heldout_guard *g = calloc(1, sizeof *g);
    char **paths = NULL;
    int n = 0, rc = -1;
    *out = NULL;
    if (!g) {
        spade_errf(err, errlen, "held-out guard: out of memory");
        return -1;
    }
    if (dir)
        snprintf(g->dir, sizeof g->dir, "%s", dir);
    else if (spade_heldout_dir(g->dir, sizeof g->dir, err, errlen) < 0)
        goto done;
    if (spade_heldout_files(g->dir, &paths, &n, err, errlen) < 0) goto done;
    if (n == 0) {
        spade_errf(err, errlen, "%s: the held-out suite has no .c files", g->dir);
        goto done;
    }
    if (n > SPADE_HELDOUT_MAX_FILES) {
        spade_errf(err, errlen, "%s: more than %d held-out files", g->dir, SPADE_HELDOUT_MAX_FILES);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        char *src = NULL;
        size_t len = 0;
        if (spade_read_source(paths[i], &src, &len, err, errlen) < 0) goto done;
        g->print[i] = spade_source_fingerprint(src, len);
        free(src);
        const char *base = strrchr(paths[i], '/');
        snprintf(g->name[i], sizeof g->name[i], "%.*s", (int)strcspn(base + 1, "."), base + 1);
    }
    g->n = n;
    rc = 0;
done:
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
    if (rc == 0)
        *out = g;
    else
        free(g);
    return rc;
}

void spade_heldout_guard_free(spade_heldout_guard *g) { free(g); }

int spade_heldout_guard_count(const spade_heldout_guard *g) { return g ? g->n : 0; }

int spade_heldout_guard_refuses(const spade_heldout_guard *g, const char *path, const char *src, size_t len, char *why,
                                size_t whylen) {
    if (path && spade_path_is_heldout(path)) {
        spade_errf(why, whylen, "%s is in the held-out suite (its directory holds %s)", path, SPADE_HELDOUT_MARKER);
        return 1;
    }
    if (!src || !g) return 0;
    uint64_t h = spade_source_fingerprint(src, len);
    for (int i = 0; i < g->n; i++)
        if (g->print[i] == h) {
            spade_errf(why, whylen, "%s is a copy of the held-out environment %s (%s)", path ? path : "this source",
                       g->name[i], g->dir);
            return 1;
        }
    return 0;
}
