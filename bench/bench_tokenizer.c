/* bench_tokenizer.c — what the BPE tokenizer buys and costs: stdenv sources in
 * tokens vs bytes at several vocabulary sizes, training time, and encode
 * throughput on one core beside references measured in the same run (the
 * byte tokenizer, i.e. a copy loop; the slow reference encoder).
 *
 * The tokenizers are trained on stdenv/ + plugins/ + docs/ of the source tree
 * (what `spade tokenizer train stdenv plugins docs` reads). "held out" is
 * core/ (C the tokenizer never saw). Throughput: "cold" encodes with a fresh
 * tokenizer (empty chunk cache) each pass, "warm" repeats a pass with the
 * cache filled, "no cache" merges every chunk afresh; "64-byte words" (stdenv's
 * words glued into long identifiers) shows the heap against the reference's
 * rescans on the longest chunks.
 * What it is not: a test (nothing here fails on a slow machine; the targets
 * are printed as met or not) — run by hand, figures go in BENCHMARKS.md.
 *
 *   ./bench/bench_tokenizer [SRCDIR]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "policy/tokenizer.h"

typedef struct {
    char **b;
    size_t *len;
    int n;
    size_t bytes;
} files;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: the machine is shared */
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every regular file under dir (sorted, recursive, no dot files); only names
 * ending in one of exts when exts is not NULL. */
static void walk(files *f, const char *dir, const char *const *exts) {
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, (size_t)(nn + 1) * sizeof *names);
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    for (int i = 0; i < nn; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            walk(f, p, exts);
        } else if (S_ISREG(st.st_mode)) {
            int ok = !exts;
            for (int k = 0; exts && exts[k]; k++) {
                size_t l = strlen(names[i]), m = strlen(exts[k]);
                if (l > m && !strcmp(names[i] + l - m, exts[k])) ok = 1;
            }
            FILE *fp = ok ? fopen(p, "rb") : NULL;
            if (fp) {
                char *b = malloc((size_t)st.st_size + 1);
                size_t n = fread(b, 1, (size_t)st.st_size, fp);
                fclose(fp);
                f->b = realloc(f->b, (size_t)(f->n + 1) * sizeof *f->b);
                f->len = realloc(f->len, (size_t)(f->n + 1) * sizeof *f->len);
                f->b[f->n] = b;
                f->len[f->n++] = n;
                f->bytes += n;
            }
        }
        free(names[i]);
    }
    free(names);
}

static spade_tokenizer *train(const files *corpus, int vocab, double *secs) {
    char err[256];
    double best = 1e30;
    spade_tokenizer *t = NULL;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        spade_bpe_trainer *tr;
        if (spade_bpe_trainer_new(&tr, err, sizeof err)) break;
        for (int i = 0; i < corpus->n; i++) spade_bpe_trainer_add(tr, corpus->b[i], corpus->len[i], err, sizeof err);
        spade_tokenizer *x;
        if (spade_bpe_trainer_finish(tr, vocab, &x, err, sizeof err)) {
            fprintf(stderr, "bench_tokenizer: %s\n", err);
            exit(1);
        }
        spade_bpe_trainer_free(tr);
        double el = now() - t0;
        if (el < best) best = el;
        spade_tokenizer_free(t);
        t = x;
    }
    *secs = best;
    return t;
}

static size_t count_tokens(spade_tokenizer *t, const files *f, int *buf) {
    size_t k = 0;
    for (int i = 0; i < f->n; i++) k += spade_tokenizer_encode(t, f->b[i], f->len[i], buf);
    return k;
}

enum { COLD, WARM, NOCACHE, REF, BYTES };

/* Best-of-reps throughput in MB/s of one way of encoding all of f. */
static double throughput(spade_tokenizer *t, const files *f, int how, int *buf, int reps) {
    double best = 1e30;
    char err[256];
    spade_tokenizer *w = NULL;
    if (how == WARM) {
        spade_tokenizer_clone(&w, t, err, sizeof err);
        count_tokens(w, f, buf); /* fill the cache */
    }
    for (int r = 0; r < reps; r++) {
        spade_tokenizer *c = NULL;
        if (how == COLD || how == NOCACHE) spade_tokenizer_clone(&c, t, err, sizeof err);
        if (how == NOCACHE) spade_tokenizer_set_cache(c, 0);
        double t0 = now();
        for (int i = 0; i < f->n; i++) {
            if (how == REF)
                spade_tokenizer_encode_ref(t, f->b[i], f->len[i], buf);
            else if (how == BYTES)
                spade_tok_encode(f->b[i], f->len[i], buf);
            else
                spade_tokenizer_encode(how == WARM ? w : c, f->b[i], f->len[i], buf);
        }
        double el = now() - t0;
        if (el < best) best = el;
        spade_tokenizer_free(c);
    }
    spade_tokenizer_free(w);
    return (double)f->bytes / best / 1e6;
}

int main(int argc, char **argv) {
    const char *src = argc > 1 ? argv[1] : SPADE_SRCDIR;
    char p[4096];
    files corpus = {0}, stdenv = {0}, held = {0};
    static const char *const dirs[] = {"stdenv", "plugins", "docs"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", src, dirs[i]);
        walk(&corpus, p, NULL);
    }
    snprintf(p, sizeof p, "%s/stdenv", src);
    static const char *const c_exts[] = {".c", ".h", NULL};
    walk(&stdenv, p, c_exts);
    snprintf(p, sizeof p, "%s/core", src);
    walk(&held, p, c_exts);
    if (!stdenv.n || !held.n) {
        fprintf(stderr, "bench_tokenizer: no stdenv/ or core/ sources under %s\n", src);
        return 1;
    }
    size_t maxlen = 1;
    for (int i = 0; i < held.n; i++) maxlen = held.len[i] > maxlen ? held.len[i] : maxlen;
    for (int i = 0; i < stdenv.n; i++) maxlen = stdenv.len[i] > maxlen ? stdenv.len[i] : maxlen;
    int *buf = malloc(maxlen * sizeof *buf);

    printf("corpus: %d files, %zu bytes (stdenv, plugins, docs); stdenv C: %d files, %zu bytes; "
           "held out (core/ C): %d files, %zu bytes\n\n",
           corpus.n, corpus.bytes, stdenv.n, stdenv.bytes, held.n, held.bytes);
    printf("%-6s %-9s %-14s %-10s %-14s %-10s\n", "vocab", "train s", "stdenv tokens", "bytes/tok", "held tokens",
           "bytes/tok");
    static const int vocabs[] = {512, 1024, 2048, 4096, 8192};
    double ratio4096 = 0;
    spade_tokenizer *t4096 = NULL;
    for (int v = 0; v < 5; v++) {
        double secs;
        spade_tokenizer *t = train(&corpus, vocabs[v], &secs);
        size_t ks = count_tokens(t, &stdenv, buf), kh = count_tokens(t, &held, buf);
        printf("%-6d %-9.3f %-14zu %-10.3f %-14zu %-10.3f%s\n", spade_tokenizer_vocab(t), secs, ks,
               (double)stdenv.bytes / ks, kh, (double)held.bytes / kh,
               spade_tokenizer_vocab(t) < vocabs[v] ? "  (corpus exhausted)" : "");
        if (vocabs[v] == 4096) {
            ratio4096 = (double)stdenv.bytes / ks;
            t4096 = t;
        } else {
            spade_tokenizer_free(t);
        }
    }
    printf("(bytes tokenizer: 1.000 by construction)\n\n");

    printf("encode throughput, vocab 4096, one core, MB/s (best of 5 passes):\n");
    const files *sets[2] = {&held, &stdenv};
    const char *set_names[2] = {"held out (core/)", "stdenv"};
    double cold_held = 0;
    for (int s = 0; s < 2; s++) {
        double by = throughput(t4096, sets[s], BYTES, buf, 5), cold = throughput(t4096, sets[s], COLD, buf, 5),
               warm = throughput(t4096, sets[s], WARM, buf, 5), noc = throughput(t4096, sets[s], NOCACHE, buf, 5),
               ref = throughput(t4096, sets[s], REF, buf, 3);
        if (!s) cold_held = cold;
        printf("  %-18s bytes %8.1f  cold %7.1f  warm %7.1f  no cache %6.1f  reference %6.1f  "
               "(cold / reference %.1fx)\n",
               set_names[s], by, cold, warm, noc, ref, cold / ref);
    }
    /* long chunks: stdenv's words glued by '_' into 64-byte identifiers, where
     * the reference's rescans (O(n^2) per chunk) cost and the heap's do not */
    files longc = {0};
    longc.b = malloc(sizeof *longc.b);
    longc.len = malloc(sizeof *longc.len);
    size_t cap = 1 << 20, ln = 0;
    char *lb = malloc(cap + 128);
    for (int i = 0; ln < cap; i = (i + 1) % stdenv.n) {
        const char *b = stdenv.b[i];
        size_t wl = 0;
        for (size_t j = 0; j < stdenv.len[i] && ln < cap; j++) {
            char ch = b[j];
            int word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
            if (word) {
                lb[ln++] = ch;
                wl++;
            } else if (wl && ln && lb[ln - 1] != '_') {
                lb[ln++] = wl >= 60 ? ' ' : '_';
                if (wl >= 60) wl = 0;
            }
        }
    }
    longc.b[0] = lb;
    longc.len[0] = ln;
    longc.bytes = ln;
    longc.n = 1;
    int *lbuf = malloc(ln * sizeof *lbuf);
    double lnoc = throughput(t4096, &longc, NOCACHE, lbuf, 3), lref = throughput(t4096, &longc, REF, lbuf, 3);
    printf("  %-18s no cache %6.1f  reference %6.1f  (heap / reference %.1fx)\n", "64-byte words", lnoc, lref,
           lnoc / lref);
    free(lbuf);
    free(lb);
    free(longc.b);
    free(longc.len);
    printf("\ntargets: stdenv bytes/token at vocab 4096 = %.2f (>= 3: %s); cold encode of unseen C = %.1f MB/s "
           "(>= 20: %s)\n",
           ratio4096, ratio4096 >= 3 ? "met" : "NOT met", cold_held, cold_held >= 20 ? "met" : "NOT met");
    spade_tokenizer_free(t4096);
    free(buf);
    return 0;
}
