/* heldout.c — finding the held-out suite and refusing its files to loaders
 * (heldout.h says what the guard promises and what it does not).
 *
 * What it is not: a registry. Files are listed with readdir and read with
 * spade_read_source; nothing here compiles or runs an environment.
 */
#include "heldout.h"

#include <dirent.h>
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

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int spade_heldout_files(const char *dir, char ***paths, int *n, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    *paths = NULL;
    *n = 0;
    if (!d) {
        spade_errf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    char **list = calloc(SPADE_HELDOUT_MAX_FILES, sizeof *list);
    int k = 0;
    if (!list) goto oom;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        if (len < 3 || strcmp(de->d_name + len - 2, ".c")) continue;
        if (k == SPADE_HELDOUT_MAX_FILES) {
            spade_errf(err, errlen, "%s: more than %d held-out files", dir, SPADE_HELDOUT_MAX_FILES);
            goto fail;
        }
        size_t need = strlen(dir) + len + 2;
        if (!(list[k] = malloc(need))) goto oom;
        snprintf(list[k++], need, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    qsort(list, (size_t)k, sizeof *list, by_name);
    *paths = list;
    *n = k;
    return 0;
oom:
    spade_errf(err, errlen, "%s: out of memory listing the held-out suite", dir);
fail:
    for (int i = 0; list && i < k; i++) free(list[i]);
    free(list);
    closedir(d);
    return -1;
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
    if (dir) snprintf(g->dir, sizeof g->dir, "%s", dir);
    else if (spade_heldout_dir(g->dir, sizeof g->dir, err, errlen) < 0) goto done;
    if (spade_heldout_files(g->dir, &paths, &n, err, errlen) < 0) goto done;
    if (n == 0) {
        spade_errf(err, errlen, "%s: the held-out suite has no .c files", g->dir);
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
    if (rc == 0) *out = g;
    else free(g);
    return rc;
}

void spade_heldout_guard_free(spade_heldout_guard *g) { free(g); }

int spade_heldout_guard_count(const spade_heldout_guard *g) { return g ? g->n : 0; }

int spade_heldout_guard_refuses(const spade_heldout_guard *g, const char *path, const char *src, size_t len,
                                char *why, size_t whylen) {
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
