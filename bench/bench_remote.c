/* bench_remote.c — requests/s of the remote policy's client (core/remote.c)
 * at a given concurrency: N chat requests to URL#MODEL, wall time.
 * bench/bench_remote.sh runs it beside a direct Python client at 1, 8, 32
 * and prints the ratio. Not a test: it asserts nothing about the model.
 * Usage: bench_remote URL MODEL N CONCURRENCY [designer]
 *        bench_remote messages     (the designer's turns as JSON, for the Python side)
 * designer: each request is the served designer's (designer/remote_designer.c:
 * the system card and a prompt designer/prompt.c built around stdenv/nim.c,
 * 32 tokens), sent through spade_designer_remote_write with each reply
 * recorded in a scratch archive, as spade train does; else "Say one word."
 * for 4 tokens through spade_remote_chat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "designer/prompt.h"
#include "designer/remote_designer.h"
#include "json.h"
#include "remote.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The designer's prompt, grounded in stdenv/nim.c (read from the tree root). */
static char *designer_prompt(size_t *len) {
    FILE *f = fopen("stdenv/nim.c", "r");
    static char ex[65536];
    size_t el = f ? fread(ex, 1, sizeof ex - 1, f) : 0;
    if (f) fclose(f);
    spade_prompt_opts po;
    spade_prompt_opts_default(&po);
    po.budget = 1200; /* bytes: about 350 tokens of SmolLM2's */
    char *p = NULL, err[256];
    if (spade_prompt_build(&po, "logic", "nim.c", el ? ex : NULL, el, NULL, 0, &p, len, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    return p;
}

static int print_messages(void) {
    size_t len;
    char *p = designer_prompt(&len);
    if (!p) return 1;
    spade_remote_msg m[SPADE_DESIGNER_TURNS_MAX];
    int k = spade_designer_chat_turns(p, len, m);
    spade_jbuf b = {0};
    spade_jw_arr(&b);
    for (int i = 0; i < k; i++) {
        spade_jw_obj(&b);
        spade_jw_key(&b, "role");
        spade_jw_cstr(&b, m[i].role);
        spade_jw_key(&b, "content");
        spade_jw_str(&b, m[i].text, m[i].len);
        spade_jw_end_obj(&b);
    }
    spade_jw_end_arr(&b);
    fwrite(b.p, 1, b.len, stdout);
    putchar('\n');
    spade_jbuf_free(&b);
    free(p);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "messages")) return print_messages();
    if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "designer"))) {
        fprintf(stderr, "usage: bench_remote URL MODEL N CONCURRENCY [designer] | bench_remote messages\n");
        return 2;
    }
    int n = atoi(argv[3]), c = atoi(argv[4]), designer = argc == 6;
    if (n < 1 || n > 100000) return 2;
    spade_remote_opts o;
    spade_remote_opts_default(&o);
    o.url = argv[1];
    o.model = argv[2];
    o.concurrency = c;
    o.max_tokens = designer ? 32 : 4;
    o.temperature = 0;
    o.logprobs = 0;
    char err[1024];
    spade_remote *r;
    if (spade_remote_new(&r, &o, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double s, lat = 0;
    if (designer) { /* spade train's path: turns, one batch, every reply recorded in an archive */
        char dir[] = "/tmp/bench-remote-XXXXXX", path[64];
        if (!mkdtemp(dir)) return 1;
        snprintf(path, sizeof path, "%s/spade.db", dir);
        spade_archive *a;
        if (spade_archive_open(&a, path, err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        size_t len;
        char *p = designer_prompt(&len);
        const char **prompts = calloc((size_t)n, sizeof *prompts);
        size_t *lens = calloc((size_t)n, sizeof *lens), *tl = calloc((size_t)n, sizeof *tl);
        uint64_t *seeds = calloc((size_t)n, sizeof *seeds);
        char **texts = calloc((size_t)n, sizeof *texts);
        if (!p || !prompts || !lens || !tl || !seeds || !texts) return 1;
        for (int i = 0; i < n; i++) prompts[i] = p, lens[i] = len, seeds[i] = (uint64_t)i;
        spade_designer_remote_opts dro = {.max_tokens = 32, .temperature = 0};
        int asked, recorded;
        double t0 = now_s();
        if (spade_designer_remote_write(r, a, 0, n, prompts, lens, seeds, &dro, texts, tl, &asked, &recorded, err,
                                        sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        s = now_s() - t0;
        lat = s * (c < n ? c : n) / n; /* the batch call has no per-reply clock: wall time x requests in flight / n */
        for (int i = 0; i < n; i++) free(texts[i]);
        spade_archive_close(a);
        unlink(path);
        snprintf(path, sizeof path, "%s/spade.db-wal", dir), unlink(path);
        snprintf(path, sizeof path, "%s/spade.db-shm", dir), unlink(path);
        rmdir(dir);
        free(p), free(prompts), free(lens), free(tl), free(seeds), free(texts);
    } else {
        spade_remote_msg m = {"user", "Say one word.", 13};
        spade_remote_req *q = calloc((size_t)n, sizeof *q);
        spade_remote_reply *out = calloc((size_t)n, sizeof *out);
        if (!q || !out) return 1;
        for (int i = 0; i < n; i++) q[i] = (spade_remote_req){.msgs = &m, .n_msgs = 1, .seed = (uint64_t)i};
        double t0 = now_s();
        if (spade_remote_chat(r, n, q, out, err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        s = now_s() - t0;
        for (int i = 0; i < n; i++) lat += out[i].latency_s, free(out[i].text);
        lat /= n;
        free(q);
        free(out);
    }
    printf("%.3f %.4f\n", n / s, lat);
    spade_remote_free(r);
    return 0;
}
