/* cmd_vendi.c — `spade vendi PATH...`: the diversity (Vendi score and
 * Vendi/n) of a set of environment sources: files, and directories whose *.c
 * files are taken (sorted, not recursive).
 * What it is not: the measure itself (core/vendi.h). A run directory's
 * archive will be read here once runs keep one.
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "vendi.h"

void cli_usage_vendi(FILE *out) {
    fprintf(out,
            "usage: spade vendi [--each] PATH...\n"
            "\n"
            "Prints the diversity of the environment sources named: each PATH is a .c file or a\n"
            "directory whose .c files are taken. Each source is embedded as hashed character\n"
            "%d-grams of its text with comments and whitespace removed; the Vendi score is the\n"
            "exponential of the entropy of the eigenvalues of the cosine kernel over n sources\n"
            "divided by n: 1 for n copies of one file, n for n files with nothing in common.\n"
            "The last line is `n N vendi V vendi/n R`.\n"
            "\n"
            "  -e, --each   also print each file's nearest other file and their cosine\n"
            "  -h, --help   this help\n",
            SPADE_VENDI_NGRAM);
}

typedef struct files {
    char **path;
    int n, cap;
} files;

static int add(files *f, const char *p) {
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 64;
        char **np = realloc(f->path, (size_t)cap * sizeof *np);
        if (!np) return -1;
        f->path = np;
        f->cap = cap;
    }
    return (f->path[f->n] = strdup(p)) ? (f->n++, 0) : -1;
}

static int collect(files *f, const char *arg) {
    struct stat st;
    if (stat(arg, &st) < 0) return cli_err(CLI_FAIL, "vendi", "%s: no such file or directory", arg);
    if (!S_ISDIR(st.st_mode)) return add(f, arg) < 0 ? cli_err(CLI_FAIL, "vendi", "out of memory") : 0;
    char **stems;
    int n, missing, rc = 0;
    if (spade_dir_envs(arg, &stems, &n, &missing) < 0 || missing)
        return cli_err(CLI_FAIL, "vendi", "%s: %s", arg, missing ? "cannot open the directory" : "out of memory");
    for (int i = 0; i < n; i++) {
        char p[SPADE_PATH_MAX];
        if (!rc && (snprintf(p, sizeof p, "%s/%s.c", arg, stems[i]) >= (int)sizeof p || add(f, p) < 0))
            rc = cli_err(CLI_FAIL, "vendi", "%s: path too long or out of memory", arg);
        free(stems[i]);
    }
    free(stems);
    return rc;
}

int cli_vendi(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    static const struct option longopts[] = {
        {"each", no_argument, 0, 'e'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int each = 0, ch, rc = CLI_FAIL;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "eh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'e': each = 1; break;
        case 'h': cli_usage_vendi(stdout); return CLI_OK;
        default: return cli_bad_option("vendi", argc, argv, optopt);
        }
    }
    if (optind == argc) return cli_err(CLI_USAGE, "vendi", "name at least one file or directory (spade vendi --help)");
    files f = {0};
    double *X = NULL;
    for (int i = optind; i < argc; i++)
        if (collect(&f, argv[i])) goto done;
    if (f.n == 0) {
        cli_err(CLI_FAIL, "vendi", "no .c files in what was named");
        goto done;
    }
    int d = SPADE_VENDI_DIM;
    if (!(X = malloc((size_t)f.n * d * sizeof *X))) {
        cli_err(CLI_FAIL, "vendi", "out of memory for %d embeddings", f.n);
        goto done;
    }
    for (int i = 0; i < f.n; i++) {
        char err[1024], *src = NULL;
        size_t len = 0;
        if (spade_read_source(f.path[i], &src, &len, err, sizeof err) < 0) {
            cli_err(CLI_FAIL, "vendi", "%s", err);
            goto done;
        }
        spade_vendi_embed(src, len, X + (size_t)i * d, d);
        free(src);
    }
    if (each)
        for (int i = 0; i < f.n; i++) {
            double best = -1, ni = 0;
            int at = -1;
            for (int k = 0; k < d; k++) ni += X[(size_t)i * d + k] * X[(size_t)i * d + k];
            for (int j = 0; j < f.n; j++) {
                if (j == i) continue;
                double dot = 0, nj = 0;
                for (int k = 0; k < d; k++) {
                    dot += X[(size_t)i * d + k] * X[(size_t)j * d + k];
                    nj += X[(size_t)j * d + k] * X[(size_t)j * d + k];
                }
                double c = ni > 0 && nj > 0 ? dot / sqrt(ni * nj) : 0;
                if (c > best) best = c, at = j;
            }
            if (at >= 0)
                printf("%s  nearest %s  cosine %.3f\n", f.path[i], f.path[at], best);
            else
                printf("%s  (alone)\n", f.path[i]);
        }
    char err[1024];
    double v;
    if (spade_vendi(X, f.n, d, &v, err, sizeof err) < 0) {
        cli_err(CLI_FAIL, "vendi", "%s", err);
        goto done;
    }
    printf("n %d vendi %.4f vendi/n %.4f\n", f.n, v, v / f.n);
    rc = CLI_OK;
done:
    for (int i = 0; i < f.n; i++) free(f.path[i]);
    free(f.path);
    free(X);
    return rc;
}
