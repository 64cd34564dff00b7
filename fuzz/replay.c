/* replay.c — the replay driver of the fuzz harnesses: a main that feeds
 * every file named on the command line (a directory: every file in it,
 * in name order, one level down as well) to the harness's
 * LLVMFuzzerTestOneInput, once each, so `make check` runs each corpus and
 * every kept crash reproducer (fuzz/regress/NAME/) with the normal compiler.
 * A harness that finds a fault aborts or crashes, and so does this program.
 * What it is not: a fuzzer (no mutation, no coverage); `make fuzz` is.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long files;

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0, k;
    uint8_t *b = malloc(cap);
    while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    /* an exact-size copy, so a harness reading one byte past the input is caught by ASan builds */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(b);
        return -1;
    }
    memcpy(exact, b, n);
    free(b);
    if (getenv("SPADE_REPLAY_VERBOSE")) fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    files++;
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_path(const char *path, int depth) {
    struct stat st;
    if (stat(path, &st)) {
        fprintf(stderr, "replay: %s: no such file or directory\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return run_file(path);
    if (depth > 1) return 0;
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue; /* ., .., and a .gitkeep */
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = -1;
            break;
        }
        snprintf(names[n++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (!rc && run_path(names[i], depth + 1) < 0) rc = -1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (run_path(argv[i], 0) < 0) return 1;
    printf("%ld inputs replayed\n", files);
    return 0;
}
